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


def apply():
    if data_utils.batch_by_size is not batch_by_size_keeping_last:
        data_utils.batch_by_size = batch_by_size_keeping_last
    checkpoint_safety.install()
    errors.install_size_filter_message()  # over-long sentences: one line, see errors.py
    distributed.install()
