"""``--eval-refs`` / ``--eval-orig`` of ``--task translation_with_metrics``: checked before training.

The lists (:func:`check_eval_files`): no empty item, no file named twice (a reference counted
twice; fairseq-wean-score's ``--refs`` rule, :func:`fairseq_wean.scoring.inputs.check_distinct`).

The content (:func:`check_eval_content`), against the validation subset fairseq binarized, so that
text of another order or of another set with the same number of lines is refused (it scored):

* ``--eval-orig``: every line must be the subset's source sentence as the source dictionary decodes
  it (after ``--eval-bleu-remove-bpe``), by fairseq-wean-score's rule for a log's ``S-`` lines
  (:func:`fairseq_wean.scoring.inputs.log_line_matches`: equal after Unicode, entity, BPE-mark,
  case and whitespace normalisation, each ``<unk>`` standing for one or more characters; with
  ``--truncate-source`` the decoded source may be a prefix).
* ``--eval-refs``: a reference need not be the binarized target (multi-reference sets), so the rule
  is statistical. Line i of a reference file *agrees* when the binarized target matches it (the
  rule above), or when at least :data:`MIN_SHARED` of its units (words; characters in CJK text)
  occur in the binarized source or target line i, counting only the units the dictionaries know (a
  word the data wrote as ``<unk>`` cannot be compared). Each file must agree on at least
  :data:`MIN_AGREEING` of its non-empty lines: a reference of the right sentences shares most of
  its words with them (a simplification keeps the source's words, a summary copies them), one of
  other sentences or another order shares only frequent words on almost every line (multi-reference
  sets such as TurkCorpus have free rewrites on a few lines). The refusal names the first line that
  does not agree.
"""
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring.inputs import _comparable, check_distinct, log_line_matches

MIN_SHARED = 0.5
MIN_AGREEING = 0.5


def check_eval_files(eval_refs, eval_orig):
    """The ``--eval-refs`` list: items non-empty, each file once."""
    if eval_refs is None:
        return
    paths = eval_refs.split(",")
    if not any(paths):
        raise FairseqWeanError("--eval-refs is empty: give reference files separated by commas")
    if not all(paths):
        raise FairseqWeanError("--eval-refs {!r}: item {} is empty: give reference files separated by single commas, "
                               "without a comma at either end".format(eval_refs, paths.index("") + 1))
    check_distinct(paths, "--eval-refs")


def _short(text):
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _units(text):
    """The words of ``text`` as compared (normalised each), or its characters where it is CJK text."""
    if any(ord(c) >= 0x2E80 for c in text):
        return set(_comparable(text).replace("<unk>", ""))
    return {w for w in (_comparable(t) for t in text.replace("<unk>", " ").split()) if w}


def known_units(*dictionaries):
    """Every unit (a word, or a character of CJK text) the dictionaries' symbols can spell as such."""
    known = set()
    for d in dictionaries:
        for symbol in d.symbols[d.nspecial:]:
            known.add(_comparable(symbol))
            known.update(_comparable(symbol))
    return known


def reference_agrees(ref, target, source, known=None):
    """Whether a reference line fits the binarized sentence (see the module's docstring); ``known``:
    :func:`known_units` (None: every unit counts)."""
    if not ref.strip() or log_line_matches(target, ref):
        return True
    units = {u for u in _units(ref) if known is None or u in known}
    if not units:
        return True
    shared = units & (_units(source) | _units(target))
    return len(shared) >= MIN_SHARED * len(units)


def check_eval_content(task, split):
    """--eval-refs / --eval-orig against the validation subset ``split`` (loaded): line counts first,
    then the text (see the module's docstring)."""
    dataset, cfg = task.datasets[split], task.cfg
    n = len(dataset)
    ref_paths = cfg.eval_refs.split(",") if task.eval_refs else []
    files = list(zip(ref_paths, task.eval_refs or []))
    if task.eval_orig is not None:
        files.append((cfg.eval_orig, task.eval_orig))
    for path, lines in files:
        if len(lines) != n:
            raise FairseqWeanError(
                "{} has {} lines but the validation subset '{}' has {} sentences: give files line-aligned "
                "with the text binarized into that subset".format(path, len(lines), split, n))
    if not files or getattr(dataset, "src", None) is None:
        return
    remove_bpe = cfg.eval_bleu_remove_bpe
    sources = [task.src_dict.string(dataset.src[i], remove_bpe) for i in range(n)]
    if task.eval_orig is not None:
        limit = cfg.max_source_positions if cfg.truncate_source else None
        for i, (decoded, line) in enumerate(zip(sources, task.eval_orig)):
            cut = limit is not None and len(dataset.src[i]) >= limit
            if not (log_line_matches(decoded, line) or (cut and log_line_matches(decoded + " <unk>", line))):
                raise FairseqWeanError(
                    "--eval-orig {} line {} {} is not source sentence {} of the validation subset '{}' ({} as the "
                    "source dictionary decodes it): give the source text binarized into that subset, in its "
                    "order".format(cfg.eval_orig, i + 1, _short(line), i + 1, split, _short(decoded)))
    if not task.eval_refs or getattr(dataset, "tgt", None) is None:
        return
    targets = [task.tgt_dict.string(dataset.tgt[i], remove_bpe) for i in range(n)]
    known = known_units(task.src_dict, task.tgt_dict)
    for path, lines in zip(ref_paths, task.eval_refs):
        agree = [reference_agrees(line, targets[i], sources[i], known) for i, line in enumerate(lines)]
        counted = sum(1 for line in lines if line.strip()) or 1
        disagree = sum(1 for a in agree if not a)
        if counted - disagree < MIN_AGREEING * counted:
            first = agree.index(False)
            raise FairseqWeanError(
                "--eval-refs {} does not fit the validation subset '{}': {} of its {} lines share under {:.0%} of "
                "their words with the binarized sentence (first: line {} {} for target {}): give references of "
                "that subset's sentences, in its order".format(
                    path, split, disagree, counted, MIN_SHARED, first + 1, _short(lines[first]),
                    _short(targets[first])))
