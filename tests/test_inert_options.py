"""Options fairseq's own commands parse and then ignore, refused in one line at parse (option_rules):

* every GenerationConfig field (and the plugin's generation options, the task's --known-words) has a decision
  under fairseq-generate --score-reference (SequenceScorer reads only --print-alignment): read, with why
  (``SCORE_REFERENCE_READS``), or refused with it (``SCORE_REFERENCE_INERT``);
* fairseq-interactive's --prefix-size (no reference) and --lm-path (never loaded);
* the options only fairseq-train reads, given to an inference command (``training_option_problem``: the
  model's in fairseq-generate, the criterion's, the optimizer's, the scheduler's), and every task's validation
  options (eval_*) in the commands that never validate;
* fairseq-generate --arch itself where no code of the task reads the model's options (enumerated over every task
  and command: tests/test_inference_subsets.py);
* fairseq-train --nprocs-per-node (SlowMo's only), and fairseq-preprocess's '${' (compat's preprocess check).
"""
import dataclasses
import sys

import pytest
from conftest import undecided

PARSERS = {"fairseq-generate": "get_generation_parser", "fairseq-interactive": "get_interactive_generation_parser",
           "fairseq-validate": "get_validation_parser", "fairseq-eval-lm": "get_eval_lm_parser",
           "fairseq-train": "get_training_parser"}


def parse(command, argv, tmp_path, monkeypatch):
    """``command``'s parse as its fairseq_cli entry builds it (fairseq-generate adds --arch, default wav2vec2)."""
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command] + argv)
    parser = getattr(options, PARSERS[command])()
    base = ["--path", "x.pt"]
    if command == "fairseq-generate":
        parser.add_argument("--arch", "-a", metavar="ARCH", default="wav2vec2")
    if command == "fairseq-validate":
        base += ["--task", "translation", "--max-tokens", "100"]
    if command == "fairseq-train":
        base = ["--arch", "lstm", "--optimizer", "adam", "--max-tokens", "100"]
    return options.parse_args_and_arch(parser, [str(tmp_path)] + base + argv)


