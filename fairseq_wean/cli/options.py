"""Option rules shared by ``fairseq-wean-score``, ``fairseq-wean-report`` and ``fairseq-wean-align-table``.

Two mechanisms, each used by every one of these tools:

* :func:`once`: an option given twice is argparse's one-line usage error (argparse keeps the last
  value silently: ``--refs a b --refs c`` scored against ``c`` alone);
* :data:`NEEDS` and :func:`check_effective`: an option that changes nothing in the given
  combination (``--sari-mode`` without ``sari``, ``--compare-name`` without ``--compare-to``, ...)
  is refused in one line before any scoring. A tool declares the options that always have an
  effect (``ALWAYS`` of its module); tests/test_option_rules.py requires every option of every
  such tool to be in one of the two.
"""
import argparse

from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.scoring import metrics as M

ROUGE = M.ROUGE_TYPES

# option -> the rules it needs to have an effect, each (kind, what): ("metrics", names: one of them
# in --metrics), ("option", other: that option given too), ("without", other: that option not
# given), ("compared", None: two systems compared: --compare-to, or --sys A B), ("log", None: a --sys or --compare-to that is a fairseq-generate log), ("metrics_or_log", names: one of them in --metrics, or a system output that is a log, whose S-/T- lines the file is checked against). A tool may
# declare an option of this table always effective instead (fairseq-wean-report's --rouge-chars
# also sets the page's units).
# the metrics that read the sources (--orig) and the references (--refs): stats reads both (copies, invented
# words), FKGL neither (fairseq-wean-report shows both on its page: always effective there)
READS_SOURCES = ("sari", "stats")
READS_REFERENCES = M.SACREBLEU_METRICS + ("sari",) + ROUGE + ("stats",)
NEEDS = {
    "--orig": (("metrics_or_log", READS_SOURCES),),
    "--refs": (("metrics_or_log", READS_REFERENCES),),
    "--sari-mode": (("metrics", ("sari",)),),
    "--bleu-tokenize": (("metrics", ("bleu",)),),
    "--rouge-chars": (("metrics", ROUGE),),
    "--rouge-no-stemmer": (("metrics", ROUGE),),
    "--name": (("without", "--json"),),
    "--compare-name": (("option", "--compare-to"), ("without", "--json")),
    "--hyp-lines": (("log", None),),
    # the range is metrics.check_bootstrap's (the library's), the no-op rule too: no second system, no bootstrap
    "--bootstrap-samples": (("compared", None),),
}


def no_effect(option, kind, need, metrics=()):
    """The message of ``option`` given where its rule ``(kind, need)`` does not hold."""
    if kind == "metrics":
        return "{} changes only {}, and --metrics {} has none: drop it, or add {} to --metrics".format(
            option, "/".join(need), ",".join(metrics), need[0])
    if kind == "metrics_or_log":
        return ("{} is read only by {} or to check a fairseq-generate log's lines, and --metrics {} has none and no "
                "system output given is a log: drop it, or add {} to --metrics".format(
                    option, "/".join(need), ",".join(metrics), need[0]))
    if kind == "option":
        return "{} has no effect without {}: drop it, or give {} FILE".format(option, need, need)
    if kind == "without":
        return "{} labels the text output, and {} prints none: drop one of them".format(option, need)
    if kind == "compared":
        return ("{} sets the paired bootstrap, which runs only when two systems are compared (--compare-to FILE, "
                "or a second --sys): drop it".format(option))
    return ("{} chooses the lines of a fairseq-generate log, and no system output given is a log (plain files are "
            "read line by line): drop it".format(option))


