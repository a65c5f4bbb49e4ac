"""fairseq-wean-report: the numbers on the page equal fairseq-wean-score's and the reference
computations, token classes by hand, hover values from a generate log, escaping of hostile text,
no network loads, bad input; and in a real browser (headless chromium): the script runs, sorting
and filtering from the address fragment, and hostile text runs nothing.

The page is built in-process (``fairseq_wean.cli.report.main``); the browser tests (DOM after the
script ran, and a screenshot: the page is drawn, with its tables, histogram bars and token colours)
skip only when no headless Chromium is installed (``chromium``, ``chromium-browser``,
``google-chrome`` or ``chrome-headless-shell`` on PATH), which the test set-up command
(``scripts/setup_env.sh --with-browser``) installs with apt-get; its browser step is tested at the end.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
import torch

from conftest import REPO, FakeTask, USER_DIR, cli, cli_concurrently, generated_hypotheses, make_dictionary, \
    random_batch, train_args
from fairseq_wean.cli import report as report_cli
from fairseq_wean.cli import score
from fairseq_wean.errors import FairseqWeanError
from fairseq_wean.report import build, render
from fairseq_wean.scoring import metrics as M
from fairseq_wean.scoring import sari
from fairseq_wean.scoring import score as library_score
from fairseq_wean.scoring.generate_log import GenerateLog

SCRIPT_PAYLOAD = '<script>document.title="pwned"</script>'
ATTR_PAYLOAD = '"><img src=x onerror="document.title=\'pwned\'">'
COMMENT_PAYLOAD = "<!-- </table> </script> ]]>"
SOURCE = [
    "the cat sat on the mat .",
    "he said {} loudly".format(SCRIPT_PAYLOAD),
    "an apple a day keeps the doctor away",
    "short one",
    "the quick brown fox jumps over the lazy dog",
    "x {} y".format(COMMENT_PAYLOAD),
]
REFS = [
    ["the cat sat .", "he said loudly", "an apple daily keeps doctors away", "short", "the fox jumps over the dog",
     "x y"],
    ["a cat sat on a mat .", "he said {}".format(ATTR_PAYLOAD), "one apple a day keeps doctors away", "short one",
     "a quick fox jumps over a dog", "x y z"],
]
SYS_A = [
    "the cat sat on mat .",
    "he said {}".format(SCRIPT_PAYLOAD),
    "an <unk> a day zorg doctor",
    "short",
    "the quick brown fox jumps over the lazy dog",
    "x {} y".format(COMMENT_PAYLOAD),
]
SYS_B = [
    "the cat sat .",
    "he said {} loudly".format(ATTR_PAYLOAD),
    "an apple a day keeps the doctor away",
    "short one",
    "fox jumps over dog",
    "x y z",
]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def generate_log(hyps, positional, order):
    """A fairseq-generate log: S-/T-/H-/D-/P- lines in ``order`` (sentence ids), plus a worse
    second hypothesis per sentence (n-best) whose P- line must not be used."""
    lines = []
    for i in order:
        lines += ["S-{}\t{}".format(i, SOURCE[i]), "T-{}\t{}".format(i, REFS[0][i])]
        for text, scores in ((hyps[i], positional[i]), ("worse", [-9.0, -9.0])):
            lines += ["H-{}\t-1.5\t{}".format(i, text), "D-{}\t-1.5\t{}".format(i, text),
                      "P-{}\t{}".format(i, " ".join("{:.4f}".format(v) for v in scores))]
    return lines + [SUMMARY]


SUMMARY = "Generate test with beam=2: BLEU4 = 10.00"  # a complete log ends with it


POSITIONAL_B = [[-0.25 * (j + 1) - 0.01 * i for j in range(len(h.split()) + 1)] for i, h in enumerate(SYS_B)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    return {
        "dir": d,
        "orig": write(d / "src.txt", SOURCE),
        "refs": [write(d / "ref0.txt", REFS[0]), write(d / "ref1.txt", REFS[1])],
        "a": write(d / "a.txt", SYS_A),
        "b_log": write(d / "b.log", generate_log(SYS_B, POSITIONAL_B, order=[3, 1, 5, 0, 2, 4])),
        "b_plain": write(d / "b.txt", SYS_B),
    }


def make_page(files, *extra, sys=None, out="page.html", metrics="bleu,sari,fkgl,stats"):
    path = str(files["dir"] / out)
    report = report_cli.main(["--sys"] + (sys or [files["a"], files["b_log"]]) + ["--orig", files["orig"], "--refs"]
                             + files["refs"] + ["--out", path, "--metrics", metrics] + list(extra))
    with open(path, encoding="utf-8") as f:
        return report, f.read()


@pytest.fixture(scope="module")
def page(files):
    return make_page(files, "--names", "system A " + SCRIPT_PAYLOAD, "B" + ATTR_PAYLOAD)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of <script> elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parse(page_html):
    p = Elements()
    p.feed(page_html)
    return p


def score_json(capsys, *argv):
    score.main([str(a) for a in argv] + ["--json"])
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("metrics,extra", [("bleu,sari,fkgl,stats", []), ("sari,bleu", ["--sari-mode", "legacy"]),
                                           ("rouge1,rouge2,rougeL,bleu", []),
                                           ("bleu,stats", ["--bleu-tokenize", "none"])])
def test_corpus_scores_and_p_values_equal_fairseq_wean_score(files, capsys, metrics, extra):
    _, html_text = make_page(files, *extra, metrics=metrics, out="scores.html")
    tags = parse(html_text).tags
    shown = {(a["data-metric"], int(a["data-system"])): float(a["data-value"]) for t, a in tags if "data-metric" in a}
    p_shown = [float(a["data-p"]) for t, a in tags if "data-p" in a]
    orig = ["--orig", files["orig"]] if {"sari", "stats"} & set(metrics.split(",")) else []  # the score: read, or none
    common = orig + ["--refs"] + files["refs"] + ["--metrics", metrics] + extra
    first = score_json(capsys, "--sys", files["a"], *common)
    second = score_json(capsys, "--sys", files["b_log"], "--compare-to", files["a"], *common)
    expected = {}
    for k, result in enumerate((first, second)):
        for m in metrics.split(","):
            if m == "stats":
                expected.update({("stats." + s, k): v for s, v in result[m].items()})
            else:
                expected[(m, k)] = result[m]
    assert shown == expected
    metric_names = [m for m in metrics.split(",") if m != "stats"]
    assert p_shown == [second["p_values"][m] for m in metric_names]
    assert all(0 < p <= 1 for p in p_shown)
    if "--bleu-tokenize" in extra:  # stated in the table, and not 13a's value
        assert "BLEU (tokenize none)" in html_text
        assert second["bleu"] != score_json(capsys, "--sys", files["b_log"], *common[:-2])["bleu"]


def test_sentence_scores_equal_reference_computations(page):
    import sacrebleu
    from rouge_score import rouge_scorer

    report, _ = page
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for i, sent in enumerate(report["sentences"]):
        for system, out in zip((SYS_A, SYS_B), sent["outputs"]):
            refs = [REFS[0][i], REFS[1][i]]
            expected_sari = sari.corpus_sari([SOURCE[i]], [system[i]], [[r] for r in refs])
            assert out["scores"]["sari"] == pytest.approx(expected_sari, abs=1e-12)
            assert out["scores"]["bleu"] == sacrebleu.sentence_bleu(system[i], refs).score
            assert out["scores"]["len_ratio"] == len(system[i].split()) / len(SOURCE[i].split())
    rouge = build.sentence_scores(SYS_B, SOURCE, REFS, ["rougeL"])["rougeL"]
    assert rouge == [100 * max(scorer.score(r[i], SYS_B[i])["rougeL"].fmeasure for r in REFS)
                     for i in range(len(SYS_B))]
    # the column shown with --metrics rouge*: ROUGE-L instead of SARI (or both when both are asked for)
    assert build.sentence_columns(["rouge1", "bleu"]) == ["rougeL", "bleu", "len_ratio"]
    assert build.sentence_columns(["bleu", "stats"]) == ["bleu", "len_ratio"]  # translation: no SARI column
    assert build.sentence_columns(["sari", "rouge2"]) == ["sari", "rougeL", "len_ratio"]
    assert build.sentence_columns(["sari", "bleu", "fkgl"]) == ["sari", "bleu", "len_ratio"]


def test_per_sentence_cells_show_the_computed_scores(page):
    report, html_text = page
    rows = re.findall(r'<tr data-id="(\d+)">(.*?)</tr>', html_text)
    assert [int(r[0]) for r in rows] == list(range(len(SOURCE)))
    for (sid, row), sent in zip(rows, report["sentences"]):
        numbers = [float(v) for v in re.findall(r'<td class="num" data-v="([^"]+)"', row)]
        expected = [float(sid)] + [o["scores"][c] for o in sent["outputs"] for c in report["columns"]]
        assert numbers == expected


# --------------------------------------------------------------------------------------------- tokens
def test_token_classes_by_hand():
    segments, deleted = build.classify_tokens(
        "the the <unk> cat zorg UNK dog", "the cat sat on the mat", ["a dog sat", "the cat"])
    assert segments == [("the", "copied"), (" ", None), ("the", "copied"), (" ", None), ("<unk>", "unk"),
                        (" ", None), ("cat", "copied"), (" ", None), ("zorg", "invented"), (" ", None),
                        ("UNK", "unk"), (" ", None), ("dog", "generated")]
    assert deleted == ["sat", "on", "mat"]  # "the" twice in source and output: nothing deleted
    _, deleted = build.classify_tokens("the cat", "the cat sat on the mat", [])
    assert deleted == ["sat", "on", "the", "mat"]  # "the" twice in the source, once in the output
    # characters (--rouge-chars): ASCII runs stay whole, every other character is a unit
    segments, deleted = build.classify_tokens("我爱 NLP 猫", "我爱北京", ["我 爱 猫"], chars=True)
    assert [s for s in segments if s[1]] == [("我", "copied"), ("爱", "copied"), ("NLP", "invented"),
                                             ("猫", "generated")]
    assert deleted == ["北", "京"]


def test_invented_colour_is_the_scorers_invented_word(tmp_path):
    """The words coloured invented on the page are the scorer's invented words (metrics.invented_words:
    lowercased, punctuation not special), so their count matches ``stats``' invented_pct."""
    segments, _ = build.classify_tokens("The Mat. mat zorg , Zorg UNK", "the cat", ["a mat ."])
    assert [s for s in segments if s[1]] == [("The", "generated"), ("Mat.", "invented"), ("mat", "generated"),
                                             ("zorg", "invented"), (",", "invented"), ("Zorg", "invented"),
                                             ("UNK", "unk")]
    hyps = ["The Cat sat on a RUG !", "zz zz <unk> mat.", "a b", "x y"]
    src = ["the cat sat on the mat .", "mat", "a", "q"]
    refs = [["a cat sat .", "", "c", "x"], ["", "", "", "q y"]]
    paths = {}
    for name, lines in [("sys", hyps), ("src", src), ("ref0", refs[0]), ("ref1", refs[1])]:
        paths[name] = tmp_path / name
        paths[name].write_text("\n".join(lines) + "\n")
    page = tmp_path / "page.html"
    report_cli.main(["--sys", str(paths["sys"]), "--orig", str(paths["src"]), "--refs", str(paths["ref0"]),
                     str(paths["ref1"]), "--out", str(page), "--metrics", "stats"])
    coloured = re.findall(r'<td class="out".*?</td>', page.read_text())
    coloured = [w for cell in coloured for w in re.findall(r'<span class="tok invented">([^<]*)</span>', cell)]
    expected = [w for h, s, r0, r1 in zip(hyps, src, *refs) for w in M.invented_words(h, s, [r0, r1])]
    assert [w.lower() for w in coloured] == expected == ["rug", "!", "zz", "zz", "mat.", "b"]
    stats = library_score(hyps, sources=src, references=refs, metrics="stats")["stats"]
    assert stats["invented_pct"] == pytest.approx(100 * len(coloured) / sum(len(h.split()) for h in hyps))