def refused(command, argv, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as info:
        parse(command, argv, tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def score_reference_fields():
    from fairseq.dataclass.configs import GenerationConfig

    from fairseq_wean import patching

    names = {f.name for f in dataclasses.fields(GenerationConfig)} - {"_name"}
    return names | {flags[0].lstrip("-").replace("-", "_") for flags, _ in patching.generation_arguments()} | \
        {"known_words"}


def test_every_generation_option_has_a_decision_under_score_reference():
    import fairseq_wean  # noqa: F401
    from fairseq_wean.option_rules import SCORE_REFERENCE_INERT, SCORE_REFERENCE_READS
    from fairseq_wean.patching import OPTION_NEEDS

    names = score_reference_fields()
    assert {"beam", "temperature", "print_gates", "known_words"} <= names
    missing = undecided(names, SCORE_REFERENCE_READS, SCORE_REFERENCE_INERT)
    assert not missing, "generation options with no --score-reference decision: {}".format(missing)
    assert all(dest in OPTION_NEEDS for dest in SCORE_REFERENCE_INERT)
    stale = (set(SCORE_REFERENCE_READS) | set(SCORE_REFERENCE_INERT)) - names
    assert not {n for n in stale if not n.endswith("_mt")}


# a value away from fairseq's default for each option --score-reference ignores (written as on the command line)
VALUES = {"beam": ["--beam", "4"], "nbest": ["--nbest", "2"], "max_len_a": ["--max-len-a", "2"],
          "max_len_b": ["--max-len-b", "1"], "min_len": ["--min-len", "2"], "unnormalized": ["--unnormalized"],
          "match_source_len": ["--match-source-len"], "no_early_stop": ["--no-early-stop"],
          "no_beamable_mm": ["--no-beamable-mm"], "lenpen": ["--lenpen", "2"], "unkpen": ["--unkpen", "50"],
          "prefix_size": ["--prefix-size", "1"], "no_repeat_ngram_size": ["--no-repeat-ngram-size", "2"],
          "sampling": ["--sampling", "--nbest", "5"], "sampling_topk": ["--sampling-topk", "3"],
          "sampling_topp": ["--sampling-topp", "0.5"], "constraints": ["--constraints"],
          "temperature": ["--temperature", "2"], "diverse_beam_groups": ["--diverse-beam-groups", "5"],
          "diverse_beam_strength": ["--diverse-beam-strength", "0.2"], "diversity_rate": ["--diversity-rate", "0.5"],
          "print_step": ["--print-step"], "lm_path": ["--lm-path", "lm.pt"], "lm_weight": ["--lm-weight", "0.5"],
          "iter_decode_eos_penalty": ["--iter-decode-eos-penalty", "0.5"],
          "iter_decode_max_iter": ["--iter-decode-max-iter", "5"],
          "iter_decode_force_max_iter": ["--iter-decode-force-max-iter"],
          "iter_decode_with_beam": ["--iter-decode-with-beam", "2"],
          "iter_decode_with_external_reranker": ["--iter-decode-with-external-reranker"],
          "retain_iter_history": ["--retain-iter-history"], "decoding_format": ["--decoding-format", "unigram"],
          "known_words": ["--task", "translation_with_metrics", "--known-words", "{tmp}/known.txt"],
          "beam_mt": ["--beam-mt", "2"], "lenpen_mt": ["--lenpen-mt", "2"], "max_len_a_mt": ["--max-len-a-mt", "2"],
          "max_len_b_mt": ["--max-len-b-mt", "2"]}


def test_every_inert_option_has_a_value_here():
    from fairseq_wean.option_rules import SCORE_REFERENCE_INERT

    assert set(VALUES) == set(SCORE_REFERENCE_INERT)


@pytest.mark.parametrize("dest", sorted(VALUES))
def test_a_generation_option_score_reference_ignores_is_refused(dest, tmp_path, monkeypatch, capsys):
    """fairseq-generate --score-reference --temperature 2 (and each other option the scorer never reads) printed the
    same P- lines as --score-reference alone; now one line at parse naming the option and --score-reference."""
    from fairseq.dataclass.configs import GenerationConfig

    if dest.endswith("_mt") and dest not in {f.name for f in dataclasses.fields(GenerationConfig)}:
        pytest.skip("fairseq 0.12.2 has no --{}".format(dest.replace("_", "-")))
    (tmp_path / "known.txt").write_text("a\nb\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in VALUES[dest]]
    line = refused("fairseq-generate", ["--score-reference"] + argv, tmp_path, monkeypatch, capsys)
    flags = [a for a in argv if a.startswith("--") and a != "--task"]
    assert any(line.startswith("fairseq-generate: error: {} does nothing here".format(f)) for f in flags), line
    assert "--score-reference" in line and "decodes nothing" in line, line


@pytest.mark.parametrize("argv", [["--print-alignment"], ["--replace-unk"], ["--retain-dropout"], ["--beam", "5"]])
def test_what_score_reference_reads_is_taken(argv, tmp_path, monkeypatch):
    parse("fairseq-generate", ["--score-reference"] + argv, tmp_path, monkeypatch)


@pytest.mark.parametrize("argv,flag", [(["--prefix-size", "1"], "--prefix-size"), (["--lm-path", "lm.pt"], "--lm-path")])
def test_interactive_refuses_what_it_never_reads(argv, flag, tmp_path, monkeypatch, capsys):
    """fairseq-interactive has no reference to take a prefix from, and never loads --lm-path: both were ignored."""
    line = refused("fairseq-interactive", argv, tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-interactive: error: {} does nothing here".format(flag)) and "interactive" in \
        line.split("here", 1)[1], line
    parse("fairseq-generate", argv, tmp_path, monkeypatch)  # fairseq-generate reads both


# (command, argv, the option named): an option only fairseq-train reads, given to an inference command
TRAINING_ONLY = [
    ("fairseq-generate", ["--arch", "wean_lstm", "--wean-score", "concat"], "--wean-score", "--model-overrides"),
    ("fairseq-generate", ["--arch", "core_copy", "--core-topk", "3"], "--core-topk", "--model-overrides"),
    ("fairseq-generate", ["--arch", "lstm", "--encoder-layers", "2"], "--encoder-layers", "--model-overrides"),
    ("fairseq-generate", ["--dropout", "0.5"], "--dropout", "--model-overrides"),  # wav2vec2's, fairseq's default arch
    ("fairseq-generate", ["--criterion", "core_mode_loss", "--mode-loss-weight", "0.5"], "--mode-loss-weight",
     "computes no loss"),
    ("fairseq-generate", ["--criterion", "core_mode_loss"], "--criterion", "computes no loss"),
    ("fairseq-interactive", ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"],
     "--label-smoothing", "computes no loss"),
    ("fairseq-eval-lm", ["--optimizer", "adam"], "--optimizer", "trains nothing"),
    ("fairseq-validate", ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "5"], "--warmup-updates",
     "trains nothing"),
    ("fairseq-generate", ["--eval-bleu"], "--eval-bleu", "do not validate"),
    ("fairseq-interactive", ["--eval-bleu-print-samples"], "--eval-bleu-print-samples", "do not validate"),
    ("fairseq-interactive", ["--eval-tokenized-bleu"], "--eval-tokenized-bleu", "do not validate"),
]


@pytest.mark.parametrize("command,argv,flag,says", TRAINING_ONLY)
def test_an_option_only_training_reads_is_refused_in_inference(command, argv, flag, says, tmp_path, monkeypatch,
                                                                capsys):
    line = refused(command, argv, tmp_path, monkeypatch, capsys)
    assert line.startswith("{}: error: {} does nothing here".format(command, flag)) and says in line, line


@pytest.mark.parametrize("command,argv", [
    ("fairseq-generate", ["--max-source-positions", "100"]),  # the task's (fairseq-generate's --arch: refused)
    ("fairseq-generate", ["--task", "sentence_ranking", "--arch", "roberta_base", "--max-positions", "256"]),
    ("fairseq-validate", ["--criterion", "core_mode_loss", "--mode-loss-weight", "0.5"]),  # overrides the stored one
    ("fairseq-validate", ["--eval-bleu"]),
    ("fairseq-train", ["--dropout", "0.5", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"]),
])
def test_options_a_command_reads_are_taken(command, argv, tmp_path, monkeypatch):
    parse(command, argv, tmp_path, monkeypatch)


def test_every_plugin_model_option_is_refused_in_generate(tmp_path, monkeypatch, capsys):
    """The class: every option of every plugin model (its architecture's defaults filled in as fairseq fills them),
    given to fairseq-generate away from that default: refused, naming it and --model-overrides."""
    import fairseq_wean  # noqa: F401
    import copy

    from fairseq.models import ARCH_CONFIG_REGISTRY, MODEL_REGISTRY

    from fairseq_wean.option_rules import _command_defaults, command_reads, component_actions

    tried, reads = 0, command_reads("generate", "translation")  # the task's (--max-source-positions): taken
    for arch in sorted(a for a, cls in MODEL_REGISTRY.items() if cls.__module__.startswith("fairseq_wean")):
        defaults = copy.deepcopy(_command_defaults("generate", "translation"))
        ARCH_CONFIG_REGISTRY[arch](defaults)  # the architecture's defaults, as fairseq fills them in
        for action in component_actions("arch", arch):
            default = getattr(defaults, action.dest, None)
            if action.dest in reads:  # taken: the line names --arch itself, which no code of translation reads
                line = refused("fairseq-generate", ["--arch", arch, action.option_strings[0], "100"], tmp_path,
                               monkeypatch, capsys)
                assert line.startswith("fairseq-generate: error: --arch does nothing in fairseq-generate"), line
                continue
            if action.nargs == 0:
                if default:
                    continue  # a flag already on
                value = []
            elif action.choices:
                value = [str(next(c for c in action.choices if c != default))]
            elif action.type in (int, float) or isinstance(default, (int, float)):
                value = [str((default or 0) + 1)]
            else:
                continue
            flag = action.option_strings[0]
            line = refused("fairseq-generate", ["--arch", arch, flag] + value, tmp_path, monkeypatch, capsys)
            assert line.startswith("fairseq-generate: error: {} does nothing here".format(flag)) and \
                "--model-overrides" in line, line
            tried += 1
    assert tried > 30, tried


def test_nprocs_per_node_is_refused_where_slowmo_is_not_used(tmp_path, monkeypatch, capsys):
    line = refused("fairseq-train", ["--cpu", "--nprocs-per-node", "2"], tmp_path, monkeypatch, capsys)
    assert line.startswith("fairseq-train: error: --nprocs-per-node does nothing here") and "slowmo" in line, line


def test_preprocess_refuses_an_interpolation_before_writing(tmp_path, monkeypatch):
    """fairseq-preprocess --destdir 'pp${x}' binarized the whole folder, whose name every later command refused."""
    import subprocess

    from conftest import USER_DIR

    for side in ("en", "de"):
        (tmp_path / "train.{}".format(side)).write_text("a b\nc d\n")
    run = subprocess.run([sys.executable, "-c", "from fairseq_cli.preprocess import cli_main; cli_main()",
                          "--user-dir", str(USER_DIR), "-s", "en", "-t", "de", "--trainpref", "train",
                          "--destdir", "pp${x}"], cwd=str(tmp_path), capture_output=True, text=True)
    assert run.returncode != 0 and run.stderr.strip().splitlines()[-1].startswith(
        "fairseq-wean: error: --destdir 'pp${x}' holds '${'"), run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.de", "train.en"]


@pytest.mark.parametrize("prefix,sizes,refused_count", [
    (100, [5, 9, 3], 3), (3, [5, 9, 3], 1), (2, [5, 9, 3], 0), (0, [1, 2], 0), (1, [2, 4], 0)])
def test_a_prefix_that_forces_a_whole_reference_is_refused_before_decoding(prefix, sizes, refused_count):
    """fairseq-generate --prefix-size 100 forced every reference whole (its </s> too): the hypotheses were the
    references, BLEU 66.77 for a model at ~0. A reference of at most --prefix-size tokens (</s> included) is
    refused at the data check before decoding (fixes_decoding.check_generate_data); a shorter prefix stays."""
    import types

    import numpy

    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.fixes_decoding import check_generate_data, prefix_size_problem

    problem = prefix_size_problem(prefix, numpy.array(sizes), "test")
    if not refused_count:
        assert problem is None
        return
    assert problem.startswith("--prefix-size {} forces the whole reference (with its </s>) of {} of the {} "
                              "sentences of --gen-subset test (the shortest has {} tokens)".format(
                                  prefix, refused_count, len(sizes), min(n for n in sizes if n <= prefix))), problem
    cfg = types.SimpleNamespace(generation=types.SimpleNamespace(prefix_size=prefix))
    dataset = types.SimpleNamespace(tgt=[[1]] * len(sizes), tgt_sizes=numpy.array(sizes))
    with pytest.raises(FairseqWeanError) as info:
        check_generate_data(cfg, types.SimpleNamespace(target_dictionary=object()), dataset, "test")
    assert str(info.value) == problem
