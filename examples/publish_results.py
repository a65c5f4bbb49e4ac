"""Copy a finished comparison's table and figure into its task's results page, unchanged.

    python examples/publish_results.py work_dirs/compare-simplification [--results docs/results/simplification.md]

``fairseq-wean-compare`` (``bash examples/compare.sh``) writes ``results.md`` and ``valid_curve.png`` into its output folder
(git-ignored). This puts that ``results.md`` between the markers
``<!-- compare-NAME:begin -->`` / ``<!-- compare-NAME:end -->`` of the results page (appended
if absent; text outside the markers, such as published numbers and notes, is kept), NAME being the
folder's name less ``compare-`` (``simplification-converged``, ...). The page is, unless
``--results`` names another, ``docs/results/TASK.md`` for the task the name starts with. The
table's heading goes one level down and names the budget (and BLEU's tokenization when it is not
sacreBLEU's default), so that two tables of one task on one page have different headings. The
figure is copied to ``figures/NAME_valid_curve.png`` of the docs folder (``docs/figures/`` for a
page in ``docs/results/``, else the page's own folder) and linked from the page.
``--redraw`` first draws the figure anew from the run's ``results.json`` (after a change to the plot).
"""
import argparse
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from bench.convergence import read_results, update_section_check  # noqa: E402
from fairseq_wean.cli import options  # noqa: E402
from fairseq_wean.errors import FairseqWeanError, run_cli  # noqa: E402
from fairseq_wean.textio import atomic_output, open_in_folder, update_section  # noqa: E402


def redraw_figure(compare_dir):
    """Draw ``valid_curve.png`` anew from the run's ``results.json`` with the current plot of
    fairseq-wean-compare (no training or decoding: the curves are in results.json)."""
    from fairseq_wean.compare import report

    results = read_results(compare_dir, need_recipe=True)  # read only as itself, every field checked
    # keys SYSTEM:VOCAB, and SYSTEM:VOCAB:SEED for extra seeds
    evals = {tuple(int(p) if i == 2 else p for i, p in enumerate(key.split(":"))): ev
             for key, ev in results["runs"].items()}
    recipe = results["recipe"]
    return report.plot_curves(argparse.Namespace(task=recipe["task"], out=compare_dir), recipe, evals)


TASKS = ("simplification", "summarization", "translation")


def default_results_page(compare_dir):
    """``docs/results/TASK.md`` for a comparison folder named ``compare-TASK...``."""
    name = run_name(compare_dir)
    task = name.split("-", 1)[0]
    if task not in TASKS:
        raise SystemExit("error: {} names no task ({}): pass --results PAGE".format(compare_dir, ", ".join(TASKS)))
    return os.path.join(REPO, "docs", "results", task + ".md")


def run_name(compare_dir):
    return os.path.basename(os.path.normpath(compare_dir)).replace("compare-", "", 1)


def figures_dir(results_path):
    """The docs folder's ``figures/``: the page's own folder's, or its parent's for a page in a
    folder named ``results`` (docs/results/TASK.md -> docs/figures/)."""
    folder = os.path.dirname(os.path.abspath(results_path))
    if os.path.basename(folder) == "results":
        folder = os.path.dirname(folder)
    return os.path.join(folder, "figures")


def heading(title, table):
    """The table's title with its budget (and BLEU's tokenization where it is not 13a), as the
    table's own notes give them: two tables of one task on one page get two headings."""
    extra = []
    if re.search(r"^Converged budget:", table, re.M):
        extra.append("converged budget")
    epochs = re.search(r"^Epoch budget (\d+) ", table, re.M)
    if epochs:
        extra.append("short budget, {} epochs".format(epochs.group(1)))
    if "(tok none)" in table:
        extra.append("BLEU `tokenize none`")
    return ", ".join([title] + extra)


def publish(compare_dir, results_path):
    # the comparison folder's files are read only as themselves (textio.open_in_folder: no symbolic
    # link, pipe or device); the figure and the page are written through textio.atomic_output
    with open_in_folder(os.path.join(compare_dir, "results.md"), "r", compare_dir, "results.md") as f:
        table = f.read().rstrip("\n")
    name = run_name(compare_dir)
    figure_dir = figures_dir(results_path)
    figure = os.path.join(compare_dir, "valid_curve.png")
    if os.path.lexists(figure):
        os.makedirs(figure_dir, exist_ok=True)
        target = os.path.join(figure_dir, "{}_valid_curve.png".format(name))
        with open_in_folder(figure, "rb", compare_dir, "valid_curve.png") as source, \
                atomic_output(target, (), "figure", "wb") as copy:
            shutil.copyfileobj(source, copy)
    link = os.path.relpath(os.path.join(figure_dir, "{}_valid_curve.png".format(name)),
                           os.path.dirname(os.path.abspath(results_path))).replace(os.sep, "/")
    table = table.replace("](valid_curve.png)", "]({})".format(link))
    if table.startswith("# "):
        first, _, rest = table.partition("\n")
        table = "### " + heading(first[2:], table) + ("\n" + rest if rest else "")  # a subsection of the page
    begin, end = "<!-- compare-{}:begin -->".format(name), "<!-- compare-{}:end -->".format(name)
    update_section(results_path, "\n".join([begin, table, end]), begin, end, "--results")
    return begin


def main(argv=None):
    p = argparse.ArgumentParser(prog="python examples/publish_results.py", description=__doc__.split("\n\n")[0])
    p.add_argument("compare_dir", help="output folder of fairseq-wean-compare")
    p.add_argument("--results", default=None,
                   help="results page to update (default docs/results/TASK.md, TASK from the folder's name)")
    p.add_argument("--redraw", action="store_true",
                   help="first redraw valid_curve.png from results.json with the current plot code")
    args = options.once(p).parse_args(argv)
    if not os.path.lexists(os.path.join(args.compare_dir, "results.md")):
        raise FairseqWeanError("{} has no results.md: the comparison has not finished".format(args.compare_dir))
    args.results = args.results or default_results_page(args.compare_dir)
    # before any work: the comparison's files (no link, pipe or device; results.json's fields) and the page
    open_in_folder(os.path.join(args.compare_dir, "results.md"), "r", args.compare_dir, "results.md").close()
    if args.redraw:
        read_results(args.compare_dir, need_recipe=True)
    update_section_check(args.results, "--results")
    if args.redraw:
        print("redrew {}".format(redraw_figure(args.compare_dir)))
    marker = publish(args.compare_dir, args.results)
    print("updated {} ({})".format(args.results, marker))


if __name__ == "__main__":
    run_cli(main, "python examples/publish_results.py")
