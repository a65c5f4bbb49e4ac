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
