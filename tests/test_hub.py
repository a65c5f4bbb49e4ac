"""The Python API (fairseq_wean.hub.from_pretrained, --bpe unk_markers) and --replace-unk on binarized data.

One module fixture trains four tiny models at once (2 shared cores): core_copy on the marker data
set of tests/test_core_copy.py (a name seen once per sentence, copied by the target, written as its
marker <unk-N>), and wean_lstm, word_attn_gated and core_copy on an <unk> copy task: every target
copies its source, and every sentence has two names seen once each, below the dictionary
threshold, so a third of the target words is <unk>. Those three models really write <unk> (the
--replace-unk tests assert it first, so they can fail), and --replace-unk must replace each by the
source word its attention (core_copy: its copy distribution) points at, as the printed alignment says.

A second module fixture runs every fairseq-generate and fairseq-interactive of the module at once:
two processes of tests/fairseq_runs.py (one import of torch and fairseq for many runs, in any
order: the plugin's --replace-unk state is per run), and the two error cases as real console scripts.
"""
import json
import os
import random

import pytest

from conftest import REPO, USER_DIR, cli_concurrently, generated_hypotheses, train_args
from test_core_copy import CORE_SIZES, prepare_marked_data
from test_word_attn_gated import CLI_SIZES

WEAN_SIZES = ["--embed-dim", 32, "--encoder-hidden-size", 32, "--decoder-hidden-size", 32, "--dropout", 0.1,
              "--max-tokens", 400]
UNK_ARCHS = ("wean_lstm", "word_attn_gated", "core_copy")
# the <unk> copy task: small batches (about 20 sentences), so 20 epochs of 400 pairs are 400 updates
# (after fewer, wean_lstm sometimes wrote <s>, which the H- line hides but the A- line counts)
UNK_TRAINING = {"wean_lstm": WEAN_SIZES, "word_attn_gated": CLI_SIZES, "core_copy": CORE_SIZES}


def write_unk_copy_pairs(prefix, n, seed):
    """n pairs "w.. name.. w.. name.." -> the same: 3-6 words of w10..w29 and two names seen once."""
    rng = random.Random(seed)
    with open(prefix + ".src", "w") as fs, open(prefix + ".tgt", "w") as ft:
        for _ in range(n):
            sent = ["w{}".format(rng.randint(10, 29)) for _ in range(rng.randint(3, 6))]
            for _ in range(2):
                sent.insert(rng.randint(0, len(sent)), "name{}".format(rng.randint(0, 10 ** 6)))
            fs.write(" ".join(sent) + "\n")
            ft.write(" ".join(sent) + "\n")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("hub")
    named_raw, named_marked, named_vocab, _ = prepare_marked_data(work)
    unk_raw = work / "unk-raw"
    unk_raw.mkdir()
    for split, n, seed in (("train", 400, 1), ("valid", 21, 2), ("test", 13, 3)):
        write_unk_copy_pairs(str(unk_raw / split), n, seed)
    named_bin, unk_bin = work / "named-bin", work / "unk-bin"
    common = ["--source-lang", "src", "--target-lang", "tgt", "--workers", 1, "--joined-dictionary"]
    cli_concurrently([
        ("fairseq-preprocess", common + ["--trainpref", named_marked / "train", "--validpref", named_marked / "valid",
                                         "--testpref", named_marked / "test", "--destdir", named_bin,
                                         "--srcdict", named_vocab]),
        # a joined dictionary counts a name twice (source and target): threshold 3 makes it <unk>
        ("fairseq-preprocess", common + ["--trainpref", unk_raw / "train", "--validpref", unk_raw / "valid",
                                         "--testpref", unk_raw / "test", "--destdir", unk_bin,
                                         "--thresholdsrc", 3, "--thresholdtgt", 3]),
    ])
    words = [line.split()[0] for line in (unk_bin / "dict.src.txt").read_text().splitlines()]
    assert words and not any(w.startswith("name") for w in words)
    identity = work / "identity.table"  # core_copy's A: each word aligned to itself
    identity.write_text("".join("{}\t{}\t1\n".format(w, w) for w in words))
    ck = {name: work / ("ck-" + name) for name in ("core_copy_markers",) + UNK_ARCHS}
    extra = {"core_copy": ["--core-align-table", identity]}
    cli_concurrently([
        ("fairseq-train", train_args(named_bin, ck["core_copy_markers"], "core_copy", *CORE_SIZES,
                                     "--core-align-table", work / "named.table", epochs=8)),
    ] + [("fairseq-train", train_args(unk_bin, ck[arch], arch, *UNK_TRAINING[arch], *extra.get(arch, []),
                                      "--max-tokens", 150, epochs=20)) for arch in UNK_ARCHS])
    return {"work": work, "ck": ck, "named_raw": named_raw, "named_bin": named_bin, "unk_raw": unk_raw,
            "unk_bin": unk_bin}


