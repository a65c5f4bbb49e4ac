"""The Python API (fairseq_wean.hub.from_pretrained, --bpe unk_markers) and --replace-unk on binarized data.

One module fixture trains four tiny models at once (2 shared cores): wean_lstm and
word_attn_gated on the session's simplification data, core_copy on the marker data set of
tests/test_core_copy.py (a name seen once per sentence, copied by the target), and wean_lstm on
the same named data preprocessed without markers (names are <unk>, which the model learns to copy).
"""
import pytest

from conftest import USER_DIR, cli, cli_concurrently, generated_hypotheses, train_args
from test_core_copy import CORE_SIZES, prepare_marked_data
from test_word_attn_gated import CLI_SIZES

WEAN_SIZES = ["--embed-dim", 32, "--encoder-hidden-size", 32, "--decoder-hidden-size", 32, "--dropout", 0.1,
              "--max-tokens", 400]


@pytest.fixture(scope="module")
def trained(raw_dir, data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("hub")
    named_raw, named_marked, named_vocab, _ = prepare_marked_data(work)
    named_bin, unk_bin = work / "named-bin", work / "unk-bin"
    common = ["--source-lang", "src", "--target-lang", "tgt", "--workers", 1, "--joined-dictionary"]
    cli_concurrently([
        ("fairseq-preprocess", common + ["--trainpref", named_marked / "train", "--validpref", named_marked / "valid",
                                         "--testpref", named_marked / "test", "--destdir", named_bin,
                                         "--srcdict", named_vocab]),
        ("fairseq-preprocess", common + ["--trainpref", named_raw / "train", "--validpref", named_raw / "valid",
                                         "--testpref", named_raw / "test", "--destdir", unk_bin,
                                         "--thresholdsrc", 2, "--thresholdtgt", 2]),
    ])
    ck = {name: work / ("ck-" + name) for name in ("wean_lstm", "word_attn_gated", "core_copy", "unk")}
    cli_concurrently([
        ("fairseq-train", train_args(data_bin, ck["wean_lstm"], "wean_lstm", *WEAN_SIZES, epochs=4)),
        ("fairseq-train", train_args(data_bin, ck["word_attn_gated"], "word_attn_gated", *CLI_SIZES, epochs=3)),
        ("fairseq-train", train_args(named_bin, ck["core_copy"], "core_copy", *CORE_SIZES,
                                     "--core-align-table", work / "named.table", epochs=8)),
        ("fairseq-train", train_args(unk_bin, ck["unk"], "wean_lstm", *WEAN_SIZES, epochs=8)),
    ])
    return {"work": work, "ck": ck, "data_bin": data_bin, "raw_dir": raw_dir, "named_raw": named_raw,
            "named_bin": named_bin, "unk_bin": unk_bin}


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


@pytest.mark.parametrize("arch", ["wean_lstm", "word_attn_gated"])
def test_hub_translate_equals_generate_and_interactive(trained, arch):
    import fairseq_wean.hub

    data_bin, ck = trained["data_bin"], trained["ck"][arch]
    sentences = (trained["raw_dir"] / "test.src").read_text().splitlines()
    hub = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path=str(data_bin))
    translated = hub.translate(sentences, beam=5)
    gen, inter = cli_concurrently([
        ("fairseq-generate", [data_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt",
                              "--gen-subset", "test", "--beam", 5, "--cpu", "--batch-size", 5]),
        ("fairseq-interactive", [data_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt",
                                 "--source-lang", "src", "--target-lang", "tgt", "--beam", 5, "--nbest", 2,
                                 "--buffer-size", 4, "--batch-size", 3, "--cpu"],
         {"input": "\n".join(sentences) + "\n"}),
    ])
    generated = generated_hypotheses(gen.stdout)
    interactive = interactive_outputs(inter.stdout)
    assert len(translated) == len(sentences) == 13 and any(translated)
    assert translated == [generated[i] for i in range(13)]
    assert translated == [interactive[i][0] for i in range(13)]


def test_inherited_from_pretrained_classmethod(trained):
    import fairseq_wean  # noqa: F401
    import fairseq_wean.hub
    from fairseq_wean.models.wean_lstm import WeanLSTMModel

    ck, data_bin = trained["ck"]["wean_lstm"], str(trained["data_bin"])
    sentences = (trained["raw_dir"] / "test.src").read_text().splitlines()[:4]
    hub = WeanLSTMModel.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt", data_name_or_path=data_bin)
    ours = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt", data_name_or_path=data_bin)
    assert type(hub).__name__ == "GeneratorHubInterface"
    assert hub.translate(sentences) == ours.translate(sentences)
    assert hub.translate(sentences[0]) == ours.translate(sentences)[0]


def core_copy_inputs(trained):
    """The raw named test sources, one repeated, and one with its name swapped for another unseen name."""
    sources = (trained["named_raw"] / "test.src").read_text().splitlines()
    name = next(w for w in sources[0].split() if w.startswith("name"))
    variant = sources[0].replace(name, "nameXYZ")
    return sources, name, variant, sources + [sources[0], variant, sources[0]]


