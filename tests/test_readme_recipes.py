"""The README's recipes (and its model pages', docs/models/) run as they are written, on data they do not know (issue 38).

Each test takes a ``bash`` block of README.md (found by its section heading), writes a small
parallel corpus with rare words into an empty folder (the user's data folder), and runs the
block's commands there with bash after the README's own set-up lines (activate, ``export WEAN=...``),
changing only the training budget (``--max-epoch 1 --cpu``) so that the test stays short.
A README that drifts from the code fails here.
"""
import os
import random
import re
import subprocess

import pytest

from conftest import BIN, REPO

BUDGET = "--max-epoch 1 --cpu --num-workers 0 --seed 1"
CORE_COPY = "`core_copy` and `--criterion core_mode_loss`"
CORE_COPY_PAGE = "docs/models/core_copy.md"  # the README's model table links to it


def readme_text(document="README.md"):
    with open(os.path.join(REPO, document), encoding="utf-8") as f:
        return f.read()


def readme_block(heading, index=0, document="README.md"):
    """The ``index``-th ```bash block under the section of ``document`` (README.md, or a page the
    README links to) whose heading starts with ``heading``."""
    text = readme_text(document)
    start = re.search(r"^#+ {}.*$".format(re.escape(heading)), text, re.M)
    assert start, heading
    end = re.search(r"^## ", text[start.end():], re.M)
    section = text[start.end(): start.end() + end.start() if end else None]
    return re.findall(r"```bash\n(.*?)```", section, re.S)[index]


ACTIVATE = "source /path/to/fairseq-wean/.venv/bin/activate"  # the README's placeholder path


def readme_setup_line():
    """The README's set-up lines for your own data (the first two lines of the quick start:
    activate the environment, ``export WEAN=...``), activating the environment that runs the tests."""
    lines = readme_block("Quick start: your own data").splitlines()[:2]
    assert lines[0] == ACTIVATE and lines[1].startswith("export WEAN="), "the README's set-up lines changed"
    return "\n".join([lines[0].replace(ACTIVATE, "source " + os.path.join(BIN, "activate")), lines[1]])


def commands(block, until=None):
    """The block's lines up to (not including) the first line starting with ``until``."""
    lines = block.splitlines()
    if until is not None:
        lines = lines[: next(i for i, line in enumerate(lines) if line.startswith(until))]
    return "\n".join(lines) + "\n"


def with_budget(script):
    """The script with the test's budget added to its fairseq-train command(s)."""
    assert "--save-dir ck" in script
    return script.replace("--save-dir ck", "--save-dir ck " + BUDGET)


def train_command(block):
    """The block's fairseq-train command (with its continuation lines), as written."""
    return re.search(r"^fairseq-train .*?[^\\]\n", block, re.S | re.M).group(0)


def write_corpus(folder, seed=0):
    """train/valid/test .src/.tgt: 60 frequent words; in every pair a source word and a target word
    seen once in the whole corpus (below fairseq-preprocess's --thresholdsrc/--thresholdtgt 2 with a
    joined dictionary, so <unk> for fairseq), and a name the target copies (seen twice)."""
    rng = random.Random(seed)
    words = ["w{}".format(i) for i in range(60)]
    for split, n in (("train", 240), ("valid", 20), ("test", 12)):
        with open(folder / (split + ".src"), "w") as src, open(folder / (split + ".tgt"), "w") as tgt:
            for k in range(n):
                kept = rng.sample(words, rng.randint(3, 7))
                kept.insert(rng.randrange(len(kept) + 1), "{}name{}".format(split, k))
                source = list(kept)
                source.insert(rng.randrange(len(source) + 1), "{}srcrare{}".format(split, k))
                target = kept[1:] if not kept[0].endswith("name{}".format(k)) else kept
                target.insert(rng.randrange(len(target) + 1), "{}tgtrare{}".format(split, k))
                src.write(" ".join(source) + "\n")
                tgt.write(" ".join(target) + "\n")


def run_bash(script, cwd):
    """Run README lines in ``cwd`` after the README's set-up line."""
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), OMP_NUM_THREADS="1",
               PYTHONPATH=REPO)  # this checkout, also where another one is installed in the environment
    script = "set -euo pipefail\n" + readme_setup_line() + "\n" + script
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, "README commands failed:\n{}\n{}".format(script, proc.stderr[-4000:])
    return proc


def test_core_copy_recipe_on_data_with_frequency_thresholds(tmp_path):
    """fairseq-preprocess --thresholdsrc 2 --thresholdtgt 2, the table with --dict, training: the
    words seen once are <unk> for fairseq and never in the table (without --dict, training stopped
    with '... word(s) are not in the dictionary')."""
    write_corpus(tmp_path)
    script = commands(readme_block(CORE_COPY, document=CORE_COPY_PAGE), until="# 4. decode")
    assert "--thresholdsrc 2" in script and "--dict data-bin/dict.src.txt" in script
    run_bash(with_budget(script), tmp_path)
    table = (tmp_path / "align.table").read_text()
    assert "rare" not in table and "<unk>" not in table and "\nw1\t" in table and "trainname" in table
    assert (tmp_path / "ck" / "checkpoint_last.pt").exists()