def unk_inputs(trained):
    """The <unk> task's test sources, one repeated, and the same with one name swapped for another
    unseen name (fairseq-interactive's input)."""
    sources = (trained["unk_raw"] / "test.src").read_text().splitlines()
    name = next(w for w in sources[1].split() if w.startswith("name"))
    variant = " ".join("nameXYZ" if w == name else w for w in sources[1].split())
    return sources, name, sources + [sources[1], variant]


def core_copy_inputs(trained):
    """The raw named test sources, one repeated, and one with its name swapped for another unseen name."""
    sources = (trained["named_raw"] / "test.src").read_text().splitlines()
    name = next(w for w in sources[0].split() if w.startswith("name"))
    variant = sources[0].replace(name, "nameXYZ")
    return sources, name, variant, sources + [sources[0], variant, sources[0]]


def core_copy_markers_hub(trained):
    """The marker-data core_copy through the hub with --bpe unk_markers: (sources, name, variant,
    inputs, the hub's translations of the inputs)."""
    import fairseq_wean.hub

    sources, name, variant, inputs = core_copy_inputs(trained)
    hub = fairseq_wean.hub.from_pretrained(str(trained["ck"]["core_copy_markers"]), checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path=str(trained["named_bin"]), bpe="unk_markers")
    return sources, name, variant, inputs, hub.translate(inputs, beam=5)


@pytest.fixture(scope="module")
def decoded(trained):
    """{run name: stdout} of every decoding run of the module, and the two error-case processes."""
    work, ck, unk_bin, named_bin = trained["work"], trained["ck"], trained["unk_bin"], trained["named_bin"]
    unk_src = trained["unk_raw"] / "test.src"
    unk_in, marked_in = work / "unk-in.txt", work / "marked-in.txt"
    unk_in.write_text("\n".join(unk_inputs(trained)[2]) + "\n")
    marked_in.write_text("\n".join(core_copy_inputs(trained)[3]) + "\n")

    def generate(data, model, *extra):
        return ("generate", [data, "--user-dir", USER_DIR, "--path", ck[model] / "checkpoint_best.pt",
                             "--gen-subset", "test", "--beam", 5, "--cpu", "--batch-size", 5, *extra])

    def interactive(data, model, inputs, *extra):
        return ("interactive", [data, "--user-dir", USER_DIR, "--path", ck[model] / "checkpoint_best.pt",
                                "--source-lang", "src", "--target-lang", "tgt", "--beam", 5, "--nbest", 2,
                                "--buffer-size", 4, "--batch-size", 3, "--cpu", "--input", inputs, *extra])

    plain, replacing = {}, {}
    for arch in UNK_ARCHS:
        plain["generate." + arch] = generate(unk_bin, arch, "--print-alignment")
        plain["interactive." + arch] = interactive(unk_bin, arch, unk_in, "--print-alignment")
        # no --print-alignment: the plugin computes the alignment from the attention itself
        replacing["generate-replace." + arch] = generate(unk_bin, arch, "--replace-unk", "--replace-unk-source",
                                                         unk_src)
        replacing["interactive-replace." + arch] = interactive(unk_bin, arch, unk_in, "--replace-unk")
        # --score-reference: the hypothesis is the reference (a third of it <unk>), scored by SequenceScorer
        plain["score-reference." + arch] = generate(unk_bin, arch, "--score-reference", "--print-alignment")
        replacing["score-reference-replace." + arch] = generate(unk_bin, arch, "--score-reference", "--replace-unk",
                                                                "--replace-unk-source", unk_src)
    replacing["generate-replace-aligned.wean_lstm"] = generate(
        unk_bin, "wean_lstm", "--replace-unk", "--replace-unk-source", unk_src, "--print-alignment")
    plain["generate.markers"] = generate(named_bin, "core_copy_markers")
    plain["interactive.markers"] = interactive(named_bin, "core_copy_markers", marked_in, "--bpe", "unk_markers")
    commands, outs = [], {}
    for group, runs in (("plain", plain), ("replacing", replacing)):
        jobs = [{"cli": kind, "args": [str(a) for a in args], "out": str(work / ("run." + name))}
                for name, (kind, args) in runs.items()]
        outs.update({name: work / ("run." + name) for name in runs})
        (work / (group + ".json")).write_text(json.dumps(jobs))
        commands.append(("python", [os.path.join(REPO, "tests", "fairseq_runs.py"), work / (group + ".json")]))
    gen_args = generate(unk_bin, "wean_lstm", "--replace-unk")[1]
    test_src = (trained["unk_raw"] / "test.src").read_text().splitlines()
    reversed_src, longer_src = work / "reversed.src", work / "longer.src"
    reversed_src.write_text("".join(" ".join(line.split()[::-1]) + "\n" for line in test_src))  # same word counts
    longer_src.write_text("".join(line + "\n" for line in test_src + test_src[:2]))  # two lines too many
    commands += [("fairseq-generate", gen_args, {"check": False}),
                 ("fairseq-generate", gen_args + ["--replace-unk-source", trained["unk_raw"] / "valid.src"],
                  {"check": False}),
                 ("fairseq-generate", gen_args + ["--replace-unk-source", reversed_src], {"check": False}),
                 ("fairseq-generate", gen_args + ["--replace-unk-source", longer_src], {"check": False})]
    *_, no_source, wrong_source, reversed_source, longer_source = cli_concurrently(commands)
    result = {"no_source": no_source, "wrong_source": wrong_source, "reversed_source": reversed_source,
              "longer_source": longer_source}
    for name, out in outs.items():
        assert not os.path.exists(str(out) + ".error"), open(str(out) + ".error").read()
        result[name] = out.read_text()
    return result