def test_tokens_are_coloured_in_the_page(page):
    _, html_text = page
    cells = "".join(re.findall(r'<td class="out".*?</td>', html_text))
    spans = re.findall(r'<span class="tok (\w+)"[^>]*>([^<]*)</span>', cells)
    assert ("unk", "&lt;unk&gt;") in spans and ("invented", "zorg") in spans
    assert ("generated", "daily") not in spans  # sentence 2 of A has no 'daily'
    assert ("copied", "doctor") in spans
    assert re.search(r'deleted: <s class="tok deleted">apple</s> <s class="tok deleted"', html_text)
    for cls in build.TOKEN_CLASSES:  # a legend entry per class
        assert '<span class="tok {0}">{0}</span>'.format(cls) in html_text


def out_cells(html_text, sentence_id):
    """The attributes of sentence ``sentence_id``'s output cells (td.out), in system order."""
    row = re.search(r'<tr data-id="{}">(.*?)</tr>'.format(sentence_id), html_text).group(1)
    return [a for t, a in parse(row).tags if t == "td" and a.get("class") == "out"]


def test_hover_shows_positional_scores_of_the_best_hypothesis(page):
    report, html_text = page
    for i, sent in enumerate(report["sentences"]):
        assert sent["outputs"][1]["positional"] == pytest.approx(POSITIONAL_B[i], abs=1e-4)  # not the n-best -9
        assert sent["outputs"][0]["positional"] is None  # plain file: nothing to show
    cell_a, cell_b = out_cells(html_text, 4)
    expected = ["{:.4f}".format(v) for v in POSITIONAL_B[4]]
    assert "data-logp" not in cell_a and "title" not in cell_a  # a plain file has no P- values
    assert cell_b["data-logp"].split() == expected  # one per token, then </s> ...
    assert cell_b["title"] == "</s> | log2 p = " + expected[-1]  # ... which the cell's title shows


