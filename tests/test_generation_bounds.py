"""Every numeric generation option, at a huge and at a tiny (edge) value, through every route that decodes:
fairseq-generate, fairseq-interactive, the hub and fairseq-train's --eval-bleu-args. Each is either refused
in one line before any sentence is decoded, or decodes: never a traceback (--lenpen 1e308 and --max-len-a 1e308
were OverflowError tracebacks after the model loaded, --temperature 1e-300 a multinomial RuntimeError,
--sampling-topk above the dictionary a topk RuntimeError, also after an epoch of training with --eval-bleu-args).

The options are ``patching.GENERATION_RANGES`` and ``GENERATION_ANY_VALUE`` (the one table of every route), so a new
numeric generation option is tried here as soon as it has a range. Also the cross-option rules of this class:
two searches at once, values fairseq reads as "off", one checkpoint twice in --path, a duplicate key in
--eval-bleu-args, --model-overrides keys the checkpoint does not have.
"""
import argparse
import json
import sys

import pytest

from conftest import USER_DIR
from fairseq_wean.errors import FairseqWeanError
from test_crafted_checkpoints import run_driver, train_tiny

# what an option needs to act at all (without it, it is refused as doing nothing, which says nothing of its range)
CONTEXT = {"sampling_topk": {"sampling": True, "beam": 1}, "sampling_topp": {"sampling": True, "beam": 1},
           "temperature": {"sampling": True, "beam": 1}, "diverse_beam_strength": {"diverse_beam_groups": 2, "beam": 2}}
CLI_ONLY = {"batch_size", "max_tokens", "required_batch_size_multiple"}  # the command's batches, no hub keyword
# decoded by a fairseq-generate run too (each ~3 s; the others decode through the hub, the same SequenceGenerator)
RUN = {"lenpen", "max_len_a", "temperature", "sampling_topk"}
# not a range: fairseq's own assertion that no sentence of the data is longer than --max-tokens (a traceback)
KNOWN = {("max_tokens", 1)}


def options():
    from fairseq_wean.patching import GENERATION_ANY_VALUE, GENERATION_RANGES

    from fairseq.dataclass.configs import GenerationConfig

    fields = set(GenerationConfig.__dataclass_fields__) | CLI_ONLY
    return sorted(n for n in set(GENERATION_RANGES) | set(GENERATION_ANY_VALUE) if n in fields)


def values(name):
    """A huge value and the tiny / edge ones of ``name``'s range."""
    from fairseq_wean.patching import GENERATION_RANGES

    low, kind, _high, above = GENERATION_RANGES.get(name, (float("-inf"), float, None, False))
    if kind is int:
        return [10 ** 30, low if low > float("-inf") else -10 ** 30]
    edge = [1e-300] if low <= 1e-300 else [low if not above else low * 1.000001]
    return [1e308, -1e308 if low == float("-inf") else edge[0]] + ([low] if low not in (float("-inf"), edge[0]) else [])


CASES = [(name, value) for name in options() for value in values(name)]


def argv_of(kwargs):
    out = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, repr(value) if isinstance(value, float) else str(value)]
    return out


def parse(command, kwargs, tmp_path, monkeypatch, capsys):
    """None (parsed) or the one line argparse printed; a traceback fails."""
    import fairseq_wean  # noqa: F401
    from fairseq import options as fairseq_options

    build = {"fairseq-generate": "get_generation_parser",
             "fairseq-interactive": "get_interactive_generation_parser"}[command]
    monkeypatch.setattr(sys, "argv", [command])
    try:
        fairseq_options.parse_args_and_arch(getattr(fairseq_options, build)(),
                                            [str(tmp_path), "--path", "x.pt"] + argv_of(kwargs))
    except SystemExit as exc:
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.code == 2 and "Traceback" not in "\n".join(err) and "error:" in err[-1], err
        return err[-1]
    return None


