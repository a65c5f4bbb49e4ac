"""U, the frequent words of CoRe's restricted vocabulary V_G = A(X) u U (Cao et al. 2017, eq. 8).

U is ``--core-num-frequent`` words plus ``<unk>`` (the paper's footnote 1) and ``</s>``, never a
position marker ``<unk-N>`` (markers are copy-only). Two ways to rank the words
(``--core-frequent-from``, see :mod:`fairseq_wean.models.core_copy`):

* ``joined``: :func:`frequent_word_mask`, the joined dictionary's order (fairseq-preprocess sorts
  it by source + target count), recomputed from the dictionary whenever the model is built;
* ``target``: :func:`count_training_words` counts the binarized training target side when
  training starts, and :func:`frequent_mask_from_counts` takes the most frequent; that U is saved
  in the checkpoint.

The model keeps U as a ``|V|`` bool mask (``CoreDecoder.frequent_mask``) and forms V_G per batch
(``CoreDecoder.restricted_vocabulary``).

WEAN's candidate words (Ma et al. 2018, section 2.4; ``--wean-candidates``, see
:mod:`fairseq_wean.models.wean_lstm`) are counted and masked the same way: every word of one side
of the training data, plus unk and eos.
"""
import itertools
import logging
import os

import torch
from fairseq import utils
from fairseq.data import data_utils, indexed_dataset

from fairseq_wean.data.markers import marker_ids
from fairseq_wean.errors import FairseqWeanError

logger = logging.getLogger(__name__)


def vocabulary_mask(dictionary, words):
    """A ``|V|`` bool mask of the ids ``words`` plus unk and eos (always in), never a position
    marker (markers are copy-only): the one rule of U and of WEAN's candidate sets."""
    mask = torch.zeros(len(dictionary), dtype=torch.bool)
    mask[words] = True
    mask[marker_ids(dictionary)] = False
    mask[dictionary.unk()] = True
    mask[dictionary.eos()] = True
    return mask


def frequent_word_mask(dictionary, num_frequent):
    """U as a ``|V|`` bool mask: ids ``nspecial .. nspecial+N`` plus unk and eos, no markers."""
    first = dictionary.nspecial
    return vocabulary_mask(dictionary, torch.arange(first, min(first + num_frequent, len(dictionary))))


def count_training_words(args, task, dictionary, side, option, instead):
    """Word counts (``|V|`` long tensor) of one side (``"source"`` or ``"target"``) of the
    binarized training data, for the model option ``option`` (named in the errors, with the
    option to use ``instead``).

    Reads ``DATA/{train}.{src}-{tgt}.{lang}`` (or ``{tgt}-{src}``), with fairseq's shards
    ``train1``, ``train2``, ... and every ``:``-separated data directory, as the translation task
    would load them. DATA and the languages come from the task (``task.cfg``), the split from
    ``--train-subset``.
    """
    cfg = getattr(task, "cfg", None)
    data = getattr(cfg, "data", None) or getattr(args, "data", None)
    src = getattr(cfg, "source_lang", None) or getattr(args, "source_lang", None)
    tgt = getattr(cfg, "target_lang", None) or getattr(args, "target_lang", None)
    split = getattr(args, "train_subset", None) or "train"
    if not (data and src and tgt):
        raise FairseqWeanError(
            "{} needs the translation task's data directory and language pair (--source-lang, "
            "--target-lang) to count the training {}s; or use {}".format(option, side, instead)
        )
    lang = src if side == "source" else tgt
    counts = torch.zeros(len(dictionary), dtype=torch.long)
    read = []
    for data_path in utils.split_paths(data):
        for k in itertools.count():
            split_k = split + (str(k) if k > 0 else "")
            prefixes = [os.path.join(data_path, "{}.{}-{}.{}".format(split_k, a, b, lang))
                        for a, b in ((src, tgt), (tgt, src))]
            prefix = next((p for p in prefixes if indexed_dataset.dataset_exists(p, impl=None)), None)
            if prefix is None:
                break
            dataset = data_utils.load_indexed_dataset(prefix, dictionary)
            for start in range(0, len(dataset), 10000):  # one bincount per 10k sentences
                ids = torch.cat([dataset[i] for i in range(start, min(start + 10000, len(dataset)))])
                if ids.numel() and int(ids.max()) >= len(dictionary):
                    raise FairseqWeanError(
                        "{}: token id {} is outside the dictionary ({} words): binarize the data "
                        "again with this dictionary".format(prefix, int(ids.max()), len(dictionary)))
                counts += torch.bincount(ids, minlength=len(dictionary))
            read.append(prefix)
    if not read:
        raise FairseqWeanError(
            "{}: no binarized training {} side {}.{}-{}.{}(.bin/.idx) in {}; binarize the training data "
            "with fairseq-preprocess --trainpref, or use {}".format(option, side, split, src, tgt, lang, data, instead)
        )
    logger.info("%s: counted %d %s tokens in %s", option, int(counts.sum()), side, ", ".join(read))
    return counts


def frequent_mask_from_counts(dictionary, counts, num_frequent):
    """U as a ``|V|`` bool mask: the ``num_frequent`` words with the highest counts, plus unk and eos.

    Ties go to the lower id (the joined dictionary's order). Special symbols and position
    markers never count (markers are copy-only), nor do words with count 0.
    """
    eligible = counts.gt(0)
    eligible[: dictionary.nspecial] = False
    eligible[marker_ids(dictionary)] = False
    key = torch.where(eligible, counts, counts.new_full((), -1))
    order = torch.sort(key, descending=True, stable=True).indices[:num_frequent]
    return vocabulary_mask(dictionary, order[eligible[order]])
