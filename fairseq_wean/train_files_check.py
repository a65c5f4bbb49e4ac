"""Checks, when fairseq parses a command and before any work, of the files and folders its options
name (registered with :func:`fairseq_wean.patching.add_option_check` by
:func:`fairseq_wean.fixes_training.install_training_file_checks`):

* the data option: every colon-separated path must be an existing folder (fairseq's
  ``infer_language_pair`` raised a FileNotFoundError traceback for a missing one);
* ``--checkpoint-suffix``: no path separator and no ``..`` (the names fairseq-train writes stay in
  --save-dir);
* fairseq-train's --save-dir: every checkpoint name fairseq-train writes or its --keep-* cleanup
  removes (``CHECKPOINT_PATTERN``) that exists is a regular file, and none of them is there without
  ``checkpoint_last.pt`` (another run's files: the cleanup deleted the new run's checkpoints);
* fairseq-train's other files in --save-dir (:data:`SAVE_DIR_FILES`: ``crash.pt``, written on a failed
  step, and ``dummy``, the writable-folder probe it opens with "w" and removes; every ``NAME.tmp`` it renames
  over a checkpoint): no link, folder or pipe (a folder at crash.pt was an IsADirectoryError traceback at the
  crash; a link at ``dummy`` truncated its target), and no ``dummy`` with content; the names it writes in place
  (every ``NAME.tmp``, ``dummy``; with --write-checkpoints-asynchronously the checkpoints and crash.pt too) no hard
  link either (``textio.in_place_problem``: a ``checkpoint1.pt.tmp`` hard-linked to a file outside got the
  checkpoint written into that file);
* files fairseq writes in place (``--log-file``): no link, folder, pipe/device or hard link;
  folders it writes into (``--tensorboard-logdir``, ``--results-path``): a folder where they exist, and
  below --tensorboard-logdir the folder of every tag fairseq-train logs (:func:`tensorboard_folders`) absent or
  a folder, never a link (event files were written through it), a file or a pipe;
* ``--share-all-embeddings`` on a data folder whose source and target dictionaries differ
  (:func:`joined_dictionary_problem`: fairseq's build_model raised a ValueError after loading the data);
* sentence_prediction's and sentence_ranking's ``--init-token``/``--separator-token`` inside the input dictionary
  (:func:`token_index_problem`: an IndexError at the first batch);
* the task's ``--overwrite-best-checkpoint`` where it does nothing (``patching.add_option_need``).

The names are fairseq's own (tests/test_training_bounds.py reads them off its code).
"""
import os
import re

from fairseq_wean import textio
from fairseq_wean.checkpoint_safety import checkpoint_file_problem
from fairseq_wean.errors import FairseqWeanError

# every name fairseq's checkpoint_utils.save_checkpoint writes and its keep-* cleanup globs, for a
# --checkpoint-suffix SUFFIX (re.escape'd) and the shard suffixes (-shardN) fairseq adds to it
CHECKPOINT_PATTERN = (r"checkpoint(?:\d+|_\d+_\d+|_best|_last|\.best_.+_[-+0-9.einfa]+){suffix}(?:-shard\d+)?\.pt")


# the other names fairseq-train writes in --save-dir (fairseq's own code, tests/test_training_bounds.py reads it):
# trainer.py's crash checkpoint on a FloatingPointError or any exception in a step, and checkpoint_utils'
# verify_checkpoint_directory's probe, opened with "w" (through a link: the link's target truncated) and removed
SAVE_DIR_FILES = ("crash.pt", "dummy")
# torch_persistent_save writes NAME.tmp and renames it over NAME (the plugin's atomic copies too)
TMP_SUFFIX = ".tmp"
# the tags fairseq-train's progress bar logs under, each a folder --tensorboard-logdir/TAG that tensorboard's
# SummaryWriter makes and writes event files into (fairseq_cli/train.py: progress.log/print(tag=...)); validation
# logs under each --valid-subset's name
TENSORBOARD_TAGS = ("train_inner", "train")


