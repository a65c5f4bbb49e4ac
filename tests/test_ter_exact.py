"""TER is sacrebleu's: :mod:`fairseq_wean.scoring.ter` computes the same edits as sacrebleu's own
``translation_edit_rate`` for every pair (its shift search, ties broken alike), only faster, and the scores of
every entry point equal sacrebleu's ``TER().corpus_score``."""
import random

import pytest

from fairseq_wean.scoring import scores, ter

PAIRS = [("", ""), ("", "a b"), ("a b", ""), ("b a", "a b"), ("a b c d e", "c d e a b"),
         ("the cat sat on the mat", "on the mat the cat sat"), ("x y", " ".join("w{}".format(i) for i in range(80))),
         (" ".join("w{}".format(i) for i in range(80)), "w3 w1"), ("a a a a b b b b", "b b b b a a a a"),
         ("b1 b2 b3 a1 a2 a3 d1 d2 c1 c2", "a1 a2 a3 b1 b2 b3 c1 c2 d1 d2"),
         ("the cat sat on the mat , and the dog ran after it in the garden .",
          "the cat sat on a mat and the dog ran after it in a garden .")]


def random_pairs(seed, count=15, longest=20):
    """Pairs of a small vocabulary (many equal words: many shift candidates, ties), lengths 0-``longest``."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        vocabulary = rng.randint(1, 6)
        pairs.append(tuple(" ".join(str(rng.randrange(vocabulary)) for _ in range(rng.randint(0, longest)))
                           for _ in range(2)))
    return pairs


@pytest.mark.parametrize("seed", [None, 1, 2, 3, 4, 5, 6])
def test_edits_equal_sacrebleus(seed):
    from sacrebleu.metrics import lib_ter

    for hyp, ref in PAIRS if seed is None else random_pairs(seed):
        h, r = hyp.split(), ref.split()
        assert ter.translation_edit_rate(h, r) == lib_ter.translation_edit_rate(h, r), (hyp, ref)


def test_corpus_scores_equal_sacrebleus():
    """The score, through the scoring API, and its sufficient statistics (the bootstrap's), with 3 references,
    sacrebleu's case-sensitive default and its options."""
    from sacrebleu.metrics import TER

    pairs = random_pairs(7, 8, 12) + PAIRS[3:8]
    hyps = [h for h, _ in pairs]
    refs = [[r for _, r in pairs], [h[::-1] for h, _ in pairs], [r.upper() for _, r in pairs]]
    expected = TER().corpus_score(hyps, refs)
    assert scores.score(hyps, references=refs, metrics=["ter"])["ter"] == pytest.approx(expected.score, abs=0)
    ours = ter.sacrebleu_ter()
    assert ours._extract_corpus_statistics(hyps, refs) == TER()._extract_corpus_statistics(hyps, refs)
    for options in ({"case_sensitive": True}, {"no_punct": True}):
        assert ter.sacrebleu_ter(**options).corpus_score(hyps, refs).score == TER(**options).corpus_score(
            hyps, refs).score, options
