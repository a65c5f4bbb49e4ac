"""Fixes to fairseq behaviour, applied once when the plugin is imported (:func:`apply`).

They happen at import because ``--user-dir`` is the only hook fairseq gives a plugin in
every process it starts (fairseq-train and its spawned workers, fairseq-generate,
fairseq-interactive, fairseq-preprocess); none touches a device. :func:`apply` applies, in
this order:

1. Every sentence is decoded and validated. fairseq's main branch (so ``fairseq-fixed``)
   ends ``data_utils.batch_by_size`` with ``if bsz_mult > 1 and len(b[-1]) % bsz_mult != 0:
   b = b[:-1]``: the last batch is silently dropped unless its size is a multiple of
   ``--required-batch-size-multiple`` (default 8); fairseq-generate printed 352 hypotheses for
   TurkCorpus's 359 test sentences. We restore fairseq 0.12.2's behaviour: the indices that
   no batch covers become one last, smaller batch. This applies to training too, where it
   only means that no training example is skipped either.
2. Checkpoints load under ``torch.load(weights_only=True)`` (torch >= 2.6). See
   :mod:`fairseq_wean.checkpoint_safety`.
3. A sentence longer than the model accepts (validation, fairseq-generate,
   fairseq-interactive) is a one-line error that counts them and names the fixes
   (:func:`install_size_filter_message`); so is a subset whose every sentence is skipped as too long
   (:func:`nothing_left_problem`) and fairseq-eval-lm blocks above the model's positions
   (:mod:`fairseq_wean.eval_lm_checks`).
4. Distributed training runs on CPU (gloo) with fairseq's default ``--ddp-backend
   pytorch_ddp`` and under torchrun. See :mod:`fairseq_wean.distributed`.
5. Before anything is trained or written: ``--criterion core_mode_loss`` with a model
   without a copy gate, and a ``--save-dir`` that cannot be written, are one-line errors
   (:func:`install_build_checks`).
6. Binarized data fairseq cannot use (an empty set; source and target sides of different
   lengths) is a one-line error with the fix (:func:`install_binarized_data_checks`).
7. fairseq-preprocess refuses raw files with a ``\r`` inside a line
   (:func:`install_preprocess_input_check`).
8. fairseq-interactive ``--input`` decodes line by line: the lines before a non-UTF-8 line
   get their hypotheses, then a one-line error names the line
   (:func:`install_interactive_input_reader`).
9. ``--diverse-beam-groups`` runs and keeps each sentence's own group overlap
   (:func:`install_diverse_beam_search_fixes`).
10. ``--no-repeat-ngram-size`` blocks repeated n-grams on CPU too
    (:func:`install_no_repeat_ngram_on_cpu`).
11. Decoding never outputs ``<s>``, with any search (``--sampling`` drew it)
    (:func:`install_generator_never_chooses_bos`).
12. ``--patience`` survives a restart: a run resumed from ``checkpoint_last.pt`` stops where
    the uninterrupted run would have (:func:`install_patience_survives_restart`).
13. A run resumed at an epoch boundary trains on the batches the uninterrupted run trains on
    (:func:`install_resume_keeps_the_batches`).
14. ``--help`` with ``--arch`` (``--task``, ``--criterion``, ...) lists that model's options
    (:func:`install_help_lists_model_options`).
15. fairseq 0.12.2's ``transformer`` decodes on torch >= 1.13: its encoder layer's
    "BetterTransformer" fast path is turned off (:func:`install_transformer_without_fast_path`).
16. A dictionary file (``dict.SRC.txt`` of a data folder, ``--unk-markers-dict``) that is
    missing, not ``WORD COUNT`` lines, lists a word twice, is empty or is not UTF-8, and a ``--replace-unk``
    alignment dictionary that is missing, not ``SOURCE TARGET`` lines, lists a source word twice or is
    empty, are one-line errors naming the file and the line (a data folder's dictionary is never quoted),
    in every command and the hub (:func:`install_dictionary_file_errors`).
17. fairseq-generate ``--results-path``: the results file is written through a temporary file
    (a failed run leaves the old one intact), and a link planted there is refused
    (:func:`install_generate_results_file`).
18. ``--min-len`` above the longest output the model or ``--max-len-a``/``-b`` allow is one line, not
    an assertion traceback (:func:`install_min_len_checks`; what the options alone decide is refused
    when they are parsed).
19. fairseq-eval-lm ``--post-process subword_nmt`` joins the ``@@`` pieces it names (fairseq joined none and
    printed token-level scores as word-level ones; :func:`install_eval_lm_subword_nmt`).
20. Sharded translation data (``train1``, ``--combine-valid-subsets``) loads: ``--upsample-primary``'s default
    -1 means no upsampling (fairseq tiled the primary shard -1 times, a ValueError traceback;
    :func:`~fairseq_wean.fixes_training.install_upsample_primary_default`).
21. The numpy names fairseq 0.12 uses that numpy removed (``np.compat.long``, ``np.int``, ``np.float``,
    ``np.percentile(interpolation=)``) work in fairseq's modules, with any numpy (:mod:`fairseq_wean.numpy_removed`).

The ranges of fairseq's numeric options and their cross-rules: :func:`fairseq_wean.patching.install_option_ranges`.
Fixes 1-7 and 16 live here; the decoding fixes (8-11, 15, 17-19) in :mod:`fairseq_wean.fixes_decoding`, the
training-run fixes (12-14, 20) in :mod:`fairseq_wean.fixes_training`. A fix of a function fairseq modules
import by name reaches each of them (:func:`fairseq_wean.patching.wrap_every_binding`).
"""
import os

