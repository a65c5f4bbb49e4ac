"""fairseq fixes for decoding (fairseq-generate, fairseq-interactive, fairseq-eval-lm, validation's decoding):
fixes 8-11, 15 and 17-19 of :mod:`fairseq_wean.compat`, which applies them (docs/fairseq-patches.md)."""
from typing import Optional

import torch
from torch import Tensor

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.patching import found, note, replace_method_once, same_code, wrap_once


def install_interactive_input_reader():
    """fairseq-interactive's input: every line before a non-UTF-8 line, or before a line in another form
    than the model's source dictionary, gets its hypothesis; then a one-line error names the line.

    fairseq reads the input through a text decoder that decodes ahead of the lines it hands
    out, so a non-UTF-8 byte raises ``UnicodeDecodeError`` before the valid lines before it
    are translated. Lines are decoded one at a time instead (:func:`fairseq_wean.textio.iter_lines`);
    at the bad line, the lines read so far are translated, then a one-line error names the
    file and the line.

    Each line, after ``--tokenizer`` and ``--bpe`` (what ``encode_line`` receives), is checked against the
    source dictionary's form (:func:`fairseq_wean.input_form.form_problem`: sentencepiece or subword-nmt
    pieces given to a model of words, words to a model of pieces without ``--bpe``): fairseq read such a line
    as ``<unk>`` and translated it, exit 0. ``make_batches`` checks its lines before encoding them
    into batches; at the first mismatching line it keeps the lines before it (they are translated and
    printed) and the reader raises the error before reading on. Only patched inside fairseq-interactive.
    """
    import sys

    name = "compat 8 (interactive non-UTF-8 input)"
    interactive = sys.modules.get("fairseq_cli.interactive")
    if interactive is None:
        note(name, False, "applied in fairseq-interactive's own process only (not this one)")
        return
    from fairseq_wean.textio import iter_lines

    # the run's reader: lines handed out before the current buffer, and the error of a line make_batches
    # found in it (raised by the reader, after the lines before it were translated)
    state = {"read": 0, "pending": None}

    def wrap_buffered_read(original):
        def buffered_read(input, buffer_size):
            buffer = []
            state.update(read=0, pending=None)

            def hand_out(lines):
                yield lines
                if state["pending"] is not None:
                    raise state["pending"]
                state["read"] += len(lines)

            try:
                for line in iter_lines(input, "fairseq-interactive --input"):
                    buffer.append(line.strip())
                    if len(buffer) >= buffer_size:
                        yield from hand_out(buffer)
                        buffer = []
            except FairseqWeanError as exc:
                if buffer and exc is not state["pending"]:
                    yield from hand_out(buffer)
                raise
            if buffer:
                yield from hand_out(buffer)

        return buffered_read

    def wrap_make_batches(original):
        def make_batches(lines, cfg, task, max_positions, encode_fn):
            from fairseq_wean.input_form import bpe_name, form_problem, text_problem

            dictionary = task.source_dictionary
            bpe, constraints = bpe_name(cfg), cfg.generation.constraints
            for i, line in enumerate(lines if dictionary is not None else ()):
                source = line.split("\t")[0] if constraints else line
                # encoded here for the check only: fairseq encodes every line again, in its order (a BPE that
                # keeps per-line state, --bpe unk_markers, ends as without the check)
                what = "fairseq-interactive input line {}".format(state["read"] + i + 1)
                problem = text_problem(source, what) or form_problem(dictionary, encode_fn(source), bpe,
                                                                     "fairseq-interactive", what)
                if problem is None:
                    continue
                error = FairseqWeanError(problem)
                if i == 0:
                    raise error
                state["pending"] = error
                del lines[i:]  # main's list: the lines before are translated, printed and counted
                break
            yield from original(lines, cfg, task, max_positions, encode_fn)

        return make_batches

    note(name, True, "fairseq-interactive's buffered_read raises UnicodeDecodeError before decoding the lines "
              "read, and reads a line in another form than the source dictionary as <unk>")
    wrap_once(interactive, "buffered_read", wrap_buffered_read)
    wrap_once(interactive, "make_batches", wrap_make_batches)


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