def tensorboard_folders(args):
    """The folders fairseq-train writes its tensorboard event files into (:data:`TENSORBOARD_TAGS` and the
    validation subsets' names), below --tensorboard-logdir."""
    valid = getattr(args, "valid_subset", None)
    subsets = [] if getattr(args, "disable_validation", False) or not isinstance(valid, str) else valid.split(",")
    return [name for name in dict.fromkeys(TENSORBOARD_TAGS + tuple(subsets)) if name]


def checkpoint_names(save_dir, suffix):
    """The names in ``save_dir`` that fairseq-train may write or remove (``CHECKPOINT_PATTERN``)."""
    pattern = re.compile(CHECKPOINT_PATTERN.format(suffix=re.escape(suffix)) + r"\Z")
    try:
        names = os.listdir(save_dir)
    except OSError:
        return []
    return sorted(name for name in names if pattern.match(name))


def data_problem(args):
    """Every path of the data option a folder, in a fairseq command's process (a script that parses
    options only to build a model may name no real data)."""
    from fairseq_wean.patching import running_command

    data = getattr(args, "data", None)
    if not isinstance(data, str) or not data or "://" in data or running_command() is None:
        return None
    for path in data.split(os.pathsep):
        kind = textio.node_kind(path, follow=True) if path else None
        if kind != textio.FOLDER:
            return "data {}: {}; give the folder of the binarized data (fairseq-preprocess's --destdir)".format(
                path or "''", "no such folder" if kind is None else "{}, not a folder".format(kind))
    return None


def suffix_problem(args):
    suffix = getattr(args, "checkpoint_suffix", None)
    if isinstance(suffix, str) and ("/" in suffix or os.sep in suffix or ".." in suffix or "\0" in suffix):
        return ("--checkpoint-suffix {!r}: a path separator or '..' would put checkpoints outside --save-dir; "
                "give a plain suffix such as _a".format(suffix))
    return None


def save_dir_problem(args):
    save_dir = getattr(args, "save_dir", None)
    if not hasattr(args, "keep_last_epochs") or not isinstance(save_dir, str) or "://" in save_dir \
            or getattr(args, "no_save", False) or not os.path.isdir(save_dir):
        return None
    suffix = getattr(args, "checkpoint_suffix", "") or ""
    names = checkpoint_names(save_dir, suffix)
    tmp = re.compile("(?:{}|{})\\Z".format(CHECKPOINT_PATTERN.format(suffix=re.escape(suffix)),
                                          re.escape(SAVE_DIR_FILES[0])))
    written = [n for n in os.listdir(save_dir) if n.endswith(TMP_SUFFIX) and tmp.match(n[:-len(TMP_SUFFIX)])]
    dummy = os.path.join(save_dir, SAVE_DIR_FILES[1])
    if textio.node_kind(dummy) == textio.REGULAR and os.path.getsize(dummy):
        raise FairseqWeanError("--save-dir {}: {} is a file of {} bytes: fairseq-train truncates and removes it (its "
                               "check that the folder is writable); nothing was trained; move it away".format(
                                   save_dir, dummy, os.path.getsize(dummy)))
    # the names written in place (opened "wb"/"w"), where a hard link would carry the write to its other name: every
    # NAME.tmp, the dummy probe, and with --write-checkpoints-asynchronously every checkpoint (written, not renamed)
    in_place = set(written) | {SAVE_DIR_FILES[1]} | (set(names) | {SAVE_DIR_FILES[0]} if getattr(
        args, "write_checkpoints_asynchronously", False) else set())
    for name in names + list(SAVE_DIR_FILES) + sorted(written):
        # raised, not returned: the same error (FairseqWeanError, exit 1) as checkpoint_safety's later check
        # of checkpoint_last.pt / checkpoint_best.pt, now made here for every name, before any work
        path = os.path.join(save_dir, name)
        kind = textio.planted_kind(path)
        if kind == textio.LINK:
            raise FairseqWeanError("--save-dir {}: {} is a symbolic link: refused (a checkpoint in --save-dir is "
                                   "written, read and removed only as itself); nothing was trained; move it "
                                   "away".format(save_dir, path))
        if kind is not None:
            raise FairseqWeanError("--save-dir {}: {} is {}; nothing was trained (fairseq-train writes or removes "
                                   "it); move it away".format(save_dir, path, checkpoint_file_problem(path)))
        problem = textio.in_place_problem(path) if name in in_place else None
        if problem is not None:  # a hard link: opened with "wb" in place, its other name's file was overwritten
            raise FairseqWeanError("--save-dir {}: {} {}: refused; nothing was trained (fairseq-train writes it in "
                                   "place); move it away".format(save_dir, path, problem))
    last = "checkpoint_last{}.pt".format(suffix)
    foreign = [name for name in names if name != last and not name.startswith("checkpoint_best")]
    if foreign and not any(name.startswith("checkpoint_last") for name in names):
        restore = getattr(args, "restore_file", None)
        if isinstance(restore, str) and restore != "checkpoint_last.pt" and os.path.isfile(restore) \
                and not getattr(args, "reset_optimizer", False) and not getattr(args, "reset_meters", False) \
                and os.path.dirname(os.path.abspath(restore)) == os.path.abspath(save_dir):
            return None  # resuming from one of them with its meters: its run continues
        return ("--save-dir {} holds {} but no {} (another run's checkpoints): fairseq-train's --keep-* cleanup "
                "would remove this run's checkpoints or keep those; use another --save-dir, move them away, or "
                "resume with --restore-file {}".format(save_dir, foreign[0], last, os.path.join(save_dir, foreign[-1])))
    return None