def interactive_outputs(stdout, kind="D"):
    """{id: [text of each hypothesis in nbest order]} from H- or D- lines."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith(kind + "-"):
            head, _score, text = (line.split("\t") + ["", ""])[:3]
            out.setdefault(int(head[2:]), []).append(text)
    return out


def alignments(stdout):
    """{id: [[(src, tgt), ...] for each hypothesis]} from A- lines."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("A-"):
            head, _, text = line.partition("\t")
            out.setdefault(int(head[2:]), []).append([tuple(int(x) for x in p.split("-")) for p in text.split()])
    return out


def reference_replace_unk(hyp, src, pairs):
    """Independent reference: <unk> at target word t -> source word s of the pair (s, t)."""
    words = hyp.split()
    for s, t in pairs:
        if words[t] == "<unk>":
            words[t] = src.split()[s]
    return " ".join(words)


@pytest.mark.parametrize("arch", UNK_ARCHS)
def test_hub_translate_equals_generate_and_interactive(trained, decoded, arch):
    import fairseq_wean.hub

    data_bin, ck = trained["unk_bin"], trained["ck"][arch]
    sentences = (trained["unk_raw"] / "test.src").read_text().splitlines()
    hub = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path=str(data_bin))
    translated = hub.translate(sentences, beam=5)
    generated = generated_hypotheses(decoded["generate." + arch])
    interactive = interactive_outputs(decoded["interactive." + arch])
    assert len(translated) == len(sentences) == 13 and any(translated)
    assert translated == [generated[i] for i in range(13)]
    assert translated == [interactive[i][0] for i in range(13)]


def test_inherited_from_pretrained_classmethod(trained):
    import fairseq_wean  # noqa: F401
    import fairseq_wean.hub
    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    ck, data_bin = trained["ck"]["wean_lstm"], str(trained["unk_bin"])
    sentences = (trained["unk_raw"] / "test.src").read_text().splitlines()[:4]
    hub = WeanLSTMModel.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt", data_name_or_path=data_bin)
    ours = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt", data_name_or_path=data_bin)
    assert type(hub).__name__ == "GeneratorHubInterface"
    assert hub.translate(sentences) == ours.translate(sentences)
    assert hub.translate(sentences[0]) == ours.translate(sentences)[0]


