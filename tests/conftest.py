"""Shared test helpers: tiny data written by the tests, the real CLIs, small models."""
import contextlib
import os
import random
import subprocess
import sys

import pytest
import torch

# One torch thread in the test process: on 2 cores shared with the CLI subprocesses, torch's
# default thread pool spins waiting for its own threads and model-level tests run far slower.
torch.set_num_threads(1)



def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pytest.ini): one worker per core this process may use, at most 4. A file's tests
    stay on one worker (``--dist loadfile``), so a module's trained models are built once."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores))


# The files that take longest (minutes each on 2 cores: they train and decode with the real CLIs)
# go to the workers first, so that no worker is left with one long file at the end.
LONGEST_FIRST = ["test_recipes.py", "test_readme_recipes.py", "test_decoding_options.py", "test_mutation_check.py",
                 "test_hub.py", "test_data_forms.py",
                 "test_errors.py", "test_distributed.py", "test_valid_metrics.py", "test_cli_wean.py",
                 "test_known_words.py", "test_markers.py"]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)), len(rank)))  # stable: in-file order kept


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
USER_DIR = os.path.join(REPO, "fairseq_wean")


_FORKSERVER = []


def forkserver():
    """This process's tests/forkserver.py (started at first use, stopped at exit)."""
    if not _FORKSERVER:
        import atexit

        from forkserver import Tools

        path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)  # preprocess, bench, examples
        _FORKSERVER.append(Tools(env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)))
        atexit.register(_FORKSERVER[0].close)
    return _FORKSERVER[0]


def cli(name, *args, check=True, env=None, timeout=600, input=None):
    """Run a console script of this environment (fairseq-train, fairseq-wean-score, ...), as a child of
    :func:`forkserver` (a process of its own without a fresh interpreter's ~4 s of imports); with
    ``env`` (variables a fresh interpreter may read at its start) as a fresh process."""
    exe = os.path.join(BIN, name)
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    full_env.update(env or {})
    argv = [exe] + [str(a) for a in args]
    if env is None:
        rc, out, err, timed_out = forkserver().run(argv, REPO, full_env, timeout, input=input)
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        proc = subprocess.CompletedProcess(argv, rc, out, err)
    else:
        proc = subprocess.run(argv, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout,
                              input=input)
    if check and proc.returncode != 0:
        raise AssertionError(
            "{} failed ({}):\n{}\n{}".format(name, proc.returncode, proc.stdout[-3000:], proc.stderr[-5000:])
        )
    return proc


@pytest.fixture(scope="session")
def tools():
    """Run a tool as a child forked from one process that imported torch and fairseq once
    (tests/forkserver.py): ``tools.run(argv, cwd, env, timeout)`` -> (rc, out, err, timed_out); a process
    of its own, started in a fraction of a fresh interpreter's time. One per worker."""
    return forkserver()


WORDS = ["w{}".format(i) for i in range(40)]


def write_parallel(prefix, n, seed, min_len=3, max_len=9, src="src", tgt="tgt"):
    """Write n pairs: a random sentence and its 'simplification' (words w0-w9 dropped).

    Learnable by every model (copying plus deletion), and most target words occur in the
    source, as in simplification.
    """
    rng = random.Random(seed)
    with open(prefix + "." + src, "w") as fs, open(prefix + "." + tgt, "w") as ft:
        for _ in range(n):
            sent = [rng.choice(WORDS) for _ in range(rng.randint(min_len, max_len))]
            simple = [w for w in sent if int(w[1:]) >= 10] or sent[:1]
            fs.write(" ".join(sent) + "\n")
            ft.write(" ".join(simple) + "\n")


@pytest.fixture(scope="session")
def raw_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw")
    write_parallel(str(d / "train"), 400, seed=1)
    write_parallel(str(d / "valid"), 21, seed=2)
    write_parallel(str(d / "test"), 13, seed=3)  # 13: not a multiple of 8 (last-batch bug)
    return d


