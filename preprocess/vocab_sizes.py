"""The vocabulary sizes of the recipes: one range when they are parsed, and the sizes really built in
``recipe.json``.

A recipe's vocabulary-size option (:data:`SIZE_OPTIONS`: ``--spm-vocab``, ``--bpe-merges``, lcsts' ``--vocab``)
asks for a size the data may not give: sentencepiece trains with ``hard_vocab_limit=False`` and stops at the
pieces the text holds, subword-nmt stops at the last pair seen twice, fairseq-preprocess ``--nwordssrc`` keeps
the symbols there are; a tiny run (``--max-sentences``) caps the learned vocabularies at :data:`TINY_CAP`.
``recipe.json`` records each option as given (``"options"``: what a rerun is compared with) and, per variant,
what was built (``"built"``: the dictionary's symbols, the sentencepiece pieces, the BPE merges), with a log line
where it is less than asked. A size above :data:`MAX_VOCAB` is refused when parsed (sentencepiece's time grows
with the size asked, whatever the data: 13 s for 999,999,999 pieces of 50 lines, over 10 minutes for 2^31 - 1).
"""
import os

MAX_VOCAB = 1000000  # a vocabulary of a million symbols: more is a typo
NSPECIAL = 4  # fairseq's dictionary specials
TINY_CAP = 500  # common.build_variants' cap on the learned vocabularies of a tiny run (--max-sentences)
# option dest -> (the variant it sizes, what is counted, whether a tiny run caps it)
SIZE_OPTIONS = {
    "spm_vocab": ("spm", "sentencepiece pieces", True),
    "bpe_merges": ("bpe", "BPE merges", True),
    "vocab": ("word", "dictionary symbols", False),  # prepare_lcsts: fairseq-preprocess --nwordssrc/--nwordstgt
}
NOT_A_SIZE = {"threshold": "a count threshold (words seen at least this often), not a size",
              "word_threshold": "a count threshold (words seen at least this often), not a size"}


def size_type(low=1):
    """The argparse ``type`` of every vocabulary-size option: a whole number in ``low`` .. :data:`MAX_VOCAB`."""
    from fairseq_wean.errors import at_least

    check = at_least(low, high=MAX_VOCAB)
    check.vocabulary_size = True
    return check


def _count(path, keep=lambda line: True):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if keep(line))


def built(out, info, src):
    """{what: size} of one variant entry of build_variants (``info``) in ``out``: ``dictionary`` (the symbols of
    its source dictionary, without fairseq's specials and padding), ``spm_vocab`` (pieces of its sentencepiece
    model) and ``bpe_merges`` (merges of its codes), as far as the variant has them."""
    sizes = {"dictionary": _count(os.path.join(out, info["bin"], "dict.{}.txt".format(src)),
                                  lambda line: not line.startswith("madeupword"))}
    if info.get("spm_model"):
        sizes["spm_vocab"] = _count(os.path.join(out, os.path.splitext(info["spm_model"])[0] + ".vocab"))
    if info.get("bpe_codes"):
        sizes["bpe_merges"] = _count(os.path.join(out, info["bpe_codes"]), lambda line: not line.startswith("#version"))
    return sizes


def asked(args, dest):
    """The size ``dest`` asks of the build: the option, capped at :data:`TINY_CAP` in a tiny run where it is."""
    value = getattr(args, dest)
    return min(value, TINY_CAP) if SIZE_OPTIONS[dest][2] and getattr(args, "max_sentences", None) else value


def record_built(out, variants, args, src):
    """Add ``"built"`` (:func:`built`) to every variant entry of ``recipe.json``, and log each size option that
    got less than it asked (:func:`asked`). Every recipe calls it before ``common.write_recipe``."""
    from preprocess.common import log

    for name, info in sorted(variants.items()):
        info["built"] = built(out, info, src)
    for dest, (variant, what, _) in sorted(SIZE_OPTIONS.items()):
        given = getattr(args, dest, None)
        if given is None or variant not in variants or dest == "bpe_merges" and getattr(args, "bpe_codes", None):
            continue
        key = "dictionary" if dest == "vocab" else dest
        # --nwordssrc counts fairseq's 4 specials (<s> <pad> </s> <unk>) in its size
        got = variants[variant]["built"][key] + (NSPECIAL if dest == "vocab" else 0)
        if got < given:
            want = asked(args, dest)
            why = "a tiny run (--max-sentences) caps it at {}".format(TINY_CAP) if got == want else \
                "all the training text gives"
            log("--{} {}: the {} variant has {} {} ({}); recipe.json records both (options.{}, variants.{}.built.{})"
                .format(dest.replace("_", "-"), given, variant, got, what, why, dest, variant, key))
    return variants
