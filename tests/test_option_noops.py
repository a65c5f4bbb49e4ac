"""Options that do nothing are refused, and every option fairseq evaluates as Python text is checked at parse.

* ``patching.OPTION_NEEDS``: option -> the condition under which it acts (per command; the hub's keywords are
  command "hub"). Given (not at its default) where the condition is false, one line at parse, before any work.
  Every option of the plugin's models and criterion and of fairseq's generation options is either a row or
  listed here as always acting (with why): a new option must choose. Each row is tried both ways.
* ``patching.LITERAL_OPTIONS``: every option whose text fairseq (or the plugin) evaluates with
  ``ast.literal_eval`` / ``eval`` / ``json.loads``, found by reading the code, is checked at parse.
* fairseq's search options against each other (``--diverse-beam-groups`` dividing ``--beam``, the signs of
  ``--diversity-rate`` and ``--diverse-beam-strength``), on the command line and as hub keywords.
"""
import argparse
import dataclasses
import glob
import os
import re
import sys

import pytest

# options that act whenever given, with why (the rest have a row in patching.OPTION_NEEDS)
ALWAYS = {
    # fairseq's generation options
    "beam": "the search's width", "beam_mt": "read by translation_multi_simple_epoch only (fairseq's)",
    "decoding_format": "the output's format",
    "diverse_beam_groups": "turns on diverse beam search", "diversity_rate": "turns on diverse siblings search",
    "eos_token": "fairseq's", "lenpen_mt": "translation_multi_simple_epoch's", "lm_path": "adds the language model",
    "max_len_a_mt": "translation_multi_simple_epoch's",
    "max_len_b_mt": "translation_multi_simple_epoch's", "min_len": "the length rule",
    "model_overrides": "the model's options", "nbest": "hypotheses printed", "no_beamable_mm": "the model's attention",
    "no_early_stop": "deprecated by fairseq, kept", "no_repeat_ngram_size": "blocks repeats",
    "no_seed_provided": "the seed", "path": "the checkpoint",
    "prefix_size": "the forced prefix", "print_alignment": "prints alignments",
    "quiet": "the output", "replace_unk": "the output's unknown words",
    "retain_dropout": "dropout at inference",
    "sacrebleu": "the score", "sampling": "the search", "score_reference": "scores the reference",
    "temperature": "divides the scores", "unkpen": "the unknown word's score",
    # the plugin's generation options
    "print_gates": "the condition is the checkpoint's model (a gate): refused before the first batch is decoded "
                   "(report/gate_lines.check_model_has_gate, tests/test_report.py)",
    "replace_unk_source": "the output's unknown words",
    # the plugin's models: sizes and choices every model of that name reads (modules/model_options.py checks them)
    "attention_score": "every model", "core_align_table": "core_copy", "core_attend_previous_state": "core_copy",
    "core_input_feeding": "core_copy (refused at build without --core-attend-previous-state)",
    "core_num_frequent": "core_copy", "core_psi": "core_copy", "core_topk": "core_copy",
    "decoder_embed_dim": "sizes", "decoder_hidden_size": "sizes", "decoder_layers": "sizes",
    "decoder_out_embed_dim": "sizes", "dropout": "training", "embed_dim": "sizes", "encoder_bidirectional": "sizes",
    "encoder_embed_dim": "sizes", "encoder_hidden_size": "sizes", "encoder_layers": "sizes",
    "max_source_positions": "lengths", "max_target_positions": "lengths",
    "share_decoder_input_output_embed": "the output projection", "wean_candidates": "wean_lstm",
    "wean_score": "wean_lstm", "rnn_cell": "word_attn_gated", "word_attention": "word_attn_gated",
    "word_attn_initial_state": "word_attn_gated", "word_attn_readout": "word_attn_gated",
    # the plugin's criterion
    "mode_loss_weight": "core_mode_loss", "label_smoothing": "the loss", "sentence_avg": "the loss",
}


