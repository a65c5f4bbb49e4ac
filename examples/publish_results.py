"""Copy a finished comparison's table and figure into docs/RESULTS.md, unchanged.

    python examples/publish_results.py work_dirs/compare-simplification [--results docs/RESULTS.md]

``fairseq-wean-compare`` (``bash examples/compare.sh``) writes ``results.md`` and ``valid_curve.png`` into its output folder
(git-ignored). This puts that ``results.md`` between the markers
``<!-- compare-TASK:begin -->`` / ``<!-- compare-TASK:end -->`` of the results file (appended
if absent; text outside the markers, such as published numbers and notes, is kept), with its
heading one level down, and copies the figure to ``docs/figures/TASK_valid_curve.png``.
``--redraw`` first draws the figure anew from the run's ``results.json`` (after a change to the plot).
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.run import write_section  # noqa: E402


def redraw_figure(compare_dir):
    """Draw ``valid_curve.png`` anew from the run's ``results.json`` with the current plot of
    fairseq-wean-compare (no training or decoding: the curves are in results.json)."""
    from fairseq_wean.compare import report

    with open(os.path.join(compare_dir, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    # keys SYSTEM:VOCAB, and SYSTEM:VOCAB:SEED for extra seeds
    evals = {tuple(int(p) if i == 2 else p for i, p in enumerate(key.split(":"))): ev
             for key, ev in results["runs"].items()}
    recipe = results["recipe"]
    return report.plot_curves(argparse.Namespace(task=recipe["task"], out=compare_dir), recipe, evals)


def publish(compare_dir, results_path):
    with open(os.path.join(compare_dir, "results.md"), encoding="utf-8") as f:
        table = f.read().rstrip("\n")
    name = os.path.basename(os.path.normpath(compare_dir)).replace("compare-", "", 1)
    figure_dir = os.path.join(os.path.dirname(os.path.abspath(results_path)), "figures")
    figure = os.path.join(compare_dir, "valid_curve.png")
    if os.path.exists(figure):
        os.makedirs(figure_dir, exist_ok=True)
        shutil.copyfile(figure, os.path.join(figure_dir, "{}_valid_curve.png".format(name)))
    table = table.replace("](valid_curve.png)", "](figures/{}_valid_curve.png)".format(name))
    if table.startswith("# "):
        table = "##" + table  # a subsection of the task's hand-written section
    begin, end = "<!-- compare-{}:begin -->".format(name), "<!-- compare-{}:end -->".format(name)
    write_section(results_path, "\n".join([begin, table, end]), begin, end)
    return begin


def main(argv=None):
    p = argparse.ArgumentParser(prog="python examples/publish_results.py", description=__doc__.split("\n\n")[0])
    p.add_argument("compare_dir", help="output folder of fairseq-wean-compare")
    p.add_argument("--results", default=os.path.join(REPO, "docs", "RESULTS.md"), help="results file to update")
    p.add_argument("--redraw", action="store_true",
                   help="first redraw valid_curve.png from results.json with the current plot code")
    args = p.parse_args(argv)
    if not os.path.exists(os.path.join(args.compare_dir, "results.md")):
        raise SystemExit("error: {} has no results.md: the comparison has not finished".format(args.compare_dir))
    if args.redraw:
        print("redrew {}".format(redraw_figure(args.compare_dir)))
    marker = publish(args.compare_dir, args.results)
    print("updated {} ({})".format(args.results, marker))


if __name__ == "__main__":
    main()
