"""``python -m bench.run``'s checks before any work: every one a ``FairseqWeanError`` (one line, exit 2 from
``bench.run``'s main) found before the data is made or a model trained, never in the page after the run.

* :func:`check_items`: an item given twice in a list option (:data:`LIST_OPTIONS`: ``--models fp32,fp32``
  would measure one thing twice);
* :func:`check_outputs`: two outputs of the run that are one file (``--out P --json P``: the page replaced
  by the JSON), an output that is an input (a ``--convergence`` log), an output that is one of the files
  the run writes in its ``--workdir``;
* :func:`check_workdir`: a file the run writes or reads in its ``--workdir`` (:func:`workdir_entries`)
  that is there as a folder, or a folder it makes that is there as a file (links, pipes and hard links
  anywhere in it: ``bench.run.planted_entry``);
* :func:`check_device_batches`: ``--device`` times ``--updates`` training steps after ``--warmup`` on
  distinct batches of the synthetic training data: fewer batches than that is known from the data's
  sizes before it is made.
"""
import os

from fairseq_wean import textio
from fairseq_wean.errors import FairseqWeanError

# bench.run's options whose value is a list (comma-separated, or --convergence repeated): each item once.
# tests/test_bench_inputs.py requires every option of the parser to be here or in SINGLE.
LIST_OPTIONS = ("--models", "--vocabs", "--precisions", "--convergence")


def check_items(option, items, key=lambda item: item):
    """Refuse an item of ``option`` given twice (by ``key``: --convergence's architecture)."""
    keys = [key(item) for item in items]
    twice = sorted({k for k in keys if keys.count(k) > 1}, key=keys.index)
    if twice:
        raise FairseqWeanError("{} names {} twice: each once".format(option, ", ".join(map(str, twice))))


def workdir_entries(cfg, models, vocabs):
    """[(path, "file" or "folder")] of what the run makes, writes or reads in ``cfg.workdir``."""
    w = cfg.workdir
    entries = [] if cfg.json else [(os.path.join(w, "results.json"), "file")]
    if not cfg.device and cfg.flop_batches:
        entries.append((os.path.join(w, "peaks.log"), "file"))
    for vocab in vocabs:
        v = os.path.join(w, "v%d" % vocab)
        entries += [(v, "folder"), (os.path.join(v, "data.log"), "file"), (os.path.join(v, "raw"), "folder"),
                    (os.path.join(v, "data-bin"), "folder"), (os.path.join(v, "data-params.txt"), "file"),
                    (os.path.join(v, "raw", "dict.txt"), "file")]
        entries += [(os.path.join(v, "raw", split + "." + side), "file")
                    for split in ("train", "valid", "test", "test1") for side in ("src", "tgt")]
        if "core_copy" in models:
            entries.append((os.path.join(v, "align.table"), "file"))
        if cfg.device:
            continue
        for name in models:
            entries += [(os.path.join(v, "ck-" + name + tag), "folder") for tag in ("", "-bf16")]
            entries += [(os.path.join(v, log % name), "file") for log in (
                "train-%s.log", "train-%s-bf16.log", "flops-%s.log", "gen-%s.log", "latency-%s.log")]
    return entries


def check_workdir(cfg, models, vocabs):
    for path, kind in workdir_entries(cfg, models, vocabs):
        found = textio.node_kind(path)
        if found is None or found == (textio.FOLDER if kind == "folder" else textio.REGULAR):
            continue
        if found == textio.LINK or found == textio.NODE:
            what = "a symbolic link, named pipe or device"
        else:
            what = found
        raise FairseqWeanError("--workdir {}: {} is {}, where the benchmark {}; remove it or use another "
                               "--workdir".format(cfg.workdir, path, what, "makes a folder of its own"
                                                  if kind == "folder" else "writes or reads a file of its own"))


def _same(a, b):
    return os.path.abspath(a) == os.path.abspath(b) or textio.same_file(a, b)


def check_outputs(outputs, inputs, workdir_files):
    """``outputs``: [(option, path)] the run writes (--out, --json or WORKDIR/results.json); ``inputs``:
    [(option, path)] it reads (--convergence logs); ``workdir_files``: the other files it writes."""
    for i, (option, path) in enumerate(outputs):
        for other, other_path in outputs[:i]:
            if _same(path, other_path):
                raise FairseqWeanError("{} {} and {} {} are one file: the run would write one over the other; give "
                                       "two paths".format(other, other_path, option, path))
        for given, input_path in inputs:
            if _same(path, input_path):
                raise FairseqWeanError("{} {} is also an input ({} {}): writing it would destroy that input; choose "
                                       "another output path".format(option, path, given, input_path))
        for own in workdir_files:
            if _same(path, own):
                raise FairseqWeanError("{} {} is a file the benchmark writes in its --workdir: choose another "
                                       "output path".format(option, path))
    for given, input_path in inputs:
        for own in workdir_files:
            if _same(input_path, own):
                raise FairseqWeanError("{} {} is a file the benchmark rewrites in its --workdir: copy it elsewhere "
                                       "first".format(given, input_path))


def device_train_batches(vocab, n_train, max_tokens, seed=1):
    """How many training batches of ``--max-tokens`` the synthetic data of ``vocab`` words and ``n_train``
    pairs has, as ``bench.device_bench.batches`` takes them: fairseq's own ordering (shuffled with the
    seed, sorted by size) and batching, on the sizes the data will have (:func:`bench.synthetic.train_sizes`)."""
    import numpy as np
    from fairseq.data import Dictionary, LanguagePairDataset, data_utils

    from bench import synthetic

    src, tgt = synthetic.train_sizes(vocab, n_train, seed)
    dictionary = Dictionary()
    dataset = LanguagePairDataset([None] * len(src), src, dictionary, [None] * len(tgt), tgt, dictionary,
                                  shuffle=True)
    with data_utils.numpy_seed(seed):
        indices = dataset.ordered_indices()
    return len(dataset.batch_by_size(np.asarray(indices), max_tokens=max_tokens, required_batch_size_multiple=1))


def check_device_batches(cfg, vocabs):
    need = cfg.warmup + cfg.updates
    for vocab in vocabs:
        found = device_train_batches(vocab, cfg.n_train, cfg.max_tokens)
        if found < need:
            raise FairseqWeanError(
                "--n-train {} makes {} training batches of --max-tokens {} at {} words, fewer than --warmup {} + "
                "--updates {} = {} (each step is timed on a batch of its own): give a larger --n-train or fewer "
                "steps".format(cfg.n_train, found, cfg.max_tokens, vocab, cfg.warmup, cfg.updates, need))