def hovered_titles(path, tmp_path):
    """{(sentence id, system): [the title of each output token after the pointer reached it]}: the
    page with a second script that moves the pointer over every token, in a real browser."""
    harness = tmp_path / "hover.html"
    hover = ('<script>Array.prototype.forEach.call(document.querySelectorAll("td.out span.tok"), function (t) {'
             't.dispatchEvent(new MouseEvent("mouseover", {bubbles: true})); });</script>')
    harness.write_text(open(path, encoding="utf-8").read().replace("</body>", hover + "</body>"), encoding="utf-8")
    dom = browser_dom(str(harness))
    out = {}
    for sid, row in re.findall(r'<tr data-id="(\d+)">(.*?)</tr>', dom):
        for k, cell in enumerate(re.findall(r'<td class="out".*?</td>', row)):
            spans = [a for t, a in parse(cell.split('<div class="deleted-list">')[0]).tags if t == "span"]
            out[(int(sid), k)] = [a.get("title") for a in spans if "tok" in a.get("class", "").split()]
    return out


def test_gate_lines_are_shown_when_the_log_has_them(files, tmp_path):
    gates = [[0.5 + 0.01 * j for j in range(len(h.split()) + 1)] for h in SYS_B]
    lines = generate_log(SYS_B, POSITIONAL_B, order=range(len(SYS_B)))[:-1]  # G- lines come before the summary
    lines += ["G-{}\t{}".format(i, " ".join("{:.4f}".format(g) for g in gs)) for i, gs in enumerate(gates)]
    lines.append(SUMMARY)
    path = write(files["dir"] / "gates.log", lines)
    report, html_text = make_page(files, sys=[path], out="gates.html", metrics="bleu")
    (cell,) = out_cells(html_text, 0)
    assert cell["data-gate"].split() == ["{:.4f}".format(g) for g in gates[0]]
    assert cell["title"] == "</s> | log2 p = {:.4f} | gate = {:.4f}".format(POSITIONAL_B[0][-1], gates[0][-1])
    # each token underlined by its gate: --g is the value, clipped to [0, 1], 2 decimals
    shades = re.findall(r'<span class="tok \w+" style="--g: ([\d.]+)">', html_text.split('<tr data-id="0">')[1])
    assert shades[:len(gates[0]) - 1] == ["{:.2f}".format(g) for g in gates[0][:-1]]
    if CHROMIUM is None:
        pytest.skip("no chromium: the hover titles are built by the page's script")
    titles = hovered_titles(files["dir"] / "gates.html", tmp_path)
    for sent in report["sentences"]:
        segments = [cls for _, cls in sent["outputs"][0]["segments"] if cls]
        i = sent["id"]
        assert titles[(i, 0)] == ["{} | log2 p = {:.4f} | gate = {:.4f}".format(
            render.TOKEN_LEGEND[cls], POSITIONAL_B[i][j], gates[i][j]) for j, cls in enumerate(segments)]
    assert titles[(0, 0)][0] == "copied: in the source | log2 p = -0.2500 | gate = 0.5000"


