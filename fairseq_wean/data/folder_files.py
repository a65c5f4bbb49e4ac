"""The files fairseq and the plugin read by name from a data or model folder, and the one rule for them.

fairseq composes the names of what it reads from a data folder (``fairseq-train``, ``-generate``,
``-validate``, ``-interactive``, the hub's ``data_name_or_path``) itself: the dictionaries
``dict.SRC.txt``/``dict.TGT.txt`` (``dict.txt`` for single-dictionary tasks), the binarized splits
``SPLIT.SRC-TGT.LANG.idx``/``.bin`` (shards ``train1``..., alignments ``SPLIT.align.SRC-TGT``, the
plugin's restricted vocabulary counts ``train.SRC-TGT.TGT.bin``) and, beside them or with
``--dataset-impl raw``, their raw text (``SPLIT.SRC-TGT.LANG``; fairseq's ``infer_dataset_impl``
prefers it to the binarized file). The hub takes its BPE files (``bpecodes``...) from the model's
folder the same way (``fairseq_wean.hub``).

The rule (:func:`folder_file_problem`, used by every check of such a file): the name is a regular
file of that folder with no other name, or a symbolic link to one; a link that leaves the folder (a
dictionary named ``dict.tgt.txt`` that is someone's secret, a ``.bin`` memory-mapped from anywhere), a
hard link (``st_nlink > 1``: the same secret under a second name, which a tar archive or a copy can
carry), a link to nothing (fairseq then silently decodes without references), a named pipe (the reader
blocks forever), a socket, a device or a folder is refused in one line, before anything is read. An error
about the content of such a file never quotes it (``data.dictionary``).
:func:`data_folder_problem` applies it to every such name of every data folder of a parsed command,
before any work. Imports neither fairseq nor torch.
"""
import fnmatch
import os

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

# names fairseq composes in a data folder, whatever the task, the splits or the languages
DICTIONARY_NAMES = ("dict.txt", "dict.*.txt")
BINARIZED_NAMES = ("*.idx", "*.bin")
RAW_NAMES = ("*.?*-?*.?*",)  # --dataset-impl raw: SPLIT.SRC-TGT.LANG (what infer_language_pair lists)


def folder_file_problem(path, folder=None):
    """Why ``path``, a file read by name from ``folder`` (default: its own directory), may not be read,
    or None: a symbolic link out of the folder (or a path through a linked directory that leaves it), a
    link to nothing, a folder, a named pipe, socket or device, a file with other names (a hard link,
    ``st_nlink > 1``: ``textio.in_place_problem``'s rule of a file found in a folder). None too when nothing
    is at ``path`` (the reader names a missing file itself) and for a link to a regular file of the folder
    with no other name (``dict.src.txt -> dict.txt``). Seen without opening it (a named pipe would block).
    Says nothing of the file's content."""
    if not os.path.lexists(path):
        return None
    shown = folder or os.path.dirname(os.path.abspath(path))
    real_folder = os.path.realpath(shown)
    if os.path.commonpath([os.path.realpath(path), real_folder]) != real_folder:
        if os.path.islink(path):
            return "is a symbolic link to a file outside its folder {}".format(shown)
        return "is outside {} (through a symbolic link)".format(shown)
    try:
        kind = textio.node_kind(path, follow=True)
    except OSError as exc:
        return "cannot be looked at ({})".format(exc.strerror)
    if kind is None:
        return "is a symbolic link to nothing"
    if kind == textio.FOLDER:
        return "is a directory, not a regular file"
    if kind == textio.NODE:
        return "is a named pipe, socket or device, not a regular file"
    try:  # a hard link: the name of a file that may lie anywhere (textio's rule of every file found in a folder)
        return textio.in_place_problem(path, info=os.stat(path), write=False, found=True)
    except OSError as exc:
        return "cannot be looked at ({})".format(exc.strerror)


def check_folder_file(path, what, folder=None):
    """One-line ``FairseqWeanError`` naming ``what`` and ``path`` for a :func:`folder_file_problem`."""
    problem = folder_file_problem(path, folder)
    if problem is not None:
        raise FairseqWeanError("{} {} {}: refused (nothing was read); put the file itself in the folder, or a link "
                               "to a file of the folder".format(what, path, problem))


