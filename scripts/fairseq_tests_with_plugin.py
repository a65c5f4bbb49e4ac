"""fairseq's own tests, without and with the plugin imported: what loading the plugin changes.

    python scripts/fairseq_tests_with_plugin.py --fairseq-tests DIR [--out verdicts.json]

DIR is the ``tests/`` folder of fairseq's repository (the package's sdist lacks ``tests/utils.py``
and ``tests/__init__.py``), e.g. ``git archive HEAD tests | tar -x -C /tmp/fq`` in a clone of
github.com/facebookresearch/fairseq. The chosen subset (``SUBSET``: sequence generator and scorer,
constraints, iterators, checkpoint utils, train, and the ``test_binaries`` cases for lstm,
transformer, generation, alignment, eval_bleu and the pointer-generator) runs twice with the
installed fairseq, in two copies of DIR: one with an empty ``conftest.py``, one whose
``conftest.py`` imports ``fairseq_wean`` (what ``--user-dir`` does). It prints, and writes to
``--out``, every test whose verdict differs: passes without the plugin and fails with it (a
fairseq feature the plugin breaks: each needs a fix and a regression test here), and fails without
it and passes with it (a fairseq bug the plugin fixes). Exit status 1 if the plugin breaks any.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBSET = [
    "tests/test_sequence_generator.py", "tests/test_sequence_scorer.py", "tests/test_constraints.py",
    "tests/test_iterators.py", "tests/test_checkpoint_utils.py", "tests/test_train.py", "tests/test_export.py",
    "tests/test_lstm_jitable.py",
    "tests/test_binaries.py::TestTranslation::test_generation", "tests/test_binaries.py::TestTranslation::test_eval_bleu",
    "tests/test_binaries.py::TestTranslation::test_lstm", "tests/test_binaries.py::TestTranslation::test_lstm_bidirectional",
    "tests/test_binaries.py::TestTranslation::test_transformer",
    "tests/test_binaries.py::TestTranslation::test_transformer_pointer_generator",
    "tests/test_binaries.py::TestTranslation::test_alignment",
    "tests/test_binaries.py::TestTranslation::test_alignment_full_context",
]


def run(tests_dir, with_plugin, work):
    """{test id: outcome} of the subset in a copy of ``tests_dir`` (outcome: passed, failed, error, skipped)."""
    root = os.path.join(work, "with" if with_plugin else "without")
    shutil.copytree(tests_dir, os.path.join(root, "tests"))
    with open(os.path.join(root, "conftest.py"), "w") as f:
        f.write("import fairseq_wean  # noqa: F401  (the plugin's patches, as --user-dir loads them)\n"
                if with_plugin else "# fairseq alone\n")
    xml = os.path.join(root, "junit.xml")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", xml, *SUBSET],
                   cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = "{}::{}".format(case.get("classname"), case.get("name"))
        kinds = [child.tag for child in case]
        outcomes[name] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                          else "skipped" if "skipped" in kinds else "passed")
    return outcomes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fairseq-tests", required=True, help="the tests/ folder of fairseq's repository")
    p.add_argument("--out", help="write the verdicts here (JSON)")
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean import textio
    from fairseq_wean.cli import options

    args = options.once(p).parse_args(argv)
    if args.out is not None:
        textio.check_output(args.out, (), "--out")  # before the two runs of fairseq's tests, not after
    if not os.path.isfile(os.path.join(args.fairseq_tests, "utils.py")):
        p.error("{} has no utils.py: give the tests/ folder of fairseq's repository, not the sdist's".format(
            args.fairseq_tests))
    with tempfile.TemporaryDirectory() as work:
        without, with_plugin = run(args.fairseq_tests, False, work), run(args.fairseq_tests, True, work)
    ok = ("passed", "skipped")
    broken = sorted(t for t in without if without[t] == "passed" and with_plugin.get(t, "missing") not in ok)
    fixed = sorted(t for t in with_plugin if with_plugin[t] == "passed" and without.get(t, "missing") not in ok)
    count = lambda o: {k: sum(v == k for v in o.values()) for k in ("passed", "failed", "error", "skipped")}  # noqa: E731
    verdicts = {"without_plugin": count(without), "with_plugin": count(with_plugin),
                "broken_by_the_plugin": broken, "fixed_by_the_plugin": fixed}
    print(json.dumps(verdicts, indent=1))
    if args.out:
        with textio.atomic_output(args.out, (), "--out") as f:  # a planted link replaced, never written through
            json.dump(dict(verdicts, outcomes={"without": without, "with": with_plugin}), f, indent=1)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    from fairseq_wean.errors import FairseqWeanError, error_line

    try:
        sys.exit(main())
    except FairseqWeanError as exc:  # a refused --out: one line, before any test runs
        sys.exit(error_line("python scripts/fairseq_tests_with_plugin.py", exc))
