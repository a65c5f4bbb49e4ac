"""Incremental decoding equals the teacher-forced pass for every model and every option that
touches the decoder's state (issue 54: a mutant that attends to the first layer's s_t-1 instead of
the top layer's survived, because --core-attend-previous-state ran with one layer only).

``STATE_VARIANTS`` enumerates, per model, every value of every choice/flag option its ``add_args``
declares, one and two decoder layers, and every registered preset (its depth kept, its widths
made small): ``test_the_variants_cover_every_option_value_and_preset`` fails when a model gains an
option value or a preset that no variant runs, unless ``NOT_DECODER_STATE`` says why it cannot
change the decoder's state. Each variant is checked three ways:

* step by step through ``incremental_state`` against the full teacher-forced pass (eval mode), as
  given and with one and with two decoder layers;
* a batched beam search whose batch reorders and shrinks, each hypothesis's positional scores
  against a teacher-forced pass of its words (a cache entry left out of the reorder shows here);
* under CPU autocast, the recurrences' precision (tests/test_recurrent_precision.py).
"""
import argparse
import contextlib

import pytest
import torch
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import fairseq_wean  # noqa: F401  (registers the models)
from conftest import FakeTask, make_dictionary, random_batch
from model_checks import (assert_beam_scores_equal_teacher_forced_scores, assert_incremental_equals_full,
                          beam_search_recording_reorders, scale_parameters)
from test_numerics import N_WORDS, one_thread  # noqa: F401  (one_thread: autouse fixture)

MODELS = ("wean_lstm", "core_copy", "word_attn_gated")
# small widths; every preset keeps its depth (layers are not given here)
SIZES = {
    "wean_lstm": ["--embed-dim", 10, "--encoder-hidden-size", 8, "--decoder-hidden-size", 9],
    "core_copy": ["--embed-dim", 10, "--encoder-hidden-size", 8, "--decoder-hidden-size", 9,
                  "--decoder-out-embed-dim", 7, "--core-topk", 2, "--core-num-frequent", 3],
    "word_attn_gated": ["--encoder-embed-dim", 10, "--decoder-embed-dim", 8, "--encoder-hidden-size", 6,
                        "--decoder-hidden-size", 9, "--decoder-out-embed-dim", 7],
}
# options with choices or flags that cannot change what a decoder carries from step to step
NOT_DECODER_STATE = {
    ("wean_lstm", "--wean-candidates"): "which words are scored (a mask on the output), counted from "
                                        "binarized training data; test_wean_lstm.py runs each set",
    ("core_copy", "--core-frequent-from"): "which words form U (a mask on the output), counted from binarized "
                                           "training data; test_core_copy.py runs each",
}

def _variants():
    v = {}
    for model in MODELS:
        for layers in (1, 2):
            v["{}-layers{}".format(model, layers)] = (model, ["--encoder-layers", 2, "--decoder-layers", layers])
    # wean_lstm: the scores and the encoder's direction (its s_0 reads the final states)
    for score in ("dot", "general", "concat"):
        v["wean_lstm-attention-" + score] = ("wean_lstm", ["--attention-score", score, "--decoder-layers", 2]
                                             + (["--decoder-hidden-size", 8] if score == "dot" else []))
        v["wean_lstm-wean-" + score] = ("wean_lstm", ["--wean-score", score, "--decoder-layers", 2])
    v["wean_lstm-bidirectional"] = ("wean_lstm", ["--encoder-bidirectional", "--decoder-layers", 2])
    # core_copy: eq. 5 on s_t-1 and eq. 3's input feeding, with one and two layers; psi; the score
    for layers in (1, 2):
        v["core_copy-previous-state-layers{}".format(layers)] = (
            "core_copy", ["--core-attend-previous-state", "--decoder-layers", layers])
        v["core_copy-input-feeding-layers{}".format(layers)] = (
            "core_copy", ["--core-attend-previous-state", "--core-input-feeding", "--decoder-layers", layers])
    for psi in ("tanh", "affine"):
        v["core_copy-psi-" + psi] = ("core_copy", ["--core-psi", psi, "--decoder-layers", 2])
    for score in ("dot", "general", "concat"):
        v["core_copy-attention-" + score] = ("core_copy", ["--attention-score", score, "--decoder-layers", 2]
                                             + (["--decoder-hidden-size", 16] if score == "dot" else []))
    v["core_copy-shared-output"] = ("core_copy", ["--share-decoder-input-output-embed",
                                                  "--decoder-out-embed-dim", 10, "--decoder-layers", 2])
    # word_attn_gated: every ablation x cell x readout x initial state, two layers
    for mode in ("none", "ungated", "gated"):
        for cell in ("gru", "lstm"):
            for readout in ("gated", "raw"):
                for initial in ("both", "backward"):
                    if mode == "none" and readout == "raw":
                        continue  # RNNsearch has one context: both readouts read it
                    v["word_attn-{}-{}-{}-{}".format(mode, cell, readout, initial)] = (
                        "word_attn_gated", ["--word-attention", mode, "--rnn-cell", cell, "--word-attn-readout",
                                            readout, "--word-attn-initial-state", initial, "--decoder-layers", 2])
    v["word_attn-shared-output"] = ("word_attn_gated", ["--share-decoder-input-output-embed",
                                                        "--decoder-out-embed-dim", 8, "--decoder-layers", 2])
    # every registered preset of the three models, its own depth
    for arch, model_cls in sorted(ARCH_MODEL_REGISTRY.items()):
        for model in MODELS:
            if model_cls is ARCH_MODEL_REGISTRY[model]:
                v["preset-" + arch] = (arch, [])
    return v


