"""Time to the best validation score, from a finished comparison run on real data.

    python -m bench.convergence work_dirs/compare-simplification [--out docs/results/performance.md]

WEAN's claim is that it converges in a fraction of the baseline's epochs. The comparison runner
(``fairseq-wean-compare``) already trains every system under one epoch budget, decodes the
validation set after every epoch and keeps the fairseq-train logs; this command reads them
(``results.json`` and ``runs/*/train.log``, fairseq's ``--log-format json`` records; the
simple text format of runs made before is read too) and tabulates, for every system:

- the validation score per epoch (the task's selection metric: SARI, ROUGE-L or BLEU, beam 5) and
  the epoch with the best one, with fairseq's ``wall`` clock at the end of that epoch;
- the first epoch (and wall time) at which the system's validation score reaches the best score
  of fairseq ``lstm`` on the same vocabulary: the "fraction of the baseline's epochs";
- the epoch of the best validation loss (fairseq's own ``best_loss``).

Ratios are to fairseq ``lstm`` on the same vocabulary (``word`` for the ``word-pg`` and ``char``
variants, which have no lstm run of their own). The table goes to stdout and, between markers,
into ``--out`` (default docs/results/performance.md; text outside the markers is kept), with
the comparison's date, machine and command.
"""
import argparse
import datetime
import json
import os
import sys

from bench.run import REPO, read_epochs
from fairseq_wean.errors import FairseqWeanError, run_cli
from fairseq_wean.textio import open_in_folder, update_section
from fairseq_wean.cli.options import once  # each option given once (argparse keeps the last)

BEGIN, END = "<!-- convergence:begin -->", "<!-- convergence:end -->"
ANCHOR = "lstm"


