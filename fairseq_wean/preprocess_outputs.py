"""fairseq-preprocess's outputs in ``--destdir``, checked before any work (called by
:func:`fairseq_wean.compat.install_preprocess_input_check`, in fairseq-preprocess's own process).

fairseq-preprocess opens every file it writes with a plain ``open``: a symbolic link planted at one of
its names was written through (the victim outside the folder overwritten with binary data, exit 0; the
log appended to the victim), a named pipe hung the run, a hard link changed the other name's file too.
:func:`output_paths` lists every file it writes, derived with fairseq's own naming functions
(``fairseq_cli.preprocess``: ``_dict_path``, ``dataset_dest_prefix``, ``_dest_path``; ``fairseq.binarizer``'s
worker prefix; ``indexed_dataset``'s ``.bin``/``.idx`` names): ``preprocess.log``, ``dict.LANG.txt``,
``SPLIT.SRC-TGT.LANG.bin/.idx`` for every split and language (``--dataset-impl raw``: the text copy
``SPLIT.SRC-TGT.LANG``), each ``--workers`` chunk's ``.ptN.bin/.idx`` (written, merged, removed), the
alignment datasets (``--align-suffix``) and ``alignment.SRC-TGT.txt`` (``--alignfile``).
tests/test_preprocess_outputs.py compares it with what a real run writes.

:func:`check` refuses, in one line and before anything is written: an output name that is a symbolic link
(also a dangling one: ``open("wb")`` creates its target), a folder, a pipe, socket or device, or a file with
other names (``textio.in_place_problem``, the rule of every in-place writer); an output that is also one of
the raw inputs; a --destdir that is not a folder. A rerun into a folder that holds an earlier run's outputs
keeps fairseq's behaviour: the dictionaries are built only into a folder without them (fairseq's
``FileExistsError`` traceback, after it had appended to the old log, is now this line, before anything is
touched), and with ``--srcdict``/``--tgtdict`` every output is rewritten in place, each only as itself.
"""
import os

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

LOG_NAME = "preprocess.log"  # fairseq_cli.preprocess.main's logging.FileHandler (appended to)


def _split_prefixes(args):
    """(raw input prefix, output prefix) of every split, as fairseq_cli.preprocess._make_all names them."""
    pairs = [(args.trainpref, "train")] if args.trainpref else []
    for option, name in (("validpref", "valid"), ("testpref", "test")):
        for k, prefix in enumerate((getattr(args, option) or "").split(",") if getattr(args, option) else []):
            pairs.append((prefix, "{}{}".format(name, k) if k > 0 else name))
    return pairs


def _dataset_files(prefix, workers):
    """The files one binarized dataset is written to: PREFIX.bin/.idx and each worker's chunk."""
    from fairseq import binarizer
    from fairseq.data import indexed_dataset

    prefixes = [prefix] + [binarizer._worker_prefix(prefix, worker) for worker in range(1, max(1, workers or 1))]
    return [name for p in prefixes for name in (indexed_dataset.data_file_path(p), indexed_dataset.index_file_path(p))]


def output_paths(args, preprocess=None):
    """Every path fairseq-preprocess writes for ``args`` (see the module docstring), in the order it writes them."""
    if preprocess is None:
        from fairseq_cli import preprocess
    destdir, workers = args.destdir, getattr(args, "workers", 1)
    target = not args.only_source
    langs = [args.source_lang] + ([args.target_lang] if target else [])
    paths = [os.path.join(destdir, LOG_NAME)] + [preprocess._dict_path(lang, destdir) for lang in langs]
    if args.dict_only:
        return paths
    for lang in langs:
        for _, out in _split_prefixes(args):
            if args.dataset_impl == "raw":
                paths.append(preprocess._dest_path(out + ".{}-{}".format(args.source_lang, args.target_lang), lang,
                                                   destdir))
            else:
                paths += _dataset_files(preprocess.dataset_dest_prefix(args, out, lang), workers)
    if args.align_suffix:  # fairseq_cli.preprocess._make_all_alignments: the whole --validpref, not split
        for prefix, out in ((args.trainpref, "train"), (args.validpref, "valid"), (args.testpref, "test")):
            if prefix and os.path.exists(prefix + "." + args.align_suffix):
                paths += _dataset_files(preprocess.dataset_dest_prefix(args, out + ".align", None), workers)
    if args.alignfile:
        paths.append(os.path.join(destdir, "alignment.{}-{}.txt".format(args.source_lang, args.target_lang)))
    return list(dict.fromkeys(paths))


def input_paths(args):
    """The raw files fairseq-preprocess reads and an output must not be (dictionaries excepted: --srcdict
    FOLDER/dict.de.txt is read whole before fairseq saves it again)."""
    langs = [args.source_lang] + ([] if args.only_source else [args.target_lang])
    found = ["{}{}".format(prefix, "." + lang if lang else "") for prefix, _ in _split_prefixes(args) for lang in langs]
    if args.align_suffix:
        found += [p + "." + args.align_suffix for p in (args.trainpref, args.validpref, args.testpref) if p]
    return found + ([args.alignfile] if args.alignfile else [])


def check(args, preprocess=None):
    """One-line ``FairseqWeanError`` before any work for an output fairseq-preprocess must not write (see the
    module docstring)."""
    destdir = args.destdir
    textio.check_resolvable(destdir, "fairseq-preprocess --destdir")
    kind = textio.node_kind(destdir, follow=True)
    if kind not in (None, textio.FOLDER):
        raise FairseqWeanError("fairseq-preprocess --destdir {} is {}, not a folder: refused (fairseq-preprocess "
                               "writes its files into it); give a folder".format(destdir, kind))
    if preprocess is None:
        from fairseq_cli import preprocess
    outputs, inputs = output_paths(args, preprocess), input_paths(args)
    langs = [(args.source_lang, args.srcdict)] + ([] if args.only_source else [(args.target_lang, args.tgtdict)])
    dictionaries = {lang: preprocess._dict_path(lang, destdir) for lang, _ in langs}
    for path in outputs:
        if os.path.dirname(os.path.abspath(path)) != os.path.abspath(destdir):
            raise FairseqWeanError("fairseq-preprocess output {} is outside --destdir {} (a path separator in "
                                   "--source-lang/--target-lang?): refused".format(path, destdir))
        problem = textio.in_place_problem(path, destdir) if kind is not None else None
        if problem is not None:
            raise FairseqWeanError("fairseq-preprocess --destdir {}: {} {}: refused, nothing was written "
                                   "(fairseq-preprocess writes it in place); move it away".format(destdir, path, problem))
        for given in inputs if path not in dictionaries.values() else ():
            if textio.same_file(path, given):
                raise FairseqWeanError("fairseq-preprocess output {} is also an input ({}): writing it would destroy "
                                       "that input; give another --destdir".format(path, given))
    for lang, given in langs:  # fairseq_cli.preprocess.main's own rule (its FileExistsError), before any work
        if not given and os.path.lexists(dictionaries[lang]):
            raise FairseqWeanError(
                "fairseq-preprocess --destdir {} already holds {} (an earlier run's dictionary): fairseq-preprocess "
                "builds the dictionaries only into a folder without them; nothing was written; give a new --destdir, "
                "or binarize with the folder's dictionaries ({})".format(destdir, dictionaries[lang], " ".join(
                    "--{}dict {}".format(side, dictionaries[name]) for side, (name, _) in zip(("src", "tgt"), langs))))
