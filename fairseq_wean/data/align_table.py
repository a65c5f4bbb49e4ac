"""CoRe's alignment table A (Cao et al., AAAI 2017, eq. 8): the file format, one writer, one reader.

A lists, for each source word, the target words it is most often aligned to; ``core_copy``'s
generative vocabulary for a sentence X is V_G = A(X) u U (eq. 8). ``fairseq-wean-align-table``
writes the table, ``--arch core_copy --core-align-table`` and ``python -m
preprocess.coverage_report --table`` read it.

Format (plain UTF-8 text), one aligned pair per line::

    SOURCE_WORD <TAB> TARGET_WORD <TAB> SCORE

Lines of one source word are consecutive and ordered best first; SCORE is a number (the writer
puts link counts; other tools may write probabilities). Empty lines are ignored; any other line
without exactly three fields, an empty word or a SCORE that is not a number is an error, as is a
line that is not UTF-8, and so are a pair listed twice, a SCORE that is not finite (``nan``, ``inf``)
and a file with no pair (:func:`fairseq_wean.data.dictionary.check_entries`, the one check of every
keyed file read; :func:`check_table` reads a table only for them). Position markers ``<unk-N>``
(:mod:`fairseq_wean.data.markers`) are copy-only: the writer's callers never put them in, and the
model skips them.
"""
import collections
import logging
import os

from fairseq_wean.data.dictionary import check_entries  # the one check of keyed files (fastBPE codes import it here)
from fairseq_wean.data.markers import is_position_marker
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.textio import atomic_output, check_input

logger = logging.getLogger(__name__)

BUILD_HINT = ("fairseq-wean-align-table --src train.src --tgt train.tgt --dict data-bin/dict.src.txt "
              "--topk 10 --out {}")


def write_table(table, path, inputs=(), what="--out"):
    """Write ``{source word: [(target word, score), ...] best first}``, source words sorted.

    Through a temporary file renamed on success; ``path`` equal to one of ``inputs`` is refused.
    """
    with atomic_output(path, inputs, what) as f:
        for src in sorted(table):
            for tgt, score in table[src]:
                f.write("{}\t{}\t{}\n".format(src, tgt, score))


def iter_pairs(path, what="--table"):
    """Yield ``(source word, target word, score)`` per line of a table, in file order; each line checked by
    :func:`~fairseq_wean.data.dictionary.check_entries` (a pair listed twice, a non-finite score, no pair at all)."""
    checked = check_entries(_iter_lines(path, what), path, what, "pair", counts=False)  # scores: any finite
    for _lineno, (src, tgt), score in checked:
        yield src, tgt, score


def check_table(path, what="--table"):
    """Read the whole table for its checks (:func:`iter_pairs`), before any work: a one-line
    ``FairseqWeanError`` for a missing or malformed file, a pair listed twice, a non-finite score, no pair."""
    for _ in iter_pairs(path, what):
        pass


def _iter_lines(path, what):
    """Yield ``(line number, (source word, target word), score)`` per line of a table, in file order.

    Raises ``FairseqWeanError`` (naming ``what``, the file and the line) for a missing file, a
    line that is not UTF-8 or a malformed line.
    """
    if not os.path.exists(path):
        raise FairseqWeanError(
            "{} {}: no such file; build it with {}".format(what, path, BUILD_HINT.format(path)))
    check_input(path, what)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise FairseqWeanError(
                    "{} {} line {} is not UTF-8 text: rebuild the table with fairseq-wean-align-table "
                    "from the UTF-8 files given to fairseq-preprocess".format(what, path, lineno)
                ) from None
            if not line:
                continue
            fields = line.split("\t")
            score = None
            if len(fields) == 3 and fields[0] and fields[1]:
                try:
                    score = float(fields[2])
                except ValueError:
                    pass
            if score is None:
                raise FairseqWeanError(
                    "{} {} line {} is malformed (expected SOURCE<TAB>TARGET<TAB>SCORE, got {!r}); "
                    "rebuild it with fairseq-wean-align-table".format(what, path, lineno, line[:80])
                )
            yield lineno, (fields[0], fields[1]), score


def read_table(path, what="--table"):
    """``{source word: [target words best first]}`` (the file's order within a source word)."""
    table = collections.defaultdict(list)
    for src, tgt, _ in iter_pairs(path, what):
        table[src].append(tgt)
    return dict(table)


def read_align_table(path, dictionary, topk):
    """The table as ``core_copy`` keeps it: a ``|V| x topk`` long tensor of target ids.

    Row ``i`` holds the first ``topk`` targets of dictionary word ``i``; missing entries are
    ``dictionary.pad()``. Position markers and special symbols are skipped (markers are
    copy-only). Every other word must be in the dictionary: a table built on other text is refused.
    """
    import torch  # here, not at the top: fairseq-wean-align-table writes tables without torch

    if not path:
        raise FairseqWeanError(
            "--arch core_copy needs --core-align-table TABLE: build it from the tokenized training "
            "files with " + BUILD_HINT.format("TABLE")
        )
    pad = dictionary.pad()
    specials = {dictionary.pad_word, dictionary.bos_word, dictionary.eos_word, dictionary.unk_word}
    table = torch.full((len(dictionary), topk), pad, dtype=torch.long)
    filled = torch.zeros(len(dictionary), dtype=torch.long)
    unknown = []
    n_pairs = 0
    for src, tgt, _ in iter_pairs(path, "--core-align-table"):
        if src in specials or tgt in specials or is_position_marker(src) or is_position_marker(tgt):
            continue
        s, t = dictionary.index(src), dictionary.index(tgt)
        missing = [w for w, i in ((src, s), (tgt, t)) if i == dictionary.unk()]
        if missing:
            unknown.extend(missing)
            continue
        if filled[s] < topk:
            table[s, filled[s]] = t
            filled[s] += 1
            n_pairs += 1
    if unknown:
        uniq = sorted(set(unknown))
        raise FairseqWeanError(
            "--core-align-table {}: {} word(s) are not in the dictionary (e.g. {}); build the table with "
            "the dictionary fairseq-preprocess wrote, which writes every other word as <unk> as fairseq "
            "does: {}".format(path, len(uniq), " ".join(uniq[:10]), BUILD_HINT.format(path))
        )
    if n_pairs == 0:
        raise FairseqWeanError(
            "--core-align-table {} holds no usable word pair; rebuild it with "
            "fairseq-wean-align-table".format(path)
        )
    logger.info("core_copy: read %d aligned pairs for %d source words from %s",
                n_pairs, int(filled.gt(0).sum()), path)
    return table