def data_folder_files(folder, raw=False):
    """``[(path, what)]``: every name in ``folder`` that fairseq may read as data (see the module docstring),
    sorted; ``raw``: with ``--dataset-impl raw`` (every ``SPLIT.SRC-TGT.LANG`` name)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    present = set(names)
    found = []
    for name in names:
        if any(fnmatch.fnmatchcase(name, p) for p in DICTIONARY_NAMES):
            what = "dictionary"
        elif any(fnmatch.fnmatchcase(name, p) for p in BINARIZED_NAMES):
            what = "binarized data file"
        elif name + ".idx" in present or name + ".bin" in present \
                or raw and any(fnmatch.fnmatchcase(name, p) for p in RAW_NAMES):
            what = "raw data file"
        else:
            continue
        found.append((os.path.join(folder, name), what))
    return found


def check_data_folder(folder, raw=False):
    """:func:`check_folder_file` on every file of :func:`data_folder_files`; a folder that is not one: nothing."""
    if os.path.isdir(folder):
        for path, what in data_folder_files(folder, raw):
            check_folder_file(path, what, folder)


# the tasks that read a subset SPLIT as files SPLIT.* of the data folder (SPLIT.SRC-TGT.LANG.idx/.bin, raw
# SPLIT.SRC-TGT.LANG, language modelling's SPLIT.idx/.bin); other tasks name their files their own way
SUBSET_TASKS = ("translation", "translation_with_metrics", "language_modeling")
# command -> the subset options it loads from the data folder: (dest, where: "first" folder or "every" one)
SUBSET_OPTIONS = {
    "train": (("train_subset", "every"), ("valid_subset", "first")),
    "validate": (("valid_subset", "first"),),
    "generate": (("gen_subset", "first"),),
    "eval_lm": (("gen_subset", "first"),),
}


def folder_subsets(folder):
    """The subsets of a data folder: the SPLIT of every ``SPLIT.*`` data name (shards ``train1`` their own)."""
    return sorted({os.path.basename(path).split(".", 1)[0] for path, what in data_folder_files(folder, raw=True)
                   if what != "dictionary"})


def subset_problem(args, command=None):
    """A subset option of ``command`` (default: this process's) naming a subset its data folder does not hold
    (fairseq's ``FileNotFoundError: Dataset not found`` traceback, after the model was built), or one subset
    named twice in --valid-subset's list (``--valid-subset valid,valid``: validated twice, reported twice): the one line, or
    None. For :data:`SUBSET_TASKS` only; checked before any work."""
    from fairseq_wean.patching import running_command

    command = command or running_command()
    data = getattr(args, "data", None)
    if getattr(args, "task", None) not in SUBSET_TASKS or not isinstance(data, str) or "://" in data:
        return None
    folders = [path for path in data.split(os.pathsep) if path]
    if not folders or not all(os.path.isdir(folder) for folder in folders):
        return None  # the data option's own check
    for dest, where in SUBSET_OPTIONS.get(command, ()):
        if command == "train" and dest == "valid_subset" and getattr(args, "disable_validation", False):
            continue
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        option = "--" + dest.replace("_", "-")
        names = value.split(",") if dest == "valid_subset" else [value]  # the one list fairseq splits
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            return "{} {} names {} twice: give each subset once".format(option, value, ", ".join(map(repr, twice)))
        for folder in folders if where == "every" else folders[:1]:
            held = folder_subsets(folder)
            if not held:
                continue  # no data file at all: fairseq's own missing-dictionary error names the folder
            for name in names:
                if name not in held:
                    return "{} {}: the data folder {} holds no subset {!r} (it holds: {}): refused before any work".format(
                        option, value, folder, name, ", ".join(held))
    return None


def data_folder_problem(args):
    """The option check (``patching.add_option_check``) of a parsed command's data folders: raises the
    one-line ``FairseqWeanError`` of :func:`check_data_folder` for each colon-separated path of
    ``args.data`` that is a folder (one that is not is the data option's own check); returns the
    :func:`subset_problem` or None."""
    data = getattr(args, "data", None)
    if isinstance(data, str) and data and "://" not in data:
        raw = getattr(args, "dataset_impl", None) == "raw"
        for path in data.split(os.pathsep):
            if path:
                check_data_folder(path, raw)
    return subset_problem(args)
