"""``--replace-unk`` that works: each ``<unk>`` of a hypothesis becomes the source word it attends to most.

The rule (fairseq's, from Luong, Sutskever, Le, Vinyals and Zaremba, "Addressing the Rare Word
Problem in Neural Machine Translation", ACL 2015, ACL Anthology P15-1002): target word t
is aligned to the source word s with the largest attention weight (fairseq's
``utils.extract_hard_alignment``: the argmax over the non-padding, non-``</s>`` source
positions); an ``<unk>`` at t is replaced by source word s, or by its translation when
``--replace-unk DICT`` names an alignment dictionary. All three models return their attention in
input order (``B x T x S``); for ``core_copy`` it is the copy distribution. The rule has one home,
:func:`replace_unk_words`; ``examples/evaluate_system.py`` applies it to generate logs.

What fairseq-fixed does instead, and what this module changes when the plugin is imported:

* ``fairseq-generate`` asserts a raw-text dataset (``--dataset-impl raw``) for ``--replace-unk``,
  because the source *words* behind ``<unk>`` are not in binarized data (the ``S-`` line holds
  ``<unk>`` itself). With the plugin, binarized data is accepted when
  ``--replace-unk-source FILE`` names the source text given to fairseq-preprocess for
  ``--gen-subset`` (line i = sentence id i); each line must have as many words as the binarized
  sentence. A raw dataset keeps fairseq's source (``get_original_text``).
* ``fairseq-interactive --replace-unk``: fairseq's ``S-`` string is the dictionary's string
  (``<unk>`` again); the words come from the input line itself (after ``--tokenizer``/``--bpe``).
* a bare ``--replace-unk`` reaches fairseq as the string ``"@@ "``, opened as a dictionary file:
  it means "no dictionary" again.
* ``fairseq.utils.replace_unk`` indexes the alignment as ``alignment[i]`` although it is a list of
  (source, target) pairs (or an empty tensor when ``--print-alignment`` is not given): replaced by
  the rule above; the alignment is computed from the hypothesis' attention when fairseq did not.

How the words reach the replacement: ``FairseqTask.inference_step`` is wrapped so that every
hypothesis' ``"alignment"`` becomes a :class:`SourceAlignment`, a list of (source word, target
word) pairs (printed unchanged by ``--print-alignment``) that also carries its sentence's source
words. fairseq passes ``hypo["alignment"]`` to ``utils.post_process_prediction`` for every
hypothesis, so nbest > 1, batches, ``--buffer-size`` and repeated identical sources need no
bookkeeping of order. The same object tells the ``unk_markers`` BPE (:mod:`fairseq_wean.hub`)
which source a hypothesis' ``<unk-N>`` markers point into. Nothing changes unless ``--replace-unk``
or ``--bpe unk_markers`` is in use.
"""
import argparse
import os
import stat

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import add_generation_argument, replace_once, same_code, wrap_once

_STATE = {
    "active": False,  # a run that needs per-hypothesis source words (replace-unk or unk_markers)
    "align_dict": None,  # fairseq-generate on binarized data: the dictionary fairseq was not given
    "source_file": None,  # --replace-unk-source
    "generate_sources": None,  # fairseq-generate: {sentence id: words} (--replace-unk-source)
    "interactive_sources": None,  # fairseq-interactive: words of the current buffer's lines
    "batch_sources": None,  # fairseq-interactive: words of the rows of the batch being decoded
    "bpe_input": None,  # the unk_markers BPE's last input (its source words)
    "current_source": None,  # source words of the hypothesis post-processed last
}


class SourceAlignment(list):
    """(source word index, target word index) pairs of one hypothesis, plus its source words."""

    def __init__(self, pairs, source_words, align_dict=None):
        super().__init__(pairs)
        self.source_words = source_words
        self.align_dict = align_dict