import numpy as np
from fairseq.data import data_utils

from fairseq_wean import checkpoint_safety, distributed, eval_lm_checks, numpy_removed, textio
from fairseq_wean.fixes_decoding import (install_diverse_beam_search_fixes, install_eval_lm_subword_nmt,
                                         install_generate_data_checks,
                                         install_generate_results_file,
                                         install_generator_never_chooses_bos, install_interactive_input_reader,
                                         install_min_len_checks, install_no_repeat_ngram_on_cpu,
                                         install_transformer_without_fast_path)
from fairseq_wean.fixes_training import (install_help_lists_model_options, install_patience_survives_restart,
                                         install_resume_keeps_the_batches, install_training_file_checks,
                                         install_upsample_primary_default)
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import (found, install_option_ranges, note, replace_once, same_code, wrap_every_binding,
                                   wrap_once)

_original_batch_by_size = data_utils.batch_by_size


def _drops_the_last_batch():
    batches = _original_batch_by_size(np.arange(9, dtype=np.int64), lambda i: 1, max_tokens=None,
                                      max_sentences=8, required_batch_size_multiple=8)
    if sum(len(b) for b in batches) < 9:
        return True, "batch_by_size dropped the last batch of 9 sentences (8 + 1)"
    return False, "this fairseq's batch_by_size keeps the last, incomplete batch (as 0.12.2 does)"


def install_batches_keep_the_last():
    """Fix 1 (see the module docstring), where fairseq's ``batch_by_size`` drops the last batch."""
    if found("compat 1 (last batch kept)", _drops_the_last_batch):
        replace_once(data_utils, "batch_by_size", batch_by_size_keeping_last)


def batch_by_size_keeping_last(indices, *args, **kwargs):
    """``data_utils.batch_by_size`` that never drops the last, incomplete batch."""
    if not isinstance(indices, np.ndarray):
        indices = np.fromiter(indices, dtype=np.int64, count=-1)
    batches = _original_batch_by_size(indices, *args, **kwargs)
    if kwargs.get("fixed_shapes") is not None:
        return batches
    covered = sum(len(b) for b in batches)
    # Without fixed shapes, batches are consecutive slices of ``indices``: what is missing
    # is the tail.
    if covered < len(indices):
        batches = list(batches) + [indices[covered:]]
    return batches


