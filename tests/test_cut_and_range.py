"""A cut or inconsistent input is an error, not a score; a number out of range is an error before
any work (issue 57, classes 4 and 5, for the inputs named here).

* Every reader of fairseq-generate logs (``fairseq-wean-score``, ``fairseq-wean-report``, the
  comparison runner's ``extract_outputs``) goes through ``GenerateLog``, which refuses a log with
  ``T-`` lines but no final ``Generate ... with beam=`` line (a log cut in the middle of its last
  ``H-`` line used to be scored as complete).
* A file given as a fairseq dictionary is read by the one dictionary reader
  (``data.dictionary.dictionary_words``): ``unk_markers encode --vocab`` with a text file used to turn
  every word into a marker.
* Counts that cannot be negative or zero take ``errors.at_least``.
"""
import pytest

from conftest import cli
from fairseq_wean.errors import FairseqWeanError
from test_scorer import GEN_LOG


def cut_log(tmp_path):
    text = GEN_LOG[: GEN_LOG.index("H-1\t-0.40\tbirds") + len("H-1\t-0.40\tbi")]  # cut inside the last H- line
    path = tmp_path / "cut.log"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("tool", ["fairseq-wean-score", "fairseq-wean-report"])
def test_a_cut_log_is_refused_by_every_reader(tool, tmp_path):
    log = cut_log(tmp_path)
    extra = ["--metrics", "bleu"] + (["--out", tmp_path / "r.html"] if tool.endswith("report") else [])
    proc = cli(tool, "--sys", log, *extra, check=False)
    assert proc.returncode == 1 and "is incomplete" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
    complete = tmp_path / "complete.log"
    complete.write_text(GEN_LOG, encoding="utf-8")
    assert cli(tool, "--sys", complete, *extra, check=False).returncode == 0


def test_a_cut_log_is_refused_by_the_comparison_runner(tmp_path):
    from fairseq_wean.compare.evaluate import extract_outputs

    src = tmp_path / "src"
    src.write_text("a\nb\nc\nd\n")
    with pytest.raises(FairseqWeanError, match="is incomplete"):
        extract_outputs(str(cut_log(tmp_path)), str(src), str(tmp_path / "out"), with_replace_unk=False)


def test_unk_markers_refuses_a_vocab_that_is_not_a_dictionary(tmp_path):
    (tmp_path / "vocab.txt").write_text("the\ncat\n")  # words, no counts: not a fairseq dictionary
    (tmp_path / "s").write_text("the cat\n")
    proc = cli("python", "-m", "preprocess.unk_markers", "encode", "--vocab", tmp_path / "vocab.txt",
               "--src", tmp_path / "s", "--src-out", tmp_path / "s.out", check=False)
    assert proc.returncode == 1 and "expected 'WORD COUNT'" in proc.stderr
    assert not (tmp_path / "s.out").exists()


@pytest.mark.parametrize("args,flag", [
    (["fairseq-wean-score", "--sys", "x", "--metrics", "bleu", "--bootstrap-samples", "0"], "--bootstrap-samples"),
    (["fairseq-wean-report", "--sys", "x", "--out", "y.html", "--bootstrap-samples", "-5"], "--bootstrap-samples"),
    (["python", "-m", "preprocess.unk_markers", "vocab", "--src", "a", "--tgt", "b", "--out", "c", "--markers", "-5"],
     "--markers"),
    (["python", "-m", "preprocess.unk_markers", "vocab", "--src", "a", "--tgt", "b", "--out", "c", "--min-count", "0"],
     "--min-count"),
])
def test_counts_out_of_range_are_refused_before_any_work(args, flag, tmp_path):
    proc = cli(*args, check=False)
    assert proc.returncode == 2 and "argument {}: must be >=".format(flag) in proc.stderr


@pytest.mark.parametrize("tool", ["fairseq-wean-score", "fairseq-wean-report"])
def test_an_unknown_bleu_tokenization_is_refused_before_any_work(tool):
    """A KeyError traceback from sacrebleu before (issue 57, class 6)."""
    extra = ["--out", "never.html"] if tool.endswith("report") else []
    proc = cli(tool, "--sys", "x", "--metrics", "bleu", "--bleu-tokenize", "bogus", *extra, check=False)
    assert proc.returncode == 2 and "unknown BLEU tokenization 'bogus': choose one of" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_run_named_twice_is_refused(tmp_path):
    """fairseq-wean-compare --runs lstm:word,lstm:word started both into one folder, clobbered
    train.log and ended in a traceback (issue 57, class 7)."""
    proc = cli("fairseq-wean-compare", "translation", tmp_path, "--runs", "lstm:word,lstm:word", "--out",
               tmp_path / "out", check=False)
    assert proc.returncode == 2 and "--runs names lstm:word twice" in proc.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ fairseq's decoding options
def numeric_generation_options():
    import dataclasses

    from fairseq.dataclass.configs import GenerationConfig

    return [f.name for f in dataclasses.fields(GenerationConfig) if f.type in (int, float)
            or any(t in str(f.type) for t in ("int", "float"))]