def preprocess(raw, dest, joined=True, extra=()):
    args = [
        "--source-lang", "src", "--target-lang", "tgt",
        "--trainpref", raw / "train", "--validpref", raw / "valid", "--testpref", raw / "test",
        "--destdir", dest, "--workers", "1",
    ]
    if joined:
        args.append("--joined-dictionary")
    cli("fairseq-preprocess", *args, *extra)
    return dest


@pytest.fixture(scope="session")
def data_bin(raw_dir, tmp_path_factory):
    return preprocess(raw_dir, tmp_path_factory.mktemp("data-bin"))


@pytest.fixture(scope="session")
def data_bin_unjoined(raw_dir, tmp_path_factory):
    return preprocess(raw_dir, tmp_path_factory.mktemp("data-bin-unjoined"), joined=False)


TRAIN_DEFAULTS = (("--cpu",), ("--optimizer", "adam"), ("--lr", "0.005"), ("--max-tokens", "2000"),
                  ("--seed", "1"), ("--log-format", "simple"), ("--log-interval", "1"), ("--num-workers", "0"),
                  ("--no-epoch-checkpoints",))
# a default dropped where the caller's option makes it one that does nothing (refused by the plugin)
DROPPED_BY = {"--no-save": ("--no-epoch-checkpoints",)}


def _flag(word):
    word = str(word)
    return word.split("=", 1)[0] if word.startswith("--") or (len(word) == 2 and word[0] == "-" and
                                                               word[1].isalpha()) else None


def override(*word_lists):
    """The words of ``word_lists`` in order, an option of a later list (or later in one list) replacing the
    same option given before, with its values (the plugin refuses an option given twice, in fairseq's commands
    too: test helpers that add a caller's options to their defaults use this). Positional words are kept."""
    groups = []
    for words in word_lists:
        for word in words:
            if _flag(word) is not None or not groups:
                groups.append([word])
            else:
                groups[-1].append(word)
    kept, seen = [], set()
    for group in reversed(groups):
        flag = _flag(group[0])
        if flag is not None and flag in seen:
            continue
        seen.add(flag)
        seen.update(DROPPED_BY.get(flag, ()))
        kept.append(group)
    return [word for group in reversed(kept) for word in group]


def train_args(data, save_dir, arch, *extra, epochs=3):
    return override([data, "--user-dir", USER_DIR, "--arch", arch, "--max-epoch", epochs, "--save-dir", save_dir],
                    [w for option in TRAIN_DEFAULTS for w in option], extra)


def generated_hypotheses(stdout):
    """{sentence id: hypothesis} from a fairseq-generate log."""
    hyps = {}
    for line in stdout.splitlines():
        if line.startswith("H-"):
            head, _score, text = (line.split("\t") + ["", ""])[:3]
            hyps[int(head[2:])] = text
    return hyps


def make_dictionary(n_words=20):
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(n_words):
        d.add_symbol("w{}".format(i))
    d.finalize(padding_factor=1)
    return d


class FakeTask:
    """Just enough of a translation task to call ``Model.build_model``."""

    def __init__(self, src_dict, tgt_dict=None):
        self.source_dictionary = src_dict
        self.target_dictionary = tgt_dict if tgt_dict is not None else src_dict


class DataTask(FakeTask):
    """A task with a data directory, as fairseq's translation task has in ``cfg``."""

    def __init__(self, dictionary, data=None, src="src", tgt="tgt"):
        super().__init__(dictionary)
        import argparse

        self.cfg = argparse.Namespace(data=data and str(data), source_lang=src, target_lang=tgt)


