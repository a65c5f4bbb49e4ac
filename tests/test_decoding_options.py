"""Every search option of fairseq-generate and fairseq-interactive, for the three models.

Each option is one run of fairseq-generate (or fairseq-interactive) on the 13 test sentences,
checked for what fairseq promises: every sentence id gets its hypotheses, every word is in the
vocabulary (for core_copy: in X u A(X) u U, computed here from the source, the table file and
the dictionary), and the option's own property (n-best lists distinct and sorted, the score
normalisation, no repeated n-gram, the prefix kept, an ensemble's scores the mean of its members'
probabilities, batch sizes that do not change the result, ...). The runs of one model share one
process (``tests/fairseq_runs.py``: fairseq's own ``cli_main``, without importing torch again).
"""
import json
import math
import os
import sys

import pytest
import torch

from conftest import REPO, USER_DIR, cli, cli_concurrently, train_args

SIZES = {
    "wean_lstm": ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16],
    "core_copy": ["--embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
                  "--decoder-out-embed-dim", 16, "--criterion", "core_mode_loss",
                  "--core-num-frequent", 10, "--core-topk", 5],
    "word_attn_gated": ["--encoder-embed-dim", 16, "--encoder-hidden-size", 16,
                        "--decoder-embed-dim", 16, "--decoder-hidden-size", 16],
    "lstm": ["--encoder-layers", 1, "--decoder-layers", 1, "--encoder-embed-dim", 16,
             "--decoder-embed-dim", 16, "--encoder-hidden-size", 16, "--decoder-hidden-size", 16,
             "--decoder-out-embed-dim", 16],
}
MODELS = ["wean_lstm", "core_copy", "word_attn_gated"]
N_TEST = 13  # conftest's test split: not a multiple of the batch sizes below
NUM_FREQUENT, TOPK = 10, 5  # core_copy's U and A, as in SIZES


def runs_of(model):
    """{run name: fairseq-generate options} for one model; each checked by a test below."""
    ck = lambda name: "{{ck}}/{}".format(name)  # noqa: E731  (filled in per model)
    return {
        "greedy": ["--beam", 1],
        "beam": ["--beam", 4, "--nbest", 4],
        "unnormalized": ["--beam", 4, "--nbest", 4, "--unnormalized"],
        "lenpen": ["--beam", 4, "--nbest", 4, "--lenpen", 2],
        "no_repeat_ngram": ["--beam", 4, "--no-repeat-ngram-size", 2],
        "prefix": ["--beam", 4, "--prefix-size", 1],
        "match_source_len": ["--beam", 4, "--match-source-len"],
        "sampling": ["--sampling", "--beam", 3, "--nbest", 3, "--seed", 1],
        "sampling_topp": ["--sampling", "--sampling-topp", 0.9, "--beam", 3, "--nbest", 3, "--seed", 1],
        "sampling_topk1": ["--sampling", "--sampling-topk", 1, "--beam", 1, "--seed", 1],
        "sampling_topk3": ["--sampling", "--sampling-topk", 3, "--beam", 3, "--nbest", 3, "--seed", 1],
        # nearly uniform: <s> (banned in compat) would be drawn many times, --max-len-b reached
        "sampling_hot": ["--sampling", "--temperature", 50, "--beam", 3, "--nbest", 3, "--seed", 1],
        "sampling_topp_min": ["--sampling", "--sampling-topp", 0.001, "--beam", 1, "--seed", 1],
        "diverse": ["--beam", 4, "--nbest", 4, "--diverse-beam-groups", 2],
        "diverse_one_by_one": ["--beam", 4, "--nbest", 4, "--diverse-beam-groups", 2, "--batch-size", 1],
        "diversity_rate": ["--beam", 4, "--nbest", 4, "--diversity-rate", 0.5],
        "ensemble": ["--beam", 4, "--path", ck("checkpoint2.pt") + ":" + ck("checkpoint3.pt")],
        "score_a": ["--score-reference", "--path", ck("checkpoint2.pt")],
        "score_b": ["--score-reference", "--path", ck("checkpoint3.pt")],
        "score_ab": ["--score-reference", "--path", ck("checkpoint2.pt") + ":" + ck("checkpoint3.pt")],
    }


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def trained(raw_dir, data_bin, tmp_path_factory):
    """The three models (and fairseq's lstm) trained at once, 3 epochs of tiny data each.

    Epoch checkpoints are kept: checkpoint2.pt and checkpoint3.pt are the two members of the
    ensembles.
    """
    work = tmp_path_factory.mktemp("decoding")
    table = work / "align.table"
    cli("fairseq-wean-align-table", "--src", raw_dir / "train.src", "--tgt", raw_dir / "train.tgt",
        "--topk", TOPK, "--out", table)
    commands = []
    for arch in MODELS + ["lstm"]:
        args = train_args(data_bin, work / arch, arch, *SIZES[arch], "--dropout", 0.0, "--max-tokens", 400,
                          epochs=1 if arch == "lstm" else 3)
        args.remove("--no-epoch-checkpoints")
        if arch == "core_copy":
            args += ["--core-align-table", table]
        commands.append(("fairseq-train", args))
    cli_concurrently(commands)
    return work, table