def nothing_left_problem(task, dataset, indices, max_positions):
    """The one line for a subset whose every sentence (block) is longer than the model accepts, where fairseq
    skips them (--skip-invalid-size-inputs-valid-test, training data, fairseq-eval-lm's blocks): fairseq went on
    with nothing (an IndexError in batch_by_size, a ZeroDivisionError, or eval-lm's "Perplexity: 1.00" over 0
    tokens). None for data that is no loaded subset: fairseq-interactive's buffer of input lines and the hub's
    sentences, where a skipped line is that line's own matter (the next buffer may have shorter ones)."""
    datasets = getattr(task, "datasets", {}) or {}
    names = [name for name, loaded in datasets.items()
             if loaded is dataset or getattr(dataset, "dataset", None) is loaded]  # eval-lm's context window wraps it
    if not names:
        return None
    sizes = [dataset.size(int(i)) for i in indices[:10000]]
    shortest = min(sizes, key=lambda size: tuple(size) if hasattr(size, "__len__") else (size,))
    shortest = tuple(int(n) for n in shortest) if hasattr(shortest, "__len__") else int(shortest)
    return ("every one of the {} sentence(s) of {} is longer than the model accepts (max positions {}; the shortest "
            "has length {}): all would be skipped, leaving nothing to use; raise --max-source-positions / "
            "--max-target-positions (--tokens-per-sample for a language model: at most the model's positions) or "
            "give a subset with shorter sentences".format(
                len(indices), "subset " + names[0], max_positions, shortest))


def install_size_filter_message():
    """One line instead of fairseq's traceback for a sentence longer than the model accepts.

    fairseq skips over-long *training* pairs with a warning that counts them ("N samples have
    invalid sizes and will be skipped"), but for validation, fairseq-generate and
    fairseq-interactive it raises ``Exception("Size of sample #i is invalid ...")`` unless
    ``--skip-invalid-size-inputs-valid-test`` is given (then such sentences get no hypothesis).
    We keep that behaviour and only make the message a FairseqWeanError that counts the
    sentences and names the fixes. Where fairseq skips them and none is left, that too is one line
    (:func:`nothing_left_problem`), before any batch is made.
    """
    from fairseq.tasks import FairseqTask

    def wrap_filter_indices_by_size(original):
        def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
            try:
                kept = original(self, indices, dataset, max_positions, ignore_invalid_inputs)
            except Exception as exc:
                if not str(exc).startswith("Size of sample #"):
                    raise
                _, ignored = dataset.filter_indices_by_size(indices, max_positions)
                size = dataset.size(ignored[0])
                size = tuple(int(n) for n in size) if hasattr(size, "__len__") else int(size)
                raise FairseqWeanError(
                    "{} sentence(s) are longer than the model accepts (max positions {}; e.g. sentence #{} "
                    "has length {}): pass --skip-invalid-size-inputs-valid-test to skip them (they get no "
                    "hypothesis), raise --max-source-positions / --max-target-positions, or clean the raw "
                    "files with python -m preprocess.check_parallel --max-len N before "
                    "fairseq-preprocess".format(len(ignored), max_positions, int(ignored[0]), size)
                ) from exc
            if len(kept) == 0 and len(indices) > 0:  # every sentence skipped: nothing to decode, score or train
                problem = nothing_left_problem(self, dataset, indices, max_positions)
                if problem is not None:
                    raise FairseqWeanError(problem)
            return kept

        return filter_indices_by_size

    same_code("compat 3 (over-long sentences)", "FairseqTask.filter_indices_by_size raises a bare "
              "Exception for an over-long validation/test sentence")
    wrap_once(FairseqTask, "filter_indices_by_size", wrap_filter_indices_by_size)


