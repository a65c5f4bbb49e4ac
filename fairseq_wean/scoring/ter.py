"""TER as sacrebleu computes it (``sacrebleu.metrics.lib_ter``, Tercom's shift search), the same edits
for every sentence pair, with the work bounded by the sentence's length times the beam.

sacrebleu's search spends its time in two places that give nothing to the result:

* every shift candidate's edit distance (up to 1,000 a sentence pair) is computed with its trace of
  edit operations, in rows of (cost, operation) tuples, and each call first allocates the whole
  ``len(hyp) x len(ref)`` matrix although its beam reads ~50 cells a row; only the cost of a
  candidate is used (the trace only of the hypothesis the shifts start from);
* the matching subsequences are looked for over every (hypothesis, reference) position pair,
  ``len(hyp) x len(ref)`` a shift, although only those at most 50 positions apart are kept.

Here a candidate's cost is computed from the rows of the current hypothesis that its shift leaves
unchanged (the rows of a prefix depend on the prefix alone: the beam's bounds depend only on the
lengths, which a shift keeps), in plain integer rows over the beam's cells; the trace, with
sacrebleu's tie-breaking (substitution or match, then deletion, then insertion), once per shift;
and the matching positions from an index of the reference's words. The candidates, their order,
their ranking (ties broken by the shifted words, as sacrebleu's tuples are) and the limits (10
words a shift, 50 positions, a beam of 25, 1,000 candidates a pair) are sacrebleu's, so the edits
are identical (``tests/test_ter_exact.py`` compares them on real and crafted pairs). Work a pair:
at most ~1,000 candidates x ``len(hyp)`` rows x ~50 cells (:func:`fairseq_wean.scoring.metrics.ter_line_work`).

The work is also counted as it is done, in the estimate's unit (:class:`WorkBound`: each search's traced edit
distance, each matching pair it looks at, each candidate's rows): the estimate reads the first search only, and a
crafted input (blocks of repeated words swapped) needs several times its time; past its bound (``MAX_WORK["ter"]``,
:func:`fairseq_wean.scoring.bounds.ter_work_bound`) a corpus's TER stops, in one line.
"""
import functools
import math

from fairseq_wean.errors import FairseqWeanError

INFINITY = int(1e16)  # sacrebleu's _INT_INFINITY: a cell outside the beam
MAX_SHIFT_SIZE, MAX_SHIFT_DIST, BEAM_WIDTH, MAX_SHIFT_CANDIDATES = 10, 50, 25, 1000
ROW_CELLS = 16  # a row of the reference's length (infinite outside the beam): allocated ~16 times faster than computed
TRACED_CELLS = 8  # a search (traced edit distance, alignment, matching pairs) costs ~8 candidates' edit distances
PAIR_WORK = 4  # a matching pair a search looks at (most filtered out): ~0.3 us, ~4 cells computed
RUN_WORK = 3  # a unit counted as TER runs (~0.06-0.1 us) is ~3 of the estimate's (SECONDS_AT_BOUND's 0.03 us)
_SUB, _NOP, _DEL, _INS, _UNDEF = "s", " ", "d", "i", "x"


class WorkBound:
    """The work :func:`translation_edit_rate` really does, counted as it goes, in :func:`pair_work`'s unit: each
    search's traced edit distance (:data:`TRACED_CELLS` x its cells), each matching pair it looks at
    (:data:`PAIR_WORK`) and each candidate's rows (the beam's cells of the rows its shift changes and their
    allocation, :data:`ROW_CELLS`), each x :data:`RUN_WORK` (what a unit done costs against the estimate's
    unit), summed over every pair given the same bound (one corpus: all its sentences and references). Past
    ``limit`` (None: counted only) it raises ``exceeded(self)`` (a :class:`~fairseq_wean.errors.FairseqWeanError`:
    the caller's one line), within one candidate or pair of the limit, so the time is bounded whatever the
    input. ``sentence``: the segments begun."""

    def __init__(self, limit=None, exceeded=None):
        self.limit, self.exceeded = limit, exceeded
        self.done = self.sentence = 0

    def left(self):
        return math.inf if self.limit is None else self.limit - self.done

    def spend(self, units):
        self.done += units
        if self.limit is not None and self.done > self.limit:
            raise self.exceeded(self) if self.exceeded else FairseqWeanError(
                "ter: more than the {:,} units of work allowed (edit-distance cells of TER's shift search)".format(
                    self.limit))