STATE_VARIANTS = _variants()


def model_of(arch):
    return next(m for m in MODELS if ARCH_MODEL_REGISTRY[arch] is ARCH_MODEL_REGISTRY[m])


def build_variant(name, dictionary, tmp_path, extra=()):
    """The variant's model as fairseq-train builds it: its add_args (argparse.SUPPRESS defaults, as
    fairseq's model-specific group), the architecture function, then build_model; seed 0. ``extra``:
    options after the variant's (the last value of an option wins, as on a command line)."""
    arch, options = STATE_VARIANTS[name]
    options = list(options) + list(extra)
    model = model_of(arch)
    cls = ARCH_MODEL_REGISTRY[arch]
    parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS)
    cls.add_args(parser)
    sizes = list(SIZES[model])
    given = {str(o) for o in options if str(o).startswith("--")}
    for i in range(0, len(sizes), 2):  # the variant's own values win
        if sizes[i] in given:
            sizes[i:i + 2] = [None, None]
    args = parser.parse_args([str(a) for a in [s for s in sizes if s is not None] + options])
    args.arch = arch
    args.dropout = 0.0
    if model == "core_copy":
        table = tmp_path / "align.table"
        words = ["w{}".format(i) for i in range(N_WORDS)]
        with open(table, "w") as f:  # as test_numerics: some targets reachable, most not
            for i, w in enumerate(words):
                f.write("{}\t{}\t2\n{}\t{}\t1\n".format(w, words[(3 * i) % N_WORDS], w, words[(i + 1) % N_WORDS]))
        args.core_align_table = str(table)
        args.criterion = "core_mode_loss"
    ARCH_CONFIG_REGISTRY[arch](args)
    torch.manual_seed(0)
    return cls.build_model(args, FakeTask(dictionary))


def choice_options(model):
    """{flag: values} of every option of a model's add_args with choices ('store_true' flags: [True])."""
    parser = argparse.ArgumentParser(argument_default=argparse.SUPPRESS)
    ARCH_MODEL_REGISTRY[model].add_args(parser)
    found = {}
    for action in parser._actions:
        flag = max(action.option_strings, key=len) if action.option_strings else None
        if flag is None or flag == "--help":
            continue
        if action.choices:
            found[flag] = list(action.choices)
        elif isinstance(action, argparse._StoreTrueAction):
            found[flag] = [True]
    return found


def test_the_variants_cover_every_option_value_and_preset():
    """A new option value, flag or preset of a model that no variant runs fails here."""
    missing = []
    for model in MODELS:
        runs = [options for arch, options in STATE_VARIANTS.values() if model_of(arch) == model]
        for flag, values in choice_options(model).items():
            if (model, flag) in NOT_DECODER_STATE:
                continue
            for value in values:
                ran = any(flag in map(str, o) and (value is True or str(o[list(map(str, o)).index(flag) + 1]) == value)
                          for o in runs)
                if not ran:
                    missing.append("{} {} {}".format(model, flag, value))
        for layers in ("1", "2"):
            if not any("--decoder-layers" in map(str, o) and str(o[list(map(str, o)).index("--decoder-layers") + 1])
                       == layers for o in runs):
                missing.append("{} --decoder-layers {}".format(model, layers))
        for arch, cls in ARCH_MODEL_REGISTRY.items():
            if cls is ARCH_MODEL_REGISTRY[model] and "preset-" + arch not in STATE_VARIANTS:
                missing.append("preset " + arch)
    assert not missing, "decoder-state variants missing: " + "; ".join(missing)