def require_copy_gate_for_core_mode_loss(model_cfg, model):
    """``--criterion core_mode_loss`` with a model that has no copy gate: refused when the model is built.

    The criterion itself only finds out in its first forward pass, by which time fairseq's
    trainer has already saved the whole model to ``SAVE_DIR/crash.pt``.
    """
    if getattr(model_cfg, "criterion", None) != "core_mode_loss":
        return
    from fairseq_wean.models.core_copy import CoreCopyModel

    if not isinstance(model, CoreCopyModel):
        raise FairseqWeanError(
            "--criterion core_mode_loss needs a model with a copy gate and a restricted "
            "vocabulary: use --arch core_copy (or --criterion cross_entropy for other models)"
        )


def install_build_checks():
    """Checks made before anything is trained or written, so that a bad option costs no output.

    * ``--criterion core_mode_loss`` with another model than ``core_copy``
      (:func:`require_copy_gate_for_core_mode_loss`), when fairseq builds the model;
    * a ``--save-dir`` that cannot be written: fairseq's own check at start-up
      (``verify_checkpoint_directory``) raises ``PermissionError`` with a traceback.
    """
    from fairseq import checkpoint_utils, models

    def wrap_build_model(original):
        def build_model(cfg, task, *args, **kwargs):
            model = original(cfg, task, *args, **kwargs)
            require_copy_gate_for_core_mode_loss(cfg, model)
            return model

        return build_model

    def wrap_verify(original):
        def verify_checkpoint_directory(save_dir):
            try:
                return original(save_dir)
            except OSError as exc:
                # fairseq wrote SAVE_DIR/dummy and another run started into the same folder removed
                # it first: the folder is writable (the lock on --save-dir refuses the second run
                # in one line later), so this is not the user's permissions
                if (isinstance(exc, FileNotFoundError) and os.path.isdir(save_dir)
                        and os.path.basename(exc.filename or "") == "dummy"):
                    return None
                raise FairseqWeanError(
                    "cannot write checkpoints to --save-dir {} ({}): give a directory you can "
                    "write to".format(save_dir, exc.strerror or exc)
                ) from None

        return verify_checkpoint_directory

    same_code("compat 5 (checks before training)", "fairseq builds the model and writes --save-dir "
              "before it reads the criterion's needs or the directory's permissions")
    wrap_once(models, "build_model", wrap_build_model)
    wrap_once(checkpoint_utils, "verify_checkpoint_directory", wrap_verify)


def install_binarized_data_checks():
    """One line for binarized data that fairseq cannot use, with the fix.

    * a set with no sentences (an empty raw file given to fairseq-preprocess): fairseq fails
      with "ValueError: cannot mmap an empty file";
    * source and target sides with different numbers of sentences: fairseq fails with an
      ``AssertionError``. The usual cause is a raw file with a stray ``\r`` inside a line,
      which fairseq-preprocess (reading with Python's universal newlines) takes as a line
      break; see :func:`install_preprocess_input_check`.
    """
    import os

    from fairseq.data import indexed_dataset
    from fairseq.tasks import translation

    def wrap_make_dataset(original):
        def make_dataset(path, impl, *args, **kwargs):
            data_file = indexed_dataset.data_file_path(path)
            for part in (data_file, indexed_dataset.index_file_path(path)):
                refuse_non_regular(part, "binarized data file")
            if os.path.isfile(data_file) and os.path.getsize(data_file) == 0:
                raise FairseqWeanError(
                    "{} is empty: this binarized set has no sentences (fairseq-preprocess was "
                    "given an empty raw file): binarize a file with at least one line".format(data_file)
                )
            return original(path, impl, *args, **kwargs)

        return make_dataset

    def wrap_load_langpair_dataset(original):
        def load_langpair_dataset(data_path, split, src, src_dict, tgt, tgt_dict, *args, **kwargs):
            try:
                return original(data_path, split, src, src_dict, tgt, tgt_dict, *args, **kwargs)
            except AssertionError as exc:
                if "same number of examples" not in str(exc):
                    raise
                raise FairseqWeanError(
                    "{}.{}-{}.{} and .{} have different numbers of sentences: "
                    "the raw files given to fairseq-preprocess were not line-parallel (often a stray "
                    "\\r inside a line, which fairseq-preprocess reads as a line break): clean them "
                    "with python -m preprocess.check_parallel and binarize again".format(
                        os.path.join(data_path, split), src, tgt, src, tgt)
                ) from None

        return load_langpair_dataset

    same_code("compat 6 (unusable binarized data)", "fairseq memory-maps an empty or one-sided .bin "
              "and fails deep in training")
    def wrap_infer_dataset_impl(original):  # reads the index's first bytes, before make_dataset
        def infer_dataset_impl(path):
            for part in (indexed_dataset.data_file_path(path), indexed_dataset.index_file_path(path)):
                refuse_non_regular(part, "binarized data file")
            return original(path)

        return infer_dataset_impl

    wrap_every_binding(indexed_dataset, "make_dataset", wrap_make_dataset)
    wrap_every_binding(indexed_dataset, "infer_dataset_impl", wrap_infer_dataset_impl)
    wrap_every_binding(translation, "load_langpair_dataset", wrap_load_langpair_dataset)