def written_files_problem(args):
    log_file = getattr(args, "log_file", None)
    if isinstance(log_file, str) and log_file:
        problem = textio.in_place_problem(log_file)
        if problem is not None:
            return "--log-file {} {}: refused (fairseq appends to it in place); give a new file".format(log_file, problem)
    for option in ("tensorboard_logdir", "results_path"):
        path = getattr(args, option, None)
        if isinstance(path, str) and path and "://" not in path:
            kind = textio.node_kind(path)
            if kind is not None and kind != textio.FOLDER:
                return "--{} {} is {}, not a folder: refused (fairseq writes its files into it); give a folder".format(
                    option.replace("_", "-"), path, kind)
            if option == "tensorboard_logdir" and kind == textio.FOLDER and hasattr(args, "keep_last_epochs"):
                for name in tensorboard_folders(args):
                    sub = os.path.join(path, name)
                    kind = textio.node_kind(sub)
                    if kind is not None and kind != textio.FOLDER:
                        return ("--tensorboard-logdir {}: {} is {}: refused (fairseq-train writes its event files into "
                                "a folder of that name, only as itself); move it away".format(path, sub, kind))
    return None


def finetune_note(args):
    """--finetune-from-model X with --save-dir's checkpoint_last.pt: fairseq resumes from that file and
    ignores X (its design for a restarted fine-tuning job). Kept, and said in one warning line."""
    import logging

    finetune, save_dir = getattr(args, "finetune_from_model", None), getattr(args, "save_dir", None)
    if isinstance(finetune, str) and finetune and isinstance(save_dir, str):
        last = os.path.join(save_dir, "checkpoint_last{}.pt".format(getattr(args, "checkpoint_suffix", "") or ""))
        if os.path.isfile(last):
            logging.getLogger("fairseq_wean").warning(
                "--finetune-from-model %s is NOT loaded: --save-dir holds %s, and fairseq resumes from it (a "
                "restarted fine-tuning run); to fine-tune from %s anew, use another --save-dir", finetune, last, finetune)
    return None


