"""fairseq's own commands with the plugin loaded refuse an option given twice, as the plugin's tools do.

argparse keeps the last value of a repeated option silently: ``fairseq-generate --beam 1 --beam 3``
decoded with beam 3, ``--path A --path B`` with B alone, ``--gen-subset valid --gen-subset=test``
decoded test. The plugin's hook on every parse fairseq makes (``patching._with_ranges_at_parse``:
fairseq-train, -generate, -interactive, -validate, -eval-lm) gives every option of the parser,
those --task, --arch, --optimizer add between fairseq's parses included, the rule of
:func:`fairseq_wean.cli.options.once`: argparse's one-line usage error, exit 2, before any work.

Each option of each command's parser, built as fairseq builds it (the commands of
``test_option_ranges.FAIRSEQ_COMMANDS``), is given twice through ``options.parse_args_and_arch``
(fairseq's own parse: its first pass, the option-adding, the second pass), its second occurrence
spelled ``--option=VALUE`` or as an alias where it has one, and given once it is accepted with the
value argparse gives it. One real run of fairseq-generate and of fairseq-validate (whose command
line fairseq parses a second time as overrides) proves the wiring.
"""
import argparse
import os
import sys

import pytest
from conftest import USER_DIR, cli
from test_option_ranges import FAIRSEQ_COMMANDS

COMMANDS = sorted({command for command, _, _ in FAIRSEQ_COMMANDS})
# values that make work before fairseq's parse of the options: --user-dir is imported by fairseq's first parse
VALUES = {"user_dir": USER_DIR}


def _error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1] if err else ""


def _built(command, tmp_path, monkeypatch):
    """[(build, argv, parser after fairseq's own parse)] of ``command``."""
    import fairseq_wean  # noqa: F401  (the plugin, as --user-dir loads it)
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])  # fairseq-interactive's parser knows itself by its name
    found = []
    for name, build, argv in FAIRSEQ_COMMANDS:
        if name == command:
            parser = getattr(options, build)()
            options.parse_args_and_arch(parser, [str(tmp_path)] + argv)
            found.append((build, argv, parser))
    return found


def _refused_even_once(action):
    from fairseq_wean.patching import _RefusedInInteractive

    return isinstance(action, _RefusedInInteractive)  # fairseq-generate's options in fairseq-interactive


def _once_value(parser, action, tmp_path):
    """(argv words giving ``action`` once, the value argparse stores) for a value it accepts, or None."""
    option = action.option_strings[-1]
    if action.nargs == 0:
        return [option], action.const
    default = action.default if isinstance(action.default, (str, int, float)) and \
        not isinstance(action.default, bool) and action.default != argparse.SUPPRESS else None
    candidates = [VALUES.get(action.dest), *(list(action.choices or ())[:1]), default, "1", "0.5", "x"]
    for value in [str(c) for c in candidates if c is not None]:
        try:
            namespace = parser.parse_args([str(tmp_path), option, value])
        except SystemExit:
            continue
        return [option, value], getattr(namespace, action.dest)
    return None


def _options(parser):
    return [a for a in parser._actions if a.option_strings
            and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_fairseqs_commands_is_refused_twice_and_accepted_once(command, tmp_path, monkeypatch,
                                                                             capsys):
    from fairseq import options

    from fairseq_wean.cli.options import _Once

    checked, failures = 0, []
    for build, argv, parser in _built(command, tmp_path, monkeypatch):
        for action in _options(parser):
            name = "{} {}".format(command, action.option_strings[-1])
            if not isinstance(action, _Once):
                failures.append(name + ": not once's (a repeat is kept silently)")
                continue
            if _refused_even_once(action):
                continue
            once = _once_value(parser, action, tmp_path)
            if once is None:
                failures.append(name + ": no value accepted once")
                continue
            words, stored = once
            reference = action.const if action.nargs == 0 else parser._get_values(action, words[1:])
            if stored != reference and type(action).__mro__[2].__module__ == "argparse":  # not a plugin's own kind
                failures.append("{}: given once, {!r} stored instead of {!r}".format(name, stored, reference))
            # twice, through fairseq's own parse; the second time as an alias (where there is one) and --opt=VALUE
            first, second = action.option_strings[0], action.option_strings[-1]
            again = [second] + words[1:] if len(words) == 1 or not second.startswith("--") \
                else ["{}={}".format(second, words[1])]
            capsys.readouterr()
            try:
                options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + argv + [first] + words[1:]
                                            + again)
                failures.append(name + ": given twice, accepted")
            except SystemExit as exc:
                line = _error_line(capsys)
                if exc.code != 2 or not line.endswith("given more than once: give each option once (argparse "
                                                      "would keep only the last {}, silently)".format(
                                                          "list" if action.nargs in ("+", "*") else "value")) \
                        or "argument {}".format(first) not in line and "argument {}".format(second) not in line:
                    failures.append("{}: given twice: exit {}, {!r}".format(name, exc.code, line))
            checked += 1
    assert checked >= {"fairseq-train": 300, "fairseq-eval-lm": 100}.get(command, 120), checked
    assert not failures, "\n".join(failures)


GEN, INTER, TRAIN, VALID = ("get_generation_parser", "get_interactive_generation_parser", "get_training_parser",
                             "get_validation_parser")