def plugin_and_generation_options():
    import fairseq_wean  # noqa: F401
    from fairseq import options
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.models import MODEL_REGISTRY

    from fairseq_wean import patching

    parser = options.get_generation_parser()
    names = {a.dest for g in parser._action_groups if g.title == "Generation" for a in g._group_actions}
    names |= {flags[0].lstrip("-").replace("-", "_") for flags, _ in patching.generation_arguments()}
    for cls in MODEL_REGISTRY.values():
        if cls.__module__.startswith("fairseq_wean"):
            models = argparse.ArgumentParser()
            cls.add_args(models)
            names |= {a.dest for a in models._actions if a.dest != "help"}
    for config in CRITERION_DATACLASS_REGISTRY.values():
        if config.__module__.startswith("fairseq_wean"):
            names |= {f.name for f in dataclasses.fields(config) if f.name != "_name"}
    return names


def test_every_option_acts_always_or_has_a_condition():
    from fairseq_wean.patching import OPTION_NEEDS

    names = plugin_and_generation_options()
    assert {"beam", "print_gates", "core_frequent_from", "sampling_topk", "mode_loss_weight"} <= names
    missing = sorted(names - set(ALWAYS) - set(OPTION_NEEDS))
    assert not missing, "options with neither a row in patching.OPTION_NEEDS nor a reason in ALWAYS: {}".format(missing)
    assert not set(ALWAYS) & set(OPTION_NEEDS)
    # no stale reason; fairseq-fixed's translation_multi_simple_epoch fields (*_mt) are not in fairseq 0.12.2
    stale = {n for n in set(ALWAYS) - names if not n.endswith("_mt")}
    assert not stale, stale


# each row of OPTION_NEEDS: (command, argv where it does nothing, message, argv where it acts)
ROWS = {
    "diverse_beam_strength": ("fairseq-generate", ["--diverse-beam-strength", "0.2"], "--diverse-beam-strength does "
                              "nothing here", ["--diverse-beam-strength", "0.2", "--diverse-beam-groups", "5"]),
    "sampling_topk": ("fairseq-generate", ["--sampling-topk", "3"], "--sampling-topk does nothing here",
                      ["--sampling-topk", "3", "--sampling", "--nbest", "5"]),
    "sampling_topp": ("fairseq-interactive", ["--sampling-topp", "0.5"], "--sampling-topp does nothing here",
                      ["--sampling-topp", "0.5", "--sampling", "--nbest", "5"]),
    "lm_weight": ("fairseq-generate", ["--lm-weight", "0.5"], "--lm-weight does nothing here",
                  ["--lm-weight", "0.5", "--lm-path", "lm.pt"]),
    "retain_dropout_modules": ("fairseq-generate", ["--retain-dropout-modules", "A"],
                               "--retain-dropout-modules does nothing here",
                               ["--retain-dropout-modules", "A", "--retain-dropout"]),
    "gen_subset": ("fairseq-interactive", ["--gen-subset", "valid"], "--gen-subset does nothing here",
                   None),
    # act in fairseq-generate and -interactive (the output's text, where it goes); fairseq-eval-lm's: test_eval_lm.py
    "results_path": ("fairseq-validate", ["--results-path", "r"], "--results-path does nothing here", None),
    "post_process": ("fairseq-validate", ["--post-process", "letter"], "--post-process does nothing here",
                     ["--post-process", "letter", "--criterion", "ctc"]),
    # the length options under --match-source-len, the length penalty of unnormalized scores, the search's
    # options under --score-reference (fairseq's SequenceScorer decodes nothing)
    "max_len_a": ("fairseq-generate", ["--match-source-len", "--max-len-a", "2"], "--max-len-a does nothing here",
                  ["--max-len-a", "2"]),
    "max_len_b": ("fairseq-interactive", ["--match-source-len", "--max-len-b", "3"], "--max-len-b does nothing here",
                  ["--max-len-b", "3"]),
    "lenpen": ("fairseq-generate", ["--unnormalized", "--lenpen", "2"], "--lenpen does nothing here", ["--lenpen", "2"]),
    "match_source_len": ("fairseq-generate", ["--score-reference", "--match-source-len"],
                         "--match-source-len does nothing here", ["--match-source-len"]),
    "unnormalized": ("fairseq-generate", ["--score-reference", "--unnormalized"], "--unnormalized does nothing here",
                     ["--unnormalized"]),
    # iterative refinement's options on a task that decodes without it (--print-step: KeyError 'steps')
    **{dest: ("fairseq-generate", argv, "--{} does nothing here".format(dest.replace("_", "-")),
              ["--task", "translation_lev"] + argv) for dest, argv in (
        ("iter_decode_eos_penalty", ["--iter-decode-eos-penalty", "0.5"]),
        ("iter_decode_max_iter", ["--iter-decode-max-iter", "5"]),
        ("iter_decode_force_max_iter", ["--iter-decode-force-max-iter"]),
        ("iter_decode_with_beam", ["--iter-decode-with-beam", "2"]),
        ("iter_decode_with_external_reranker", ["--iter-decode-with-external-reranker"]),
        ("print_step", ["--print-step"]), ("retain_iter_history", ["--retain-iter-history"]))},
    # fairseq-generate's data has no constraints (a TypeError after loading); fairseq-interactive reads them
    "constraints": ("fairseq-generate", ["--constraints"], "--constraints does nothing here", None),
    "core_frequent_from": ("fairseq-train", ["--arch", "core_copy", "--core-num-frequent", "0",
                                             "--core-frequent-from", "target"], "--core-frequent-from does nothing",
                           ["--arch", "core_copy", "--core-num-frequent", "5", "--core-frequent-from", "target"]),
    # acts only in a --save-dir with checkpoint_best.pt and no checkpoint_last.pt: tests/test_training_bounds.py
    "overwrite_best_checkpoint": ("fairseq-train", ["--task", "translation_with_metrics", "--overwrite-best-checkpoint"],
                                  "--overwrite-best-checkpoint does nothing here", None),
}