class BeamEditDistance:
    """sacrebleu's beam edit distance between a reference and hypotheses of one length ``n_hyp``."""

    def __init__(self, words_ref, n_hyp):
        self.ref = words_ref
        self.n_ref = n_ref = len(words_ref)
        self.n_hyp = n_hyp
        ratio = n_ref / n_hyp if n_hyp else 1
        width = math.ceil(ratio / 2 + BEAM_WIDTH) if BEAM_WIDTH < ratio / 2 else BEAM_WIDTH
        self.bounds = [None]
        for i in range(1, n_hyp + 1):
            diagonal = math.floor(i * ratio)
            high = n_ref + 1 if i == n_hyp else min(n_ref + 1, diagonal + width)
            self.bounds.append((max(0, diagonal - width), high))
        self.first_row = list(range(n_ref + 1))
        # tail[s]: the work of computing rows s+1 .. n_hyp (:meth:`cost` from ``start`` s): their beam's cells,
        # each row's allocation; a traced search: TRACED_CELLS x every row and the first
        allocation, tail = (n_ref + 1) / ROW_CELLS, [0.0] * (n_hyp + 1)
        for i in range(n_hyp, 0, -1):
            lo, hi = self.bounds[i]
            tail[i - 1] = tail[i] + hi - lo + allocation
        self.tail = [int(RUN_WORK * t) for t in tail]
        self.traced_work = TRACED_CELLS * (self.tail[0] + RUN_WORK * (n_ref + 1))

    def traced(self, words):
        """(cost, sacrebleu's trace of operations rewriting ``words`` into the reference, cost rows)."""
        ref, n_ref, infinity = self.ref, self.n_ref, INFINITY
        rows, ops = [self.first_row], [[_INS] * (n_ref + 1)]
        for i in range(1, self.n_hyp + 1):
            lo, hi = self.bounds[i]
            prev, word = rows[-1], words[i - 1]
            cur, op = [infinity] * (n_ref + 1), [_UNDEF] * (n_ref + 1)
            for j in range(lo, hi):
                if j == 0:
                    cur[0], op[0] = prev[0] + 1, _DEL
                    continue
                best, name = infinity, _UNDEF
                if word == ref[j - 1]:
                    if prev[j - 1] < best:
                        best, name = prev[j - 1], _NOP
                elif prev[j - 1] + 1 < best:
                    best, name = prev[j - 1] + 1, _SUB
                if prev[j] + 1 < best:
                    best, name = prev[j] + 1, _DEL
                if cur[j - 1] + 1 < best:
                    best, name = cur[j - 1] + 1, _INS
                cur[j], op[j] = best, name
            rows.append(cur)
            ops.append(op)
        trace, i, j = [], self.n_hyp, n_ref
        while i > 0 or j > 0:
            name = ops[i][j]
            trace.append(name)
            if name in (_SUB, _NOP):
                i, j = i - 1, j - 1
            elif name == _INS:
                j -= 1
            elif name == _DEL:
                i -= 1
            else:
                raise ValueError("unknown operation {!r}".format(name))
        return rows[-1][-1], "".join(reversed(trace)), rows

    def cost(self, words, start, row):
        """The edit distance of ``words``, whose first ``start`` words give the cost row ``row``."""
        ref, n_ref, infinity, bounds = self.ref, self.n_ref, INFINITY, self.bounds
        prev = row
        for i in range(start + 1, self.n_hyp + 1):
            lo, hi = bounds[i]
            word = words[i - 1]
            cur = [infinity] * (n_ref + 1)
            if lo == 0:
                cur[0] = prev[0] + 1
                lo = 1
            left = cur[lo - 1]
            for j in range(lo, hi):
                best = prev[j - 1] + (word != ref[j - 1])
                if best > infinity:
                    best = infinity
                down = prev[j] + 1
                if down < best:
                    best = down
                if left + 1 < best:
                    best = left + 1
                cur[j] = left = best
            prev = cur
        return prev[-1]


def _flip(trace):
    return trace.translate(str.maketrans(_INS + _DEL, _DEL + _INS))


