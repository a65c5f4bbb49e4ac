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
   (:func:`install_size_filter_message`).
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
"""
import os
import sys
from typing import Optional

import numpy as np
import torch
from fairseq.data import data_utils
from torch import Tensor

from fairseq_wean import checkpoint_safety, distributed
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import found, note, replace_method_once, replace_once, same_code, wrap_once

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


def install_size_filter_message():
    """One line instead of fairseq's traceback for a sentence longer than the model accepts.

    fairseq skips over-long *training* pairs with a warning that counts them ("N samples have
    invalid sizes and will be skipped"), but for validation, fairseq-generate and
    fairseq-interactive it raises ``Exception("Size of sample #i is invalid ...")`` unless
    ``--skip-invalid-size-inputs-valid-test`` is given (then such sentences get no hypothesis).
    We keep that behaviour and only make the message a FairseqWeanError that counts the
    sentences and names the fixes.
    """
    from fairseq.tasks import FairseqTask

    def wrap_filter_indices_by_size(original):
        def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
            try:
                return original(self, indices, dataset, max_positions, ignore_invalid_inputs)
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
    wrap_once(indexed_dataset, "make_dataset", wrap_make_dataset)
    wrap_once(translation, "load_langpair_dataset", wrap_load_langpair_dataset)


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


def install_preprocess_input_check():
    """fairseq-preprocess ``--user-dir fairseq_wean``: refuse raw files with a ``\r`` inside a line.

    fairseq-preprocess opens text files with Python's universal newlines, so a lone ``\r``
    ends a line: that file gets one sentence more than it has lines, and every later pair is
    misaligned (silently, when the other file has a stray ``\r`` too). Only patched when the
    plugin is imported by fairseq-preprocess itself (its ``main`` is looked up after the
    ``--user-dir`` import).
    """
    import os
    import sys

    name = "compat 7 (\\r inside a raw line)"
    preprocess = sys.modules.get("fairseq_cli.preprocess")
    if preprocess is None:
        note(name, False, "applied in fairseq-preprocess's own process only (not this one)")
        return

    def wrap_main(original):
        def main(args):
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
            return original(args)

        return main

    note(name, True, "fairseq-preprocess reads raw files with universal "
              "newlines: a \\r inside a line splits it")
    wrap_once(preprocess, "main", wrap_main)


def install_interactive_input_reader():
    """fairseq-interactive ``--input``: every line before a non-UTF-8 line gets its hypothesis.

    fairseq reads the input through a text decoder that decodes ahead of the lines it hands
    out, so a non-UTF-8 byte raises ``UnicodeDecodeError`` before the valid lines before it
    are translated. Lines are decoded one at a time instead (:func:`fairseq_wean.textio.iter_lines`);
    at the bad line, the lines read so far are translated, then a one-line error names the
    file and the line. Only patched inside fairseq-interactive.
    """
    import sys

    name = "compat 8 (interactive non-UTF-8 input)"
    interactive = sys.modules.get("fairseq_cli.interactive")
    if interactive is None:
        note(name, False, "applied in fairseq-interactive's own process only (not this one)")
        return
    from fairseq_wean.textio import iter_lines

    def wrap_buffered_read(original):
        def buffered_read(input, buffer_size):
            buffer = []
            try:
                for line in iter_lines(input, "fairseq-interactive --input"):
                    buffer.append(line.strip())
                    if len(buffer) >= buffer_size:
                        yield buffer
                        buffer = []
            except FairseqWeanError:
                if buffer:
                    yield buffer
                raise
            if buffer:
                yield buffer

        return buffered_read

    note(name, True, "fairseq-interactive's buffered_read raises "
              "UnicodeDecodeError before decoding the lines read")
    wrap_once(interactive, "buffered_read", wrap_buffered_read)


def install_diverse_beam_search_fixes():
    """``--diverse-beam-groups``: fairseq's ``DiverseBeamSearch`` made to run, and run right.

    fairseq-fixed's ``DiverseBeamSearch`` (from fairseq PR #5069) has two bugs, both seen with
    every model, fairseq's own ``lstm`` included:

    1. *Overlap rows indexed by dataset ids.* ``step`` keeps ``group_overlap``, one row per
       sentence of the batch as it was at step 0 (``bsz x groups x groups``), and reads and
       updates it as ``group_overlap[original_batch_idxs]``. ``SequenceGenerator._generate``
       passes as ``original_batch_idxs`` the sentences' dataset ids (``sample["id"]``; only a
       sample without ids gets ``arange(bsz)``), narrowed to the sentences still decoded when
       finished ones leave the batch. Ids are not row numbers: fairseq-generate and
       fairseq-interactive stopped at step 1 with ``IndexError: index 16 is out of bounds for
       dimension 0 with size 4``, and where a batch's ids happened to be ``0..bsz-1`` in some
       order, each sentence was penalised with another sentence's overlap, silently. Fix: at
       step 0 remember the batch's ids in row order; at later steps translate the ids fairseq
       passes into those rows (ids are unique within a batch; for ``arange(bsz)`` this is the
       identity) and call fairseq's ``step`` with them.
    2. *Half the candidates the generator needs.* It returns ``beam`` candidates per sentence
       (``candidate_multiple=1``), but ``SequenceGenerator`` asks every search for ``2 x beam``:
       each beam can end in </s> at most once, so ``2 x beam`` candidates always hold ``beam``
       that continue. With ``beam`` only, candidates that end in </s> are finalized *and* kept
       as live beams, which go on decoding after their </s> and are finalized again later:
       hypotheses with a </s> inside them (fairseq-generate prints them without it, and their
       positional scores no longer match their words). Fix: ``candidate_multiple=2``, the
       setting the class's own docstring gives for its earlier behaviour; the cumulative
       diversity penalty is unchanged.

    Applied to ``__init__`` (bug 2, and the two tensors that bug 1's fix keeps) and ``step``
    (:func:`diverse_beam_search_step`; the search object serves every batch of a run; step 0 of
    each batch starts over, as ``group_overlap`` does); idempotent. fairseq scripts the search
    with its ``SequenceGenerator`` (``torch.jit.script``), so ``step`` is a method TorchScript
    compiles (:func:`fairseq_wean.patching.replace_method_once`): the scripted generator runs
    the fixed search too.
    """
    from fairseq.search import DiverseBeamSearch

    bugs = _DIVERSE_BEAM_SEARCH_BUGS  # filled by the check, which runs once per process

    def check():
        from fairseq.data import Dictionary

        search = DiverseBeamSearch(Dictionary(), num_groups=2, diversity_strength=0.5)
        bugs[1] = hasattr(search, "group_overlap")  # rows indexed by original_batch_idxs
        bugs[2] = getattr(search, "candidate_multiple", 2) < 2
        if not (bugs[1] or bugs[2]):
            return False, ("this fairseq's DiverseBeamSearch keeps no per-sentence overlap and returns "
                           "2 x beam candidates (0.12.2's search)")
        return True, "DiverseBeamSearch has " + " and ".join(
            what for bug, what in ((1, "overlap rows indexed by dataset ids"),
                                   (2, "candidate_multiple=1")) if bugs[bug])

    if not found("compat 9 (--diverse-beam-groups)", check):
        return

    def wrap_init(original_init):
        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            if bugs[2]:
                self.candidate_multiple = max(self.candidate_multiple, 2)
            if bugs[1]:
                # the batch's ids at step 0, sorted, and the rows they were in. Attributes
                # from __init__ on: TorchScript types a module's attributes when it scripts it.
                self._fairseq_wean_batch_ids = torch.empty(0, dtype=torch.long)
                self._fairseq_wean_batch_rows = torch.empty(0, dtype=torch.long)

        __init__.__doc__ = original_init.__doc__
        return __init__

    wrap_once(DiverseBeamSearch, "__init__", wrap_init)
    if bugs[1]:
        replace_method_once(DiverseBeamSearch, "step", diverse_beam_search_step, original_as="_fairseq_step")


# which of fix 9's two bugs this process's DiverseBeamSearch has: {1: bool, 2: bool}
_DIVERSE_BEAM_SEARCH_BUGS = {}


@torch.jit.export
def diverse_beam_search_step(
    self,
    step: int,
    lprobs,
    scores,
    prev_output_tokens: Optional[Tensor] = None,
    original_batch_idxs: Optional[Tensor] = None,
):
    """``DiverseBeamSearch.step`` with the sentences' ids turned into their rows at step 0 (bug 1
    of :func:`install_diverse_beam_search_fixes`), then fairseq's own ``step``.

    A method TorchScript compiles (fairseq scripts its generator with the search in it).
    """
    if original_batch_idxs is not None:
        if step == 0:
            order = original_batch_idxs.argsort()
            self._fairseq_wean_batch_ids = original_batch_idxs.index_select(0, order)
            self._fairseq_wean_batch_rows = order
        else:
            at = torch.searchsorted(self._fairseq_wean_batch_ids, original_batch_idxs)
            original_batch_idxs = self._fairseq_wean_batch_rows.index_select(0, at)
    return self._fairseq_step(step, lprobs, scores, prev_output_tokens, original_batch_idxs)


def install_no_repeat_ngram_on_cpu():
    """``--no-repeat-ngram-size N`` blocks repeated n-grams on CPU (fairseq's was a no-op there).

    fairseq's bug: ``SequenceGenerator`` hands ``NGramRepeatBlock`` the whole ``tokens`` buffer
    (``bsz*beam x max_len+2``, pad after the current step) together with ``step``. The CUDA
    extension reads only the first ``step + 1`` columns; the Python path used on CPU
    (``_no_repeat_ngram``) takes "the last n-1 tokens" from the end of the buffer, i.e. pads,
    which no earlier n-gram starts with: nothing was ever banned and fairseq-generate printed
    ``w27 w27 w27 ...`` with ``--no-repeat-ngram-size 2``. Fix: give it the tokens decoded so
    far, ``tokens[:, :step + 1]`` (the first column is the </s> that starts every hypothesis,
    as fairseq's n-gram positions assume). Idempotent.

    fairseq scripts ``SequenceGenerator`` with its ``NGramRepeatBlock`` (``torch.jit.script``),
    so the fix is a method TorchScript compiles (:func:`no_repeat_ngram_of_decoded_tokens`, through
    :func:`fairseq_wean.patching.replace_method_once`); fairseq's algorithm itself is unchanged
    (kept as ``_fairseq_no_repeat_ngram``). The CUDA extension's path does not go through it.
    """
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    def check():
        # after "a b a" (step 3) the 2-gram "a b" bans b; fairseq's CPU path is handed the whole
        # buffer, pads after the step
        block, pad = NGramRepeatBlock(2, use_extension=False), 1
        buffer = torch.tensor([[2, 5, 6, 5, pad, pad, pad]])
        banned = block._no_repeat_ngram(buffer, torch.zeros(1, 8), 1, 1, 3)[0, 6] == float("-inf")
        if banned:
            return False, "this fairseq's NGramRepeatBlock bans repeated n-grams from the whole token buffer"
        return True, "NGramRepeatBlock's CPU path reads the last n-1 tokens of the buffer (pads): bans nothing"

    if not found("compat 10 (--no-repeat-ngram-size on CPU)", check):
        return
    replace_method_once(NGramRepeatBlock, "_no_repeat_ngram", no_repeat_ngram_of_decoded_tokens,
                        original_as="_fairseq_no_repeat_ngram")


def no_repeat_ngram_of_decoded_tokens(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
    """``NGramRepeatBlock._no_repeat_ngram`` on the tokens decoded so far, ``tokens[:, :step + 1]``
    (see :func:`install_no_repeat_ngram_on_cpu`). A method TorchScript compiles."""
    return self._fairseq_no_repeat_ngram(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def install_generator_never_chooses_bos():
    """Decoding never outputs ``<s>``: it is added to ``SequenceGenerator``'s suppressed tokens.

    fairseq's bug: ``SequenceGenerator`` bans pad at every step (and </s> before ``--min-len``),
    never ``<s>``, with any search (beam search just about never picks it). With ``--sampling``
    (alone, ``--sampling-topk``, ``--sampling-topp``), ``wean_lstm`` and ``word_attn_gated``,
    whose softmax covers the whole dictionary, gave ``<s>`` a small probability and it was
    sampled; fairseq-generate prints the hypothesis without it, so its positional scores no
    longer matched its words. Fix: after ``__init__``, ``<s>`` joins
    ``token_indices_to_suppress``, which ``_generate`` sets to -inf at every step before the
    search step (the mechanism of fairseq's own ``tokens_to_suppress`` argument). Forced
    ``--prefix-size`` tokens and ``--score-reference`` are unaffected.
    """
    import inspect

    from fairseq.sequence_generator import SequenceGenerator

    def check():
        code = inspect.getsource(SequenceGenerator)
        if "token_indices_to_suppress" not in code:
            return False, "this fairseq's SequenceGenerator has no token_indices_to_suppress to add <s> to"
        return True, "SequenceGenerator bans pad (and </s> before --min-len), never <s>"

    if not found("compat 11 (never <s>)", check):
        return

    def wrap_init(original_init):
        def __init__(self, models, tgt_dict, *args, **kwargs):
            original_init(self, models, tgt_dict, *args, **kwargs)
            bos = tgt_dict.bos() if hasattr(tgt_dict, "bos") else None
            if bos is None or bos in (self.eos, self.pad, self.unk):
                return
            bos = torch.tensor([bos], dtype=torch.long)
            suppressed = self.token_indices_to_suppress
            self.token_indices_to_suppress = bos if suppressed is None else torch.cat([suppressed, bos]).unique()

        __init__.__doc__ = original_init.__doc__
        return __init__

    wrap_once(SequenceGenerator, "__init__", wrap_init)


def install_patience_survives_restart():
    """``--patience`` counts the epochs without a better validation score across a restart.

    fairseq's bug: ``fairseq_cli.train.should_stop_early`` keeps the best score and the count
    of epochs since it as attributes of the function, which no checkpoint holds. A run resumed
    from ``checkpoint_last.pt`` starts counting anew, and the first validation after the restart
    becomes the "best" whatever its score: with ``--patience 3``, a run interrupted two epochs
    after its best epoch trained four more epochs instead of one. Fix: ``Trainer.save_checkpoint``
    also writes the counter into the checkpoint's ``extra_state`` (key ``patience``; fairseq
    calls ``should_stop_early`` before it saves, so the counter includes the epoch being saved),
    and ``Trainer.load_checkpoint`` puts it back. Checkpoints without the key load as before.
    """
    from fairseq.trainer import Trainer

    def counter():
        # fairseq-train's module; None outside fairseq-train (nothing counts epochs there)
        train = sys.modules.get("fairseq_cli.train")
        return getattr(train, "should_stop_early", None)

    def wrap_save(original_save):
        def save_checkpoint(self, filename, extra_state):
            stop = counter()
            if stop is not None and getattr(stop, "best", None) is not None:
                extra_state = dict(extra_state, patience={"best": stop.best, "num_runs": stop.num_runs})
            return original_save(self, filename, extra_state)

        save_checkpoint.__doc__ = original_save.__doc__
        return save_checkpoint

    def wrap_load(original_load):
        def load_checkpoint(self, *args, **kwargs):
            extra_state = original_load(self, *args, **kwargs)
            stop = counter()
            saved = (extra_state or {}).get("patience")
            if stop is not None and saved:
                stop.best, stop.num_runs = saved["best"], saved["num_runs"]
            return extra_state

        load_checkpoint.__doc__ = original_load.__doc__
        return load_checkpoint

    same_code("compat 12 (--patience across a restart)", "should_stop_early keeps its counter in "
              "function attributes no checkpoint holds")
    wrap_once(Trainer, "save_checkpoint", wrap_save)
    wrap_once(Trainer, "load_checkpoint", wrap_load)


def install_resume_keeps_the_batches():
    """A run resumed from ``checkpoint_last.pt`` trains on the same batches as the uninterrupted run.

    fairseq's main branch (so ``fairseq-fixed``) builds the training batches in
    ``FairseqTask.get_batch_iterator`` under ``numpy_seed(seed + epoch)``, ``epoch`` being the
    epoch the iterator is created at (fairseq 0.12.2 used ``numpy_seed(seed)``). The seed breaks
    the ties of ``ordered_indices``' sort by length, so it decides which sentences share a batch.
    An uninterrupted run creates its iterator at epoch 1 and reuses it for every epoch; a run
    resumed at epoch 3 created it at epoch 3: other batches, another training (epoch 3 of a resumed
    ``wean_lstm`` ended at validation loss 9.424 against 8.889; with dropout 0 too). Where fairseq
    reuses the iterator (the default; not with ``--rebuild-batches``, nor where the task cannot
    reuse it, when every epoch builds its own batches anyway), the batches are now built under the
    seed of epoch 1 whatever the start epoch; ``dataset.set_epoch`` and the iterator's epoch are
    unchanged. Installed only where fairseq's code seeds with the epoch.
    """
    import inspect

    from fairseq.tasks import FairseqTask

    def seeds_with_the_epoch():
        if "numpy_seed(seed + epoch)" in inspect.getsource(FairseqTask.get_batch_iterator):
            return True, "get_batch_iterator orders the batches under numpy_seed(seed + epoch)"
        return False, "this fairseq's get_batch_iterator does not seed with the epoch (0.12.2: numpy_seed(seed))"

    if not found("compat 13 (resumed run, same batches)", seeds_with_the_epoch):
        return

    def wrap(original):
        def get_batch_iterator(self, dataset, *args, **kwargs):
            bound = inspect.signature(original).bind(self, dataset, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            epoch, seed = a["epoch"], a["seed"]
            reusable = (not a["disable_iterator_cache"] and not a.get("update_epoch_batch_itr", False)
                        and self.can_reuse_epoch_itr(dataset) and not getattr(self.cfg, "rebuild_batches", False))
            if not reusable or epoch == 1 or "ordered_indices" in vars(dataset):
                return original(self, dataset, *args, **kwargs)
            ordered_indices = dataset.ordered_indices

            def ordered_indices_of_epoch_1():
                with data_utils.numpy_seed(seed + 1):
                    return ordered_indices()

            dataset.ordered_indices = ordered_indices_of_epoch_1
            try:
                return original(self, dataset, *args, **kwargs)
            finally:
                del dataset.ordered_indices

        get_batch_iterator.__doc__ = original.__doc__
        return get_batch_iterator

    wrap_once(FairseqTask, "get_batch_iterator", wrap)


HELP_FLAGS = ("-h", "--help")


def install_help_lists_model_options():
    """``fairseq-train --arch X --help`` lists the model's options (and the task's, the criterion's, ...).

    fairseq's bug: ``options.parse_args_and_arch`` parses twice, the second time after adding the
    options of the chosen ``--arch``, ``--task``, ``--criterion``, optimizer, ... . ``--help`` is
    handled by the first parse, which prints the help of the generic parser and exits: no model's
    options are ever listed (fairseq's ``lstm`` no more than the plugin's models), and a user had
    to read the source to find them. Fix: when ``-h``/``--help`` is given, the first parse runs
    without it, and the second, which fairseq's code reaches with every option added, prints the
    help and exits. Nothing changes without ``--help``.
    """
    from fairseq import options

    def wrap(original):
        def parse_args_and_arch(parser, input_args=None, parse_known=False, suppress_defaults=False,
                                modify_parser=None):
            argv = sys.argv[1:] if input_args is None else list(input_args)
            if suppress_defaults or not any(a in HELP_FLAGS for a in argv):
                # (suppress_defaults: fairseq calls this again without it, which comes here)
                return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
            without_help = [a for a in argv if a not in HELP_FLAGS]
            plain = parser.parse_known_args
            calls = []

            def parse_known_args(args=None, namespace=None):  # argparse's parse_args calls it too
                calls.append(args)
                if len(calls) == 1:  # fairseq's first parse: find --arch, --task, ...
                    return plain(without_help, namespace)
                parser.print_help()  # the second: every option is in the parser now
                parser.exit()

            parser.parse_known_args = parse_known_args
            try:
                return original(parser, input_args, parse_known, suppress_defaults, modify_parser)
            finally:
                del parser.parse_known_args

        return parse_args_and_arch

    same_code("compat 14 (--help with --arch)", "parse_args_and_arch answers --help in its first "
              "parse, before the model's options are added")
    wrap_once(options, "parse_args_and_arch", wrap)


def install_transformer_without_fast_path():
    """fairseq 0.12.2's ``transformer`` decodes on torch >= 1.13 (fairseq-generate, validation with
    --eval-bleu): its encoder layer's fast path is turned off.

    fairseq's bug: 0.12.2's ``TransformerEncoderLayerBase.forward`` takes, at inference on a loaded
    checkpoint, a "BetterTransformer" fast path that calls ``torch._transformer_encoder_layer_fwd``
    without the ``mask_type`` argument torch 1.13 added: every fairseq-generate of a transformer
    stops with ``RuntimeError: Mask Type should be defined`` (fairseq's own
    ``test_binaries.py::TestTranslation::test_transformer`` fails there too). Fix: after
    ``__init__``, ``can_use_fastpath = False``, which both the layer and ``TransformerEncoder``
    (it makes the batch batch-first for that path) read, so that the layer takes its standard
    path, the only one fairseq's main branch (fairseq-fixed) has. Applied only where the layer
    calls that op without ``mask_type``.
    """
    import inspect

    from fairseq.modules import transformer_layer

    layer = getattr(transformer_layer, "TransformerEncoderLayerBase", None)

    def check():
        code = inspect.getsource(layer.forward) if layer is not None else ""
        if "_transformer_encoder_layer_fwd(" in code and "mask_type" not in code:
            return True, ("TransformerEncoderLayerBase's fast path calls torch._transformer_encoder_layer_fwd "
                          "without mask_type (torch {})".format(torch.__version__.split("+")[0]))
        return False, "this fairseq's transformer encoder layer has no fast path without mask_type"

    if not found("compat 15 (transformer fast path)", check):
        return

    def wrap_init(original_init):
        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            self.can_use_fastpath = False  # read by the layer and by the encoder (which transposes for it)

        __init__.__doc__ = original_init.__doc__
        return __init__

    wrap_once(layer, "__init__", wrap_init)


def apply():
    install_batches_keep_the_last()
    checkpoint_safety.install()
    install_size_filter_message()
    distributed.install()
    install_build_checks()
    install_binarized_data_checks()
    install_preprocess_input_check()
    install_interactive_input_reader()
    install_diverse_beam_search_fixes()  # --diverse-beam-groups: see its docstring
    install_no_repeat_ngram_on_cpu()  # --no-repeat-ngram-size: see its docstring
    install_generator_never_chooses_bos()  # --sampling output <s>: see its docstring
    install_patience_survives_restart()  # --patience across a restart: see its docstring
    install_resume_keeps_the_batches()  # batches of a resumed run: see its docstring
    install_help_lists_model_options()  # --help with --arch: see its docstring
    install_transformer_without_fast_path()  # fairseq 0.12.2's transformer on torch >= 1.13