@pytest.fixture(scope="module")
def skewed_data_bin(tmp_path_factory):
    """Binarized train split (as fairseq-preprocess --joined-dictionary writes it) in which the
    joined and the target-side counts rank words differently: ``s*`` words fill the sources and
    are always deleted, ``t*`` words are the targets' rewrites, ``w*`` words are copied.
    Returns (folder, targets, sources), each sentence a list of words."""
    from fairseq.data import Dictionary, indexed_dataset

    rng = random.Random(7)
    pick = lambda prefix, rate, n: "{}{}".format(prefix, min(int(rng.expovariate(rate)), n - 1))  # noqa: E731
    pairs = []
    for _ in range(300):
        shared = [pick("w", 0.25, 20) for _ in range(rng.randint(2, 6))]
        src = shared + [pick("s", 0.4, 10) for _ in range(rng.randint(2, 6))]
        rng.shuffle(src)
        pairs.append((src, shared + [pick("t", 0.4, 10) for _ in range(rng.randint(0, 3))]))
    d = Dictionary()
    for src, tgt in pairs:
        for w in src + tgt:
            d.add_symbol(w)
    d.finalize(padding_factor=8)  # fairseq-preprocess's: count order, madeupword fillers
    out = tmp_path_factory.mktemp("skewed-bin")
    for lang, side in (("src", 0), ("tgt", 1)):
        d.save(str(out / "dict.{}.txt".format(lang)))
        builder = indexed_dataset.make_builder(str(out / "train.src-tgt.{}.bin".format(lang)), "mmap", len(d))
        for pair in pairs:
            builder.add_item(d.encode_line(" ".join(pair[side]), add_if_not_exist=False))
        builder.finalize(str(out / "train.src-tgt.{}.idx".format(lang)))
    return out, [pair[1] for pair in pairs], [pair[0] for pair in pairs]


def random_batch(dictionary, bsz=4, src_len=7, tgt_len=6, seed=0, left_pad=True):
    """Source tokens with different lengths (padded like fairseq's collater) and targets."""
    import torch
    from fairseq.data import data_utils

    g = torch.Generator().manual_seed(seed)
    nspecial = dictionary.nspecial
    srcs, tgts = [], []
    for b in range(bsz):
        n = max(1, src_len - b)
        srcs.append(torch.cat([torch.randint(nspecial, len(dictionary), (n,), generator=g),
                               torch.tensor([dictionary.eos()])]))
        tgts.append(torch.cat([torch.randint(nspecial, len(dictionary), (tgt_len,), generator=g),
                               torch.tensor([dictionary.eos()])]))
    src_tokens = data_utils.collate_tokens(srcs, dictionary.pad(), dictionary.eos(), left_pad=left_pad)
    src_lengths = torch.tensor([len(s) for s in srcs])
    prev = data_utils.collate_tokens(tgts, dictionary.pad(), dictionary.eos(), move_eos_to_beginning=True)
    target = data_utils.collate_tokens(tgts, dictionary.pad(), dictionary.eos())
    return src_tokens, src_lengths, prev, target


def cli_concurrently(commands, timeout=600):
    """Run several console scripts at once (as ``cli`` does); returns their CompletedProcesses.

    ``commands``: ``(name, args)`` or ``(name, args, {"input": ..., "check": ..., "env": {...}})``. Start-up
    (importing torch and fairseq) dominates short runs; overlapping it keeps CLI tests fast.
    Output goes to temporary files, so a chatty process never blocks on a full pipe.

    Without ``env`` in any command, they run one after another as children of :func:`forkserver`
    (as :func:`cli` runs them): a forked child skips the ~4 s of imports that concurrent fresh
    interpreters each spent, which was most of these commands' cost on 2 cores.
    """
    import tempfile

    if not any("env" in (tuple(command) + ({},))[2] for command in commands):
        return [cli(name, *args, check=options.get("check", True), timeout=timeout, input=options.get("input"))
                for name, args, options in ((tuple(command) + ({},))[:3] for command in commands)]

    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    running = []
    for command in commands:
        name, args, options = (tuple(command) + ({},))[:3]
        out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        proc = subprocess.Popen(
            [os.path.join(BIN, name)] + [str(a) for a in args], cwd=REPO, env=dict(full_env, **options.get("env", {})),
            text=True,
            stdin=subprocess.PIPE, stdout=out, stderr=err,
        )
        proc.stdin.write(options.get("input") or "")
        proc.stdin.close()
        running.append((name, proc, options, out, err))
    finished = []
    for name, proc, options, out, err in running:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
        out.close()
        err.close()
        if options.get("check", True) and proc.returncode != 0:
            raise AssertionError(
                "{} failed ({}):\n{}\n{}".format(name, proc.returncode, done.stdout[-3000:], done.stderr[-5000:])
            )
        finished.append(done)
    return finished