def _folder(train_log):
    """The comparison folder of its runs/NAME/train.log."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(train_log))))


def _folder_log(train_log):
    """Whether the comparison folder has this train.log; a symbolic link, named pipe or device there is
    refused in one line (``textio.open_in_folder``), never read through or waited on."""
    if not os.path.lexists(train_log):
        return False
    open_in_folder(train_log, "r", _folder(train_log), "train log").close()
    return True


def epoch_walls(train_log):
    """{epoch: fairseq's wall seconds at the end of that epoch} from a fairseq-train log."""
    if not _folder_log(train_log):
        return {}
    return read_epochs(train_log, what="train log", folder=_folder(train_log))[1]


def best_loss_epoch(train_log):
    """The epoch of the lowest validation loss (ties: the earliest) in a fairseq-train log, or None."""
    if not _folder_log(train_log):
        return None
    losses = read_epochs(train_log, "loss", "train log", _folder(train_log))[0]
    return min(losses, key=lambda e: (losses[e], e)) if losses else None


def anchor_key(runs, system, vocab):
    """The fairseq lstm run a system is compared with: same vocabulary, else the word-level one."""
    for key in ("{}:{}".format(ANCHOR, vocab), "{}:word".format(ANCHOR)):
        if key in runs:
            return key
    return None


NUMBER = (int, float)


def read_results(compare_dir, need_recipe=False):
    """A comparison folder's ``results.json``, read only as itself (``textio.open_in_folder``: not a
    symbolic link, pipe or device) and checked field by field as the compare runner checks a
    published ``scores.json`` (``compare.runner.read_published``): every field this command and
    ``examples/publish_results.py`` read has its type. Anything else is one ``FairseqWeanError`` line
    naming the file and the field. ``need_recipe``: ``recipe.task`` and ``recipe.valid.metric`` too
    (what redrawing the figure reads)."""
    path = os.path.join(compare_dir, "results.json")
    if not os.path.lexists(path):
        raise FairseqWeanError("{} not found: run fairseq-wean-compare first".format(path))

    def bad(what):
        return FairseqWeanError("{}: {}; run fairseq-wean-compare again to rewrite it".format(path, what))

    try:
        with open_in_folder(path, "r", compare_dir, "results.json") as f:
            results = json.load(f)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad("not valid JSON ({})".format(exc)) from None

    def field(obj, name, types, where, optional=False):
        if not isinstance(obj, dict) or name not in obj:
            if optional and isinstance(obj, dict):
                return None
            raise bad("no field {}{}".format(where, name))
        value = obj[name]
        if optional and value is None:
            return None
        if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
            raise bad("field {}{} is {}, not {}".format(where, name, type(value).__name__,
                                                       " or ".join(t.__name__ for t in types)))
        return value

    if not isinstance(results, dict):
        raise bad("not a JSON object")
    field(results, "meta", (dict,), "", optional=True)
    recipe_metric = None
    if need_recipe:
        recipe = field(results, "recipe", (dict,), "")
        field(recipe, "task", (str,), "recipe.")
        recipe_metric = field(field(recipe, "valid", (dict,), "recipe."), "metric", (str,), "recipe.valid.")
    runs = field(results, "runs", (dict,), "")
    for key, run in runs.items():
        parts = key.split(":")
        if len(parts) not in (2, 3) or not all(parts) or len(parts) == 3 and not parts[2].isdigit():
            raise bad("runs names {!r}, not SYSTEM:VOCAB or SYSTEM:VOCAB:SEED".format(key))
        where = "runs.{}.".format(key)
        # the figure plots recipe.valid.metric; this command each run's own valid_metric
        metric = field(run, "valid_metric", (str,), where, optional=need_recipe)
        for metric in {metric, recipe_metric} - {None}:
            for i, point in enumerate(field(run, "curve", (list,), where)):
                field(point, "epoch", (int,), "{}curve[{}].".format(where, i))
                if metric == recipe_metric or metric in point:  # this command skips an epoch without it
                    field(point, metric, NUMBER, "{}curve[{}].".format(where, i))
        loss = field(run, "valid_loss", (dict,), where, optional=True) or {}
        for epoch in loss:
            if not str(epoch).isdigit():
                raise bad("{}valid_loss names epoch {!r}".format(where, epoch))
            field(loss, epoch, NUMBER, where + "valid_loss.")
    return results


def summarize(compare_dir):
    """One dict per system run of the comparison in ``compare_dir``, in the runner's order."""
    results = read_results(compare_dir)
    runs = results["runs"]
    rows = []
    for key, run in runs.items():
        system, vocab = key.split(":", 1)
        metric = run["valid_metric"]
        scores = {int(point["epoch"]): point[metric] for point in run.get("curve", []) if metric in point}
        if not scores:
            continue
        log = os.path.join(compare_dir, "runs", "{}-{}".format(system, vocab), "train.log")
        walls = epoch_walls(log)
        best = max(scores, key=lambda e: (scores[e], -e))
        rows.append({"key": key, "system": system, "vocab": vocab, "metric": metric, "scores": scores,
                     "best_epoch": best, "best": scores[best], "best_wall": walls.get(best),
                     "walls": walls, "best_loss_epoch": best_loss_epoch(log),
                     "anchor": anchor_key(runs, system, vocab)})
    by_key = {row["key"]: row for row in rows}
    for row in rows:
        anchor = by_key.get(row["anchor"])
        row["reach_epoch"] = row["reach_wall"] = None
        if anchor is not None:
            # first epoch at which this system is at least as good as the baseline's best
            reached = [e for e in sorted(row["scores"]) if row["scores"][e] >= anchor["best"]]
            if reached:
                row["reach_epoch"] = reached[0]
                row["reach_wall"] = row["walls"].get(reached[0])
    return results, rows, by_key


def ratio(value, reference, fmt="{:.2f}x"):
    if value is None or not reference:
        return ""
    return " (" + fmt.format(value / reference) + ")"


def markdown(compare_dir, results, rows, by_key, argv):
    meta = results.get("meta") or {}
    epochs = max((max(r["scores"]) for r in rows), default=0)
    metric = rows[0]["metric"] if rows else "?"
    out = [BEGIN, "## Time to the best validation score", "",
           "- command: `{}`".format(" ".join(["python", "-m", "bench.convergence"] + argv)),
           "- date: {}; read from the comparison run of {} on {} (`{}`)".format(
               datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), meta.get("date", "?"), meta.get("machine", "?"),
               meta.get("command", "?")),
           "- validation score: {} of the validation set decoded with beam 5 after every epoch; epoch budget {}; "
           "wall: fairseq-train's `wall` at the end of the epoch (seconds; for a run resumed from "
           "`checkpoint_last.pt`, added up over its processes from the end of the last epoch each one finished; "
           "two systems trained at a time, one thread each)".format(metric, epochs),
           "- 'reaches lstm's best': the first epoch at which the system's validation score is at least the best "
           "one fairseq `lstm` reached on the same vocabulary within the budget ('-' = not within the budget)",
           "",
           "| system | vocab | valid {} per epoch | best epoch (x lstm) | wall s to best (x lstm) | "
           "reaches lstm's best: epoch / wall s (x lstm's) | best valid loss at epoch |".format(metric),
           "|---|---|---|---|---|---|---|"]
    for row in rows:
        anchor = by_key.get(row["anchor"])
        curve = " / ".join("{:.2f}".format(row["scores"][e]) for e in sorted(row["scores"]))
        best_epoch = "{}{}".format(row["best_epoch"], ratio(row["best_epoch"], anchor and anchor["best_epoch"]))
        best_wall = "n/a" if row["best_wall"] is None else "{:.0f}{}".format(
            row["best_wall"], ratio(row["best_wall"], anchor and anchor["best_wall"]))
        if row["reach_epoch"] is None:
            reach = "-"
        else:
            reach = "{} / {}{}".format(row["reach_epoch"], "n/a" if row["reach_wall"] is None else
                                       "{:.0f}".format(row["reach_wall"]),
                                       ratio(row["reach_wall"], anchor and anchor["best_wall"]))
        out.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            row["system"], row["vocab"], curve, best_epoch, best_wall, reach,
            row["best_loss_epoch"] if row["best_loss_epoch"] is not None else "n/a"))
    out += ["", END]
    return "\n".join(out)