# --------------------------------------------------------------------------------------------- safety
def test_hostile_text_is_escaped_everywhere(page):
    _, html_text = page
    parsed = parse(html_text)
    assert [t for t, _ in parsed.tags].count("script") == 1  # ours only
    assert "img" not in [t for t, _ in parsed.tags]
    assert not any(k.startswith("on") for _, a in parsed.tags for k in a)  # no event-handler attribute
    assert "pwned" not in parsed.scripts[0] and "<!--" not in html_text
    # the text comes back unchanged once the browser unescapes it
    values = [a["data-v"] for t, a in parsed.tags if "data-v" in a]
    assert SOURCE[1] in values and SYS_B[1] in values and SOURCE[5] in values
    names = [a for t, a in parsed.tags if t == "th" and a.get("data-key") in ("s0-out", "s1-out")]
    assert len(names) == 2
    assert "system A &lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in html_text


def test_page_loads_nothing_from_the_network(page):
    _, html_text = page
    parsed = parse(html_text)
    for tag, attrs in parsed.tags:
        for key in ("src", "href", "xlink:href", "data", "action"):
            assert key not in attrs, (tag, attrs)
        assert tag not in ("link", "iframe", "object", "embed", "img")
    assert not re.search(r"(?i)(src|href)\s*=\s*[\"']?\s*(https?:)?//", html_text)
    assert not re.search(r"(?i)@import|url\(", html_text)


# --------------------------------------------------------------------------------------------- bad input
def test_bad_input_is_one_line_and_keeps_the_old_page(files, tmp_path):
    out = tmp_path / "page.html"
    out.write_text("old page")
    short = write(tmp_path / "short.txt", SYS_A[:3])
    base = ["--orig", files["orig"], "--refs"] + files["refs"]
    proc = cli("fairseq-wean-report", "--sys", files["a"], short, *base, "--out", out, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-wean-report: error: inputs have different numbers of lines")
    assert "short.txt has 3" in last
    assert out.read_text() == "old page"
    assert sorted(os.listdir(tmp_path)) == ["page.html", "short.txt"]  # no temporary file left
    with pytest.raises(FairseqWeanError, match="is also an input"):
        report_cli.main(["--sys", files["a"], *base, "--out", files["a"]])
    with pytest.raises(FairseqWeanError, match="--names has 1 name"):
        report_cli.main(["--sys", files["a"], files["b_plain"], "--names", "x", *base, "--out", str(out)])
    with pytest.raises(FairseqWeanError, match="--refs FILE"):
        report_cli.main(["--sys", files["a"], "--orig", files["orig"], "--out", str(out)])
    assert out.read_text() == "old page"


def test_log_alone_supplies_source_and_reference(files):
    report, _ = make_page(files, sys=[files["b_log"]], out="alone.html", metrics="bleu")
    path = str(files["dir"] / "alone2.html")
    alone = report_cli.main(["--sys", files["b_log"], "--out", path, "--metrics", "bleu"])
    assert [s["source"] for s in alone["sentences"]] == SOURCE
    assert [s["refs"] for s in alone["sentences"]] == [[r] for r in REFS[0]]
    assert alone["corpus"][0]["values"]["bleu"] == M.corpus_bleu(SYS_B, [REFS[0]])


# --------------------------------------------------------------------------------------------- browser
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome-headless-shell")


def find_browser():
    """The first headless-capable Chromium on PATH (Debian, Ubuntu, Google's names), or None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


CHROMIUM = find_browser()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium ({}) on PATH: apt-get install chromium".format(", ".join(BROWSERS)))


def run_browser(path, fragment, *options):
    """Headless Chromium on the page (after its script ran, a 2 s virtual-time budget)."""
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--run-all-compositor-stages-before-draw", "--virtual-time-budget=2000", *options,
         "file://" + os.path.abspath(path) + fragment],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def browser_dom(path, fragment=""):
    """The DOM after the page's script ran."""
    return run_browser(path, fragment, "--dump-dom")


def browser_screenshot(path, png, width, height, fragment=""):
    """A PNG of the top width x height pixels of the page; returns its bytes."""
    if os.path.exists(png):
        os.remove(png)
    run_browser(path, fragment, "--screenshot=" + str(png), "--window-size={},{}".format(width, height))
    with open(png, "rb") as f:
        return f.read()


def colour_pixels(png_path):
    """{(r, g, b): number of pixels} of a PNG."""
    from PIL import Image  # matplotlib's dependency

    with Image.open(png_path) as image:
        return {rgb: n for n, rgb in image.convert("RGB").getcolors(maxcolors=1 << 24)}


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def row_ids(dom):
    return [int(i) for i in re.findall(r'<tr data-id="(\d+)"', dom)]


@needs_chromium
def test_browser_sorts_from_the_fragment_and_runs_no_injected_code(page, files):
    report, _ = page
    path = str(files["dir"] / "page.html")
    dom = browser_dom(path, "#sort=s1-bleu&order=desc")
    assert 'data-ready="1"' in dom  # our script ran to the end
    assert "<title>fairseq-wean report: 6 sentences, 2 systems</title>" in dom  # the payloads did not
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom).group(1)
    elements = parse(dom)  # the serialized DOM: '<' inside attribute values stays as it is
    assert "img" not in [t for t, _ in elements.tags]
    assert not any(k.startswith("on") for _, a in elements.tags for k in a)
    assert [t for t, _ in elements.tags].count("script") == 1
    bleu = [s["outputs"][1]["scores"]["bleu"] for s in report["sentences"]]
    expected = sorted(range(len(bleu)), key=lambda i: (-bleu[i], i))
    assert row_ids(dom) == expected
    assert re.search(r'<th data-key="s1-bleu"[^>]*aria-sort="descending"', dom)
    # the corpus scores the browser shows: the computed values, 2 decimals
    shown = re.findall(r'data-metric="(\w+)" data-system="(\d)" data-value="[^"]*">([\d.]+)', dom)
    assert len(shown) == 2 * 3 and all(
        text == "{:.2f}".format(report["corpus"][int(k)]["values"][m]) for m, k, text in shown if m != "stats")
    # numeric, not text order: len ratio 1.0 sorts after 0.75 ascending
    dom = browser_dom(path, "#sort=s0-len_ratio")
    ratios = [s["outputs"][0]["scores"]["len_ratio"] for s in report["sentences"]]
    assert row_ids(dom) == sorted(range(len(ratios)), key=lambda i: (ratios[i], i))