@pytest.mark.parametrize("layers", [None, 1, 2], ids=["as-given", "1-layer", "2-layers"])
@pytest.mark.parametrize("variant", list(STATE_VARIANTS))
def test_incremental_decoding_equals_the_teacher_forced_pass(variant, layers, tmp_path):
    """Every variant as given, and with one and with two decoder layers (an option's mistake may show
    with one depth only: the first layer's state where the top layer's is meant)."""
    dictionary = make_dictionary(N_WORDS)
    extra = [] if layers is None else ["--decoder-layers", layers]
    model = scale_parameters(build_variant(variant, dictionary, tmp_path, extra), 4.0)  # away from the linear regime
    assert_incremental_equals_full(model, random_batch(dictionary, bsz=4, src_len=7, tgt_len=6), atol=1e-5)


@contextlib.contextmanager
def eos_bonus_for_some_sentences(model, dictionary, bonus, modulus):
    """The decoder's output plus ``bonus`` on </s> from target position 2 + (previous word's index
    mod ``modulus``) on, in the sentences whose first source word has an odd index. A function of
    the previous word, the position and the encoder output (which beam search reorders with the
    hypotheses), so the same in beam search and in the teacher-forced pass. Those sentences'
    hypotheses finish within a few steps, each at its own step; the other sentences run to the
    maximum length: the batch shrinks under the beam's reorders whatever the random weights."""
    forward = model.decoder.forward

    def with_bonus(prev_output_tokens, encoder_out=None, **kwargs):
        x, extra = forward(prev_output_tokens, encoder_out=encoder_out, **kwargs)
        steps = x.size(1)  # 1 in incremental decoding, T in the full pass
        sentence = (encoder_out["src_tokens"][:, 0] % 2).unsqueeze(1)  # right-padded: a real word
        positions = torch.arange(prev_output_tokens.size(1))[-steps:].unsqueeze(0)  # of the steps in x
        late = positions >= 2 + prev_output_tokens[:, -steps:] % modulus
        x = x.clone()
        x[..., dictionary.eos()] += bonus * (sentence * late).to(x.dtype)
        return x, extra

    model.decoder.forward = with_bonus  # fairseq's generator calls decoder.forward by attribute
    try:
        yield model
    finally:
        del model.decoder.forward


# (scale, bonus, modulus) tried in this order until the batch shrinks and one sentence's hypotheses
# differ in length (what that takes depends on the model's scale of scores: a tiny random model
# may repeat one word); deterministic
EOS_TRIES = [(scale, bonus, modulus) for scale in (4.0, 1.0, 8.0) for modulus in (2, 3, 5)
             for bonus in (2.0, 4.0, 8.0, 16.0, 32.0)]


def shrinks_with_mixed_lengths(model, dictionary, src, lengths, bonus, modulus):
    with eos_bonus_for_some_sentences(model, dictionary, bonus, modulus):
        hypos, rows = beam_search_recording_reorders(model, dictionary, src, lengths, beam=3, max_len_b=12)
    return len(set(rows)) > 1 and any(len({h["tokens"].numel() for h in sentence}) > 1 for sentence in hypos)


@pytest.mark.parametrize("variant", list(STATE_VARIANTS))
def test_beam_search_that_reorders_and_shrinks_scores_as_the_teacher_forced_pass(variant, tmp_path):
    dictionary = make_dictionary(N_WORDS)
    built = build_variant(variant, dictionary, tmp_path).eval()
    weights = {k: p.clone() for k, p in built.state_dict().items()}
    src, lengths, _, _ = random_batch(dictionary, bsz=6, src_len=7, seed=0)
    first_words = torch.stack([row[row.ne(dictionary.pad())][0] for row in src])
    assert 0 < int((first_words % 2).sum()) < len(src)  # some sentences get the bonus, some not
    for scale, bonus, modulus in EOS_TRIES:  # the last one if none: the assertion says what is missing
        model = scale_parameters(built, scale)
        if shrinks_with_mixed_lengths(model, dictionary, src, lengths, bonus, modulus):
            break
        built.load_state_dict(weights)
    with eos_bonus_for_some_sentences(model, dictionary, bonus, modulus):
        # float32's rounding between a batched step and a whole pass stays within 2e-4 here;
        # another hypothesis's past moves a score by far more
        assert_beam_scores_equal_teacher_forced_scores(model, dictionary, src, lengths, beam=3, max_len_b=12,
                                                       atol=2e-4)