def replace_unk_words(hypothesis, source, alignment, unk="<unk>", align_dict=None):
    """Each ``unk`` of ``hypothesis`` (list of words) becomes the source word aligned to it.

    ``alignment``: (source word index, target word index) pairs (``--print-alignment``'s ``A-``
    line, fairseq's ``extract_hard_alignment``). A word with no pair, or a pair past the end of
    ``source``, stays ``unk``. ``align_dict`` ({source word: target word}) translates the word.
    Returns a new list.
    """
    by_target = {t: s for s, t in alignment}
    out = list(hypothesis)
    for i, word in enumerate(out):
        s = by_target.get(i)
        if word == unk and s is not None and 0 <= s < len(source):
            out[i] = (align_dict or {}).get(source[s], source[s])
    return out


def attention_alignment(attention, src_tokens, hypo_tokens, pad, eos, source_first=True):
    """Hard alignment pairs from a hypothesis' attention, as ``--print-alignment`` prints them.

    attention: ``S x T`` (SequenceGenerator's ``hypo["attention"]``, source positions in the
    order of ``src_tokens``, padding included), or ``T' x S`` with ``source_first=False``
    (SequenceScorer's, i.e. ``--score-reference``: the decoder's own ``T x S`` rows, as many as the
    batch's longest reference; the first ``T`` are this reference's); src_tokens: ``S`` (one padded
    row); hypo_tokens: ``T`` (ends with ``</s>``). Returns [(source word, target word)], argmax over
    real source words.
    """
    from fairseq import utils

    if attention is None or attention.numel() == 0:
        return []
    by_target = attention.t() if source_first else attention[: len(hypo_tokens)]
    return utils.extract_hard_alignment(by_target.float(), src_tokens, hypo_tokens, pad, eos)


def _fixed_replace_unk(hypo_str, src_str, alignment, align_dict, unk):
    """``fairseq.utils.replace_unk`` with the same arguments, on (source, target) pairs."""
    source = getattr(alignment, "source_words", None)
    source = src_str.split() if source is None else source
    pairs = [tuple(p) for p in alignment] if alignment is not None and len(alignment) else []
    return " ".join(replace_unk_words(hypo_str.split(), source, pairs, unk, align_dict))


def _check_source(words, src_tokens, src_dict, sample_id):
    """The --replace-unk-source line of a sentence is its binarized source: as many words, and each
    word that the dictionary knows has that word's id (a line of another sentence, or reordered
    words, would put wrong words into the output)."""
    pad, eos, unk = src_dict.pad(), src_dict.eos(), src_dict.unk()
    ids = [int(t) for t in src_tokens if int(t) not in (pad, eos)]
    hint = "name the source text file given to fairseq-preprocess for this --gen-subset"
    if len(words) != len(ids):
        raise FairseqWeanError("--replace-unk-source line {} has {} words but sentence {} of the binarized data "
                               "has {}: {}".format(sample_id + 1, len(words), sample_id, len(ids), hint))
    for j, (word, i) in enumerate(zip(words, ids)):
        if i != unk and src_dict.index(word) != i:
            raise FairseqWeanError("--replace-unk-source line {}, word {} is {!r}, but sentence {} of the binarized "
                                   "data has {!r} there: {}".format(sample_id + 1, j + 1, word, sample_id,
                                                                   src_dict[i], hint))