@needs_chromium
def test_browser_sorts_text_and_filters(page, files):
    path = str(files["dir"] / "page.html")
    dom = browser_dom(path, "#sort=source&filter=THE")
    # rows whose text contains "the" (any case) in the source, a reference or an output, by source
    assert row_ids(dom) == sorted([0, 2, 4], key=lambda i: SOURCE[i])
    assert "3 of 6 shown" in dom
    assert 'id="pager"' not in dom  # one page
    dom = browser_dom(path, "#sort=source")
    assert row_ids(dom) == sorted(range(len(SOURCE)), key=lambda i: SOURCE[i])


@needs_chromium
def test_browser_pages_through_every_sentence(files, tmp_path):
    """A test set longer than a page: a page of rows at a time (the others wait in a template the
    browser does not lay out, as for 50,000 sentences), and sorting and filtering see every row."""
    systems, orig, refs = build.load_inputs([files["a"], files["b_log"]], None, files["orig"], files["refs"])
    report = build.build_report(systems, orig, refs)
    path = tmp_path / "paged.html"
    path.write_text(render.render_page(report, page_rows=4), encoding="utf-8")
    html_text = path.read_text()
    assert row_ids(html_text.split("<template")[0]) == [0, 1, 2, 3]  # without script: the first page
    assert row_ids(html_text.split('<template id="more-rows">')[1]) == [4, 5]
    shown = lambda dom: row_ids(dom.split("<template")[0])  # noqa: E731  (the rows laid out)
    dom = browser_dom(str(path))
    assert shown(dom) == [0, 1, 2, 3] and "rows 1\u20134 of 6" in dom and "6 of 6 shown" in dom
    assert re.search(r'<button id="prev" type="button" disabled="">', dom)
    dom = browser_dom(str(path), "#page=2")
    assert shown(dom) == [4, 5] and "rows 5\u20136 of 6" in dom
    assert re.search(r'<button id="next" type="button" disabled="">', dom)
    bleu = [s["outputs"][1]["scores"]["bleu"] for s in report["sentences"]]
    by_bleu = sorted(range(6), key=lambda i: (-bleu[i], i))
    assert shown(browser_dom(str(path), "#sort=s1-bleu&order=desc")) == by_bleu[:4]
    assert shown(browser_dom(str(path), "#sort=s1-bleu&order=desc&page=2")) == by_bleu[4:]
    dom = browser_dom(str(path), "#filter=fox")  # sentence 4 (on the second page) only
    assert "fox" in SOURCE[4] and shown(dom) == [4] and "1 of 6 shown" in dom and "rows 1\u20131 of 1" in dom


@needs_chromium
def test_browser_draws_the_page(page, files, tmp_path):
    """A screenshot: the tables, the histogram bars of every series and the token colours are drawn."""
    import struct

    from fairseq_wean.report.render import SERIES_COLOURS

    path = str(files["dir"] / "page.html")
    png = tmp_path / "page.png"
    data = browser_screenshot(path, png, 1400, 1000)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (1400, 1000)
    assert len(data) > 20000  # a blank 1400x1000 page is about 5 KB
    pixels = colour_pixels(png)
    white = pixels.get((255, 255, 255), 0)
    assert 0.5 < white / (1400 * 1000) < 0.97  # mostly background, but much drawn on it
    # the two histograms (top of the page): a bar of each series, source, reference, system A, B
    for colour in SERIES_COLOURS[:4]:
        assert pixels.get(rgb(colour), 0) > 300, colour
    # the whole page: the sentence table's token classes have their colours
    tall = tmp_path / "tall.png"
    browser_screenshot(path, tall, 1400, 4000)
    pixels = colour_pixels(tall)
    for cls, colour in (("copied", "#dbe9f6"), ("generated", "#c7ecc7"), ("invented", "#f7b6b6")):
        assert pixels.get(rgb(colour), 0) > 200, cls
    # a copy for a person to look at
    if os.environ.get("FAIRSEQ_WEAN_SCREENSHOTS"):
        shutil.copy(png, os.path.join(os.environ["FAIRSEQ_WEAN_SCREENSHOTS"], "report.png"))
        shutil.copy(tall, os.path.join(os.environ["FAIRSEQ_WEAN_SCREENSHOTS"], "report-tall.png"))


