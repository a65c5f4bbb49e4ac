"""--known-words (fairseq_wean.known_words): beam search over sentencepiece pieces that spells only
known words, in the rule itself and through fairseq-generate."""
import os

import pytest
import torch
from fairseq.data import Dictionary

from conftest import USER_DIR, WORDS, cli, generated_hypotheses, preprocess, train_args, write_parallel
from fairseq_wean.known_words import KnownWordsBeamSearch, KnownWordsConstraint

PIECES = ["\u2581the", "\u2581ca", "t", "r", "s", "\u2581dog", "\u2581x", "\u2581", ",", "\u2581,"]


def toy():
    d = Dictionary()
    for p in PIECES:
        d.add_symbol(p)
    return d, KnownWordsConstraint(d, ["The", "cat", "car", "dog", ","])


def prefix(d, *pieces):
    return torch.tensor([d.eos()] + [d.index(p) for p in pieces])


def symbols(d, ids):
    return sorted(d[i] for i in ids)


def test_pieces_spell_only_known_words_and_a_new_word_starts_after_a_complete_one():
    d, c = toy()
    starts = ["\u2581", "\u2581,", "\u2581ca", "\u2581dog", "\u2581the"]  # not \u2581x: no known word starts with x
    assert symbols(d, c.allowed_tokens(0, prefix(d))) == sorted(starts + ["</s>"])
    assert symbols(d, c.allowed_tokens(0, prefix(d, "\u2581ca"))) == ["r", "t"]  # "cas" begins no known word
    assert symbols(d, c.allowed_tokens(0, prefix(d, "\u2581ca", "t"))) == sorted(starts + ["</s>"])
    assert symbols(d, c.allowed_tokens(0, prefix(d, "\u2581"))) == [",", "t"]  # "," and "the" (lowercased)
    assert c.current_word(prefix(d, "\u2581the", "\u2581ca", "r").tolist()) == "car"
    # a sentence may also write the words of its source, and only that sentence
    c.set_sources([7], ["x cats"])
    assert symbols(d, c.allowed_tokens(7, prefix(d, "\u2581ca", "t"))) == sorted(starts + ["</s>", "\u2581x", "s"])
    assert symbols(d, c.allowed_tokens(8, prefix(d, "\u2581ca", "t"))) == sorted(starts + ["</s>"])


def test_the_search_masks_what_the_rule_forbids_and_never_leaves_a_hypothesis_without_a_candidate():
    d, c = toy()
    search = KnownWordsBeamSearch(d, c)
    lprobs = torch.log_softmax(torch.randn(2, len(d)), dim=-1)  # two hypotheses of sentence 0
    lprobs[1, : d.eos()] = -float("inf")  # the second at fairseq's maximum length: only </s> is left
    lprobs[1, d.eos() + 1:] = -float("inf")
    tokens = torch.stack([prefix(d, "\u2581ca"), prefix(d, "\u2581ca")])
    mask = search.known_words_mask(lprobs, tokens, torch.tensor([0]))
    assert symbols(d, (mask[0] == 0).nonzero().flatten().tolist()) == ["r", "t"]
    assert symbols(d, (mask[1] == 0).nonzero().flatten().tolist()) == ["</s>", "r", "t"]
    assert torch.isfinite(lprobs + mask).any(dim=1).all()


def test_a_word_vocabulary_is_refused_in_one_line():
    d = Dictionary()
    for w in ["the", "cat"]:
        d.add_symbol(w)
    with pytest.raises(Exception, match="needs a sentencepiece vocabulary"):
        KnownWordsConstraint(d, ["the"])


def to_pieces(line):
    """w12 -> '\u2581w 1 2': a word is \u2581w and one continuation piece per digit."""
    return " ".join("\u2581w " + " ".join(w[1:]) for w in line.split())


@pytest.fixture(scope="module")
def piece_model(tmp_path_factory):
    """A wean_lstm trained for one epoch on pieces: it still writes pieces that spell no word."""
    raw = tmp_path_factory.mktemp("pieces-raw")
    for split, n, seed in [("train", 400, 1), ("valid", 21, 2), ("test", 13, 3)]:
        write_parallel(str(raw / split), n, seed=seed)
        for side in ("src", "tgt"):
            path = raw / "{}.{}".format(split, side)
            path.write_text("".join(to_pieces(l) + "\n" for l in path.read_text().splitlines()))
    data = preprocess(raw, tmp_path_factory.mktemp("pieces-bin"))
    ckpt = tmp_path_factory.mktemp("pieces-ckpt")
    cli("fairseq-train", *train_args(data, ckpt, "wean_lstm", "--embed-dim", 16, "--encoder-hidden-size", 16,
                                     "--decoder-hidden-size", 16, epochs=1))
    known = raw / "known.txt"
    known.write_text(" ".join(WORDS[10:30]) + "\n")  # w10 ... w29
    return data, ckpt / "checkpoint_best.pt", known


MAX_LEN = 12  # pieces


def generate(data, ckpt, *extra, check=True):
    return cli("fairseq-generate", data, "--user-dir", USER_DIR, "--path", ckpt, "--cpu", "--beam", 4,
               "--nbest", 4, "--batch-size", 8, "--required-batch-size-multiple", 1, "--max-len-b", MAX_LEN,
               "--post-process", "sentencepiece", *extra, check=check)


def nbest_and_sources(stdout):
    hyps, srcs = {}, {}
    for line in stdout.splitlines():
        head, _, rest = line.partition("\t")
        if line.startswith("H-"):
            hyps.setdefault(int(head[2:]), []).append(rest.split("\t")[-1])
        elif line.startswith("S-"):
            srcs[int(head[2:])] = rest
    return hyps, srcs


def test_fairseq_generate_with_known_words_writes_only_known_or_source_words(piece_model):
    data, ckpt, known = piece_model
    known_words = set(known.read_text().split())
    free = generate(data, ckpt)
    hyps, srcs = nbest_and_sources(free.stdout)
    assert len(hyps) == 13
    unknown = [w for i in hyps for h in hyps[i] for w in h.split() if w not in known_words | set(srcs[i].split())]
    assert unknown, "the barely trained model should spell some word no input has"
    constrained = generate(data, ckpt, "--task", "translation_with_metrics", "--known-words", known)
    hyps, srcs = nbest_and_sources(constrained.stdout)
    assert sorted(hyps) == list(range(13)) and all(len(h) == 4 for h in hyps.values())
    for i, nbest in hyps.items():
        allowed = known_words | set(srcs[i].split())
        for h in nbest:
            words = h.split()
            assert all(w in allowed for w in words[:-1]), (i, h, srcs[i])
            if sum(len(w) for w in words) < MAX_LEN:  # (pieces: \u2581w and one per digit)
                assert words[-1] in allowed, (i, h, srcs[i])
            else:  # fairseq's maximum length ended it, maybe inside a word
                assert any(a.startswith(words[-1]) for a in allowed), (i, h, srcs[i])


def test_known_words_refuses_other_searches_and_unreadable_files_in_one_line(piece_model, tmp_path):
    data, ckpt, known = piece_model
    bad = generate(data, ckpt, "--task", "translation_with_metrics", "--known-words", known, "--sampling", check=False)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines()[-1] == (
        "fairseq-wean: error: --known-words is a beam search of its own: it cannot be combined with --sampling")
    missing = tmp_path / "nope.txt"
    bad = generate(data, ckpt, "--task", "translation_with_metrics", "--known-words", missing, check=False)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines()[-1].startswith(
        "fairseq-wean: error: --known-words: cannot read {}".format(missing))
    assert "Traceback" not in bad.stderr