@pytest.fixture(scope="module")
def decoded(trained, data_bin, raw_dir):
    """{model: {run: (stdout, error or None)}}: every run of ``runs_of``, fairseq-interactive
    with --buffer-size, and fairseq's lstm with --diverse-beam-groups; one process per model."""
    work, _ = trained
    common = [data_bin, "--user-dir", USER_DIR, "--gen-subset", "test", "--cpu", "--batch-size", 5,
              "--max-len-b", 10]
    commands, outputs = [], {}
    for model in MODELS + ["lstm"]:
        ck = str(work / model)
        runs = runs_of(model) if model != "lstm" else {
            k: v for k, v in runs_of(model).items() if k in ("diverse", "diverse_one_by_one")}
        jobs = []
        for name, options in runs.items():
            options = [str(o).replace("{ck}", ck) for o in options]
            path = [] if "--path" in options else ["--path", os.path.join(ck, "checkpoint_best.pt")]
            args = common + path + options
            if "--batch-size" in options:  # the run's own batch size
                i = args.index("--batch-size")
                del args[i:i + 2]
            if "--match-source-len" in options or "--score-reference" in options:  # the length is the source's /
                # the reference's: --max-len-b does nothing (refused)
                i = args.index("--max-len-b")
                del args[i:i + 2]
            jobs.append({"cli": "generate", "args": [str(a) for a in args], "out": str(work / (model + "." + name))})
        if model != "lstm":
            interactive = [str(data_bin), "--user-dir", USER_DIR, "--cpu", "--source-lang", "src",
                           "--target-lang", "tgt", "--path", os.path.join(ck, "checkpoint_best.pt"),
                           "--max-len-b", "10", "--batch-size", "2", "--buffer-size", "4",
                           "--input", str(raw_dir / "test.src")]
            jobs.append({"cli": "interactive", "out": str(work / (model + ".interactive")),
                         "args": interactive + ["--beam", "4"]})
            jobs.append({"cli": "interactive", "out": str(work / (model + ".interactive_sampling")),
                         "args": interactive + ["--sampling", "--beam", "3", "--nbest", "3", "--seed", "1"]})
        jobs_file = work / (model + ".jobs.json")
        jobs_file.write_text(json.dumps(jobs))
        commands.append(("python", [os.path.join(REPO, "tests", "fairseq_runs.py"), jobs_file]))
        outputs[model] = {os.path.basename(j["out"]).split(".", 1)[1]: j["out"] for j in jobs}
    cli_concurrently(commands)
    result = {}
    for model, runs in outputs.items():
        result[model] = {}
        for name, out in runs.items():
            error = open(out + ".error").read() if os.path.exists(out + ".error") else None
            result[model][name] = (open(out).read() if os.path.exists(out) else "", error)
    return result


