"""Every command-line parser of the project refuses an option given twice (``fairseq_wean.cli.options.once``).

argparse keeps the last value of a repeated option silently (``--out a --out b`` writes only ``b``;
``--refs a b --refs c`` scores against ``c``). Every file of the project that runs as a command (a
``__main__`` guard in fairseq_wean/, preprocess/, bench/, examples/, scripts/) is run here as
``__main__`` with ``--help``; each parser that reaches ``parse_args``/``parse_known_args`` is recorded
and stopped there, and every one of its options must be :func:`~fairseq_wean.cli.options.once`'s. A new
command, or a parser built without ``once``, fails this test; a file that builds a parser without a
``__main__`` guard must be listed in INTERNAL with the reason.
"""
import argparse
import os
import re
import runpy
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("fairseq_wean", "preprocess", "bench", "examples", "scripts")

# files that build an ArgumentParser but are not commands, with why
INTERNAL = {
    "fairseq_wean/stored_paths.py": "parses fairseq's stored argv to read options, not a command line",
    "fairseq_wean/checkpoint_safety.py": "parses a checkpoint's stored args, not a command line",
    "fairseq_wean/hub.py": "fairseq's generation parser for the hub's keywords (repeats are impossible there)",
    "preprocess/common.py": "the recipes' parser: checked through every prepare_* recipe below",
    "fairseq_wean/option_rules.py": "the actions a registered component adds, to tell which options it owns",
}
# commands whose parser cannot go through once, with why
NOT_ONCE = {
    "bench/gpu_check.py": "the device check's driver runs on the standard library until its own set-up has installed "
                          "fairseq (options.once imports the plugin, hence fairseq); its parts refuse a part named twice",
}


def _files():
    found = []
    for folder in FOLDERS:
        for root, _, names in os.walk(os.path.join(REPO, folder)):
            for name in names:
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    found.append(os.path.relpath(path, REPO))
    return sorted(found)


def _text(rel):
    with open(os.path.join(REPO, rel), encoding="utf-8") as f:
        return f.read()


COMMANDS = [rel for rel in _files() if re.search(r"__name__ == .__main__.", _text(rel))]


def test_every_parser_is_a_command_or_listed_internal():
    builders = {rel for rel in _files() if "ArgumentParser(" in _text(rel)}
    assert set(INTERNAL) <= builders, set(INTERNAL) - builders
    missing = sorted(builders - set(INTERNAL) - set(COMMANDS))
    assert not missing, "parsers neither run as a command nor listed in INTERNAL: {}".format(missing)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("rel", COMMANDS)
def test_every_option_of_every_command_is_refused_twice(rel, monkeypatch):
    from fairseq_wean.cli.options import _Once

    seen = []

    def record(self, args=None, namespace=None):
        seen.append(self)
        raise _Stop()

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", record)
    monkeypatch.setattr(sys, "argv", [rel, "--help"])
    monkeypatch.syspath_prepend(REPO)
    module = rel[:-3].replace(os.sep, ".")
    if module.endswith(".__main__"):
        module = module[: -len(".__main__")]
    try:
        if rel.startswith(("examples", "scripts")):
            runpy.run_path(os.path.join(REPO, rel), run_name="__main__")
        else:
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except (_Stop, SystemExit):
        pass
    if rel in NOT_ONCE:
        pytest.skip(NOT_ONCE[rel])
    if "ArgumentParser(" not in _text(rel) and not seen:
        pytest.skip("{} reads no options".format(rel))
    assert seen, "{} ran no parser".format(rel)
    for parser in seen:
        loose = sorted(a.option_strings[0] for a in parser._actions if a.option_strings
                       and not isinstance(a, (argparse._HelpAction, argparse._VersionAction, _Once)))
        assert not loose, "{}: options a repeat of which argparse would keep silently: {} (build the parser " \
                          "through fairseq_wean.cli.options.once)".format(rel, loose)