# --------------------------------------------------------------------------------------------- gates
def _core_copy_model(dictionary, tmp_path):
    from fairseq_wean.models.core_copy import CoreCopyModel, base_architecture

    words = dictionary.symbols[dictionary.nspecial:]
    table = tmp_path / "table.txt"
    table.write_text("".join("{}\t{}\t1\n".format(w, words[(7 * i) % len(words)]) for i, w in enumerate(words)))
    args = argparse.Namespace(arch="core_copy", embed_dim=16, encoder_hidden_size=12, decoder_hidden_size=14,
                              decoder_out_embed_dim=10, dropout=0.0, core_align_table=str(table), core_topk=2,
                              core_num_frequent=3)
    base_architecture(args)
    torch.manual_seed(0)
    return CoreCopyModel.build_model(args, FakeTask(dictionary)).eval()


def _word_attn_gated_model(dictionary, tmp_path):
    from fairseq_wean.models.word_attn_gated import WordAttnGatedModel, base_architecture

    args = argparse.Namespace(arch="word_attn_gated", word_attention="gated", encoder_embed_dim=10,
                              encoder_hidden_size=6, decoder_embed_dim=8, decoder_hidden_size=9,
                              decoder_out_embed_dim=7, dropout=0.0)
    base_architecture(args)
    torch.manual_seed(0)
    return WordAttnGatedModel.build_model(args, FakeTask(dictionary)).eval()


def _single_sentence_gates(model, src_row, pad, tokens, eos):
    """Reference: the gate of one sentence alone (no padding), read from the decoder's extra output."""
    src = src_row[src_row.ne(pad)].unsqueeze(0)
    prev = torch.cat([torch.tensor([eos]), tokens[:-1]]).unsqueeze(0)
    with torch.no_grad():
        extra = model(src, torch.tensor([src.size(1)]), prev)[1]
    if "copy_gate" in extra:
        return extra["copy_gate"][0][0]  # lambda_t, B x T
    return extra["gate"][0].mean(dim=-1)  # o_t: B x T x C, mean over units


@pytest.mark.parametrize("make_model", [_core_copy_model, _word_attn_gated_model])
def test_batched_hypothesis_gates_equal_each_sentence_alone(make_model, tmp_path):
    """Gates read for a batch of hypotheses of different lengths (left-padded sources, right-padded
    hypotheses) equal those of each sentence decoded alone."""
    from fairseq_wean.report import gate_lines

    d = make_dictionary(20)
    model = make_model(d, tmp_path)
    src_tokens, src_lengths, _, _ = random_batch(d, bsz=4, src_len=7, seed=3)
    g = torch.Generator().manual_seed(5)
    hypos = [torch.cat([torch.randint(d.nspecial, len(d), (n,), generator=g), torch.tensor([d.eos()])])
             for n in (5, 2, 7, 0)]
    gates = gate_lines.hypothesis_gates(model, {"src_tokens": src_tokens, "src_lengths": src_lengths}, hypos,
                                        d.pad(), d.eos())
    assert [len(v) for v in gates] == [len(h) for h in hypos]
    for i, h in enumerate(hypos):
        expected = _single_sentence_gates(model, src_tokens[i], d.pad(), h, d.eos())
        assert torch.allclose(gates[i], expected, atol=1e-5), (i, gates[i], expected)
        assert bool(((gates[i] > 0) & (gates[i] < 1)).all())


def test_generate_print_gates_writes_g_lines_the_report_shows(data_bin, tmp_path):
    """fairseq-generate --print-gates on a trained word_attn_gated checkpoint: one G- line per sentence,
    as long as its P- line, equal to the checkpoint's gates on that hypothesis; without the option
    the log is unchanged. The report shows them on hover."""
    from fairseq import checkpoint_utils

    save, lstm_save = tmp_path / "ck", tmp_path / "lstm"
    cli_concurrently([
        ("fairseq-train", train_args(data_bin, save, "word_attn_gated", "--encoder-embed-dim", 16,
                                     "--encoder-hidden-size", 16, "--decoder-embed-dim", 16,
                                     "--decoder-hidden-size", 16, "--dropout", 0.0, epochs=1)),
        # fairseq's own lstm: no gate, and its decoder's second output is a tensor, not a dict
        ("fairseq-train", train_args(data_bin, lstm_save, "lstm", "--encoder-embed-dim", 16, "--encoder-hidden-size", 16,
                                     "--decoder-embed-dim", 16, "--decoder-hidden-size", 16,
                                     "--decoder-out-embed-dim", 16, "--dropout", 0.0, epochs=1)),
    ])
    gen = [data_bin, "--user-dir", USER_DIR, "--path", save / "checkpoint_best.pt", "--gen-subset", "test",
           "--beam", 3, "--cpu", "--batch-size", 5]
    lstm_gen = [data_bin, "--user-dir", USER_DIR, "--path", lstm_save / "checkpoint_best.pt", "--gen-subset", "test",
                "--beam", 3, "--cpu", "--batch-size", 5]
    with_gates, without, lstm_with, lstm_without = cli_concurrently([
        ("fairseq-generate", gen + ["--print-gates"]), ("fairseq-generate", gen),
        ("fairseq-generate", lstm_gen + ["--print-gates"], {"check": False}), ("fairseq-generate", lstm_gen)])
    # a model without a gate: the option would print nothing, refused in one line before any decoding
    assert lstm_with.returncode != 0 and "H-" not in lstm_with.stdout and "Traceback" not in lstm_with.stderr
    assert lstm_with.stderr.strip().splitlines()[-1] == (
        "fairseq-wean: error: --print-gates does nothing here: the model (LSTMModel) has no gate to print (G- lines "
        "come from core_copy's copy gate and word_attn_gated's contextual gates); drop --print-gates")
    assert "H-0\t" in lstm_without.stdout
    assert "G-" not in without.stdout
    assert [line for line in with_gates.stdout.splitlines() if not line.startswith("G-")] == \
        without.stdout.splitlines()
    lines = with_gates.stdout.splitlines()
    tables = build.token_values(GenerateLog("gen.log", lines))
    hyps = generated_hypotheses(with_gates.stdout)
    sources = dict((int(line[2:].split("\t")[0]), line.split("\t", 1)[1]) for line in lines if line.startswith("S-"))
    assert sorted(tables["G"]) == sorted(hyps) == list(range(13))
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(save / "checkpoint_best.pt")],
                                                                    arg_overrides={"data": str(data_bin)})
    model, d = models[0].eval(), task.target_dictionary
    for sid, gates in tables["G"].items():
        assert len(gates) == len(tables["P"][sid]) == len(hyps[sid].split()) + 1
        src = d.encode_line(sources[sid], add_if_not_exist=False).long()
        hyp = d.encode_line(hyps[sid], add_if_not_exist=False).long()
        expected = _single_sentence_gates(model, src, d.pad(), hyp, d.eos())
        assert gates == pytest.approx(expected.tolist(), abs=6e-5)  # printed with 4 decimals
    log = tmp_path / "gen.log"
    log.write_text(with_gates.stdout)
    page = tmp_path / "page.html"
    report_cli.main(["--sys", str(log), "--out", str(page), "--metrics", "bleu"])
    (cell,) = out_cells(page.read_text(), 0)  # the values the hover titles show, one per token and </s>
    assert cell["data-logp"].split() == ["{:.4f}".format(v) for v in tables["P"][0]]
    assert cell["data-gate"].split() == ["{:.4f}".format(v) for v in tables["G"][0]]


