"""How fairseq-wean-report scales: a synthetic test set of N sentences and two systems.

    python scripts/report_scale.py --sentences 50000 --work /tmp/report-scale

Writes N random sentences (a 5,000-word vocabulary, 5-35 words), one reference and two system
outputs (one deletes words, the other also replaces some), runs ``fairseq-wean-report`` on them as
a user would (a subprocess), and prints its time, its peak memory, the page's size and, with
Chromium on PATH, whether the page loads in a headless browser: the script has run to the end
(``data-ready``) and shows the first page of rows, and how long a screenshot of it takes. Times
depend on the machine and its load; the memory and the page size do not.
"""
import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_SENTENCES = 10000000  # ~1 GB of synthetic text: more is no longer a measurement of this page
NAMES = ("src", "ref", "a", "b")
OUTPUTS = NAMES + ("report.html", "report.png")  # every file the script writes (or has written) in --work


def write_data(work, n, seed=0):
    """The four files in ``work``, each through ``textio.atomic_output`` (a planted link is replaced, never
    written through; a pipe, device or folder there is refused in one line)."""
    import contextlib

    from fairseq_wean import textio

    rng = random.Random(seed)
    vocabulary = ["w{}".format(i) for i in range(5000)]
    names = NAMES
    with contextlib.ExitStack() as stack:
        files = {k: stack.enter_context(textio.atomic_output(os.path.join(work, k), (), "--work file", folder=work))
                 for k in names}
        write_sentences(files, rng, vocabulary, n)
    return {k: os.path.join(work, k) for k in names}


def write_sentences(files, rng, vocabulary, n):
    names = NAMES
    for _ in range(n):
        src = [rng.choice(vocabulary) for _ in range(rng.randint(5, 35))]
        lines = {"src": src,
                 "ref": [w for w in src if rng.random() > 0.2] + [rng.choice(vocabulary) for _ in range(2)],
                 "a": [w for w in src if rng.random() > 0.3],
                 "b": [w if rng.random() > 0.1 else rng.choice(vocabulary) for w in src if rng.random() > 0.1]}
        for k in names:
            files[k].write(" ".join(lines[k]) + "\n")


def get_parser():
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from fairseq_wean.cli import options
    from fairseq_wean.errors import at_least

    p = argparse.ArgumentParser(prog="python scripts/report_scale.py", description=__doc__.split("\n")[0])
    p.add_argument("--sentences", type=at_least(1, high=MAX_SENTENCES), default=50000,
                   help="synthetic test sentences (default 50000)")
    p.add_argument("--work", required=True, help="a folder for the data and the page")
    return options.once(p)


def check_work(work):
    """Before any work: --work is a folder (or absent), and no file the script writes there is planted (a
    link, pipe, device, folder or hard link: refused in one line, nothing made)."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    textio.check_resolvable(work, "--work")
    kind = textio.node_kind(work, follow=True)
    if kind not in (None, textio.FOLDER):
        raise FairseqWeanError("--work {} is {}, not a folder: give a folder".format(work, kind))
    for name in OUTPUTS:  # textio's rule of a file written in place: no link, pipe, folder, hard link
        textio.check_in_place(os.path.join(work, name), "--work file", folder=work)


def main(argv=None):
    from fairseq_wean import textio

    args = get_parser().parse_args(argv)
    check_work(args.work)
    textio.makedirs_in_folder(args.work, args.work, "--work")
    files = write_data(args.work, args.sentences)
    page = os.path.join(args.work, "report.html")
    report = os.path.join(os.path.dirname(sys.executable), "fairseq-wean-report")
    start = time.time()
    proc = subprocess.run([report, "--sys", files["a"], files["b"], "--orig", files["src"], "--refs", files["ref"],
                           "--out", page])
    if proc.returncode != 0:  # its own error line is above
        from fairseq_wean.errors import FairseqWeanError

        raise FairseqWeanError("fairseq-wean-report failed (exit status {}): see its message above".format(
            proc.returncode))
    seconds = time.time() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("fairseq-wean-report, {} sentences, 2 systems: {:.0f} s, peak memory {:.0f} MB, page {:.0f} MB".format(
        args.sentences, seconds, peak_mb, os.path.getsize(page) / 1e6))
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        print("no chromium on PATH: the page was not loaded")
        return
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    url = "file://" + os.path.abspath(page)
    shot = os.path.join(args.work, "report.png")
    start = time.time()  # what a person waits for: the page loaded and drawn
    subprocess.run(common + ["--window-size=1400,1500", "--screenshot=" + shot, url], capture_output=True,
                   check=True, timeout=600)
    seconds = time.time() - start
    proc = subprocess.run(common + ["--virtual-time-budget=20000", "--dump-dom", url], capture_output=True,
                          text=True, timeout=600)
    laid_out = proc.stdout.split("<template")[0]
    rows = len(re.findall(r'<tr data-id="\d+"', laid_out))
    ready = 'data-ready="1"' in proc.stdout
    shown = re.search(r'<span id="page-info">([^<]*)<', proc.stdout)
    print("chromium: screenshot of the loaded page in {:.0f} s ({}); script {}; {} rows laid out; {}".format(
        seconds, shot, "ran to the end" if ready else "DID NOT FINISH", rows, shown.group(1) if shown else "no pager"))
    if not ready:
        sys.exit(1)


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    from fairseq_wean import errors

    errors.run_cli(main, "python scripts/report_scale.py")