LSTM = ["--arch", "lstm", "--max-tokens", "9"]


# (command, parser, the options common to both parses, the repeat, the option, the same option given once, its value)
@pytest.mark.parametrize("command,build,base,twice,option,once,value", [
    ("fairseq-generate", GEN, ["--path", "x.pt"], ["--beam", "1", "--beam", "3"], "--beam", ["--beam", "3"], 3),
    ("fairseq-generate", GEN, ["--path", "x.pt"], ["--gen-subset", "valid", "--gen-subset=test"], "--gen-subset",
     ["--gen-subset=test"], "test"),
    ("fairseq-generate", GEN, [], ["--path", "ck/checkpoint_last.pt", "--path", "other.pt"], "--path",
     ["--path", "other.pt"], "other.pt"),
    ("fairseq-interactive", INTER, ["--path", "x.pt"], ["--nbest", "1", "--nbest=1"], "--nbest", ["--nbest=1"], 1),
    ("fairseq-train", TRAIN, LSTM, ["--encoder-embed-dim", "16", "--encoder-embed-dim", "32"],  # the model's
     "--encoder-embed-dim", ["--encoder-embed-dim", "32"], 32),
    ("fairseq-train", TRAIN, LSTM, ["--task", "translation", "--task", "translation_with_metrics"], "--task",
     ["--task", "translation_with_metrics"], "translation_with_metrics"),
    ("fairseq-validate", VALID, ["--path", "x.pt", "--task", "translation", "--max-tokens", "9"],
     ["--valid-subset", "valid", "--valid-subset", "test"], "--valid-subset", ["--valid-subset", "test"], "test"),
])
def test_the_probed_repeats_are_refused_in_fairseqs_parse(command, build, base, twice, option, once, value, tmp_path,
                                                          monkeypatch, capsys):
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command])
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + base + twice)
    assert info.value.code == 2
    assert _error_line(capsys) == "{}: error: argument {}: given more than once: give each option once (argparse " \
                                  "would keep only the last value, silently)".format(command, option)
    args = options.parse_args_and_arch(getattr(options, build)(), [str(tmp_path)] + base + once)
    assert getattr(args, option[2:].replace("-", "_")) == value


def test_fairseq_validates_override_parse_refuses_and_accepts(tmp_path, monkeypatch, capsys):
    """fairseq-validate parses its command line again with ``suppress_defaults`` (the overrides)."""
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", ["fairseq-validate"])
    argv = [str(tmp_path), "--path", "x.pt", "--task", "translation", "--max-tokens", "9"]
    overrides = options.parse_args_and_arch(options.get_validation_parser(), argv, suppress_defaults=True)
    assert (overrides.path, overrides.task, overrides.max_tokens) == ("x.pt", "translation", 9)
    with pytest.raises(SystemExit) as info:
        options.parse_args_and_arch(options.get_validation_parser(), argv + ["--max-tokens=9"], suppress_defaults=True)
    assert info.value.code == 2 and "argument --max-tokens: given more than once" in _error_line(capsys)


@pytest.mark.parametrize("tool,argv,option", [
    ("fairseq-generate", ["--beam", "1", "--beam", "3", "--results-path", "{out}"], "--beam"),
    ("fairseq-validate", ["--task", "translation", "--max-tokens", "9", "--valid-subset", "valid",
                          "--valid-subset=test", "--results-path", "{out}"], "--valid-subset"),
])
def test_fairseq_commands_refuse_a_repeat_before_any_work(tool, argv, option, tmp_path):
    out = tmp_path / "out"
    proc = cli(tool, tmp_path, "--user-dir", USER_DIR, "--path", tmp_path / "x.pt",
               *[a.format(out=out) for a in argv], check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert err[-1] == "{}: error: argument {}: given more than once: give each option once (argparse would keep " \
                      "only the last value, silently)".format(tool, option), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not os.path.exists(out) and proc.stdout == ""


@pytest.mark.parametrize("option,argv", [
    ("-s/--source-lang", ["--source-lang", "src", "-s", "tgt", "--target-lang", "tgt", "--destdir", "{out}"]),
    ("--destdir", ["--source-lang", "src", "--target-lang", "tgt", "--destdir", "{out}", "--destdir", "{out}2"]),
    ("--workers", ["--source-lang", "src", "--target-lang", "tgt", "--workers", "1", "--workers", "2",
                   "--destdir", "{out}"]),
])
def test_fairseq_preprocess_refuses_a_repeat_before_any_work(option, argv, raw_dir, tmp_path):
    """fairseq-preprocess parses with its own parser.parse_args(), not parse_args_and_arch: its options get the
    once rule where the plugin's import can reach them (options.add_preprocess_args, compat)."""
    out = tmp_path / "out"
    proc = cli("fairseq-preprocess", "--user-dir", USER_DIR, "--trainpref", raw_dir / "train",
               *[a.format(out=out) for a in argv], check=False)  # every case names --destdir: a mutant writes no data-bin/ here
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "fairseq-preprocess: error: argument {}: given more than once: give each option once (argparse would keep "
        "only the last value, silently)".format(option)), proc.stderr[-2000:]
    assert not out.exists() and not (tmp_path / "out2").exists()