def test_every_numeric_decoding_option_has_a_range_or_a_reason():
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES

    missing = [name for name in numeric_generation_options() if name not in GENERATION_RANGES
               and name not in GENERATION_ANY_VALUE]
    assert not missing, "numeric generation options with no range in patching.GENERATION_RANGES: {}".format(missing)


def out_of_range_values(low, kind, high, above):
    values = [low if above else low - (1 if kind is int else 0.5)]
    if high is not None:
        values.append(high + 1)
    if kind is float:
        values += [float("nan"), float("inf")]
    return values


def parse(tool, argv):
    from fairseq import options

    import fairseq_wean  # noqa: F401  (what --user-dir does before the parser is built)

    parser = options.get_generation_parser() if tool == "generate" else options.get_interactive_generation_parser()
    return options.parse_args_and_arch(parser, ["data-bin", "--path", "x.pt"] + argv)


def parser_dests(tool):
    """The options the generate or interactive parser of this fairseq has (their dests)."""
    from fairseq import options

    parser = options.get_generation_parser() if tool == "generate" else options.get_interactive_generation_parser()
    return {action.dest for action in parser._actions}


@pytest.mark.parametrize("tool", ["generate", "interactive"])
def test_every_decoding_option_out_of_range_is_one_line_before_any_work(tool, capsys):
    """fairseq-generate --beam 0 and --max-len-a -3 ended in reshape/assert tracebacks."""
    from fairseq_wean.patching import GENERATION_RANGES

    dests = parser_dests(tool)
    for name, (low, kind, high, above) in GENERATION_RANGES.items():
        if name not in dests:
            continue  # not an option of this fairseq (--beam-mt: fairseq >= 0.12.3)
        flag = "--" + name.replace("_", "-")
        for value in out_of_range_values(low, kind, high, above):
            with pytest.raises(SystemExit) as info:
                parse(tool, [flag, str(value)])
            assert info.value.code == 2, (flag, value)
            err = capsys.readouterr().err.strip().splitlines()[-1]
            assert "argument {}".format(flag) in err and "must be" in err, (flag, value, err)
        ok = low + (1 if above else 0) if high is None or low + 1 <= high else high
        # --max-len-b 0 alone would be below the default --min-len 1 (refused: a rule between options);
        # options that act only with another one (patching.OPTION_NEEDS) get it
        context = {"max_len_b": ["--max-len-a", "1"], "diverse_beam_strength": ["--diverse-beam-groups", "1"],
                   "sampling_topk": ["--sampling", "--nbest", "5"],
                   "sampling_topp": ["--sampling", "--nbest", "5"], "iter_decode_max_iter": ["--task", "translation_lev"],
                   "iter_decode_with_beam": ["--task", "translation_lev"]}.get(name, [])
        assert getattr(parse(tool, [flag, str(kind(ok))] + context), name) == kind(ok), flag


@pytest.mark.parametrize("tool", ["generate", "interactive"])
def test_any_value_options_take_only_finite_numbers(tool, capsys):
    from fairseq_wean.patching import GENERATION_ANY_VALUE

    for name in GENERATION_ANY_VALUE:
        flag = "--" + name.replace("_", "-")
        for value in ("nan", "inf", "-inf"):
            with pytest.raises(SystemExit):
                parse(tool, ["{}={}".format(flag, value)])
            assert "must be a finite number" in capsys.readouterr().err, (flag, value)


@pytest.mark.parametrize("argv,message", [
    (["--beam", "1", "--nbest", "2"], "--nbest 2 cannot exceed --beam 1"),
    (["--sampling"], "--sampling draws --beam 5 samples"),
    (["--shard-id", "5", "--num-shards", "2"], "--shard-id 5 must be below --num-shards 2"),
    (["--num-shards", "0"], "argument --num-shards: must be >= 1"),
])
@pytest.mark.parametrize("tool", ["generate", "interactive"])
def test_contradicting_decoding_options_are_one_line(tool, argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse(tool, argv)
    assert info.value.code == 2 and message in capsys.readouterr().err.strip().splitlines()[-1]


def test_eval_bleu_args_take_the_same_ranges():
    import json

    from fairseq.dataclass.configs import GenerationConfig

    from fairseq_wean.patching import GENERATION_RANGES
    from fairseq_wean.tasks.translation_with_metrics import check_generation_args

    for name, (low, kind, high, above) in GENERATION_RANGES.items():
        if name in ("batch_size", "max_tokens", "required_batch_size_multiple"):
            continue  # batching, not a generation option
        if name not in GenerationConfig.__dataclass_fields__:
            continue  # not a generation option of this fairseq (beam_mt: fairseq >= 0.12.3)
        for value in out_of_range_values(low, kind, high, above):
            with pytest.raises(FairseqWeanError, match="{} must be ".format(name)):
                check_generation_args(json.dumps({name: value, "beam": 5, "nbest": 1}) if name not in ("beam", "nbest")
                                      else json.dumps({name: value}))