def test_histograms_count_every_sentence_in_its_bin(page):
    report, html_text = page
    svgs = html_text.split('<svg class="hist"')[1:]
    assert len(svgs) == 2  # lengths, compression ratios

    def bars(svg):
        out = {}
        for name, count, lo, hi in re.findall(r"<title>([^<]*): (\d+) in ([\d.]+)(?:-([\d.]+))?</title>", svg):
            out.setdefault(name.split(" ")[0], []).append((int(count), float(lo), float(hi or lo)))
        return out

    lengths, ratios = bars(svgs[0]), bars(svgs[1])
    assert sorted(lengths) == sorted(["source", "reference", "system", "B&quot;&gt;&lt;img"])
    for name, sentences in (("source", SOURCE), ("system", SYS_A)):
        assert sum(c for c, _, _ in lengths[name]) == len(SOURCE)
        for n_tokens in {len(s.split()) for s in sentences}:  # integer bins: lo..hi inclusive
            expected = sum(len(s.split()) == n_tokens for s in sentences)
            assert [c for c, lo, hi in lengths[name] if lo <= n_tokens <= hi] == [expected]
    ratios_b = [len(h.split()) / len(s.split()) for h, s in zip(SYS_B, SOURCE)]
    bins_b = ratios["B&quot;&gt;&lt;img"]
    assert sum(c for c, _, _ in bins_b) == len(SYS_B)
    assert [c for c, _, _ in bins_b] == [sum(lo <= r + 1e-9 < hi for r in ratios_b) for _, lo, hi in bins_b]
    assert min(ratios_b) < max(ratios_b) < bins_b[-1][2]  # several bins used, the last covers the largest


# --------------------------------------------------------------------------------------------- browser set-up
SETUP = os.path.join(REPO, "scripts", "setup_env.sh")


def run_setup(tmp_path, *args, browser=None, apt_fails=False):
    """scripts/setup_env.sh ARGS with a PATH of only what its browser step and its early exit use,
    a fake apt-get that logs its arguments, and a fake browser named ``browser``. Returns the process
    and the apt-get calls."""
    if not (os.path.isfile(os.path.join(REPO, ".venv", ".fairseq-wean-setup")) and subprocess.run(
            ["cmp", "-s", os.path.join(REPO, ".venv", ".fairseq-wean-setup"), os.path.join(REPO, "setup.py")]
    ).returncode == 0):
        pytest.skip("scripts/setup_env.sh has not set up .venv for this setup.py (it would install it now)")
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    for tool in ("bash", "cmp", "id", "dirname"):
        os.symlink(shutil.which(tool), bindir / tool)
    calls = tmp_path / "apt-get.calls"
    fakes = {"apt-get": 'echo "$@" >> {}\nexit {}\n'.format(calls, 1 if apt_fails else 0)}
    if browser:
        fakes[browser] = "exit 0\n"
    for name, body in fakes.items():
        (bindir / name).write_text("#!" + shutil.which("bash") + "\n" + body)
        (bindir / name).chmod(0o755)
    proc = subprocess.run([str(bindir / "bash"), SETUP, *args], env={"PATH": str(bindir)},
                          capture_output=True, text=True, timeout=60)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_setup_with_browser_installs_chromium_only_where_none_is_on_path(tmp_path):
    proc, calls = run_setup(tmp_path / "none", "--with-browser")
    assert proc.returncode == 0, proc.stderr
    if os.geteuid() == 0:
        assert calls == ["update -qq", "install -y -qq chromium"]
        assert "installing chromium" in proc.stderr and "warning" not in proc.stderr
    else:
        assert calls == [] and "no root apt-get" in proc.stderr
    for browser in BROWSERS:  # any of the names the browser tests accept
        proc, calls = run_setup(tmp_path / browser, "--with-browser", browser=browser)
        assert (proc.returncode, calls, proc.stderr) == (0, [], "")
    proc, calls = run_setup(tmp_path / "plain")  # the main job's set-up installs no browser
    assert (proc.returncode, calls, proc.stderr) == (0, [], "")


