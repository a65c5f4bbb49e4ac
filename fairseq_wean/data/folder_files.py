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
before any work, and then :func:`subset_problem`: every subset the command loads, decided as fairseq's loaders
(``load_langpair_dataset``'s ``split_exists``, ``load_indexed_dataset``, ``infer_dataset_impl`` and the index
headers its readers assert, fairseq-train's check of unused validation shards) will decide it, for every task
whose class loads ``SPLIT.*`` files. Imports fairseq only to look a task's class up (:func:`split_reader`).
"""
import fnmatch
import os
import re

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


# command -> the subset options it loads from the data folder: (dest, where: "first" folder or "every" one)
SUBSET_OPTIONS = {
    "train": (("train_subset", "every"), ("valid_subset", "first")),
    "validate": (("valid_subset", "first"),),
    "generate": (("gen_subset", "first"),),
    "eval_lm": (("gen_subset", "first"),),
}
# the readers of a split (fairseq.data.indexed_dataset): --dataset-impl -> the files its exists() needs beside
# the split's prefix, and the index header its reader asserts (``Index file doesn't match expected format``)
IMPL_FILES = {"raw": ("",), "mmap": (".idx", ".bin"), "lazy": (".idx", ".bin"), "cached": (".idx", ".bin"),
              "huffman": (".idx", ".bin", ".vocab"), "fasta": (".fasta",)}
INDEX_HEADERS = {"cached": b"TNTIDX\x00\x00", "mmap": b"MMIDIDX\x00\x00", "huffman": b"HUFFIDX\x00\x00"}
IMPL_HEADER = {"lazy": "cached", "cached": "cached", "mmap": "mmap", "huffman": "huffman"}
# the commands that read items of a subset before fairseq prefetches them: fairseq-train (its trainer's
# get_train_iterator/get_valid_iterator take the iterator's first_batch for the dummy batch). --dataset-impl cached,
# and what fairseq infers from a cached index header without --dataset-impl, is IndexedCachedDataset: it holds only
# prefetched items (a KeyError after the model was built, fairseq 0.12.2 and 0.12.3); lazy reads the same files
# without a cache. (fairseq-generate's check of the subset, fixes_decoding.check_generate_data, prefetches first.)
READ_BEFORE_PREFETCH = {"train": "fairseq-train reads its first batch before fairseq prefetches any"}
# fairseq-train's raise_if_valid_subsets_unintentionally_ignored: the names of other validation shards
EXTRA_VALID = re.compile("valid*[0-9].*")


def folder_subsets(folder):
    """The subsets of a data folder: the SPLIT of every ``SPLIT.*`` data name (shards ``train1`` their own)."""
    return sorted({os.path.basename(path).split(".", 1)[0] for path, what in data_folder_files(folder, raw=True)
                   if what != "dictionary"})


def split_reader(task):
    """How the registered task ``task`` loads a subset: ``"pair"`` (fairseq's ``load_langpair_dataset``:
    ``SPLIT.SRC-TGT.LANG``, translation and every subclass that loads through it: translation_lev,
    translation_from_pretrained_bart, the plugin's translation_with_metrics...), ``"lm"`` (language_modeling
    and its subclasses that keep its loader: ``SPLIT``), or None (a task that names its files its own way,
    online_backtranslation's too). Decided by the class and the loader it runs, never by the name."""
    from fairseq.tasks import TASK_REGISTRY
    from fairseq.tasks.language_modeling import LanguageModelingTask
    from fairseq.tasks.translation import TranslationTask

    cls = TASK_REGISTRY.get(task)
    if not isinstance(cls, type):
        return None
    for base, kind, loader in ((TranslationTask, "pair", "load_langpair_dataset"),
                               (LanguageModelingTask, "lm", "load_indexed_dataset")):
        if not issubclass(cls, base):
            continue
        for owner in cls.__mro__:  # the load_dataset that runs, through super().load_dataset(...) calls
            code = owner.__dict__.get("load_dataset")
            if code is None:
                continue
            if owner is base or loader in code.__code__.co_names:
                return kind
            if not {"super", "load_dataset"} <= set(code.__code__.co_names):
                return None
    return None


def _index_header(path, folder):
    """The first 9 bytes of the index file ``path`` of ``folder`` (read as what a link in the folder names)."""
    with textio.open_in_folder(os.path.realpath(path), "rb", folder=folder, what="index file") as f:
        return f.read(9)


def _impl_exists(prefix, impl):
    """fairseq's ``indexed_dataset.dataset_exists(prefix, impl)`` (what ``split_exists`` asks)."""
    return all(os.path.exists(prefix + ext) for ext in IMPL_FILES.get(impl, (".idx", ".bin")))


def side_problem(prefix, impl, folder):
    """What ``data_utils.load_indexed_dataset(prefix, dict, impl)`` will do: ``(form, problem)``, form the
    reader it picks (None: it finds nothing there) and problem the one line of a side it would fail on or
    read wrongly: an index whose header is not the reader's (fairseq's AssertionError after the model was
    loaded) and, without --dataset-impl, the raw text and the binarized files of one side (fairseq's
    ``infer_dataset_impl`` reads the raw text and silently ignores the rest)."""
    name = os.path.basename(prefix)
    binarized = [prefix + ext for ext in (".idx", ".bin") if os.path.exists(prefix + ext)]
    if impl is None:
        if os.path.exists(prefix) and binarized:
            return None, ("{} (raw text) and {} (binarized) are two forms of one side in {}: fairseq reads the raw "
                          "text, whatever the binarized files hold; remove one, or give --dataset-impl".format(
                              name, " and ".join(map(os.path.basename, binarized)), folder))
        if os.path.exists(prefix):
            return "raw", None
        if len(binarized) < 2:
            return ("fasta" if os.path.exists(prefix + ".fasta") else None), None
    elif not _impl_exists(prefix, impl):
        return None, None
    if impl in (None, "lazy", "cached", "mmap", "huffman"):
        header = _index_header(prefix + ".idx", folder)
        kind = next((k for k, magic in INDEX_HEADERS.items() if header[:8] == magic[:8]), None)
        wanted = IMPL_HEADER.get(impl, kind)
        if kind is None or header[:len(INDEX_HEADERS[kind])] != INDEX_HEADERS[kind]:
            return None, "{}.idx is not an index fairseq writes (its header is {!r}): rebuild it with " \
                         "fairseq-preprocess".format(name, header)
        if kind != wanted:  # (a cached index: lazy, the reader every command can use, READ_BEFORE_PREFETCH)
            return None, ("{}.idx is {} index (its header): --dataset-impl {} reads only {} one; give "
                          "--dataset-impl {}".format(name, _a(kind), impl, _a(wanted), "lazy" if kind == "cached"
                                                     else kind + " or leave it out"))
        if kind == "huffman" and not os.path.exists(prefix + ".vocab"):
            return None, "{}.idx is a huffman index without its {}.vocab".format(name, name)
        return impl or kind, None
    return impl, None


def _a(kind):
    return ("an " if kind == "mmap" else "a ") + kind


def _present(folder, names):
    return [name for name in names if os.path.lexists(os.path.join(folder, name))]


def _split_names(split, reader, langs):
    """The names fairseq may read for the subset ``split`` (raw and binarized, both orders of the pair)."""
    if reader == "lm":
        stems = [split]
    else:
        src, tgt = langs
        stems = ["{}.{}-{}.{}".format(split, a, b, lang) for a, b in ((src, tgt), (tgt, src)) for lang in (src, tgt)]
    return [stem + ext for stem in stems for ext in ("", ".idx", ".bin")]


def _needs(impl, reader):
    if impl == "raw":
        return "its raw text, {} without .idx/.bin".format("SPLIT" if reader == "lm" else "SPLIT.SRC-TGT.LANG")
    what = " and ".join(IMPL_FILES.get(impl, (".idx", ".bin")))
    if impl is None and reader == "lm":
        return "its raw text SPLIT, or else its .idx and .bin"
    return what + (" of the source side (either order of the pair)" if reader == "pair" else "")


def _split_exists(prefix, impl):
    """fairseq's ``indexed_dataset.dataset_exists(prefix, impl)`` (``split_exists``: --dataset-impl fasta too
    asks for the .idx and .bin there)."""
    return _impl_exists(prefix, impl if impl != "fasta" else None)


def _has_target(folder, split, langs):
    src, tgt = langs
    return bool(_present(folder, ["{}.{}-{}.{}{}".format(split, a, b, tgt, ext) for a, b in ((src, tgt), (tgt, src))
                                  for ext in ("", ".idx", ".bin")]))


def _cached_problem(folder, split, prefix, impl, command):
    """The one line of a subset read through IndexedCachedDataset by a command of :data:`READ_BEFORE_PREFETCH`."""
    return ("subset '{}': {}.idx is a cached index, read with {} through fairseq's IndexedCachedDataset, which holds "
            "only prefetched items, and {} (a KeyError after the model was built): give --dataset-impl lazy (it "
            "reads the same files)".format(split, os.path.basename(prefix), "--dataset-impl cached" if impl else
                                           "no --dataset-impl (fairseq infers cached from the header)",
                                           READ_BEFORE_PREFETCH[command]))


def split_problem(folder, split, reader, langs, impl, needs_target=True, command=None):
    """Whether fairseq's loader of ``reader`` (:func:`split_reader`) finds subset ``split`` of ``folder`` as it
    will: ``(found, problem)``. Not found with files of it there (only .bin, only .idx, raw text under
    --dataset-impl mmap, binarized files under --dataset-impl raw, one side only) is a problem; so is a side
    :func:`side_problem` refuses and, for a translation subset, a source side without its target side (fairseq
    then trains or validates on nothing, or decodes without references; ``needs_target`` False: a folder of
    source-only subsets, fairseq's back-translation layout, is generated from). ``command``: a subset read as a
    cached index by a command of :data:`READ_BEFORE_PREFETCH` is a problem too."""
    impl_said = "--dataset-impl {}".format(impl) if impl else "no --dataset-impl"
    found, problem, sides, source = None, None, [], os.path.join(folder, split)
    if reader == "lm":
        found, problem = side_problem(source, impl, folder)
    else:
        src, tgt = langs
        for a, b in ((src, tgt), (tgt, src)):
            prefix = os.path.join(folder, "{}.{}-{}.".format(split, a, b))
            if _split_exists(prefix + src, impl):  # split_exists(): the source side, in either order of the pair
                found, problem = side_problem(prefix + src, impl, folder)
                sides, source = [prefix + tgt], prefix + src
                break
    if problem is None and found == "cached" and command in READ_BEFORE_PREFETCH:
        return True, _cached_problem(folder, split, source, impl, command)
    if problem is not None:
        return False, "subset '{}': {}".format(split, problem)
    held = _present(folder, _split_names(split, reader, langs))
    if found is None:
        if not held:
            return False, None
        return False, ("the data folder {} holds subset '{}' only as {}, which fairseq does not load ({}: it reads "
                       "{}); complete it, or give the --dataset-impl its files were written with".format(
                           folder, split, ", ".join(held), impl_said, _needs(impl, reader)))
    for prefix in sides:
        target, problem = side_problem(prefix, impl, folder)
        if problem is not None:
            return True, "subset '{}': {}".format(split, problem)
        if target is None and needs_target:
            return True, ("the data folder {} holds subset '{}' without its target side {}.* ({}; held: {}): fairseq "
                          "would go on without references".format(folder, split, os.path.basename(prefix), impl_said,
                                                                   ", ".join(held)))
    return True, None


def _shards(folder, split):
    """The shard numbers k >= 1 of ``split`` (``split1``, ``split2``...) any name of ``folder`` has."""
    pattern = re.compile(r"^{}([1-9][0-9]*)\.".format(re.escape(split)))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted({int(m.group(1)) for m in map(pattern.match, names) if m})


def _loaded(folder, split, reader, langs, impl, combine, needs_target, command=None):
    """The problem of loading ``split`` (and with ``combine`` its shards, which fairseq reads until the first
    one it does not find: an incomplete or later shard would be silently left out), or None; whether found."""
    found, problem = split_problem(folder, split, reader, langs, impl, needs_target, command)
    if problem is not None or not found or not combine:
        return found, problem
    shards = _shards(folder, split)
    for k in range(1, max(shards, default=0) + 1):
        found_k, problem = split_problem(folder, "{}{}".format(split, k), reader, langs, impl, needs_target, command)
        if problem is not None:
            return True, problem
        if not found_k:
            return True, ("the data folder {} holds shards {} of subset '{}' after the missing shard {}{}: fairseq "
                          "stops at the first shard it does not find and would leave them out".format(
                              folder, ", ".join("{}{}".format(split, j) for j in shards if j > k), split, split, k))
    return True, None


def valid_shards_problem(args, folders):
    """fairseq-train's ``raise_if_valid_subsets_unintentionally_ignored`` (a ValueError traceback after the model
    was built), as fairseq decides it: a name ``valid*[0-9].*`` of a data folder whose name less its last
    extension --valid-subset does not list, without --combine-valid-subsets, --ignore-unused-valid-subsets or
    --disable-validation."""
    if any(getattr(args, dest, False) for dest in ("ignore_unused_valid_subsets", "combine_valid_subsets",
                                                   "disable_validation")):
        return None
    named = str(getattr(args, "valid_subset", "")).split(",")
    for folder in folders:
        unused = sorted(name for name in os.listdir(folder)
                        if EXTRA_VALID.match(name) and os.path.splitext(name)[0] not in named)
        if unused:
            note = "" if not set(named) & {name.split(".", 1)[0] for name in unused} else (
                "; naming a shard in --valid-subset does not count: fairseq compares each file's name less its "
                "last extension")
            return ("the data folder {} holds validation files that --valid-subset {} leaves unused ({}), and "
                    "fairseq-train stops on them after building the model: add --combine-valid-subsets (validate on "
                    "valid, valid1, ... combined) or --ignore-unused-valid-subsets (validate on --valid-subset only)"
                    "{}".format(folder, getattr(args, "valid_subset", None),
                                ", ".join(unused[:4] + (["..."] if len(unused) > 4 else [])), note))
    return None


def _train_only_problem(args, command):
    if command == "train":
        if getattr(args, "combine_valid_subsets", False) and not getattr(args, "disable_validation", False) \
                and getattr(args, "valid_subset", "valid") != "valid":
            return ("--valid-subset {} does nothing with --combine-valid-subsets: fairseq-train then validates on "
                    "valid, valid1, ... combined; leave one of them out".format(args.valid_subset))
        return None
    return None  # in the other commands they do nothing: option_rules' rows (patching.OPTION_NEEDS)


def subset_problem(args, command=None):
    """Every subset a command loads (``SUBSET_OPTIONS``; fairseq-train's shards) checked as fairseq's loaders will
    find it, before any work (fairseq: a ``Dataset not found`` FileNotFoundError, an AssertionError on an index
    header or a ValueError on unused validation shards, after the model was built; or a silent wrong reading):
    a subset the data folder does not hold, one named twice in --valid-subset's list, a subset with files fairseq
    will not load for this --dataset-impl (:func:`split_problem`), two forms of one side, a translation subset
    without its target side, an unused validation shard (:func:`valid_shards_problem`); and the options of the
    splits that only fairseq-train reads, given to another command. The one line, or None. For the tasks whose
    class loads ``SPLIT.*`` files (:func:`split_reader`)."""
    from fairseq_wean.patching import running_command

    command = command or running_command()
    if command in SUBSET_OPTIONS or command == "interactive":
        problem = _train_only_problem(args, command)
        if problem is not None:
            return problem
    data = getattr(args, "data", None)
    if command not in SUBSET_OPTIONS or not isinstance(data, str) or "://" in data:
        return None
    folders = [path for path in data.split(os.pathsep) if path]
    if not folders or not all(os.path.isdir(folder) for folder in folders):
        return None  # the data option's own check
    reader = split_reader(getattr(args, "task", None))
    langs = (getattr(args, "source_lang", None), getattr(args, "target_lang", None))
    if reader == "pair" and None in langs:
        langs = next((name.split(".")[1].split("-") for name in os.listdir(folders[0])
                      if len(name.split(".")) >= 3 and len(name.split(".")[1].split("-")) == 2), None)
        if langs is None:
            return None  # fairseq's own "Could not infer language pair"
    impl = getattr(args, "dataset_impl", None)
    validates = not (command == "train" and getattr(args, "disable_validation", False))
    for dest, where in SUBSET_OPTIONS[command]:
        if dest == "valid_subset" and not validates:
            continue
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        option = "--" + dest.replace("_", "-")
        names = value.split(",") if dest == "valid_subset" else [value]  # the one list fairseq splits
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            return "{} {} names {} twice: give each subset once".format(option, value, ", ".join(map(repr, twice)))
        combine = dest == "train_subset"
        if command == "train" and dest == "valid_subset" and getattr(args, "combine_valid_subsets", False):
            names, combine = ["valid"], True  # what fairseq-train loads then
        if reader is None:
            continue
        for folder in folders if where == "every" else folders[:1]:
            held = folder_subsets(folder)
            if not held:
                continue  # no data file at all: fairseq's own missing-dictionary error names the folder
            # fairseq-generate decodes a folder of source-only subsets (fairseq's back-translation layout)
            needs_target = command != "generate" or reader == "pair" and any(
                _has_target(folder, other, langs) for other in held if other not in names)
            for name in names:
                found, problem = _loaded(folder, name, reader, langs, impl, combine, needs_target, command)
                if problem is not None:
                    return "{} {}: {}: refused before any work".format(option, value, problem)
                if not found:
                    return "{} {}: {}: refused before any work".format(
                        option, value, missing_subset_problem(folder, name, held, reader, langs, args))
    if command == "train" and validates:
        return valid_shards_problem(args, folders)
    return None


def missing_subset_problem(folder, name, held, reader, langs, args):
    """What is missing for subset ``name`` that the loader of ``reader`` does not find in ``folder`` (``held``: the
    folder's subsets). Held under other names (another language pair, a translation folder given to a language
    modeling task, or the reverse): the names looked for and the files of that subset there."""
    if name not in held:
        return "the data folder {} holds no subset {!r} (it holds: {})".format(folder, name, ", ".join(held))
    files = sorted(f for f in os.listdir(folder) if f.startswith(name + ".") and not f.endswith(".txt"))
    shown = ", ".join(files[:4] + (["..."] if len(files) > 4 else []))
    task = "--task {}".format(getattr(args, "task", None))
    if reader == "lm":
        return ("the data folder {} holds subset {!r} only as {} (a translation folder?), and {} (a language modeling "
                "task) reads {}.bin/.idx or its raw text {} with dict.txt: give the task the folder was made for, "
                "or a folder of fairseq-preprocess --only-source".format(folder, name, shown, task, name, name))
    pair = "{}-{}".format(*langs)
    lm = not any(len(f.split(".")) >= 3 and "-" in f.split(".")[1] for f in files)
    return ("the data folder {} holds subset {!r} as {}, not for the language pair {} that {} looks for ({}.{}.{}.* in "
            "either order of the pair){}".format(
                folder, name, shown, pair, "--source-lang {} --target-lang {}".format(*langs)
                if getattr(args, "source_lang", None) else task, name, pair, langs[0],
                ": a language modeling folder, give its task (--task language_modeling)" if lm else
                ": give the --source-lang/--target-lang of its files"))


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