def joined_dictionary_problem(args):
    """fairseq-train --share-all-embeddings (one embedding matrix for source and target) on a data folder whose
    source and target dictionaries differ: fairseq's build_model raised a ValueError traceback after loading the
    data; the one line, or None."""
    from fairseq.data.data_utils import infer_language_pair

    from fairseq_wean.data.dictionary import dictionary_words
    from fairseq_wean.patching import running_command

    data = getattr(args, "data", None)
    if running_command() != "train" or not getattr(args, "share_all_embeddings", False) or not isinstance(data, str) \
            or "://" in data or not os.path.isdir(data.split(os.pathsep)[0]):
        return None
    folder = data.split(os.pathsep)[0]
    src, tgt = getattr(args, "source_lang", None), getattr(args, "target_lang", None)
    if src is None or tgt is None:
        src, tgt = infer_language_pair(folder)
    paths = [os.path.join(folder, "dict.{}.txt".format(lang)) for lang in (src, tgt) if lang]
    if len(paths) != 2 or not all(os.path.isfile(p) for p in paths):
        return None  # no pair task's folder: the task's own check names what is missing
    if dictionary_words(paths[0], "dictionary") != dictionary_words(paths[1], "dictionary"):
        return ("--share-all-embeddings shares one embedding matrix between source and target, but {} and {} differ: "
                "binarize the data with fairseq-preprocess --joined-dictionary, or leave the option out".format(*paths))
    return None


TOKEN_INDEX_OPTIONS = ("init_token", "separator_token")  # sentence_prediction's, sentence_ranking's: a dictionary index


def input_dictionary(cls, args, path):
    """The dictionary task class ``cls`` loads from ``path`` (sentence_ranking's load_dictionary takes the args too)."""
    import inspect

    if "args" in inspect.signature(cls.load_dictionary).parameters:
        return cls.load_dictionary(args, path, source=True)
    return cls.load_dictionary(path)


def token_index_problem(args):
    """A task's token-index option (:data:`TOKEN_INDEX_OPTIONS`: --init-token, --separator-token, prepended or inserted
    into every input) past the input dictionary the task builds (DATA/input0/dict.txt, with the symbols its
    load_dictionary adds): an IndexError in the embedding at the first batch, crash.pt written; the one line, or
    None."""
    from fairseq.tasks import TASK_REGISTRY

    from fairseq_wean.patching import running_command

    data, cls = getattr(args, "data", None), TASK_REGISTRY.get(getattr(args, "task", None))
    given = [(d, getattr(args, d)) for d in TOKEN_INDEX_OPTIONS if isinstance(getattr(args, d, None), int)]
    if running_command() != "train" or not given or cls is None or not isinstance(data, str) or "://" in data:
        return None
    path = os.path.join(data.split(os.pathsep)[0], "input0", "dict.txt")
    if not os.path.isfile(path):
        return None  # the task's own check names the missing dictionary
    size = len(input_dictionary(cls, args, path))
    for dest, value in given:
        if not 0 <= value < size:
            return ("--{} {}: the input dictionary --task {} builds from {} has {} symbols (ids 0 to {}), and this id "
                    "is prepended to every input; give an id below {} (fairseq's RoBERTa data: 0, <s>)".format(
                        dest.replace("_", "-"), value, args.task, path, size, size - 1, size))
    return None


def training_files_problem(args):
    """The one option check of this module (see its docstring)."""
    from fairseq_wean.data.folder_files import data_folder_problem

    for check in (suffix_problem, written_files_problem, data_problem, data_folder_problem, save_dir_problem,
                  joined_dictionary_problem, token_index_problem, finetune_note):
        problem = check(args)
        if problem is not None:
            return problem
    return None


def overwrite_best_acts(args):
    """The task's --overwrite-best-checkpoint acts only where --save-dir holds checkpoint_best.pt and no
    checkpoint_last.pt (checkpoint_safety refuses such a start without it); anywhere else it does nothing."""
    save_dir = getattr(args, "save_dir", None)
    if not isinstance(save_dir, str) or "://" in save_dir:
        return True
    suffix = getattr(args, "checkpoint_suffix", "") or ""
    best, last = (os.path.join(save_dir, "checkpoint_{}{}.pt".format(name, suffix)) for name in ("best", "last"))
    return os.path.lexists(best) and not os.path.lexists(last)


def _register_option_needs():
    from fairseq_wean.patching import add_option_need

    add_option_need("overwrite_best_checkpoint", overwrite_best_acts,
                    "it lets a run start in a --save-dir that holds checkpoint_best.pt but no checkpoint_last.pt, "
                    "and this --save-dir holds no such best checkpoint", commands=("train",))


_register_option_needs()
