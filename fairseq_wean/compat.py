"""Two fixes to fairseq behaviour, applied once when the plugin is imported.

Both happen at import because ``--user-dir`` is the only hook fairseq gives a plugin in
every process it starts (fairseq-train and its spawned workers, fairseq-generate,
fairseq-interactive); neither touches a device.

1. Every sentence is decoded and validated. fairseq's main branch (so ``fairseq-fixed``)
   ends ``data_utils.batch_by_size`` with ``if bsz_mult > 1 and len(b[-1]) % bsz_mult != 0:
   b = b[:-1]``: the last batch is silently dropped unless its size is a multiple of
   ``--required-batch-size-multiple`` (default 8); fairseq-generate printed 352 hypotheses for
   TurkCorpus's 359 test sentences. We restore fairseq 0.12.2's behaviour: the indices that
   no batch covers become one last, smaller batch. This applies to training too, where it
   only means that no training example is skipped either.

2. Checkpoints load under ``torch.load(weights_only=True)`` (torch >= 2.6). See
   :mod:`fairseq_wean.checkpoint_safety`.

3. Distributed training runs on CPU (gloo) with fairseq's default ``--ddp-backend
   pytorch_ddp`` and under torchrun. See :mod:`fairseq_wean.distributed`.
"""
import numpy as np
from fairseq.data import data_utils

from fairseq_wean import checkpoint_safety, distributed, errors

_original_batch_by_size = data_utils.batch_by_size


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

    Applied by wrapping ``step`` (the search object serves every batch of a run; step 0 of
    each batch starts over, as ``group_overlap`` does); idempotent.
    """
    import torch
    from fairseq.search import DiverseBeamSearch

    if getattr(DiverseBeamSearch.step, "_fairseq_wean_fixed", False):
        return
    original_step = DiverseBeamSearch.step

    def step(self, step, lprobs, scores, prev_output_tokens=None, original_batch_idxs=None):
        self.candidate_multiple = max(self.candidate_multiple, 2)  # bug 2
        if original_batch_idxs is not None:  # bug 1
            if step == 0:
                ids = original_batch_idxs.clone()
                order = ids.argsort()
                self._fairseq_wean_batch_ids = (ids[order], order)  # sorted ids, their rows
            else:
                sorted_ids, rows = self._fairseq_wean_batch_ids
                original_batch_idxs = rows[torch.searchsorted(sorted_ids, original_batch_idxs)]
        return original_step(self, step, lprobs, scores, prev_output_tokens, original_batch_idxs)

    step._fairseq_wean_fixed = True
    step.__doc__ = original_step.__doc__
    DiverseBeamSearch.step = step


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
    """
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    if getattr(NGramRepeatBlock._no_repeat_ngram, "_fairseq_wean_fixed", False):
        return
    original = NGramRepeatBlock._no_repeat_ngram

    def _no_repeat_ngram(self, tokens, lprobs, bsz, beam_size, step):
        return original(self, tokens[:, : step + 1], lprobs, bsz, beam_size, step)

    _no_repeat_ngram._fairseq_wean_fixed = True
    NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram


def apply():
    if data_utils.batch_by_size is not batch_by_size_keeping_last:
        data_utils.batch_by_size = batch_by_size_keeping_last
    checkpoint_safety.install()
    errors.install_size_filter_message()  # over-long sentences: one line, see errors.py
    distributed.install()
    install_diverse_beam_search_fixes()  # --diverse-beam-groups: see its docstring
    install_no_repeat_ngram_on_cpu()  # --no-repeat-ngram-size: see its docstring