@pytest.fixture(scope="module")
def words(data_bin):
    """The dictionary's words, most frequent first (fairseq-preprocess sorts dict.txt by count)."""
    with open(data_bin / "dict.tgt.txt") as f:
        return [line.split()[0] for line in f]


@pytest.fixture(scope="module")
def allowed_core_words(trained, words):
    """V_G u X = X u A(X) u U (CoRe eq. 8) per source sentence, from the table file and the
    dictionary alone: U = the NUM_FREQUENT most frequent words and <unk>; A(w) = the first TOPK
    targets listed for w in the table."""
    _, table = trained
    aligned = {}
    for line in table.read_text().splitlines():
        src, tgt, _score = line.split("\t")
        if len(aligned.setdefault(src, [])) < TOPK:
            aligned[src].append(tgt)
    frequent = set(words[:NUM_FREQUENT]) | {"<unk>"}

    def allowed(source_words):
        return frequent | set(source_words) | {t for w in source_words for t in aligned.get(w, [])}
    return allowed


# ------------------------------------------------------------------------------ parsing
def parse(stdout):
    """{id: {"S": words, "T": words, "H": [(score, words, positional scores)]}} of a generate log."""
    out = {}
    for line in stdout.splitlines():
        kind, _, rest = line.partition("-")
        if kind not in ("S", "T", "H", "P") or not rest[:1].isdigit():
            continue
        fields = rest.split("\t")
        entry = out.setdefault(int(fields[0]), {"H": [], "P": []})
        if kind in ("S", "T"):
            entry[kind] = fields[1].split() if len(fields) > 1 else []
        elif kind == "H":
            entry["H"].append([float(fields[1]), fields[2].split() if len(fields) > 2 else []])
        else:
            entry["P"].append([float(p) for p in fields[1].split()])
    for entry in out.values():
        assert len(entry["H"]) == len(entry["P"])
        entry["H"] = [(s, w, p) for (s, w), p in zip(entry["H"], entry.pop("P"))]
    return out


def hypotheses(decoded, model, run, per_id=1):
    """The parsed run, after the checks every run must pass."""
    stdout, error = decoded[model][run]
    assert error is None, "{} {} failed:\n{}".format(model, run, error[-3000:])
    parsed = parse(stdout)
    assert sorted(parsed) == list(range(N_TEST)), (model, run, sorted(parsed))  # no dropped sentence
    for sid, entry in parsed.items():
        assert len(entry["H"]) == per_id, (model, run, sid)
        for _score, hyp, positional in entry["H"]:
            # the words and </s>: no </s> inside, and no <s> (fairseq-generate prints a hypothesis
            # without it; fairseq's sampling drew it until compat banned it)
            assert len(positional) == len(hyp) + 1, (model, run, sid, hyp, positional)
    return parsed


def assert_in_vocabulary(parsed, words, model, allowed_core_words):
    real_words = set(words) | {"<unk>"}  # dict.txt lists no special symbol; <unk> may be generated
    for entry in parsed.values():
        for _score, hyp, _ in entry["H"]:
            assert set(hyp) <= real_words, hyp  # no <pad>, <s>, </s>, nothing outside the dictionary
            if model == "core_copy":
                outside = set(hyp) - allowed_core_words(entry["S"])
                assert not outside, "outside X u A(X) u U of {}: {}".format(entry["S"], outside)