def test_core_copy_hub_puts_rare_source_words_back(trained, decoded):
    from fairseq_wean.data.markers import decode_hypothesis

    sources, name, variant, inputs, translated = core_copy_markers_hub(trained)
    # fairseq-generate on the marked binarized test set, mapped back with the raw sources
    marked = generated_hypotheses(decoded["generate.markers"])
    assert any("<unk-" in marked[i] for i in marked)  # the model copies markers
    expected = [" ".join(decode_hypothesis(s.split(), marked[i].split())) for i, s in enumerate(sources)]
    assert translated[:len(sources)] == expected
    assert not any("<unk" in t for t in translated)
    # the model copied the first sentence's name: the repeated source gets it, the variant gets its own
    assert name in translated[0].split()
    assert translated[len(sources)] == translated[len(sources) + 2] == translated[0]
    assert translated[len(sources) + 1] == translated[0].replace(name, "nameXYZ")
    names = [next(w for w in s.split() if w.startswith("name")) for s in sources]
    assert sum(n in t.split() for n, t in zip(names, translated)) >= len(sources) // 2


def test_hub_chooses_unk_markers_when_the_dictionary_has_markers(trained):
    import fairseq_wean.hub
    from fairseq_wean.data.markers import encode_pair, is_position_marker

    ck, named_bin = trained["ck"]["core_copy_markers"], trained["named_bin"]
    sources, name, variant, inputs = core_copy_inputs(trained)
    load = dict(checkpoint_file="checkpoint_best.pt", data_name_or_path=str(named_bin))
    default = fairseq_wean.hub.from_pretrained(str(ck), **load)
    explicit = fairseq_wean.hub.from_pretrained(str(ck), bpe="unk_markers", **load)
    assert isinstance(default.bpe, fairseq_wean.hub.UnkMarkersBPE)
    translated = default.translate(inputs, beam=5)
    assert translated == explicit.translate(inputs, beam=5)
    assert name in translated[0].split() and not any("<unk" in t for t in translated)
    # bpe=None: no BPE, the caller gives and gets markers
    kept = fairseq_wean.hub.from_pretrained(str(ck), bpe=None, **load)
    assert kept.bpe is None
    vocab = {w for w in kept.src_dict.symbols if not is_position_marker(w)}
    marked = [" ".join(encode_pair(s.split(), None, vocab, None)[0]) for s in sources]
    assert any("<unk-" in t for t in kept.translate(marked, beam=5))
    # a dictionary without markers: no BPE
    plain = fairseq_wean.hub.from_pretrained(str(trained["ck"]["wean_lstm"]), checkpoint_file="checkpoint_best.pt",
                                             data_name_or_path=str(trained["unk_bin"]))
    assert plain.bpe is None


def test_core_copy_interactive_bpe_unk_markers_equals_hub(trained, decoded):
    from fairseq_wean.data.markers import marker_position

    sources, name, variant, inputs, translated = core_copy_markers_hub(trained)
    stdout = decoded["interactive.markers"]  # --bpe unk_markers
    detok, marked = interactive_outputs(stdout, "D"), interactive_outputs(stdout, "H")
    assert sorted(detok) == list(range(len(inputs))) and all(len(v) == 2 for v in detok.values())
    assert [detok[i][0] for i in range(len(inputs))] == translated
    # every hypothesis of the nbest list is mapped back with its own source
    for i, line in enumerate(inputs):
        for hyp_marked, hyp in zip(marked[i], detok[i]):
            assert "<unk-" not in hyp
            expected = [line.split()[n] if n is not None else w
                        for w, n in ((w, marker_position(w)) for w in hyp_marked.split())]
            assert hyp.split() == expected


def check_unk_replaced(plain_hyps, plain_aligns, replaced_hyps, sources):
    """The plain output has <unk> (else nothing is tested); --replace-unk output = the reference
    replacement by the printed alignment, every <unk> replaced. Returns the replaced words."""
    n_unk = sum(h.split().count("<unk>") for h in plain_hyps.values())
    assert n_unk >= 5, plain_hyps
    # one pair per hypothesis word (a hypothesis with a hidden token, <s>, would shift them)
    assert all(sorted(t for _, t in plain_aligns[i][0]) == list(range(len(plain_hyps[i].split())))
               for i in plain_hyps), (plain_hyps, plain_aligns)
    expected = {i: reference_replace_unk(plain_hyps[i], sources[i], plain_aligns[i][0]) for i in plain_hyps}
    assert replaced_hyps == expected
    assert not any("<unk>" in h for h in expected.values())
    return [e for i in plain_hyps for h, e in zip(plain_hyps[i].split(), expected[i].split()) if h == "<unk>"]