def test_setup_goes_on_when_apt_get_fails_and_refuses_unknown_options(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("apt-get is tried as root only")
    proc, calls = run_setup(tmp_path / "fails", "--with-browser", apt_fails=True)
    assert proc.returncode == 0 and calls == ["update -qq"]
    assert proc.stderr.splitlines()[-1] == \
        "fairseq-wean: warning: apt-get could not install chromium; the browser tests will skip"
    proc, calls = run_setup(tmp_path / "bad", "--with-browsers")
    assert proc.returncode == 2 and calls == []
    assert proc.stderr == "setup_env.sh: unknown option --with-browsers (known: --with-browser)\n"


def test_setup_refuses_a_python_fairseq_does_not_run_on_before_any_work(tmp_path):
    """A python3 of 3.12 made the venv, installed torch, then failed in pip ("requires a different
    Python"); now one line names the fix before anything is installed (apt-get included)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts")
    shutil.copy(os.path.join(REPO, "setup.py"), repo)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "cmp", "id", "dirname"):
        os.symlink(shutil.which(tool), bindir / tool)
    for name, body in {"apt-get": "echo called >> {}\n".format(tmp_path / "apt-get.calls"),
                       "python3": 'echo "3.12"\n', "python3.9": 'echo "3.9"\n'}.items():
        (bindir / name).write_text("#!" + shutil.which("bash") + "\n" + body)
        (bindir / name).chmod(0o755)
    cases = {"python3": "'python3' is Python 3.12; fairseq-wean needs 3.10 or 3.11",
             "python3.9": "'python3.9' is Python 3.9; fairseq-wean needs 3.10 or 3.11",
             "python9": "no Python 'python9' on PATH: set PYTHON to a Python 3.10 or 3.11"}
    for python, message in cases.items():
        proc = subprocess.run([str(bindir / "bash"), str(repo / "scripts" / "setup_env.sh"), "--with-browser"],
                              env={"PATH": str(bindir), "PYTHON": python}, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, (python, proc.stderr)
        assert proc.stderr.startswith("fairseq-wean: error: ") and message in proc.stderr, proc.stderr
        assert sorted(p.name for p in repo.iterdir()) == ["scripts", "setup.py"]  # no .venv
        assert not (tmp_path / "apt-get.calls").exists()


def test_translation_report_fits_the_task_runaways_are_cut_and_gates_shaded(tmp_path):
    """--metrics bleu: no per-sentence SARI column (issue 38); an output far longer than its source
    shows 2 x source + 20 tokens and a mark (the full text still sorts); G- values underline their
    tokens, with a legend that names lambda_t and o_i."""
    src = ["ein kleines haus", "der hund"]
    ref = ["a small house there", "the dog"]  # a reference of 4 tokens: BLEU-4 can be above 0
    runaway = " ".join(["the"] * 40)
    log = ["S-0\t{}".format(src[0]), "T-0\t{}".format(ref[0]), "H-0\t-0.5\ta small house",
           "D-0\t-0.5\ta small house", "P-0\t-0.1 -0.2 -0.3 -0.4", "G-0\t0.9000 0.1000 0.5000 0.0000",
           "S-1\t{}".format(src[1]), "T-1\t{}".format(ref[1]), "H-1\t-9.0\t{}".format(runaway),
           "D-1\t-9.0\t{}".format(runaway), "P-1\t{}".format(" ".join(["-0.1"] * 41)),
           "G-1\t{}".format(" ".join(["0.2000"] * 41)), SUMMARY]
    files = {"log": write(tmp_path / "gen.log", log), "src": write(tmp_path / "src", src),
             "ref": write(tmp_path / "ref", ref)}
    page = tmp_path / "page.html"
    report = report_cli.main(["--sys", files["log"], "--orig", files["src"], "--refs", files["ref"],
                              "--metrics", "bleu,stats", "--out", str(page)])
    html_text = page.read_text()
    assert report["columns"] == ["bleu", "len_ratio"] and 'data-key="s0-sari"' not in html_text
    row1 = re.search(r'<tr data-id="1">(.*?)</tr>', html_text).group(1)
    assert row1.count('<span class="tok ') == 2 * 2 + 20 and "\u2026 +16 more</span>" in row1
    assert 'data-v="{}"'.format(runaway) in row1  # the whole output for sorting and filtering
    row0 = re.search(r'<tr data-id="0">(.*?)</tr>', html_text).group(1)
    assert re.findall(r'style="--g: ([0-9.]+)"', row0) == ["0.90", "0.10", "0.50"]
    assert "\u03bb_t, the probability of copying" in html_text and "o_i (mean over units)" in html_text
    # German -> English: the cross-lingual view, chosen automatically (no reference word is in its
    # source): no copied, deleted or invented marks; a word is in a reference or not
    assert report["view"] == "cross-lingual" and "(cross-lingual view)" in html_text
    assert 'class="tok matched"' in row0 and 'class="tok unmatched"' not in row0
    assert 'class="deleted-list"' not in html_text
    assert not re.search(r'class="tok (copied|invented|deleted|generated)"', html_text)
    forced = report_cli.main(["--sys", files["log"], "--orig", files["src"], "--refs", files["ref"],
                              "--metrics", "bleu", "--view", "monolingual", "--out", str(tmp_path / "mono.html")])
    assert forced["view"] == "monolingual" and 'class="deleted-list"' in (tmp_path / "mono.html").read_text()