PARSERS = {"fairseq-train": ("get_training_parser", ["--optimizer", "adam", "--max-tokens", "100"]),
           "fairseq-generate": ("get_generation_parser", ["--path", "x.pt"]),
           "fairseq-interactive": ("get_interactive_generation_parser", ["--path", "x.pt"]),
           "fairseq-validate": ("get_validation_parser", ["--path", "x.pt", "--task", "translation", "--max-tokens", "100"])}


def parse(command, argv, tmp_path, monkeypatch):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    build, base = PARSERS[command]
    if command == "fairseq-train" and "--arch" not in argv:
        base = base + ["--arch", "lstm"]
    monkeypatch.setattr(sys, "argv", [command] + argv)
    return options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + base + argv)


def refused(command, argv, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as info:
        parse(command, argv, tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def test_every_row_is_tried():
    from fairseq_wean.patching import OPTION_NEEDS

    # the task's rows (fairseq_wean/tasks) are tried by the task's tests
    ours = {dest for dest, (condition, _, _) in OPTION_NEEDS.items()
            if not condition.__module__.startswith("fairseq_wean.tasks")}
    assert set(ROWS) == ours, set(ROWS) ^ ours


@pytest.mark.parametrize("dest", sorted(ROWS))
def test_an_option_that_does_nothing_is_refused_and_acts_where_it_does(dest, tmp_path, monkeypatch, capsys):
    command, argv, message, acting = ROWS[dest]
    line = refused(command, argv, tmp_path, monkeypatch, capsys)
    assert line.startswith(command + ": error: " + message), line
    if acting is not None:
        parse(command, acting, tmp_path, monkeypatch)


def test_defaults_and_fairseqs_own_commands_stay_silent(tmp_path, monkeypatch):
    # defaults (not written) are never refused; --gen-subset acts in fairseq-generate
    parse("fairseq-generate", ["--gen-subset", "valid"], tmp_path, monkeypatch)
    parse("fairseq-interactive", [], tmp_path, monkeypatch)
    args = parse("fairseq-train", ["--arch", "core_copy", "--core-num-frequent", "0"], tmp_path, monkeypatch)
    assert args.core_frequent_from == "joined"
    # the value written equal to its default does nothing new either: not refused
    parse("fairseq-generate", ["--diverse-beam-strength", "0.5"], tmp_path, monkeypatch)


@pytest.mark.parametrize("command,argv,message", [
    ("fairseq-generate", ["--beam", "5", "--diverse-beam-groups", "2"], "--diverse-beam-groups 2 must divide --beam 5"),
    ("fairseq-interactive", ["--beam", "4", "--diverse-beam-groups", "3"], "--diverse-beam-groups 3 must divide"),
    ("fairseq-generate", ["--diversity-rate", "-0.5"], "--diversity-rate -0.5 must be -1 (off) or at least 0"),
    ("fairseq-generate", ["--diversity-rate", "-2"], "argument --diversity-rate: must be >= -1"),
    ("fairseq-generate", ["--diverse-beam-groups", "5", "--diverse-beam-strength", "-1"],
     "argument --diverse-beam-strength: must be >= 0"),
    ("fairseq-interactive", ["--buffer-size", "0"], "argument --buffer-size: must be >= 1"),
    ("fairseq-train", ["--optimizer-overrides", "{bad"], "--optimizer-overrides '{bad' is not a Python dict literal"),
    ("fairseq-train", ["--optimizer-overrides", "[1]"], "--optimizer-overrides '[1]' must be a dict of option names"),
    ("fairseq-generate", ["--model-overrides", "{bad"], "--model-overrides '{bad' is not a Python dict literal"),
])
def test_search_and_literal_options_are_one_line(command, argv, message, tmp_path, monkeypatch, capsys):
    line = refused(command, argv, tmp_path, monkeypatch, capsys)
    assert message in line, line


@pytest.mark.parametrize("argv", [["--beam", "6", "--diverse-beam-groups", "3"], ["--diversity-rate", "0.5"],
                                  ["--diversity-rate", "-1"], ["--optimizer-overrides", "{'lr': 0.1}"]])
def test_meaningful_search_and_literal_options_parse(argv, tmp_path, monkeypatch):
    parse("fairseq-train" if "--optimizer-overrides" in argv else "fairseq-generate", argv, tmp_path, monkeypatch)


def test_hub_keywords_use_the_same_rules():
    from fairseq_wean.hub import generate_keywords, generation_kwargs_problem, unknown_keyword_problem

    assert "diverse_beam_groups 2 must divide beam 5" in generation_kwargs_problem({"beam": 5, "diverse_beam_groups": 2})
    assert generation_kwargs_problem({"diverse_beam_strength": -1}).startswith("diverse_beam_strength=-1")
    assert "does nothing here" in generation_kwargs_problem({"sampling_topk": 3})
    assert generation_kwargs_problem({"sampling_topk": 3, "sampling": True, "beam": 1, "nbest": 1}) is None
    assert generation_kwargs_problem({"diverse_beam_strength": 0.5}) is None  # fairseq's default
    line = unknown_keyword_problem({"beem": 5}, generate_keywords(), None)
    assert line.startswith("keyword beem=5 does nothing there") and "did you mean beam" in line, line
    assert unknown_keyword_problem({"print_gates": True}, generate_keywords(), None) is not None
    assert unknown_keyword_problem({"beam": 2, "lenpen": 1.0}, generate_keywords(), None) is None


# every read of an option's text as Python/JSON, in fairseq's code and the plugin's
EVALUATED = re.compile(r"(?:literal_eval|\beval|json\.loads)\(\s*(?:getattr\(\s*\w+,\s*[\"'](\w+)[\"']|"
                       r"[\w.]*?(?:cfg|args)[\w.]*\.(\w+))")
# read and checked elsewhere: the task's own check of its JSON options
CHECKED_ELSEWHERE = {"eval_bleu_args", "eval_bleu_detok_args"}


def test_every_option_fairseq_evaluates_is_checked_at_parse():
    import fairseq
    import fairseq_cli

    from fairseq_wean import patching

    roots = [os.path.dirname(fairseq.__file__), os.path.dirname(fairseq_cli.__file__),
             os.path.dirname(patching.__file__)]
    found = set()
    for root in roots:
        for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
            if os.sep + "examples" + os.sep in path or os.sep + "model_parallel" + os.sep in path:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                for match in EVALUATED.finditer(handle.read()):
                    found.add(match.group(1) or match.group(2))
    assert {"model_overrides", "optimizer_overrides", "eval_bleu_args"} <= found, found
    # options of the commands this plugin serves; fairseq's speech/multilingual tasks' are not in their parsers
    served = {"model_overrides", "optimizer_overrides", "eval_bleu_args", "eval_bleu_detok_args"}
    assert found & served <= set(patching.LITERAL_OPTIONS) | CHECKED_ELSEWHERE
    assert set(patching.LITERAL_OPTIONS) <= found
