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


def write_data(work, n, seed=0):
    rng = random.Random(seed)
    vocabulary = ["w{}".format(i) for i in range(5000)]
    names = ("src", "ref", "a", "b")
    files = {k: open(os.path.join(work, k), "w", encoding="utf-8") for k in names}
    for _ in range(n):
        src = [rng.choice(vocabulary) for _ in range(rng.randint(5, 35))]
        lines = {"src": src,
                 "ref": [w for w in src if rng.random() > 0.2] + [rng.choice(vocabulary) for _ in range(2)],
                 "a": [w for w in src if rng.random() > 0.3],
                 "b": [w if rng.random() > 0.1 else rng.choice(vocabulary) for w in src if rng.random() > 0.1]}
        for k in names:
            files[k].write(" ".join(lines[k]) + "\n")
    for f in files.values():
        f.close()
    return {k: os.path.join(work, k) for k in names}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sentences", type=int, default=50000)
    p.add_argument("--work", required=True, help="a folder for the data and the page")
    args = p.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    files = write_data(args.work, args.sentences)
    page = os.path.join(args.work, "report.html")
    report = os.path.join(os.path.dirname(sys.executable), "fairseq-wean-report")
    start = time.time()
    subprocess.run([report, "--sys", files["a"], files["b"], "--orig", files["src"], "--refs", files["ref"],
                    "--out", page], check=True)
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
    main()