def test_core_copy_hub_puts_rare_source_words_back(trained):
    import fairseq_wean.hub
    from fairseq_wean.data.markers import decode_hypothesis

    ck, named_bin = trained["ck"]["core_copy"], trained["named_bin"]
    sources, name, variant, inputs = core_copy_inputs(trained)
    hub = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path=str(named_bin), bpe="unk_markers")
    translated = hub.translate(inputs, beam=5)
    # fairseq-generate on the marked binarized test set, mapped back with the raw sources
    gen = cli("fairseq-generate", named_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt",
              "--gen-subset", "test", "--beam", 5, "--cpu", "--batch-size", 5)
    marked = generated_hypotheses(gen.stdout)
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


def test_core_copy_interactive_bpe_unk_markers_equals_hub(trained):
    import fairseq_wean.hub
    from fairseq_wean.data.markers import marker_position

    ck, named_bin = trained["ck"]["core_copy"], trained["named_bin"]
    sources, name, variant, inputs = core_copy_inputs(trained)
    hub = fairseq_wean.hub.from_pretrained(str(ck), checkpoint_file="checkpoint_best.pt",
                                           data_name_or_path=str(named_bin), bpe="unk_markers")
    translated = hub.translate(inputs, beam=5)
    inter = cli("fairseq-interactive", named_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt",
                "--source-lang", "src", "--target-lang", "tgt", "--beam", 5, "--nbest", 2, "--buffer-size", 3,
                "--batch-size", 2, "--cpu", "--bpe", "unk_markers", input="\n".join(inputs) + "\n")
    detok, marked = interactive_outputs(inter.stdout, "D"), interactive_outputs(inter.stdout, "H")
    assert sorted(detok) == list(range(len(inputs))) and all(len(v) == 2 for v in detok.values())
    assert [detok[i][0] for i in range(len(inputs))] == translated
    # every hypothesis of the nbest list is mapped back with its own source
    for i, line in enumerate(inputs):
        for hyp_marked, hyp in zip(marked[i], detok[i]):
            assert "<unk-" not in hyp
            expected = [line.split()[n] if n is not None else w
                        for w, n in ((w, marker_position(w)) for w in hyp_marked.split())]
            assert hyp.split() == expected


def test_generate_replace_unk_on_binarized_data_uses_the_attention(trained):
    ck, unk_bin = trained["ck"]["unk"], trained["unk_bin"]
    src_file = trained["named_raw"] / "test.src"
    base = [unk_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt", "--gen-subset", "test",
            "--beam", 5, "--cpu", "--batch-size", 5]
    plain, replaced, aligned_replaced, no_source, wrong_source = cli_concurrently([
        ("fairseq-generate", base + ["--print-alignment"]),
        ("fairseq-generate", base + ["--replace-unk", "--replace-unk-source", src_file]),
        ("fairseq-generate", base + ["--replace-unk", "--replace-unk-source", src_file, "--print-alignment"]),
        ("fairseq-generate", base + ["--replace-unk"], {"check": False}),
        ("fairseq-generate", base + ["--replace-unk", "--replace-unk-source",
                                     trained["named_raw"] / "valid.src"], {"check": False}),
    ])
    hyps, aligns = generated_hypotheses(plain.stdout), alignments(plain.stdout)
    sources = src_file.read_text().splitlines()
    expected = {i: reference_replace_unk(hyps[i], sources[i], aligns[i][0]) for i in hyps}
    assert generated_hypotheses(replaced.stdout) == expected
    assert generated_hypotheses(aligned_replaced.stdout) == expected
    assert alignments(aligned_replaced.stdout) == aligns  # A- lines unchanged by the replacement
    assert not any("<unk>" in h for h in expected.values())
    for proc, problem in ((no_source, "needs the source words"), (wrong_source, "has")):
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines()[-1].startswith("fairseq-wean: error: --replace-unk")
        assert problem in proc.stderr and "Traceback" not in proc.stderr


def test_interactive_replace_unk_uses_the_input_words(trained):
    ck, unk_bin = trained["ck"]["unk"], trained["unk_bin"]
    sources = (trained["named_raw"] / "test.src").read_text().splitlines()
    inputs = sources + [sources[1], sources[1].replace(next(w for w in sources[1].split() if w.startswith("name")),
                                                        "nameXYZ")]
    base = [unk_bin, "--user-dir", USER_DIR, "--path", ck / "checkpoint_best.pt", "--source-lang", "src",
            "--target-lang", "tgt", "--beam", 5, "--nbest", 2, "--buffer-size", 4, "--batch-size", 3, "--cpu",
            "--print-alignment"]
    plain, replaced = cli_concurrently([
        ("fairseq-interactive", base, {"input": "\n".join(inputs) + "\n"}),
        ("fairseq-interactive", base + ["--replace-unk"], {"input": "\n".join(inputs) + "\n"}),
    ])
    hyps, aligns = interactive_outputs(plain.stdout, "H"), alignments(plain.stdout)
    expected = {i: [reference_replace_unk(h, inputs[i], a) for h, a in zip(hyps[i], aligns[i])] for i in hyps}
    assert interactive_outputs(replaced.stdout, "H") == expected
    assert interactive_outputs(replaced.stdout, "D") == expected


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