def first_stray_carriage_return(path):
    """The 1-based line number of the first ``\r`` that is not part of a ``\r\n`` line end, or None."""
    import mmap
    import os
    import re

    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found = re.search(rb"\r(?!\n)", data)
        if found is None:
            return None
        chunk = 1 << 24  # count line ends a slice at a time: the file may be larger than memory
        return 1 + sum(data[i:min(i + chunk, found.start())].count(b"\n")
                       for i in range(0, found.start(), chunk))


def install_dictionary_file_errors():
    """Fix 16 (see the module docstring): one reader's errors for every dictionary file.

    fairseq's ``Dictionary.add_from_file`` (behind every ``Dictionary.load``: the task's
    ``dict.SRC.txt``/``dict.TGT.txt`` in fairseq-train, -generate, -interactive, -validate and the
    hub, and ``--unk-markers-dict``) raises ``FileNotFoundError``, ``ValueError("Incorrect
    dictionary format ...")``, ``RuntimeError("Duplicate word found ...")`` or a bare
    ``Exception("Incorrect encoding ...")`` with a traceback; ``utils.load_align_dict``
    (``--replace-unk FILE``) an ``IndexError`` on a one-column line, and it silently used a fairseq
    dictionary given by mistake (every ``<unk>`` became a word count), or a source word listed twice
    (the last kept). fairseq reads an empty dictionary as one (every word ``<unk>``). Each is now one line
    naming the file and, where there is one, the line (``data.dictionary.check_dictionary`` and
    ``check_entries``, the one check of keyed files).
    """
    from fairseq import utils
    from fairseq.data import Dictionary

    def wrap_add_from_file(original):
        def add_from_file(self, f):
            if not isinstance(f, str):
                return original(self, f)
            from fairseq_wean.data.dictionary import check_folder_dictionary

            check_folder_dictionary(f)  # dict.*.txt linked out of its folder: refused before fairseq opens it
            refuse_non_regular(f, "dictionary")
            size = len(self.symbols)
            try:
                loaded = original(self, f)
            except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
                raise FairseqWeanError("dictionary {}: {} (a fairseq dictionary, 'WORD COUNT' lines, as "
                                       "fairseq-preprocess writes dict.LANG.txt)".format(f, exc.strerror)) from None
            except Exception:  # ValueError, RuntimeError, fairseq's bare Exception for the encoding
                from fairseq_wean.data.dictionary import check_dictionary

                try:  # one line for what fairseq refused
                    check_dictionary(f, self.symbols[: self.nspecial])
                except FairseqWeanError as error:
                    raise error from None
                raise  # something else
            if len(self.symbols) == size:  # fairseq reads an empty file as a dictionary (every word <unk>)
                from fairseq_wean.data.dictionary import check_dictionary

                check_dictionary(f, self.symbols[: self.nspecial])  # "no word in the file (it is empty)"
            return loaded

        return add_from_file

    def wrap_load_align_dict(original):
        def load_align_dict(replace_unk):
            if isinstance(replace_unk, str) and replace_unk and replace_unk != "@@ ":
                from fairseq_wean.textio import read_lines

                lines = read_lines(replace_unk, "--replace-unk alignment dictionary")
                rows = [(n, line.split()) for n, line in enumerate(lines, 1) if line.strip()]
                for n, cols in rows:
                    if len(cols) < 2:
                        raise FairseqWeanError("--replace-unk {} line {}: expected 'SOURCE TARGET' (the alignment "
                                               "dictionary: a source word and the word it becomes), got {!r}".format(
                                                   replace_unk, n, " ".join(cols)[:80]))
                if rows and all(len(cols) == 2 and cols[1].isdigit() for _n, cols in rows):
                    raise FairseqWeanError("--replace-unk {} is a fairseq dictionary ('WORD COUNT' lines), not an "
                                           "alignment dictionary ('SOURCE TARGET'): every <unk> would become a "
                                           "count; give a bare --replace-unk to copy the attended source word".format(
                                               replace_unk))
                from fairseq_wean.data.dictionary import check_entries

                # the one check of keyed files: a source word listed twice (fairseq kept the last, silently), none
                for _ in check_entries(((n, cols[0], None) for n, cols in rows), replace_unk, "--replace-unk",
                                       "source word"):
                    pass
            return original(replace_unk)

        return load_align_dict

    same_code("compat 16 (dictionary files)", "fairseq's Dictionary.add_from_file and load_align_dict raise "
              "tracebacks for a missing, malformed, duplicate or non-UTF-8 file")
    wrap_once(Dictionary, "add_from_file", wrap_add_from_file)
    wrap_once(utils, "load_align_dict", wrap_load_align_dict)