@pytest.mark.parametrize("arch", UNK_ARCHS)
def test_generate_replace_unk_on_binarized_data_uses_the_attention(trained, decoded, arch):
    plain = decoded["generate." + arch]
    hyps, aligns = generated_hypotheses(plain), alignments(plain)
    sources = (trained["unk_raw"] / "test.src").read_text().splitlines()
    assert sorted(hyps) == list(range(13))
    replaced = generated_hypotheses(decoded["generate-replace." + arch])
    words = check_unk_replaced(hyps, aligns, replaced, sources)
    if arch == "core_copy":  # it learned to copy: its copy distribution points at the names
        assert sum(w.startswith("name") for w in words) >= 0.8 * len(words), words
    if arch == "wean_lstm":  # the same with fairseq's --print-alignment, and the errors
        aligned = decoded["generate-replace-aligned.wean_lstm"]
        assert generated_hypotheses(aligned) == replaced
        assert alignments(aligned) == aligns  # A- lines unchanged by the replacement
        for proc, problem in ((decoded["no_source"], "needs the source words"),
                              (decoded["wrong_source"], "has 21 lines but --gen-subset test has 13 sentences"),
                              (decoded["longer_source"], "has 15 lines but --gen-subset test has 13 sentences"),
                              (decoded["reversed_source"], "but sentence")):
            assert proc.returncode == 1
            assert proc.stderr.strip().splitlines()[-1].startswith("fairseq-wean: error: --replace-unk")
            assert problem in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("arch", UNK_ARCHS)
def test_score_reference_replace_unk_replaces_the_references_unk(trained, decoded, arch):
    """--score-reference --replace-unk (a KeyError/IndexError before, issue 43): SequenceScorer's
    attention is target x source, the generator's source x target; the replaced reference follows
    fairseq's own --print-alignment of the scored reference, and the scores are unchanged."""
    plain, replaced = decoded["score-reference." + arch], decoded["score-reference-replace." + arch]
    sources = (trained["unk_raw"] / "test.src").read_text().splitlines()
    hyps = generated_hypotheses(plain)
    assert sorted(hyps) == list(range(13))
    references = {int(line.split("\t")[0][2:]): line.split("\t")[1] for line in plain.splitlines()
                  if line.startswith("T-")}
    assert hyps == {i: t.replace("<<unk>>", "<unk>") for i, t in references.items()}  # H is the reference
    words = check_unk_replaced(hyps, alignments(plain), generated_hypotheses(replaced), sources)
    if arch == "core_copy":  # its copy distribution points at the names, as in generation
        assert sum(w.startswith("name") for w in words) >= 0.8 * len(words), words
    scores = lambda out: {line.split("\t")[0]: line.split("\t")[1] for line in out.splitlines()  # noqa: E731
                          if line.startswith("H-")}
    assert scores(replaced) == scores(plain)


@pytest.mark.parametrize("arch", UNK_ARCHS)
def test_interactive_replace_unk_uses_the_input_words(trained, decoded, arch):
    sources, name, inputs = unk_inputs(trained)
    plain = decoded["interactive." + arch]
    hyps, aligns = interactive_outputs(plain, "H"), alignments(plain)
    assert sorted(hyps) == list(range(len(inputs))) and all(len(h) == 2 for h in hyps.values())
    assert sum(h.split().count("<unk>") for nbest in hyps.values() for h in nbest) >= 5
    assert all(sorted(t for _, t in a) == list(range(len(h.split())))
               for i in hyps for h, a in zip(hyps[i], aligns[i]))
    expected = {i: [reference_replace_unk(h, inputs[i], a) for h, a in zip(hyps[i], aligns[i])] for i in hyps}
    assert not any("<unk>" in h for nbest in expected.values() for h in nbest)
    replaced = decoded["interactive-replace." + arch]
    assert interactive_outputs(replaced, "H") == expected
    assert interactive_outputs(replaced, "D") == expected
    # the repeated line gets the same words; the variant its own name where the original had its name
    n = len(sources)
    assert expected[n] == expected[1]
    assert expected[n + 1] == [" ".join("nameXYZ" if w == name else w for w in h.split()) for h in expected[1]]