def install_generate_results_file():
    """fairseq-generate ``--results-path DIR``: ``DIR/generate-SUBSET.txt`` is written through a
    temporary file that replaces it only when the run succeeds, and a link, a non-regular file or a
    hard link (a file with other names) there is refused in one line before any work
    (:func:`fairseq_wean.textio.in_place_problem`).

    fairseq's bug: ``fairseq_cli.generate.main`` opens the file with ``"w"`` before it loads the
    model or the data, through whatever is there: a failed run (a typo in ``--path``, a refused
    checkpoint) left the earlier results truncated to 0 bytes, and a symbolic link planted at that
    name had its target overwritten. Now ``main`` checks the path, then runs fairseq's ``_main``
    into :func:`fairseq_wean.textio.atomic_output`. Without ``--results-path`` nothing changes.
    """
    import fairseq_cli.generate as generate

    same_code("compat 17 (--results-path file)", "fairseq-generate opens DIR/generate-SUBSET.txt with 'w' before "
              "loading anything, through a planted link")

    def wrap_main(original):
        def main(cfg):
            import os
            from argparse import Namespace

            from fairseq_wean.textio import atomic_output, in_place_problem

            if isinstance(cfg, Namespace):
                from fairseq.dataclass.utils import convert_namespace_to_omegaconf

                cfg = convert_namespace_to_omegaconf(cfg)
            folder = cfg.common_eval.results_path
            if folder is None:
                return original(cfg)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "generate-{}.txt".format(cfg.dataset.gen_subset))
            problem = in_place_problem(path)  # a link, pipe, folder, or a hard link (another name's file)
            if problem is not None:
                raise FairseqWeanError("--results-path {}: {} {}: refused (the results file is fairseq-generate's "
                                       "own); remove it or give another folder".format(folder, path, problem))
            run = generate._main
            with atomic_output(path, what="--results-path file") as handle:
                # fairseq's main (its checks) with its output going to the temporary file
                generate._main = lambda c, _stdout: run(c, handle)
                try:
                    with _no_results_path(cfg):
                        return original(cfg)
                finally:
                    generate._main = run

        return main

    wrap_once(generate, "main", wrap_main)


_GENERATE_RUN = []  # the cfg of the fairseq-generate run in progress (its _main), for load_dataset's check


def install_generate_data_checks():
    """fairseq-generate checks its options against the data of ``--gen-subset`` as soon as that is loaded,
    before the model decodes a sentence (fairseq's scorer saw the references only after the whole set was
    decoded): :func:`check_generate_data`; under ``--score-reference`` the summary line says what its score is
    (:data:`SCORED_REFERENCES`). ``_main`` records its cfg; its first
    ``FairseqTask.get_batch_iterator`` (on the loaded subset, before the first batch; tasks override
    ``load_dataset``, not this) runs the check."""
    import fairseq_cli.generate as generate
    from fairseq.tasks import FairseqTask

    def wrap_generate(original):
        def _main(cfg, output_file):
            _GENERATE_RUN.append(cfg)
            _SCORING_REFERENCES.append(bool(cfg.generation.score_reference))
            try:
                return original(cfg, output_file)
            finally:
                _GENERATE_RUN.pop()
                _SCORING_REFERENCES.pop()

        return _main

    def wrap_build_scorer(original):  # the summary line's scorer under --score-reference: see SCORED_REFERENCES
        def build_scorer(*args, **kwargs):
            scorer = original(*args, **kwargs)
            if _SCORING_REFERENCES and _SCORING_REFERENCES[-1] and hasattr(scorer, "result_string"):
                result_string = scorer.result_string
                scorer.result_string = lambda *a, **k: "{} {}".format(result_string(*a, **k), SCORED_REFERENCES)
            return scorer

        return build_scorer

    def wrap_batches(original):
        def get_batch_iterator(self, dataset, *args, **kwargs):
            if _GENERATE_RUN and _GENERATE_RUN[-1] is not None:
                cfg, _GENERATE_RUN[-1] = _GENERATE_RUN[-1], None  # once per run
                check_generate_data(cfg, self, dataset, cfg.dataset.gen_subset)
            return original(self, dataset, *args, **kwargs)

        return get_batch_iterator

    wrap_once(generate, "_main", wrap_generate)
    wrap_once(FairseqTask, "get_batch_iterator", wrap_batches)
    wrap_once(generate.scoring, "build_scorer", wrap_build_scorer)


# fairseq-generate --score-reference: the summary line ("Generate test with beam=5: BLEU4 = 66.77") scores each
# reference against itself as the hypothesis path prints it (an <unk> of the reference is "<<unk>>" on one side,
# "<unk>" on the other: a mismatch), under a beam that was not used. A check of the scoring path (100 where it is
# consistent: the project's tests read it so), not a model's score: the line keeps fairseq's text and says so.
SCORED_REFERENCES = ("(--score-reference: the references scored against themselves through the hypothesis path, each "
                     "<unk> a mismatch; no model output, not a model's score)")
_SCORING_REFERENCES = []