def get_parser():
    p = argparse.ArgumentParser(prog="python -m bench.convergence", description=__doc__.split("\n\n")[0])
    p.add_argument("compare_dir", help="output folder of fairseq-wean-compare (with results.json)")
    p.add_argument("--out", default=os.path.join(REPO, "docs", "results", "performance.md"),
                   help="markdown file whose convergence section is (re)written; '-' for stdout only")
    return once(p)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cfg = get_parser().parse_args(argv)
    if cfg.out != "-":
        # before reading anything: not a folder, pipe or device, nor a symbolic link (merged as itself)
        update_section_check(cfg.out)
    results, rows, by_key = summarize(cfg.compare_dir)
    if not rows:
        raise FairseqWeanError("no per-epoch validation scores in {}".format(os.path.join(cfg.compare_dir, "results.json")))
    section = markdown(cfg.compare_dir, results, rows, by_key, argv)
    print(section)
    if cfg.out != "-":
        update_section(cfg.out, section, BEGIN, END, "--out")


def update_section_check(path, what="--out"):
    """Refuse before any work an output page that :func:`fairseq_wean.textio.update_section` would
    refuse after it: a symbolic link, a folder, a pipe or device (its folder is made)."""
    from fairseq_wean.textio import check_output

    if os.path.islink(path):
        raise FairseqWeanError("{} {} is a symbolic link: the section is merged into the file itself; give the "
                               "file's own path".format(what, path))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)  # as the page was always written
    check_output(path, (), what)


if __name__ == "__main__":
    run_cli(main, "python -m bench.convergence")