def test_post_process_prediction_replaces_unk_by_the_argmax_attention_word():
    """In-process: the tiny models rarely emit <unk>, so the rule is checked on a constructed hypothesis."""
    import torch
    from fairseq import utils

    import fairseq_wean  # noqa: F401  (installs the patches)
    from conftest import make_dictionary
    from fairseq_wean.unk_replacement import SourceAlignment, attention_alignment

    d = make_dictionary()
    pad, eos, unk = d.pad(), d.eos(), d.unk()
    w = [d.index("w{}".format(i)) for i in range(5)]
    src_tokens = torch.tensor([pad, pad, w[1], unk, w[2], unk, eos])  # left-padded "w1 zz w2 yy"
    hypo = torch.tensor([unk, w[2], unk, eos])
    attention = torch.full((7, 4), 0.01)  # S x T
    attention[5, 0] = 0.9  # target 0 attends to source word 3 ("yy")
    attention[4, 1] = 0.9
    attention[3, 2] = 0.9  # target 2 attends to source word 1 ("zz")
    attention[6, :] = 5.0  # </s> and padding never count
    attention[0, :] = 5.0
    pairs = attention_alignment(attention, src_tokens, hypo, pad, eos)
    assert pairs == [(3, 0), (2, 1), (1, 2)]
    alignment = SourceAlignment(pairs, "w1 zz w2 yy".split(), align_dict={})
    _, hypo_str, returned = utils.post_process_prediction(hypo, "w1 <unk> w2 <unk>", alignment, None, d)
    assert hypo_str == "yy w2 zz"
    assert returned is alignment
    # a pair past the end of the source leaves <unk>; an alignment dictionary translates
    assert utils.replace_unk("<unk> <unk>", "a b", [(5, 0), (1, 1)], {"b": "B"}, "<unk>") == "<unk> B"


def test_from_pretrained_names_a_missing_folder_checkpoint_or_dictionary(tmp_path):
    """One line each, instead of fairseq's unrelated errors (issue 43)."""
    from fairseq_wean import hub
    from fairseq_wean.errors import FairseqWeanError

    with pytest.raises(FairseqWeanError, match=r"from_pretrained: .*/nowhere is not a folder"):
        hub.from_pretrained(str(tmp_path / "nowhere"))
    (tmp_path / "checkpoint_last.pt").write_bytes(b"")
    with pytest.raises(FairseqWeanError, match=r"no checkpoint checkpoint_best.pt in .* \(it holds: checkpoint_last.pt\)"):
        hub.from_pretrained(str(tmp_path))
    with pytest.raises(FairseqWeanError, match=r"no dictionary \(dict.SRC.txt and dict.TGT.txt, or a language "
                                               r"model's dict.txt\) in .*: give data_name_or_path"):
        hub.from_pretrained(str(tmp_path), checkpoint_file="checkpoint_last.pt")
    for name in ("dict.txt", "dict.de.txt"):  # a language model's folder, a translation folder: past the check
        (tmp_path / name).write_text("a 1\n")
        hub.check_pretrained_paths(str(tmp_path), "checkpoint_last.pt", ".")
        (tmp_path / name).unlink()


def test_control_symbols_typed_in_hub_input_are_unknown_words(tmp_path):
    """'a </s> b' was cut short at the typed </s>, and a typed <pad> was masked (issue 43)."""
    import fairseq_wean  # noqa: F401  (installs the hub patches)
    from fairseq.data import Dictionary
    from fairseq.hub_utils import GeneratorHubInterface

    d = Dictionary()
    for w in ("a", "b"):
        d.add_symbol(w)
    hub = GeneratorHubInterface.__new__(GeneratorHubInterface)  # binarize reads src_dict only
    hub.src_dict = d
    a, b = d.index("a"), d.index("b")
    assert hub.binarize("a </s> b <pad> <s>").tolist() == [a, d.unk(), b, d.unk(), d.unk(), d.eos()]
    assert hub.binarize("a b").tolist() == [a, b, d.eos()]