def test_core_copy_marker_recipe(tmp_path):
    """The README's <unk-N> marker recipe, then the same training command: rare source words are
    markers, and rare target-only words (outside dict.txt) are aligned as <unk>, never named."""
    write_corpus(tmp_path, seed=1)
    markers = commands(readme_block(CORE_COPY, 2, document=CORE_COPY_PAGE), until="# ... train as above")
    assert "--dict dict.txt" in markers
    run_bash(markers + with_budget(train_command(readme_block(CORE_COPY, document=CORE_COPY_PAGE))), tmp_path)
    table = (tmp_path / "align.table").read_text()
    assert "tgtrare" not in table and "<unk>" not in table  # markers <unk-N> are copy-only too
    assert "<unk-" in (tmp_path / "train.pg.src").read_text()
    assert (tmp_path / "ck" / "checkpoint_last.pt").exists()


def test_quick_start_runs_as_written(tmp_path):
    """The README's quick start, every line as written, on data it does not know; only the training
    budget is one epoch (--max-epoch 30 -> 1)."""
    write_corpus(tmp_path, seed=2)
    block = readme_block("Quick start: your own data")
    assert block.count("--max-epoch 30") == 1
    block = "\n".join(block.splitlines()[2:]) + "\n"  # its set-up lines: run_bash runs them first
    proc = run_bash(block.replace("--max-epoch 30", "--max-epoch 1 --cpu --num-workers 0 --seed 1"), tmp_path)
    for m in ("wean_lstm", "core_copy", "word_attn_gated", "lstm"):
        assert (tmp_path / "ck" / m / "checkpoint_best.pt").exists(), m
        log = (tmp_path / "gen.{}.log".format(m)).read_text()
        assert sum(line.startswith("H-") for line in log.splitlines()) == 12, m  # every test sentence
    assert "BLEU" in proc.stdout and "paired bootstrap" in proc.stdout  # the scorer against lstm
    assert "core_copy" in (tmp_path / "report.html").read_text()
    hyps = [line for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert len(hyps) == 3  # fairseq-interactive on three lines
    assert proc.stdout.strip().splitlines()[-1]  # the hub's translation printed last


def write_chinese_corpus(folder, seed=0):
    """train/valid/test .src/.tgt in Chinese without spaces, with a number now and then: the source a
    'text', the target its first half (a 'summary')."""
    rng = random.Random(seed)
    chars = [chr(0x4E00 + 53 * i) for i in range(50)]
    for split, n in (("train", 200), ("valid", 16), ("test", 10)):
        with open(folder / (split + ".src"), "w", encoding="utf-8") as src, \
                open(folder / (split + ".tgt"), "w", encoding="utf-8") as tgt:
            for _ in range(n):
                text = [rng.choice(chars) for _ in range(rng.randint(8, 16))]
                if rng.random() < 0.3:
                    text.insert(rng.randrange(len(text)), rng.choice(["2014", "iPhone6"]))
                src.write("".join(text) + "\n")
                tgt.write("".join(text[: len(text) // 2]) + "\n")


@pytest.mark.parametrize("heading", ["Subwords (BPE or sentencepiece)", "Chinese characters"])
def test_quick_start_variants_run_as_written(heading, tmp_path):
    """The quick start's subword and Chinese-character variants, every line as written, on data they
    do not know; only the training budget is one epoch. The scorer reads words (the D- lines of the
    BPE-decoded log; characters against the unspaced references), and the hub decodes raw text."""
    block = readme_block(heading)
    assert block.count("--max-epoch 30") == 1
    (write_chinese_corpus if heading == "Chinese characters" else write_corpus)(tmp_path, seed=3)
    proc = run_bash(block.replace("--max-epoch 30", "--max-epoch 1 --cpu --num-workers 0 --seed 1"), tmp_path)
    if heading.startswith("Subwords"):
        log = (tmp_path / "gen.bpe.log").read_text()
        assert sum(line.startswith("D-") for line in log.splitlines()) == 12  # every test sentence, decoded
        assert "BLEU" in proc.stdout and "@@" not in proc.stdout.strip().splitlines()[-1]  # the hub: words
        assert "most words of" not in proc.stderr and "pass bpe=" not in proc.stderr  # the hub found the BPE
    else:
        assert "ROUGE-1" in proc.stdout
        assert any(re.match(r"H-\d+\t\S+\t", line) for line in (tmp_path / "gen.char.log").read_text().splitlines())