def _wrapped_inference_step(original):
    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        hypos = original(self, generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        if not _STATE["active"] or "src_tokens" not in sample.get("net_input", {}):
            return hypos
        src_tokens = sample["net_input"]["src_tokens"]
        dictionary = self.target_dictionary
        pad, eos = dictionary.pad(), dictionary.eos()
        if _STATE["batch_sources"] is not None:  # fairseq-interactive
            sources = _STATE["batch_sources"]
        elif _STATE["generate_sources"] is not None and "id" in sample:  # fairseq-generate
            subset = _STATE.pop("gen_subset", None)  # checked once per run
            if subset is not None and len(_STATE["generate_sources"]) != len(self.dataset(subset)):
                raise FairseqWeanError(
                    "--replace-unk-source has {} lines but --gen-subset {} has {} sentences: name the source text "
                    "file given to fairseq-preprocess for it".format(len(_STATE["generate_sources"]), subset,
                                                                    len(self.dataset(subset))))
            sources = []
            for i, sample_id in enumerate(sample["id"].tolist()):
                words = _STATE["generate_sources"].get(sample_id)
                if words is None:
                    raise FairseqWeanError(
                        "--replace-unk-source has no line {} (sentence id {}): name the source text file "
                        "given to fairseq-preprocess for this --gen-subset".format(sample_id + 1, sample_id))
                _check_source(words, src_tokens[i], self.source_dictionary, sample_id)
                sources.append(words)
        else:  # a raw dataset: fairseq's src_str is the original text
            sources = [None] * len(hypos)
        from fairseq.sequence_scorer import SequenceScorer

        # --score-reference: the scorer's attention is the decoder's (target x source)
        source_first = not isinstance(generator, SequenceScorer)
        for i, sentence_hypos in enumerate(hypos):
            for hypo in sentence_hypos:
                pairs = hypo.get("alignment")
                if pairs is None or not isinstance(pairs, list):
                    pairs = attention_alignment(hypo.get("attention"), src_tokens[i], hypo["tokens"], pad, eos,
                                                source_first=source_first)
                hypo["alignment"] = SourceAlignment(pairs, sources[i], _STATE["align_dict"])
        return hypos

    return inference_step


def _wrapped_post_process_prediction(original):
    def post_process_prediction(hypo_tokens, src_str, alignment, align_dict, tgt_dict, remove_bpe=None,
                                extra_symbols_to_ignore=None):
        if isinstance(alignment, SourceAlignment):
            # fairseq calls decode_fn on this hypothesis' string right after: the unk_markers BPE
            # reads (and clears) the source words from here.
            _STATE["current_source"] = alignment.source_words
            if align_dict is None:
                align_dict = alignment.align_dict
        return original(hypo_tokens, src_str, alignment, align_dict, tgt_dict, remove_bpe=remove_bpe,
                        extra_symbols_to_ignore=extra_symbols_to_ignore)

    return post_process_prediction


def _wrapped_generate_main(original):
    def main(cfg):
        from argparse import Namespace

        if isinstance(cfg, Namespace):
            from fairseq.dataclass.utils import convert_namespace_to_omegaconf

            cfg = convert_namespace_to_omegaconf(cfg)
        replace_unk = cfg.generation.replace_unk
        # per run: the --replace-unk-source the parser just stored is this run's (and consumed,
        # so a later run in the same process without the option does not inherit it), and the
        # hypotheses need source words only when this run replaces
        source_file, _STATE["source_file"] = _STATE["source_file"], None
        _STATE["generate_sources"] = _STATE["align_dict"] = None
        _STATE["active"] = replace_unk is not None
        if replace_unk is not None and cfg.dataset.dataset_impl != "raw":
            from fairseq import utils

            from fairseq_wean.textio import read_lines

            if source_file is None:
                raise FairseqWeanError(
                    "--replace-unk on binarized data needs the source words, which fairseq-preprocess "
                    "did not keep: add --replace-unk-source FILE (the source text given to "
                    "fairseq-preprocess for --gen-subset {})".format(cfg.dataset.gen_subset))
            _STATE["generate_sources"] = {i: line.split()
                                          for i, line in enumerate(read_lines(source_file, "--replace-unk-source"))}
            _STATE["align_dict"] = utils.load_align_dict(replace_unk)
            _STATE["gen_subset"] = cfg.dataset.gen_subset
            # fairseq's own path (raw dataset only) is bypassed; post_process_prediction gets the
            # dictionary from the SourceAlignment instead.
            cfg.generation.replace_unk = None
        elif source_file is not None and replace_unk is None:
            raise FairseqWeanError("--replace-unk-source is only used with --replace-unk: add --replace-unk")
        return original(cfg)

    return main


def _wrapped_make_batches(original):
    def make_batches(lines, cfg, task, max_positions, encode_fn):
        if cfg.generation.replace_unk is not None:
            _STATE["active"] = True
        for batch in original(lines, cfg, task, max_positions, encode_fn):
            sources = _STATE["interactive_sources"]
            _STATE["batch_sources"] = None if sources is None else [sources[i] for i in batch.ids.tolist()]
            yield batch
        _STATE["batch_sources"] = None

    return make_batches


def _wrapped_interactive_tokens(original):
    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        sources = []

        def recording_encode_fn(line):
            _STATE["bpe_input"] = None
            encoded = encode_fn(line)
            # with --bpe unk_markers the source words are the BPE's input, not its marked output
            words = _STATE["bpe_input"] if _STATE["bpe_input"] is not None else encoded
            sources.append(words.split())
            return encoded

        result = original(self, lines, recording_encode_fn)
        _STATE["interactive_sources"] = sources
        return result

    return get_interactive_tokens_and_lengths


class _ReplaceUnkSource(argparse.Action):
    # fairseq's GenerationConfig has no field for it: the value is kept here, not in the config
    def __call__(self, parser, namespace, values, option_string=None):
        _STATE["source_file"] = values


def _wrapped_load_align_dict(original):
    def load_align_dict(replace_unk):
        # fairseq-fixed's GenerationConfig gives a bare --replace-unk the value "@@ " (its
        # argparse_const), which fairseq then opens as a dictionary file: a bare flag means none.
        if replace_unk == "@@ ":
            replace_unk = True
        if (isinstance(replace_unk, str) and os.path.exists(replace_unk)
                and not stat.S_ISREG(os.stat(replace_unk).st_mode)):
            # a named pipe would block the run before its first sentence (A35); a folder: fairseq's traceback
            raise FairseqWeanError("--replace-unk {} is not a regular file (a folder, named pipe, socket or device): "
                                   "give the alignment dictionary's file, or a bare --replace-unk".format(replace_unk))
        return original(replace_unk)

    return load_align_dict


def install():
    """Install the fixes (called when the plugin is imported); see the module docstring."""
    import fairseq_cli.generate
    import fairseq_cli.interactive
    from fairseq import utils
    from fairseq.tasks import FairseqTask

    same_code("unk_replacement (--replace-unk)", "fairseq's replace_unk splits the source text on "
              "spaces and reads the generator's alignment, which is wrong on binarized data")
    replace_once(utils, "replace_unk", _fixed_replace_unk)
    wrap_once(utils, "load_align_dict", _wrapped_load_align_dict)
    wrap_once(utils, "post_process_prediction", _wrapped_post_process_prediction)
    wrap_once(FairseqTask, "inference_step", _wrapped_inference_step)
    wrap_once(FairseqTask, "get_interactive_tokens_and_lengths", _wrapped_interactive_tokens)
    wrap_once(fairseq_cli.generate, "main", _wrapped_generate_main)
    wrap_once(fairseq_cli.interactive, "make_batches", _wrapped_make_batches)
    add_generation_argument(
        "--replace-unk-source", action=_ReplaceUnkSource, metavar="FILE",
        not_interactive="fairseq-interactive --replace-unk takes the source words from its input; "
                        "--replace-unk-source is for fairseq-generate on binarized data",
        help="fairseq-generate --replace-unk on binarized data (fairseq-wean plugin): the source text "
             "given to fairseq-preprocess for --gen-subset; <unk> is replaced by the word of this file "
             "that the model attends to most")


def mark_active():
    """A run needs per-hypothesis source words (called by the unk_markers BPE when it is built)."""
    _STATE["active"] = True


def take_current_source():
    """Source words of the hypothesis fairseq post-processed last, once (None afterwards)."""
    words, _STATE["current_source"] = _STATE["current_source"], None
    return words


def record_bpe_input(line):
    _STATE["bpe_input"] = line