def assert_same_hypotheses(a, b, atol=1e-4):
    assert sorted(a) == sorted(b)
    for sid in a:
        assert [h[1] for h in a[sid]["H"]] == [h[1] for h in b[sid]["H"]], sid
        for (sa, _, pa), (sb, _, pb) in zip(a[sid]["H"], b[sid]["H"]):
            assert abs(sa - sb) <= atol, (sid, sa, sb)


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("run", sorted(runs_of("x")))
def test_every_sentence_gets_its_hypotheses_within_the_vocabulary(decoded, words, allowed_core_words, model, run):
    per_id = {"beam": 4, "unnormalized": 4, "lenpen": 4, "diverse": 4, "diverse_one_by_one": 4,
              "diversity_rate": 4, "sampling": 3, "sampling_topp": 3, "sampling_topk3": 3,
              "sampling_hot": 3}.get(run, 1)
    parsed = hypotheses(decoded, model, run, per_id)
    assert_in_vocabulary(parsed, words, model, allowed_core_words)


@pytest.mark.parametrize("model", MODELS)
def test_nbest_lists_are_distinct_and_sorted_by_score(decoded, model):
    for run in ("beam", "unnormalized", "lenpen", "diverse", "diversity_rate"):
        for entry in hypotheses(decoded, model, run, per_id=4).values():
            scores = [h[0] for h in entry["H"]]
            assert scores == sorted(scores, reverse=True), (run, scores)
            if run != "diverse":  # groups may meet on the same hypothesis
                assert len({tuple(h[1]) for h in entry["H"]}) == 4, (run, entry["H"])


@pytest.mark.parametrize("model", MODELS)
def test_score_normalisation_unnormalized_and_lenpen(decoded, model):
    """H = sum of the positional scores / length ** lenpen; --unnormalized: the plain sum."""
    for run, lenpen in (("beam", 1.0), ("unnormalized", 0.0), ("lenpen", 2.0)):
        for entry in hypotheses(decoded, model, run, per_id=4).values():
            for score, _, positional in entry["H"]:
                expected = sum(positional) / len(positional) ** lenpen
                assert abs(score - expected) <= 1e-3 * max(1.0, len(positional)), (run, score, positional)


@pytest.mark.parametrize("model", MODELS)
def test_no_repeat_ngram_size(decoded, model):
    """fairseq's CPU path banned nothing (it read pads as the last tokens); fixed in compat."""
    parsed = hypotheses(decoded, model, "no_repeat_ngram")
    for entry in parsed.values():
        tokens = entry["H"][0][1] + ["</s>"]
        bigrams = list(zip(tokens, tokens[1:]))
        assert len(bigrams) == len(set(bigrams)), tokens


@pytest.mark.parametrize("model", MODELS)
def test_prefix_size_keeps_the_reference_first_word(decoded, model):
    for sid, entry in hypotheses(decoded, model, "prefix").items():
        assert entry["H"][0][1][:1] == entry["T"][:1], (sid, entry)


@pytest.mark.parametrize("model", MODELS)
def test_match_source_len_counts_the_source_end_of_sentence(decoded, model):
    """fairseq's --match-source-len: on fairseq-fixed, hypotheses of the source's length *counting
    its </s>*, i.e. one word more than the source (SequenceGenerator takes the dataset's
    src_lengths, which include </s>); fairseq 0.12.2 counts the source's words without </s>. The
    same for fairseq's own models; not changed by the plugin."""
    import inspect

    from fairseq.sequence_generator import SequenceGenerator

    counts_eos = '"src_lengths" in net_input' in inspect.getsource(SequenceGenerator._generate)
    for sid, entry in hypotheses(decoded, model, "match_source_len").items():
        assert len(entry["H"][0][1]) == len(entry["S"]) + counts_eos, (sid, entry)


@pytest.mark.parametrize("model", MODELS)
def test_sampling_with_top1_or_a_tiny_nucleus_is_greedy_decoding(decoded, model):
    """--sampling-topk 1 and --sampling-topp 0.001 keep only the best word: beam 1's output.
    (Without core_copy's buffer refill, --sampling-topp's in-place exp_() made every word
    outside E the best one at the second step.)"""
    greedy = hypotheses(decoded, model, "greedy")
    assert_same_hypotheses(hypotheses(decoded, model, "sampling_topk1"), greedy)
    assert_same_hypotheses(hypotheses(decoded, model, "sampling_topp_min"), greedy)