class _Once:
    """Mixed into an option's action class: a second occurrence in one parse is an error."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(self, "_given_in", None) is namespace:
            raise argparse.ArgumentError(self, "given more than once: give each option once (argparse would keep "
                                               "only the last {}, silently)".format(
                                                   "list" if self.nargs in ("+", "*") else "value"))
        self._given_in = namespace
        super().__call__(parser, namespace, values, option_string)


_CLASSES = {}


def once(parser):
    """Make every option of ``parser`` refuse a second occurrence (argparse's usage error, exit 2);
    returns ``parser``. :func:`given` then tells which options the command line named."""
    for action in parser._actions:
        if not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        cls = type(action)
        if not issubclass(cls, _Once):
            if cls not in _CLASSES:
                _CLASSES[cls] = type("Once" + cls.__name__, (_Once, cls), {})
            action.__class__ = _CLASSES[cls]
    return parser


def option_name(action):
    longs = [o for o in action.option_strings if o.startswith("--")]
    return (longs or action.option_strings)[0]


def given(parser, args):
    """The options (long names) given on the command line that ``args`` was parsed from."""
    return {option_name(a) for a in parser._actions if getattr(a, "_given_in", None) is args}


def _systems(args):
    """How many systems ``--sys`` names (fairseq-wean-report: a list; fairseq-wean-score: one)."""
    value = getattr(args, "sys", None)
    return len(value) if isinstance(value, (list, tuple)) else int(value is not None)


def check_effective(parser, args, logs=None, always=()):
    """Refuse (FairseqWeanError, one line) an option of :data:`NEEDS` given where it has no effect.

    ``logs``: whether a system output is a fairseq-generate log (None: not known yet, the ``log``
    rules are skipped: call again once the inputs are read); ``always``: this tool's options
    that are effective in every combination."""
    named = given(parser, args)
    metrics = list(getattr(args, "metrics", ()) or ())
    for option in sorted(named):
        if option in always or option not in NEEDS:
            continue
        for kind, need in NEEDS[option]:
            holds = (any(m in metrics for m in need) if kind == "metrics"
                     else any(m in metrics for m in need) or logs is None or logs if kind == "metrics_or_log"
                     else need in named if kind == "option"
                     else need not in named if kind == "without"
                     else "--compare-to" in named or _systems(args) > 1 if kind == "compared"
                     else logs is None or logs)
            if not holds:
                raise FairseqWeanError(no_effect(option, kind, need, metrics))


# ----------------------------------------------------------------------------------------------- labels
def label_problem(label):
    """Why ``label`` (a system's name in a tool's output) cannot label a line or a column, or None: empty
    (or only spaces), or holding a line break or another control character (a tab, ESC...: the header line
    split in two, a table's column shifted). Characters of any script, spaces inside, punctuation: fine."""
    import unicodedata

    if not label.strip():
        return "is empty"
    bad = next((ch for ch in label if unicodedata.category(ch) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:
        return "holds the control character {!r}".format(bad)
    return None


def check_labels(labels):
    """The one check of every label option (fairseq-wean-score --name / --compare-name, fairseq-wean-report
    --names): ``labels`` is ``[(option, label or None), ...]`` of one call (None: not given). Each label
    given must be a label (:func:`label_problem`) and no two may be equal (two systems the output could
    not tell apart): FairseqWeanError, one line, before any input is read."""
    seen = {}
    for option, label in labels:
        if label is None:
            continue
        problem = label_problem(label)
        if problem is not None:
            raise FairseqWeanError("{} {!r} {}: give a label of visible characters, or leave the option out (the "
                                   "file name is the default)".format(option, label, problem))
        if label in seen:
            first = seen[label]
            raise FairseqWeanError("{} {!r} name two systems: give each system its own name".format(
                first if first == option else "{} and {}".format(first, option), label))
        seen[label] = option


# ------------------------------------------------------------------------------------------- quantities
# One table of the quantities that options of several tools take, each with its range, so that the same
# quantity has the same bound in every tool (a seed above numpy's range was taken by fairseq-wean-compare,
# which prepared the data before fairseq-train refused it; --threads 100000 made libgomp run out of memory).
# name -> (low, high or a function giving it, why the high end). tests/test_quantity_bounds.py requires every
# option of every tool named like a quantity (QUANTITY_OPTION_NAMES) to take its type from :func:`quantity`
# (or an explicit upper bound no looser).
def _seed_high():
    from fairseq_wean.patching import FAIRSEQ_RANGES

    return FAIRSEQ_RANGES["seed"][2]


def _threads_high():
    from fairseq_wean.cli.train_cpu_dist import NPROC_PER_CPU, usable_cpus

    return NPROC_PER_CPU * usable_cpus()


def _positions_high():
    from fairseq_wean.modules.model_options import MAX_POSITIONS

    return MAX_POSITIONS


def _topk_high():
    from fairseq_wean.modules.model_options import MAX_TOPK

    return MAX_TOPK


QUANTITIES = {
    "seed": (0, _seed_high, "numpy's seed range, as fairseq-train's --seed"),
    "threads": (1, _threads_high, "{} per CPU this process may use, as fairseq-wean-train-cpu-dist's ranks: more only "
                                  "shares the CPUs out thinner, and each thread holds memory of its own"),
    "length": (1, _positions_high, "the most tokens a sentence of the models may have, --max-target-positions' "
                                   "maximum"),
    "topk": (1, _topk_high, "the most aligned words per source word core_copy takes, --core-topk's maximum"),
}
# how an option names its quantity (its long name's words): threads and processes running at once, a seed,
# a top-k, a length in tokens
QUANTITY_OPTION_NAMES = {
    "seed": r"(^|-)seeds?($|-)",
    "threads": r"(^|-)(threads?|jobs|workers|nproc(-per-node)?)($|-)",
    "topk": r"(^|-)top-?k($|-)",
    "length": r"(^|-)(len|length)($|-)",
}


def quantity(name, low=None):
    """The argparse ``type`` of an option of the quantity ``name`` of :data:`QUANTITIES` (``low``: a higher
    lower end for this option): a number outside the range is argparse's one-line usage error naming the
    option, before any work; the high end says why. ``.range`` as :func:`fairseq_wean.errors.at_least`'s,
    ``.quantity`` the name."""
    import argparse

    from fairseq_wean.errors import at_least

    base, high, why = QUANTITIES[name]
    high = high() if callable(high) else high
    check = at_least(base if low is None else max(low, base), high=high)
    if name == "threads":
        from fairseq_wean.cli.train_cpu_dist import NPROC_PER_CPU

        why = why.format(NPROC_PER_CPU)

    def parse(text):
        try:
            return check(text)  # not a whole number, nan, out of range: at_least's line
        except argparse.ArgumentTypeError:
            try:
                above = int(text) > high
            except ValueError:
                above = False
            if not above:
                raise
            raise argparse.ArgumentTypeError("must be <= {}: {}; got {}".format(high, why, text.strip())) from None

    parse.__name__, parse.range, parse.quantity = check.__name__, check.range, name
    return parse