def refuse_non_regular(path, what):
    """A named pipe, socket or device where fairseq reads a data file would block it forever (or
    read without end): refused in one line. A missing file is fairseq's to report."""
    from fairseq_wean import textio

    try:
        kind = textio.node_kind(path, follow=True)
    except OSError:
        return
    if kind not in (None, textio.REGULAR):
        raise FairseqWeanError("{} {} is {}, not a regular file: refused (reading it could block or never "
                               "end)".format(what, path, "a directory" if kind == textio.FOLDER else "a named pipe, "
                                             "socket or device"))


def install_preprocess_input_check():
    """fairseq-preprocess ``--user-dir fairseq_wean``: refuse raw files with a ``\r`` inside a line, an
    option given twice (``cli.options.once``, as fairseq's other commands with the plugin), and, before any
    work, an output in --destdir it must not write (a link, pipe, folder or hard link at one of its names; a
    rerun's dictionaries: :mod:`fairseq_wean.preprocess_outputs`).

    fairseq-preprocess opens text files with Python's universal newlines, so a lone ``\r``
    ends a line: that file gets one sentence more than it has lines, and every later pair is
    misaligned (silently, when the other file has a stray ``\r`` too). Only patched when the
    plugin is imported by fairseq-preprocess itself (its ``main`` is looked up after the
    ``--user-dir`` import).
    """
    import os
    import sys

    from fairseq import options

    from fairseq_wean.cli.options import once

    def wrap_add_preprocess_args(original):  # fairseq-preprocess parses with its own parser.parse_args()
        def add_preprocess_args(parser):
            result = original(parser)
            once(parser)  # an option given twice: a usage error, as in every other command (the last kept silently)
            return result

        return add_preprocess_args

    wrap_once(options, "add_preprocess_args", wrap_add_preprocess_args)
    name = "compat 7 (\\r inside a raw line)"
    preprocess = sys.modules.get("fairseq_cli.preprocess")
    if preprocess is None:
        note(name, False, "applied in fairseq-preprocess's own process only (not this one)")
        return

    def wrap_main(original):
        def main(args):
            from fairseq_wean.option_rules import interpolation_problem  # '${': every later command refuses it

            if interpolation_problem(args) is not None:
                raise FairseqWeanError(interpolation_problem(args))
            from fairseq_wean import preprocess_outputs  # every file it writes in --destdir: no link, pipe, folder

            preprocess_outputs.check(args, preprocess)
            langs = [args.source_lang] + ([] if args.only_source or not args.target_lang else [args.target_lang])
            for option in ("trainpref", "validpref", "testpref"):
                for prefix in (getattr(args, option, None) or "").split(","):
                    for lang in langs if prefix else ():
                        path = "{}.{}".format(prefix, lang) if lang else prefix
                        line = first_stray_carriage_return(path)
                        if line is not None:
                            raise FairseqWeanError(
                                "{} line {} has a carriage return (\\r) inside the line, which "
                                "fairseq-preprocess reads as a line break (the source and target "
                                "files would no longer be line-parallel): clean the raw files with "
                                "python -m preprocess.check_parallel, which turns it into a space".format(
                                    os.path.abspath(path), line)
                            )
                        found = textio.first_stray_byte_order_mark(path)
                        if found is not None:
                            raise FairseqWeanError(textio.byte_order_mark_problem(
                                "fairseq-preprocess input", os.path.abspath(path), *found))
            from fairseq_wean.scoring.inputs import check_normalization  # one Unicode normalization form a language

            for lang in langs:
                files = ["{}.{}".format(p, lang) if lang else p for option in ("trainpref", "validpref", "testpref")
                         for p in (getattr(args, option, None) or "").split(",") if p]
                check_normalization(
                    [(os.path.abspath(f), textio.iter_lines(f, "fairseq-preprocess input")) for f in files],
                    harm="fairseq-preprocess would make a word spelt both ways two dictionary entries (two words to "
                         "the model, <unk> for one spelling in the other files)")
            return original(args)

        return main

    note(name, True, "fairseq-preprocess reads raw files with universal "
              "newlines: a \\r inside a line splits it")
    wrap_once(preprocess, "main", wrap_main)