def shared_data_dir(*parts):
    """A path under the shared raw data (REPO/../shared/data, or $FAIRSEQ_WEAN_DATA); None if absent."""
    root = os.environ.get("FAIRSEQ_WEAN_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")
    path = os.path.join(root, *parts)
    return path if os.path.exists(path) else None


def read_text_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


LOCK_AND_WAIT = r"""
import sys, time
from fairseq_wean.textio import lock_folder
lock_folder(sys.argv[1], sys.argv[2], sys.argv[3])
print("locked", flush=True)
time.sleep(600)
"""


@contextlib.contextmanager
def folder_locked_elsewhere(folder, what="a running job", flag="--out"):
    """Hold ``folder``'s lock (``textio.lock_folder``, as a run writing there does) in another
    process for the duration of the block; yields that process (its pid names the holder). The
    process is killed at the end, so the lock is free again."""
    holder = subprocess.Popen([sys.executable, "-c", LOCK_AND_WAIT, str(folder), flag, what],
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def task_parsers():
    """[(name, task class, parser with its add_args)] of every registered task (the plugin's included)
    whose options this environment can build (a task whose options need a missing package is left out)."""
    import argparse

    import fairseq_wean  # noqa: F401  (the plugin: its task registered)
    from fairseq.tasks import TASK_REGISTRY

    found = []
    for name, cls in sorted(TASK_REGISTRY.items()):
        parser = argparse.ArgumentParser()
        try:
            cls.add_args(parser)
        except Exception:  # a task whose options need a package this environment lacks
            continue
        found.append((name, cls, parser))
    return found


def undecided(names, always, rows):
    """The names of ``names`` with neither a reason in ``always`` nor a row in ``rows``, sorted: the one shape of the
    tests that require every option of a class to be decided (tests/test_option_noops.py, test_inert_options.py).
    A name both in ``always`` and in ``rows`` is decided twice: an assertion naming them."""
    both = sorted(set(always) & set(rows))
    assert not both, "options both always acting and with a row: {}".format(both)
    return sorted(set(names) - set(always) - set(rows))


@contextlib.contextmanager
def no_hang(seconds=60):
    """A reader the check let through blocks on a planted named pipe: a TimeoutError (the test fails), not a hang."""
    import signal

    def alarm(*_):
        raise TimeoutError("blocked: a named pipe was opened")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def parse_outcome(command, build, words, monkeypatch, capsys):
    """The last line fairseq's parse of ``command words`` ends with (exit status 2, no traceback), or None if taken;
    the parser built by ``options.BUILD`` as the command's entry builds it (fairseq-generate adds --arch, default
    wav2vec2)."""
    import fairseq_wean  # noqa: F401
    from fairseq import options

    monkeypatch.setattr(sys, "argv", [command] + words)
    parser = getattr(options, build)()
    if command == "fairseq-generate":
        parser.add_argument("--arch", "-a", metavar="ARCH", default="wav2vec2")
    capsys.readouterr()
    try:
        options.parse_args_and_arch(parser, words)
    except SystemExit as exc:
        err = capsys.readouterr().err
        assert exc.code == 2 and "Traceback" not in err, err
        return err.strip().splitlines()[-1]  # (a parse that ends otherwise, a traceback, fails the test)
    return None


def planted_checkpoint_refusal(route, data, data_bin, tmp_path):
    """``data`` written as MODEL/checkpoint_best.pt and loaded through ``route(path, data_bin)``: the one-line
    FairseqWeanError's message (the file unchanged); returns (path, message)."""
    from fairseq_wean.errors import FairseqWeanError

    path = tmp_path / "model" / "checkpoint_best.pt"
    path.parent.mkdir()
    path.write_bytes(data)
    with pytest.raises(FairseqWeanError) as info:
        route(path, data_bin)
    message = str(info.value)
    assert "\n" not in message and path.read_bytes() == data, message
    return path, message