@pytest.fixture(scope="module")
def model(data_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("bounds")
    return work, train_tiny(data_bin, work) / "checkpoint_last.pt", data_bin


@pytest.fixture(scope="module")
def hub(model):
    from fairseq_wean.hub import from_pretrained

    work, checkpoint, data = model
    return from_pretrained(str(checkpoint.parent), checkpoint_file=checkpoint.name, data_name_or_path=str(data),
                           user_dir=USER_DIR)


def test_every_numeric_generation_option_is_tried():
    names = {name for name, _ in CASES}
    assert {"lenpen", "max_len_a", "temperature", "sampling_topk", "beam", "unkpen"} <= names, names
    assert len(names) >= 20


# refused in fairseq-interactive whatever their value (it has no reference to take a prefix from, and never loads
# --lm-path): option_rules' rows, tests/test_inert_options.py
INTERACTIVE_NEVER_READS = {"prefix_size", "lm_path"}


def test_huge_and_tiny_values_are_refused_in_one_line_or_decode(model, hub, tmp_path, monkeypatch, capsys):
    from fairseq_wean.hub import generation_kwargs_problem
    from fairseq_wean.tasks.validation_options import check_generation_args

    work, checkpoint, data = model
    jobs, failures = [], []
    for name, value in CASES:
        kwargs = dict(CONTEXT.get(name, {}), **{name: value})
        accepted = [parse(command, kwargs, tmp_path, monkeypatch, capsys) is None
                    for command in ("fairseq-generate", "fairseq-interactive")]
        if name not in INTERACTIVE_NEVER_READS:  # one table: interactive decodes with generate's generator
            assert accepted[0] == accepted[1], (name, value)
        if accepted[0] and (name in CLI_ONLY or name in RUN) and (name, value) not in KNOWN:
            argv = [str(data), "--user-dir", USER_DIR, "--cpu", "--path", str(checkpoint), "--num-workers", "0"]
            jobs.append({"name": "fairseq-generate {}".format(argv_of(kwargs)),
                         "argv": ["generate"] + argv + ["--gen-subset", "valid", "--quiet"] + argv_of(kwargs)})
        if name in CLI_ONLY:
            continue
        # the hub: refused in one line by its keyword check, or at the generator's build; else it decodes
        try:
            if generation_kwargs_problem(kwargs, hub.cfg.generation) is None:
                hub.translate("w1 w2 w3", **kwargs)
        except FairseqWeanError as exc:
            assert "\n" not in str(exc), exc
        except Exception as exc:  # noqa: BLE001 -- the test's point: nothing else escapes
            failures.append("hub {}: {}: {}".format(kwargs, type(exc).__name__, exc))
        # --eval-bleu-args: refused at parse (the same table), or its generator is built before training
        text = json.dumps(dict(kwargs, beam=kwargs.get("beam", 2)))
        try:
            check_generation_args(text)
            hub.task.build_generator(hub.models, argparse.Namespace(**json.loads(text)))
        except FairseqWeanError as exc:
            assert "\n" not in str(exc), exc
        except Exception as exc:  # noqa: BLE001
            failures.append("--eval-bleu-args {}: {}: {}".format(text, type(exc).__name__, exc))
    assert len(jobs) >= 8, jobs
    for job, result in zip(jobs, run_driver(jobs, work, work / "no-marker")):
        outcome = result["outcome"]
        if outcome != "ran to the end" and not (outcome.startswith("FairseqWeanError: ") and "\n" not in outcome):
            failures.append("{}: {}".format(job["name"], outcome))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("command,argv,message", [
    ("fairseq-generate", ["--lenpen", "1e308"], "argument --lenpen: must be >= 0 and <= 10"),
    ("fairseq-interactive", ["--max-len-a", "1e308"], "argument --max-len-a: must be >= 0 and <= 1000"),
    ("fairseq-generate", ["--sampling", "--beam", "1", "--temperature", "1e-300"],
     "argument --temperature: must be >= 0.0001"),
    ("fairseq-generate", ["--sampling", "--beam", "2", "--nbest", "2", "--diverse-beam-groups", "2"],
     "--sampling and --diverse-beam-groups are two searches"),
    ("fairseq-interactive", ["--sampling", "--beam", "1", "--constraints"], "--sampling and --constraints are two"),
    ("fairseq-generate", ["--match-source-len", "--diversity-rate", "0.5"],
     "--match-source-len and --diversity-rate are two searches"),
    ("fairseq-generate", ["--sampling", "--beam", "1", "--sampling-topp", "0"], "--sampling-topp 0.0 means off"),
    ("fairseq-generate", ["--sampling", "--beam", "1", "--sampling-topp", "-0.5"], "--sampling-topp -0.5 means off"),
    ("fairseq-interactive", ["--sampling", "--beam", "1", "--sampling-topk", "0"], "--sampling-topk 0 means off"),
    ("fairseq-generate", ["--beam", "2", "--diverse-beam-groups", "0"], "--diverse-beam-groups 0 means off"),
    ("fairseq-generate", ["--sampling", "--beam", "1", "--sampling-topk", "5", "--sampling-topp", "0.5"],
     "--sampling-topk does nothing here"),
])
def test_contradicting_and_off_values_are_one_line(command, argv, message, tmp_path, monkeypatch, capsys):
    import fairseq_wean  # noqa: F401
    from fairseq import options as fairseq_options

    monkeypatch.setattr(sys, "argv", [command])
    build = "get_generation_parser" if command == "fairseq-generate" else "get_interactive_generation_parser"
    with pytest.raises(SystemExit) as info:
        fairseq_options.parse_args_and_arch(getattr(fairseq_options, build)(), [str(tmp_path), "--path", "x.pt"] + argv)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert info.value.code == 2 and message in line, line


@pytest.mark.parametrize("paths", ["{a}:{a}", "{a}:./{a}", "{a}:{link}"])
def test_one_checkpoint_twice_in_path_is_refused(paths, tmp_path, monkeypatch, capsys):
    import os

    import fairseq_wean  # noqa: F401
    from fairseq import options as fairseq_options

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.pt").write_bytes(b"")
    os.symlink("m.pt", tmp_path / "l.pt")
    monkeypatch.setattr(sys, "argv", ["fairseq-generate"])
    with pytest.raises(SystemExit) as info:
        fairseq_options.parse_args_and_arch(fairseq_options.get_generation_parser(),
                                            [str(tmp_path), "--path", paths.format(a="m.pt", link="l.pt")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert info.value.code == 2 and "--path names {} twice".format(tmp_path / "m.pt") in line, line
    fairseq_options.parse_args_and_arch(fairseq_options.get_generation_parser(),
                                        [str(tmp_path), "--path", "m.pt:other.pt"])


@pytest.mark.parametrize("text,message", [
    ('{"beam": 3, "beam": 2}', "beam is given twice"),
    ('{"lenpen": 1e308}', "lenpen must be >= 0 and <= 10"),
    ('{"sampling": true, "beam": 2, "diverse_beam_groups": 2}', "sampling and diverse_beam_groups are two searches"),
    ('{"unnormalized": true, "lenpen": 2}', "lenpen does nothing here"),
    ('{"sampling": true, "beam": 1, "sampling_topp": 0}', "sampling_topp 0 means off"),
])
def test_eval_bleu_args_have_the_command_lines_rules(text, message):
    from fairseq_wean.tasks.validation_options import check_generation_args

    with pytest.raises(FairseqWeanError) as info:
        check_generation_args(text)
    assert message in str(info.value) and "\n" not in str(info.value), info.value
    check_generation_args('{"sampling": true, "beam": 1, "sampling_topk": 5}')


def test_model_overrides_the_checkpoint_lacks_are_refused_like_the_hubs_keywords(model):
    work, checkpoint, data = model
    base = [str(data), "--user-dir", USER_DIR, "--cpu", "--path", str(checkpoint), "--num-workers", "0"]
    jobs = [{"name": "typo", "argv": ["interactive"] + base + ["--model-overrides", "{'dropuot': 0.3}"]},
            {"name": "unknown", "argv": ["generate"] + base + ["--quiet", "--model-overrides", "{'nonexistent': 5}"]},
            {"name": "known", "argv": ["generate"] + base + ["--quiet", "--model-overrides", "{'dropout': 0.2}"]},
            {"name": "topk", "argv": ["generate"] + base + ["--quiet", "--sampling", "--beam", "1",
                                                             "--sampling-topk", "100000"]}]
    typo, unknown, known, topk = run_driver(jobs, work, work / "no-marker")
    assert typo["outcome"].startswith("FairseqWeanError: --model-overrides, for the checkpoint") \
        and "keyword dropuot=0.3 does nothing there" in typo["outcome"] and "did you mean dropout" in typo["outcome"]
    assert "keyword nonexistent=5 does nothing there" in unknown["outcome"], unknown
    assert known["outcome"] == "ran to the end", known
    assert topk["outcome"].startswith("FairseqWeanError: --sampling-topk 100000 is above the size of the target "
                                      "dictionary"), topk