@pytest.mark.parametrize("model", MODELS)
def test_sampling_samples(decoded, model):
    """Sampled lists are not the beam's: they hold more distinct words than 3-best beam search."""
    for run in ("sampling", "sampling_topp", "sampling_topk3", "sampling_hot"):
        parsed = hypotheses(decoded, model, run, per_id=3)
        distinct = sum(len({tuple(h[1]) for h in e["H"]}) for e in parsed.values())
        assert distinct > N_TEST, (run, distinct)  # not 3 copies of one hypothesis per sentence


@pytest.mark.parametrize("model", MODELS + ["lstm"])
def test_diverse_beam_search_does_not_depend_on_the_batch(decoded, model):
    """fairseq's DiverseBeamSearch crashed (IndexError) or read another sentence's group overlap;
    fixed in fairseq_wean.compat: batches of 5 give what sentences decoded one by one give."""
    together = hypotheses(decoded, model, "diverse", per_id=4)
    assert_same_hypotheses(together, hypotheses(decoded, model, "diverse_one_by_one", per_id=4))
    plain = hypotheses(decoded, model, "beam", per_id=4) if model != "lstm" else None
    if plain is not None:  # the groups' penalty changes the lists
        assert any([h[1] for h in together[s]["H"]] != [h[1] for h in plain[s]["H"]] for s in together)


@pytest.mark.parametrize("model", MODELS)
def test_ensemble_scores_are_the_mean_of_the_members_probabilities(decoded, model):
    """--path a.pt:b.pt: p(y) = (p_a(y) + p_b(y)) / 2 per position (log base 2 in fairseq's output),
    checked on the references (--score-reference: H is the reference). One checkpoint named twice is
    refused before any work (tests/test_generation_bounds.py)."""
    a, b, ab = (hypotheses(decoded, model, run) for run in ("score_a", "score_b", "score_ab"))
    for sid in ab:
        assert ab[sid]["H"][0][1] == ab[sid]["T"]  # --score-reference scores the reference
        pa, pb, pab = a[sid]["H"][0][2], b[sid]["H"][0][2], ab[sid]["H"][0][2]
        expected = [math.log2((2 ** x + 2 ** y) / 2) for x, y in zip(pa, pb)]
        assert pab == pytest.approx(expected, abs=2e-4), sid
        assert pa != pytest.approx(pb, abs=1e-3)  # two different models
    hypotheses(decoded, model, "ensemble")


@pytest.mark.parametrize("model", MODELS)
def test_interactive_buffer_gives_one_hypothesis_per_line_in_order(decoded, raw_dir, model):
    """fairseq-interactive --buffer-size 4 --batch-size 2 on the 13 test lines: ids 0..12 in
    order, each with the source line and fairseq-generate's best hypothesis for it."""
    stdout, error = decoded[model]["interactive"]
    assert error is None, error[-3000:]
    lines = [line for line in stdout.splitlines() if line[:2] in ("S-", "H-")]
    ids = [int(line.split("\t")[0][2:]) for line in lines if line.startswith("H-")]
    assert ids == list(range(N_TEST))
    sources = (raw_dir / "test.src").read_text().splitlines()
    generated = hypotheses(decoded, model, "beam", per_id=4)
    interactive = parse(stdout)
    for sid in range(N_TEST):
        assert interactive[sid]["S"] == sources[sid].split()
        assert generated[sid]["S"] == sources[sid].split()
        assert interactive[sid]["H"][0][1] == generated[sid]["H"][0][1], sid
        assert abs(interactive[sid]["H"][0][0] - generated[sid]["H"][0][0]) <= 1e-4