def apply():
    install_batches_keep_the_last()
    checkpoint_safety.install()
    install_size_filter_message()
    eval_lm_checks.install()  # fairseq-eval-lm blocks above the model's positions (fix 3's class)
    distributed.install()
    install_build_checks()
    install_binarized_data_checks()
    install_dictionary_file_errors()
    install_preprocess_input_check()
    install_interactive_input_reader()
    install_diverse_beam_search_fixes()  # --diverse-beam-groups: see its docstring
    install_no_repeat_ngram_on_cpu()  # --no-repeat-ngram-size: see its docstring
    install_generator_never_chooses_bos()  # --sampling output <s>: see its docstring
    install_patience_survives_restart()  # --patience across a restart: see its docstring
    install_resume_keeps_the_batches()  # batches of a resumed run: see its docstring
    install_help_lists_model_options()  # --help with --arch: see its docstring
    install_transformer_without_fast_path()  # fairseq 0.12.2's transformer on torch >= 1.13
    install_generate_results_file()  # fairseq-generate --results-path: see its docstring
    install_generate_data_checks()  # fairseq-generate's options against the gen subset, before decoding
    install_min_len_checks()  # --min-len above the longest output: see its docstring
    install_training_file_checks()  # data, --save-dir, --log-file, --checkpoint-suffix: see train_files_check
    __import__("fairseq_wean.tokenizer_files", fromlist=["install"]).install()  # --bpe/--tokenizer files, packages
    install_option_ranges()  # every numeric option of fairseq's parsers, and their cross-rules
    install_eval_lm_subword_nmt()  # fairseq-eval-lm --post-process subword_nmt: see its docstring
    install_upsample_primary_default()  # sharded translation data: see its docstring
    numpy_removed.install()  # numpy names fairseq uses that numpy removed: see fairseq_wean/numpy_removed.py