def _alignment(trace):
    """sacrebleu's ``trace_to_alignment``: (alignment, reference errors, hypothesis errors)."""
    pos_hyp = pos_ref = -1
    hyp_err, ref_err, align = [], [], {}
    for op in trace:
        if op in (_NOP, _SUB):
            pos_hyp += 1
            pos_ref += 1
            align[pos_ref] = pos_hyp
            hyp_err.append(int(op == _SUB))
            ref_err.append(int(op == _SUB))
        elif op == _INS:
            pos_hyp += 1
            hyp_err.append(1)
        elif op == _DEL:
            pos_ref += 1
            align[pos_ref] = pos_hyp
            ref_err.append(1)
    return align, ref_err, hyp_err


def shifted_pairs(words_h, words_r, where):
    """sacrebleu's ``_find_shifted_pairs`` in its order, from ``where`` (reference positions by word):
    (hypothesis start, reference start, length) of the matching subsequences at most
    :data:`MAX_SHIFT_DIST` positions apart."""
    n_h, n_r = len(words_h), len(words_r)
    for start_h in range(n_h):
        for start_r in where.get(words_h[start_h], ()):
            if start_r < start_h - MAX_SHIFT_DIST:
                continue
            if start_r > start_h + MAX_SHIFT_DIST:
                break
            length = 0
            while words_h[start_h + length] == words_r[start_r + length] and length < MAX_SHIFT_SIZE:
                length += 1
                yield start_h, start_r, length
                if n_h == start_h + length or n_r == start_r + length:
                    break


def _perform_shift(words, start, length, target):
    if target < start:
        return words[:target] + words[start: start + length] + words[target: start] + words[start + length:]
    if target > start + length:
        return words[:start] + words[start + length: target] + words[start: start + length] + words[target:]
    return (words[:start] + words[start + length: length + target] + words[start: start + length]
            + words[length + target:])


def _shift(words_h, words_r, distance, where, checked, work):
    """sacrebleu's ``_shift``: (best gain, shifted words, candidates checked, cost of ``words_h``); its work
    spent from ``work`` (a :class:`WorkBound`), which stops it past its limit."""
    pre_score, inverse_trace, rows = distance.traced(words_h)
    spent, left, tail = distance.traced_work, work.left(), distance.tail
    align, ref_err, hyp_err = _alignment(_flip(inverse_trace))
    best = None
    pair_work = RUN_WORK * PAIR_WORK
    for start_h, start_r, length in shifted_pairs(words_h, words_r, where):
        spent += pair_work
        if sum(hyp_err[start_h: start_h + length]) == 0 or sum(ref_err[start_r: start_r + length]) == 0:
            if spent > left:
                work.spend(spent)
            continue
        if start_h <= align[start_r] < start_h + length:
            continue
        prev_idx = -1
        for offset in range(-1, length):
            if start_r + offset == -1:
                idx = 0
            elif start_r + offset in align:
                idx = align[start_r + offset] + 1
            else:
                break
            if idx == prev_idx:
                continue
            prev_idx = idx
            shifted = _perform_shift(words_h, start_h, length, idx)
            same = min(start_h, idx)  # the rows of the words before both the shifted words and their target
            if spent > left:
                work.spend(spent)  # raises: past the bound, before the next candidate is computed
            candidate = (pre_score - distance.cost(shifted, same, rows[same]), length, -start_h, -idx, shifted)
            spent += tail[same]
            checked += 1
            if not best or candidate > best:
                best = candidate
        if checked >= MAX_SHIFT_CANDIDATES:
            break
    work.spend(spent)
    if not best:
        return 0, words_h, checked, pre_score
    return best[0], best[4], checked, pre_score


def translation_edit_rate(words_hyp, words_ref, work=None):
    """(edits, reference length): sacrebleu's ``translation_edit_rate``, identical results; its work counted
    in ``work`` (a :class:`WorkBound`, which stops it past its limit; None: a new one, unbounded)."""
    work = WorkBound() if work is None else work
    if not words_ref:
        work.spend(1)
        return len(words_hyp), 0
    distance = BeamEditDistance(words_ref, len(words_hyp))
    where = {}
    for j, word in enumerate(words_ref):
        where.setdefault(word, []).append(j)
    shifts, words, checked = 0, words_hyp, 0
    while True:
        delta, shifted, checked, cost = _shift(words, words_ref, distance, where, checked, work)
        if checked >= MAX_SHIFT_CANDIDATES or delta <= 0:
            return shifts + cost, len(words_ref)
        shifts += 1
        words = shifted