@pytest.mark.parametrize("model", MODELS)
def test_interactive_sampling(decoded, words, allowed_core_words, model):
    """fairseq-interactive --sampling --nbest 3: every input line gets 3 hypotheses, in vocabulary
    (core_copy: in X u A(X) u U), their positional scores one per word and one for </s>."""
    parsed = hypotheses(decoded, model, "interactive_sampling", per_id=3)
    assert_in_vocabulary(parsed, words, model, allowed_core_words)
    distinct = sum(len({tuple(h[1]) for h in e["H"]}) for e in parsed.values())
    assert distinct > N_TEST, distinct


# ------------------------------------------------------------------------------ units
def test_search_fixes_are_applied_once():
    import fairseq_wean.compat as compat
    from fairseq.ngram_repeat_block import NGramRepeatBlock
    from fairseq.search import DiverseBeamSearch
    from fairseq.sequence_generator import SequenceGenerator

    def current():
        return {"DiverseBeamSearch.step": DiverseBeamSearch.step,
                "DiverseBeamSearch.__init__": DiverseBeamSearch.__init__,
                "NGramRepeatBlock._no_repeat_ngram": NGramRepeatBlock._no_repeat_ngram,
                "SequenceGenerator.__init__": SequenceGenerator.__init__,
                # fairseq's own methods, kept for the replacements to call (TorchScript compiles
                # them); fairseq 0.12.2's DiverseBeamSearch needs no fix and keeps its own step
                "original step": getattr(DiverseBeamSearch, "_fairseq_step", None),
                "original _no_repeat_ngram": NGramRepeatBlock._fairseq_no_repeat_ngram}

    patched = current()
    compat.apply()
    assert current() == patched
    from fairseq_wean import patching

    diverse_fixed = patching.status()["compat 9 (--diverse-beam-groups)"][0]
    for name, f in patched.items():
        if ("DiverseBeamSearch" in name or name == "original step") and not diverse_fixed:
            continue  # 0.12.2: fairseq's own search, untouched
        assert hasattr(f, "_fairseq_wean_fixed") == (not name.startswith("original")), name
    assert hasattr(DiverseBeamSearch.__init__, "_fairseq_wean_fixed") == diverse_fixed


def test_the_generator_never_chooses_bos():
    """<s> is suppressed at every step, with --tokens-to-suppress-style entries kept."""
    from fairseq.sequence_generator import SequenceGenerator
    from fairseq.search import Sampling

    import fairseq_wean  # noqa: F401  (applies compat)
    from conftest import make_dictionary

    d = make_dictionary(10)
    plain = SequenceGenerator([torch.nn.Module()], d, search_strategy=Sampling(d))
    assert plain.token_indices_to_suppress.tolist() == [d.bos()]
    more = SequenceGenerator([torch.nn.Module()], d, tokens_to_suppress=["w3"])
    assert sorted(more.token_indices_to_suppress.tolist()) == sorted([d.bos(), d.index("w3")])


def test_core_copy_buffer_survives_an_in_place_exp_between_steps(trained, data_bin):
    """What Sampling.step does to the returned tensor (exp_) must not reach the next step."""
    from fairseq import checkpoint_utils

    import fairseq_wean  # noqa: F401  (registers core_copy)

    work, _ = trained
    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(work / "core_copy" / "checkpoint_best.pt")], arg_overrides={"data": str(data_bin)})
    model = models[0].eval()
    d = task.target_dictionary
    src = torch.tensor([[d.index(w) for w in "w37 w34 w8 w23".split()] + [d.eos()]])
    state = {}
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=torch.tensor([src.size(1)]))
        prev = torch.tensor([[d.eos(), d.index("w34")]])
        first = model.get_normalized_probs(
            model.decoder(prev[:, :1], encoder_out=encoder_out, incremental_state=state), log_probs=True)
        reference = first.clone()
        first.exp_()  # fairseq's Sampling.step, in place
        second = model.get_normalized_probs(
            model.decoder(prev, encoder_out=encoder_out, incremental_state=state), log_probs=True)
    outside = torch.isneginf(reference)
    assert outside.any() and torch.isneginf(second[outside]).all()
    torch.testing.assert_close(second.exp().sum(-1), torch.ones(1, 1))
