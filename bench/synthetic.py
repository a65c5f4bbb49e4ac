"""Synthetic Zipf-distributed "simplification" data, binarized for fairseq.

Words are ``w0 .. w{V-1}``, ``w0`` the most frequent; every token is drawn from a Zipf law
(p(rank r) proportional to 1/r). A target keeps most source words (copying, as in
simplification), replaces some by a fixed more frequent "simpler" word, and drops the rest,
so CoRe's alignment table and copy mechanism have something real to find. The dictionary is
written with all V words (``--srcdict``, joined), so the vocabulary is exactly V whatever the
sample covers: the output layer the benchmark measures has V rows.
"""
import os
import subprocess

import numpy as np


def zipf_probs(vocab, s=1.0):
    p = 1.0 / np.arange(1, vocab + 1) ** s
    return p / p.sum()


def sentences(rng, n, vocab, probs, simpler, min_len=8, max_len=32):
    """n (source, target) pairs of word ranks. The sources are drawn as ``rng.choice(vocab, p=probs)``
    draws them (the same numbers), with the cumulative distribution computed once, not per sentence."""
    pairs = []
    cdf = probs.cumsum()
    cdf /= cdf[-1]
    lengths = rng.integers(min_len, max_len + 1, size=n)
    for length in lengths:
        src = cdf.searchsorted(rng.random(length), side="right")
        fate = rng.random(length)
        tgt = [w if f < 0.65 else simpler[w] for w, f in zip(src, fate) if f < 0.75]
        pairs.append((src.tolist(), tgt or src[:1].tolist()))
    return pairs


def _start(vocab, seed):
    """The generator and the draws every split shares: (rng, Zipf probabilities, each word's simpler word)."""
    rng = np.random.default_rng(seed)
    probs = zipf_probs(vocab)
    simpler = np.array([rng.integers(0, max(1, r // 2 + 1)) for r in range(vocab)])
    return rng, probs, simpler


def train_sizes(vocab, n_train, seed=1):
    """(source sizes, target sizes) in tokens (the end-of-sentence included) of the training split that
    :func:`make` writes: every word is in the dictionary, so a word is a token."""
    rng, probs, simpler = _start(vocab, seed)
    pairs = sentences(rng, n_train, vocab, probs, simpler)
    return np.array([len(s) + 1 for s, _ in pairs]), np.array([len(t) + 1 for _, t in pairs])


def write_split(prefix, pairs):
    from fairseq_wean.textio import atomic_output  # a planted link is replaced, never written through

    with atomic_output(prefix + ".src", (), "synthetic data") as fs, atomic_output(prefix + ".tgt", (), "synthetic data") as ft:
        for src, tgt in pairs:
            fs.write(" ".join("w%d" % w for w in src) + "\n")
            ft.write(" ".join("w%d" % w for w in tgt) + "\n")


def make(workdir, vocab, n_train, n_test, n_latency, bin_dir, seed=1, log=None):
    """Write raw text, a V-word dictionary and fairseq binaries; return the data-bin path.

    Splits: train, valid (200), test (``n_test``, generation throughput) and test1
    (``n_latency``, batch-1 latency).
    """
    raw = os.path.join(workdir, "raw")
    data_bin = os.path.join(workdir, "data-bin")
    made = "vocab {} n_train {} n_test {} n_latency {} seed {}".format(vocab, n_train, n_test, n_latency, seed)
    if os.path.exists(os.path.join(data_bin, "test1.src-tgt.tgt.idx")) and made_as(workdir) == made:
        return data_bin
    # made with other sizes (or by a version that did not record them): made again, with its table
    for old in (os.path.join(workdir, PARAMS), os.path.join(workdir, "align.table")):
        if os.path.lexists(old):
            os.unlink(old)
    from fairseq_wean.textio import makedirs_in_folder

    makedirs_in_folder(raw, workdir, "synthetic data folder")  # not a planted link to a folder elsewhere
    rng, probs, simpler = _start(vocab, seed)  # each word's "simpler" word: a fixed, more frequent one
    for split, n in (("train", n_train), ("valid", 200), ("test", n_test), ("test1", n_latency)):
        write_split(os.path.join(raw, split), sentences(rng, n, vocab, probs, simpler))
    dict_path = os.path.join(raw, "dict.txt")
    from fairseq_wean.textio import atomic_output

    with atomic_output(dict_path, (), "synthetic dictionary") as f:
        for r in range(vocab):
            f.write("w%d %d\n" % (r, max(1, int(round(1e8 * probs[r])))))
    cmd = [os.path.join(bin_dir, "fairseq-preprocess"), "--source-lang", "src", "--target-lang", "tgt",
           "--trainpref", os.path.join(raw, "train"), "--validpref", os.path.join(raw, "valid"),
           "--testpref", os.path.join(raw, "test") + "," + os.path.join(raw, "test1"),
           "--destdir", data_bin, "--srcdict", dict_path, "--joined-dictionary", "--workers", "1"]
    subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    with atomic_output(os.path.join(workdir, PARAMS), (), "synthetic data") as f:
        f.write(made + "\n")
    return data_bin


PARAMS = "data-params.txt"  # what the folder's data was made with (a later run with other sizes remakes it)


def made_as(workdir):
    """The sizes the data in ``workdir`` was made with (:data:`PARAMS`), or None."""
    from fairseq_wean.textio import read_lines

    path = os.path.join(workdir, PARAMS)
    if not os.path.exists(path):
        return None
    lines = read_lines(path, "synthetic data record", folder=workdir)
    return lines[0] if lines else None


def align_table(workdir, bin_dir, topk=10, log=None):
    """CoRe's alignment table, by the project's own command, from the training text."""
    table = os.path.join(workdir, "align.table")
    if not os.path.exists(table):
        raw = os.path.join(workdir, "raw")
        subprocess.run([os.path.join(bin_dir, "fairseq-wean-align-table"), "--src", os.path.join(raw, "train.src"),
                        "--tgt", os.path.join(raw, "train.tgt"), "--topk", str(topk), "--out", table],
                       check=True, stdout=log, stderr=subprocess.STDOUT)
    return table