def sacrebleu_ter(**kwargs):
    """sacrebleu's ``TER`` metric object (its options, preprocessing, statistics and score) whose
    sentence-pair edits come from :func:`translation_edit_rate`, each corpus (every sentence against every
    reference) within one :class:`WorkBound`: :func:`fairseq_wean.scoring.bounds.ter_work_bound`."""
    from sacrebleu.metrics import TER

    class FastTER(TER):
        work = None

        def _extract_corpus_statistics(self, hypotheses, references):
            from fairseq_wean.scoring.bounds import ter_work_bound  # bounds imports this module

            self.work = ter_work_bound(len(hypotheses), len(references) if references else None)
            return super()._extract_corpus_statistics(hypotheses, references)

        def _compute_segment_statistics(self, hypothesis, ref_kwargs):
            words_hyp = hypothesis.split()
            ref_lengths, best = 0, INFINITY
            if self.work is None:  # a segment scored alone (sacrebleu's API): its own bound
                from fairseq_wean.scoring.bounds import ter_work_bound

                self.work = ter_work_bound(1, len(ref_kwargs["ref_words"]))
            self.work.sentence += 1
            for words_ref in ref_kwargs["ref_words"]:
                edits, ref_len = translation_edit_rate(words_hyp, words_ref, self.work)
                ref_lengths += ref_len
                best = min(best, edits)
            return [best, ref_lengths / len(ref_kwargs["ref_words"])]

    return FastTER(**kwargs)


def line_work(hyp, ref):
    """:func:`pair_work` of two token lists, remembered for the pairs seen last (a call checks its bound, then
    each metric's code checks it again: the estimate is computed once)."""
    return pair_work(tuple(hyp), tuple(ref))


@functools.lru_cache(maxsize=1 << 16)
def pair_work(hyp, ref):
    """The work estimate of :func:`translation_edit_rate` on one pair (token lists), in edit-distance cells
    (0.03-0.1 us each on one core): one edit distance (the beam's cells of every row, the whole last row: a
    hypothesis much shorter than its reference widens the beam, as sacrebleu does; and each row's allocation,
    :data:`ROW_CELLS`) x (the shift candidates + :data:`TRACED_CELLS` x the searches, each a traced edit distance
    and the pairs' look-up). Found as the first search finds them, from the hypothesis' edit trace: its
    candidates (after sacrebleu's filters: only words in error are shifted, so a close output has few), times the
    searches there can be (each shift lowers the edit distance, so at most the distance + 1), at most
    :data:`MAX_SHIFT_CANDIDATES` (+ one shift's offsets) in all; and the first search's matching pairs
    (:data:`PAIR_WORK` each) x the searches. Costs one traced edit distance and one search, what a pair
    without candidates costs TER itself."""
    n_h, n_r = len(hyp), len(ref)
    if not n_r:
        return 1
    distance = BeamEditDistance(ref, n_h)
    cost, inverse_trace, _ = distance.traced(hyp)
    align, ref_err, hyp_err = _alignment(_flip(inverse_trace))
    where = {}
    for j, word in enumerate(ref):
        where.setdefault(word, []).append(j)
    first = pairs = 0
    for start_h, start_r, length in shifted_pairs(hyp, ref, where):
        pairs += 1
        if sum(hyp_err[start_h: start_h + length]) and sum(ref_err[start_r: start_r + length]) and not (
                start_h <= align[start_r] < start_h + length):
            first += len({0 if start_r + offset == -1 else align[start_r + offset] + 1 for offset in range(-1, length)
                          if start_r + offset == -1 or start_r + offset in align})
        if first >= MAX_SHIFT_CANDIDATES:
            break
    searches = min(cost, MAX_SHIFT_CANDIDATES) + 1 if first else 1
    candidates = min(first * searches, MAX_SHIFT_CANDIDATES + MAX_SHIFT_SIZE + 1)
    ratio = n_r / n_h if n_h else 1
    width = math.ceil(ratio / 2 + BEAM_WIDTH) if BEAM_WIDTH < ratio / 2 else BEAM_WIDTH
    cells = n_h * min(n_r + 1, 2 * width) + n_r + 1 + n_h * (n_r + 1) // ROW_CELLS  # + each row's allocation
    searched = min(searches, candidates + 1)
    return cells * (candidates + TRACED_CELLS * searched) + PAIR_WORK * pairs * searched