def check_generate_data(cfg, task, dataset, split):
    """Refuse (one line) what the references of ``dataset``, the subset ``split`` (decoded with the target
    dictionary), show to be wrong, before decoding: ``--post-process`` against their pieces
    (:func:`pieces.check_post_process`: a rule they do not have, a gluing rule on words), and for
    ``--scoring rouge`` the ROUGE unit
    (:func:`metrics.check_rouge_unit`) and the bound on a line's length (``metrics.check_line_lengths``),
    the data checks the scorer makes on the references after decoding."""
    from fairseq_wean.scoring import metrics, pieces

    targets = getattr(dataset, "tgt", None)
    if targets is None or task.target_dictionary is None:
        return  # no references: nothing to check, nothing scored
    problem = prefix_size_problem(cfg.generation.prefix_size, getattr(dataset, "tgt_sizes", None), split)
    if problem is not None:
        raise FairseqWeanError(problem)
    if getattr(targets, "supports_prefetch", False):  # IndexedCachedDataset holds only prefetched items
        targets.prefetch(range(len(targets)))
    raw = [task.target_dictionary.string(targets[i]) for i in range(len(targets))]
    symbol = cfg.common_eval.post_process
    what = "the references of --gen-subset {} (and the target dictionary)".format(split)
    pieces.check_post_process([(what, pieces.with_vocabulary(raw, task.target_dictionary), None)], symbol,
                              "--post-process", pieces.FAIRSEQ_RULES)
    if getattr(cfg.scoring, "_name", None) == "rouge":
        references = pieces.apply(raw, symbol)
        chars = bool(getattr(cfg.scoring, "rouge_chars", False))
        metrics.check_rouge_unit([references], chars)
        metrics.check_line_lengths("rougeL", [], [references], chars)


def prefix_size_problem(prefix_size, target_sizes, split):
    """--prefix-size N forces the first N tokens of each reference (fairseq-generate's sample["target"][:, :N]):
    a reference of at most N tokens, its </s> included, is forced whole, and its hypothesis is that reference (a
    1-epoch model scored BLEU 66.77 with --prefix-size 100). Such a prefix is refused before decoding; a shorter
    one stays fairseq's (the forced words count in the score). The one line, or None."""
    if not prefix_size or target_sizes is None or not len(target_sizes):
        return None
    whole = [int(n) for n in target_sizes if int(n) <= prefix_size]
    if not whole:
        return None
    return ("--prefix-size {} forces the whole reference (with its </s>) of {} of the {} sentences of --gen-subset {} "
            "(the shortest has {} tokens): their hypotheses would be the references themselves, scored as output; "
            "give a --prefix-size below {}".format(prefix_size, len(whole), len(target_sizes), split, min(whole),
                                                    min(whole)))


class _no_results_path:
    """``cfg.common_eval.results_path`` set to None for the block (fairseq's main then writes to
    what its ``_main`` is given), restored after."""

    def __init__(self, cfg):
        self.cfg = cfg

    def __enter__(self):
        from omegaconf import open_dict

        self.saved = self.cfg.common_eval.results_path
        with open_dict(self.cfg):
            self.cfg.common_eval.results_path = None

    def __exit__(self, *exc):
        from omegaconf import open_dict

        with open_dict(self.cfg):
            self.cfg.common_eval.results_path = self.saved
        return False


MIN_LEN_ASSERTION = "min_len cannot be larger than max_len"


def install_min_len_checks():
    """``--min-len`` above the longest output fairseq allows: one line, not an assertion traceback.

    fairseq's bug: ``SequenceGenerator._generate`` asserts ``min_len <= max_len`` per batch, where
    ``max_len = min(max_len_a * source length + max_len_b, model's max positions - 1)``. The
    parse-time rule (:func:`fairseq_wean.patching.min_len_problem`) refuses what the options alone
    decide (``--max-len-a 0``); here, where the generator is built (before any sentence is decoded),
    a ``--min-len`` above the model's own maximum is refused, and a batch whose sources are too short
    for it (``--max-len-a`` > 0) ends in one line naming the options instead of the assertion.
    """
    from fairseq.sequence_generator import SequenceGenerator
    from fairseq.tasks import FairseqTask

    same_code("compat 18 (--min-len above the maximum length)", "SequenceGenerator asserts min_len <= max_len "
              "after the model is loaded (an assertion traceback)")

    def wrap_init(original_init):
        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            longest = getattr(self, "max_len", None)
            if isinstance(longest, int) and isinstance(self.min_len, int) and self.min_len > longest - 1:
                raise FairseqWeanError("--min-len {} is above the longest output this model can decode ({} tokens, "
                                       "its max positions): lower --min-len".format(self.min_len, longest - 1))
            problem = generator_problem(self)
            if problem is not None:
                raise FairseqWeanError(problem)

        __init__.__doc__ = original_init.__doc__
        return __init__

    def wrap_inference_step(original):
        def inference_step(self, generator, models, sample, *args, **kwargs):
            try:
                return original(self, generator, models, sample, *args, **kwargs)
            except AssertionError as exc:
                if MIN_LEN_ASSERTION not in str(exc):
                    raise
                raise FairseqWeanError(
                    "--min-len {} is above the longest output --max-len-a {} x source length + --max-len-b {} "
                    "allows for a sentence of this batch: lower --min-len or raise --max-len-a/--max-len-b".format(
                        getattr(generator, "min_len", "?"), getattr(generator, "max_len_a", "?"),
                        getattr(generator, "max_len_b", "?"))) from None

        return inference_step

    wrap_once(SequenceGenerator, "__init__", wrap_init)
    wrap_once(FairseqTask, "inference_step", wrap_inference_step)
    install_model_overrides_check()


def generator_problem(generator):
    """What a built ``SequenceGenerator`` (fairseq-generate, -interactive, the hub, validation's generator of
    --eval-bleu-args: each builds it before the first batch) cannot decode, from what only the model and
    dictionary tell: --sampling-topk above the target dictionary (``topk``: a RuntimeError at the first step)."""
    topk, words = getattr(generator.search, "sampling_topk", -1), generator.vocab_size
    if getattr(generator.search, "sampling_topp", -1) <= 0 and isinstance(topk, int) and topk > words:
        return ("--sampling-topk {} is above the size of the target dictionary ({} entries): give at most {} "
                "(or -1: the whole dictionary)".format(topk, words, words))
    return None


# fairseq-validate passes its whole command line as the overrides (validate.py: vars(override_args)), so no key
# there can be told from --model-overrides': not checked
MODEL_OVERRIDES_COMMANDS = ("generate", "interactive", "eval_lm")


def install_model_overrides_check():
    """--model-overrides keys that the loaded checkpoint's configuration does not have are refused in one line
    after it is loaded, before any sentence is decoded (fairseq set them nowhere, silently: a typo such as
    ``{'dropuot': 0.3}`` did nothing). The rule and its message are the hub's (``hub.unknown_keyword_problem`` on
    ``hub.pretrained_keywords``), in the commands that read --model-overrides."""
    from fairseq import checkpoint_utils

    def wrap_load(original):
        def load_model_ensemble_and_task(filenames, arg_overrides=None, *args, **kwargs):
            loaded = original(filenames, arg_overrides, *args, **kwargs)
            from fairseq_wean.patching import running_command

            if arg_overrides and running_command() in MODEL_OVERRIDES_COMMANDS:
                from fairseq_wean.hub import pretrained_keywords, unknown_keyword_problem

                problem = unknown_keyword_problem(arg_overrides, pretrained_keywords(loaded[1]), None)
                if problem is not None:
                    raise FairseqWeanError("--model-overrides, for the checkpoint {}: {}".format(filenames[0], problem))
            return loaded

        return load_model_ensemble_and_task

    wrap_once(checkpoint_utils, "load_model_ensemble_and_task", wrap_load)


def install_eval_lm_subword_nmt():
    """fairseq-eval-lm ``--post-process subword_nmt`` (the value of a bare ``--post-process``) joins the
    subword-nmt pieces it names.

    fairseq's bug: ``fairseq_cli.eval_lm.eval_lm`` takes the continuation marker as
    ``post_process.rstrip()``, right for ``'@@ '`` (``@@``) but ``subword_nmt`` itself for ``subword_nmt``:
    no piece ends with that, so every piece counted as a word, and the "word-level" loss and perplexity
    it prints were token-level ones under the word-level name, exit 0. ``subword_nmt`` is passed on as
    ``'@@ '``, the marker it stands for everywhere else in fairseq (``data_utils.post_process``).
    Patched on the module and on ``__main__`` when fairseq-eval-lm runs as ``python -m fairseq_cli.eval_lm``.
    """
    import os
    import sys

    import fairseq_cli.eval_lm as eval_lm_module

    same_code("compat 19 (eval-lm --post-process subword_nmt)", "fairseq-eval-lm took 'subword_nmt' itself "
              "for the piece marker: no piece was joined, token-level scores printed as word-level ones")

    def wrap_eval_lm(original):
        def eval_lm(*args, **kwargs):
            if kwargs.get("post_process") == "subword_nmt":
                kwargs["post_process"] = "@@ "
            return original(*args, **kwargs)

        return eval_lm

    main = sys.modules.get("__main__")
    owners = [eval_lm_module] + ([main] if callable(getattr(main, "eval_lm", None)) and os.path.abspath(
        getattr(main, "__file__", "") or "") == os.path.abspath(eval_lm_module.__file__) else [])
    for owner in owners:
        wrap_once(owner, "eval_lm", wrap_eval_lm)
