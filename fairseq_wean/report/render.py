"""HTML of the ``fairseq-wean-report`` page, from the dict :func:`.build.build_report` returns.

The page is one self-contained file: CSS, script and the histograms (SVG) are inline and it
loads nothing. Every text that comes from the inputs (sentences, file names, system names) is
written through :func:`esc` (element content and attribute values), and no input text is ever
put inside ``<script>`` (the script reads its data from the DOM), so a sentence such as
``<script>...`` or ``"><img onerror=...>`` is shown as text and runs nothing.

The sentence table is sorted by clicking a column header; ``#sort=KEY&order=desc&filter=TEXT`` in
the page's address sorts and filters on load (column keys: ``id``, ``source``, ``refs``, then per
system k ``sK-out`` and ``sK-`` + ``sari``/``rougeL``/``bleu``/``len_ratio``).
"""
import html
import json
import math

from fairseq_wean.report.build import CROSS_LINGUAL_CLASSES, METRIC_NAMES, STATS_NAMES, TOKEN_CLASSES

COLUMN_NAMES = {"sari": "SARI", "rougeL": "ROUGE-L", "bleu": "BLEU", "len_ratio": "len ratio"}
TOKEN_LEGEND = {
    "copied": "copied: in the source",
    "generated": "generated: in a reference, not in the source",
    "unk": "unknown word <unk>",
    "invented": "invented: in neither the source nor any reference",
    "deleted": "deleted: a source word missing from the output",
    "matched": "matched: in a reference",
    "unmatched": "unmatched: in no reference",
}
GATE_LABEL = "gate"  # a G- line's value: core_copy's lambda_t or word_attn_gated's mean o_t
GATE_LEGEND = ("gate (G- line, --print-gates), the darker the higher: core_copy's \u03bb_t, the probability "
               "of copying; word_attn_gated's o_i (mean over units), the weight of the hidden context "
               "against the word context")


# An output longer than this many units (twice its source's, plus 20) is a runaway (beam search
# that never stopped): the cell shows that many and a mark; the full text stays in its data-v.
def runaway_limit(source_units):
    return 2 * source_units + 20


# rows per page of the sentence table: a page of 50,000 sentences laid out at once did not load
PAGE_ROWS = 250

SERIES_COLOURS = ("#7f7f7f", "#bcbd22", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#17becf")


def esc(text):
    """``text`` safe in HTML element content and in a double- or single-quoted attribute."""
    return html.escape(str(text), quote=True)


def _num(value):
    """A float as a data attribute: the exact value (repr), so tests compare without rounding."""
    return repr(float(value))


def _values_attr(name, values):
    """``values`` (floats) as a data attribute, 4 decimals each, space-separated."""
    return ' {}="{}"'.format(name, " ".join("{:.4f}".format(v) for v in values))


def render_output_cell(output, gate_name, limit=None):
    """One system's output: coloured tokens, each underlined by its gate value where the log has
    G- lines, its deletions, and after ``limit`` units a runaway mark.

    Hovering a token shows its class and, where the log's P-/G- values line up with the page's
    units, its log2 probability and gate: the page's script builds that title from the token's
    class and the cell's ``data-logp``/``data-gate`` (one value per unit, then ``</s>``'s), so that a
    large test set does not carry the same title text on every token."""
    segments, positional, gates = output["segments"], output["positional"], output["gates"]
    n_units = sum(1 for _, cls in segments if cls is not None)
    # P-/G- lines have one value per target token and </s>; they line up with the page's units
    # only when the hypothesis was not cut into subwords or characters differently
    per_token_p = positional if positional is not None and len(positional) == n_units + 1 else None
    per_token_g = gates if gates is not None and len(gates) == n_units + 1 else None
    parts, index = [], 0
    for text, cls in segments:
        if cls is None:
            parts.append(esc(text))
            continue
        if limit is not None and index >= limit:
            parts.append('<span class="runaway" title="a runaway output: {} units, its source {}; the full text '
                         'sorts and filters">\u2026 +{} more</span>'.format(n_units, (limit - 20) // 2,
                                                                        n_units - limit))
            break
        shade = "" if per_token_g is None else ' style="--g: {:.2f}"'.format(min(max(per_token_g[index], 0.0), 1.0))
        parts.append('<span class="tok {}"{}>{}</span>'.format(cls, shade, esc(text)))
        index += 1
    cell_title = []
    if positional is not None and per_token_p is None:
        cell_title.append("log2 p per subword: " + " ".join("{:.4f}".format(v) for v in positional))
    if gates is not None and per_token_g is None:
        cell_title.append(gate_name + " per subword: " + " ".join("{:.4f}".format(v) for v in gates))
    if per_token_p is not None or per_token_g is not None:
        end = ["</s>"]
        if per_token_p is not None:
            end.append("log2 p = {:.4f}".format(per_token_p[-1]))
        if per_token_g is not None:
            end.append("{} = {:.4f}".format(gate_name, per_token_g[-1]))
        cell_title.append(" | ".join(end))
    body = "".join(parts)
    if output["deleted"]:
        body += '<div class="deleted-list">deleted: {}</div>'.format(" ".join(
            '<s class="tok deleted">{}</s>'.format(esc(w)) for w in output["deleted"]))
    values = ((_values_attr("data-logp", per_token_p) if per_token_p is not None else "")
              + (_values_attr("data-gate", per_token_g) if per_token_g is not None else ""))
    title = ' title="{}"'.format(esc("\n".join(cell_title))) if cell_title else ""
    return '<td class="out" data-v="{}"{}{}>{}</td>'.format(esc(output["text"]), values, title, body)


# ---------------------------------------------------------------------------------------------
# histograms
def _bins(values_lists, integer, max_bins=20):
    top = max([max(v) for v in values_lists if v] + [1])
    if integer:
        width = max(1, int(math.ceil((top + 1) / max_bins)))
        n = int(top // width) + 1
        return [(i * width, (i + 1) * width) for i in range(n)], lambda lo, hi: (
            "{}".format(lo) if hi - lo == 1 else "{}-{}".format(lo, hi - 1))
    top = max(top, 1.0)
    width = max(0.1, math.ceil(top / max_bins * 10) / 10)
    n = int(math.floor(top / width + 1e-9)) + 1  # the largest value gets a bin [lo, hi) of its own
    return [(round(i * width, 6), round((i + 1) * width, 6)) for i in range(n)], lambda lo, hi: (
        "{:.1f}-{:.1f}".format(lo, hi))


def histogram_svg(title, series, integer):
    """Grouped-bar histogram as inline SVG. ``series``: [(name, colour, values)], shared bins;
    every bar has a ``<title>`` with its count."""
    bins, label = _bins([v for _, _, v in series], integer)
    counts = []
    for _, _, values in series:
        c = [0] * len(bins)
        for v in values:
            # v / width, not v // width: 0.5 // 0.1 is 4.0 in floating point
            i = min(len(bins) - 1, int(math.floor(v / (bins[0][1] - bins[0][0]) + 1e-9)))
            c[i] += 1
        counts.append(c)
    peak = max([max(c) for c in counts if c] + [1])
    group_w, bar_w = 10 + 8 * len(series), 8
    left, top, plot_h = 40, 24, 160
    legend_h = 16 * len(series)
    width = left + group_w * len(bins) + 20
    height = top + plot_h + 40 + legend_h
    label_every = max(1, int(math.ceil(max(len(label(lo, hi)) for lo, hi in bins) * 6.5 / group_w)))
    out = ['<svg class="hist" width="{}" height="{}" role="img" '
           'aria-label="{}">'.format(width, height, esc(title)),
           '<text x="{}" y="14" class="h-title">{}</text>'.format(left, esc(title)),
           '<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#444"/>'.format(left, top, top + plot_h),
           '<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#444"/>'.format(left, top + plot_h, width - 10),
           '<text x="{}" y="{}" text-anchor="end" class="h-axis">{}</text>'.format(left - 4, top + 8, peak),
           '<text x="{}" y="{}" text-anchor="end" class="h-axis">0</text>'.format(left - 4, top + plot_h)]
    for b, (lo, hi) in enumerate(bins):
        x0 = left + 5 + b * group_w
        for s, (name, colour, _) in enumerate(series):
            count = counts[s][b]
            h = plot_h * count / peak
            out.append('<rect x="{}" y="{:.1f}" width="{}" height="{:.1f}" fill="{}"><title>{}: {} in {}'
                       '</title></rect>'.format(x0 + s * bar_w, top + plot_h - h, bar_w - 1, h, colour,
                                                esc(name), count, esc(label(lo, hi))))
        if b % label_every == 0:  # centred under the bin's bars
            out.append('<text x="{}" y="{}" text-anchor="middle" class="h-axis">{}</text>'.format(
                x0 + len(series) * bar_w / 2, top + plot_h + 14, esc(label(lo, hi))))
    for s, (name, colour, _) in enumerate(series):
        y = top + plot_h + 34 + 16 * s
        out.append('<rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}" class="h-axis">'
                   '{}</text>'.format(left, y - 9, colour, left + 14, y, esc(name)))
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
def render_corpus_table(report):
    systems, corpus = report["systems"], report["corpus"]
    head = "<tr><th>metric</th>{}</tr>".format("".join(
        '<th title="{}">{}{}</th>'.format(esc(s["path"]), esc(s["name"]), " (baseline for p)" if k == 0 else "")
        for k, s in enumerate(systems)))
    rows = []
    for m in report["metrics"]:
        keys = [(m + "." + k, STATS_NAMES[k], k) for k in STATS_NAMES] if m == "stats" else [(m, METRIC_NAMES[m], None)]
        for data_key, name, stat in keys:
            if m == "sari":
                name += " ({} mode)".format(report["sari_mode"])
            if m == "bleu":
                name += " (tokenize {})".format(report.get("bleu_tokenize", "13a"))
            cells = []
            for k, entry in enumerate(corpus):
                value = entry["values"][m][stat] if stat else entry["values"][m]
                cell = '<td class="num" data-metric="{}" data-system="{}" data-value="{}">{:.2f}'.format(
                    esc(data_key), k, _num(value), value)
                if k > 0 and stat is None and m in entry["p_values"]:
                    p = entry["p_values"][m]
                    cell += ' <span class="p{}" data-p="{}">p = {:.4f}</span>'.format(
                        " sig" if p < 0.05 else "", _num(p), p)
                cells.append(cell + "</td>")
            rows.append("<tr><th>{}</th>{}</tr>".format(esc(name), "".join(cells)))
    return '<table id="corpus-table"><thead>{}</thead><tbody>{}</tbody></table>'.format(head, "".join(rows))


def render_sentence_table(report, page_rows=PAGE_ROWS):
    """The sentence table. Its first ``page_rows`` rows (default ``PAGE_ROWS``) are the table's
    body; the others wait in a ``<template>``, which the browser parses but does not lay out,
    and the page's script shows a page of rows at a time (sorting and filtering see every row)."""
    systems, columns = report["systems"], report["columns"]
    head = ['<th data-key="id" data-type="num">#</th>', '<th data-key="source" data-type="text">source</th>',
            '<th data-key="refs" data-type="text">reference{}</th>'.format("s" if report["n_refs"] > 1 else "")]
    for k, s in enumerate(systems):
        head.append('<th data-key="s{}-out" data-type="text" class="sys">{}</th>'.format(k, esc(s["name"])))
        for c in columns:
            head.append('<th data-key="s{}-{}" data-type="num" class="num">{}</th>'.format(k, c, COLUMN_NAMES[c]))
    rows = []
    for sent, source_units in zip(report["sentences"], report["source_lengths"]):
        cells = ['<td class="num" data-v="{0}">{0}</td>'.format(sent["id"]),
                 '<td class="src" data-v="{0}">{0}</td>'.format(esc(sent["source"])),
                 '<td class="refs" data-v="{}">{}</td>'.format(
                     esc(sent["refs"][0]), "".join('<div class="ref">{}</div>'.format(esc(r)) for r in sent["refs"]))]
        for output in sent["outputs"]:
            cells.append(render_output_cell(output, GATE_LABEL, runaway_limit(source_units)))
            for c in columns:
                value = output["scores"][c]
                cells.append('<td class="num" data-v="{}">{:.2f}</td>'.format(_num(value), value))
        rows.append('<tr data-id="{}">{}</tr>'.format(sent["id"], "".join(cells)))
    more = ('<template id="more-rows">{}</template>'.format("\n".join(rows[page_rows:]))
            if len(rows) > page_rows else "")
    return ('<table id="sentence-table" data-page-rows="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>'
            '{}'.format(page_rows, "".join(head), "\n".join(rows[:page_rows]), more))


def render_histograms(report):
    systems, colours = report["systems"], SERIES_COLOURS  # a series keeps its colour in both plots
    lengths = [("source", colours[0], report["source_lengths"]), ("reference 1", colours[1], report["ref_lengths"])]
    ratios = [("reference 1", colours[1],
               [r / s if s else 0.0 for r, s in zip(report["ref_lengths"], report["source_lengths"])])]
    for k, s in enumerate(systems):
        colour = colours[2 + k % (len(colours) - 2)]
        lengths.append((s["name"], colour, [sum(1 for _, c in o["outputs"][k]["segments"] if c is not None)
                                            for o in report["sentences"]]))
        ratios.append((s["name"], colour, [o["outputs"][k]["scores"]["len_ratio"] for o in report["sentences"]]))
    unit = "characters" if report["rouge_chars"] else "tokens"
    return (histogram_svg("length ({})".format(unit), lengths, integer=True)
            + histogram_svg("compression ratio (output {0} / source {0})".format(unit), ratios, integer=False))


def render_page(report, page_rows=PAGE_ROWS):
    """The whole page. A test set longer than ``page_rows`` (default ``PAGE_ROWS``) is shown a page
    of rows at a time, with previous/next buttons; sorting and filtering work on every sentence."""
    n, k = len(report["sentences"]), len(report["systems"])
    classes = CROSS_LINGUAL_CLASSES if report.get("view") == "cross-lingual" else TOKEN_CLASSES
    legend = "".join('<span class="tok {0}">{0}</span> {1} '.format(c, esc(TOKEN_LEGEND[c].split(": ")[-1]))
                     for c in classes)
    legend += "({} view) ".format(esc(report.get("view", "monolingual")))
    has_log = any(s["is_log"] for s in report["systems"])
    if any(o["gates"] is not None for sent in report["sentences"] for o in sent["outputs"]):
        legend += '<span class="tok gated" style="--g: 0.8" title="{0}">w</span> {0} '.format(esc(GATE_LEGEND))
    hover = ("Hover a token for its class, and for outputs read from a fairseq-generate log its log2 "
             "probability (P- line) and, where the log has G- lines, its gate value.") if has_log else (
             "Hover a token for its class.")
    pager = "" if n <= page_rows else (
        ' <span id="pager"><button id="prev" type="button">\u2039 previous</button> <span id="page-info">rows 1\u2013{} '
        'of {}</span> <button id="next" type="button">next \u203a</button></span>'.format(page_rows, n))
    p_note = ("p: two-sided paired bootstrap against {}, {} resamples, as fairseq-wean-score --compare-to; "
              "bold when p &lt; 0.05.").format(esc(report["systems"][0]["name"]), report["bootstrap_samples"])
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>fairseq-wean report: {} sentences, {} system{}</title>".format(n, k, "s" if k > 1 else ""),
        "<style>", CSS, "</style></head><body>",
        "<h1>fairseq-wean report</h1>",
        '<p class="inputs">{} sentences, {} reference{} per sentence; systems: {}</p>'.format(
            n, report["n_refs"], "s" if report["n_refs"] > 1 else "",
            ", ".join("<b>{}</b> ({})".format(esc(s["name"]), esc(s["path"])) for s in report["systems"])),
        "<h2>Corpus scores</h2>", render_corpus_table(report), '<p class="note">{}</p>'.format(p_note),
        '<h2>Lengths</h2><div class="hists">', render_histograms(report), "</div>",
        '<h2>Sentences</h2><p class="legend">{}</p><p class="note">{} Click a column header to sort.</p>'.format(
            legend, esc(hover)),
        '<p><input id="filter" type="search" placeholder="filter sentences (any text in the row)" size="50"> '
        '<span id="shown">{0} of {0} shown</span>{1}</p>'.format(n, pager),
        render_sentence_table(report, page_rows),
        # the script's only data: the page's own legend texts (no input text is ever put in it)
        "<script>var TOKEN_LEGEND = {};\nvar GATE_LABEL = {};\n".format(
            json.dumps(dict(TOKEN_LEGEND, gated=GATE_LEGEND)).replace("<", "\\u003c"), json.dumps(GATE_LABEL)),
        SCRIPT, "</script></body></html>\n",
    ])


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
#corpus-table td.num { text-align: right; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.p { color: #666; font-size: 85%; } .p.sig { color: #000; font-weight: bold; }
#sentence-table th { position: sticky; top: 0; background: #eee; cursor: pointer; }
#sentence-table th[aria-sort=ascending]::after { content: " \\25B2"; }
#sentence-table th[aria-sort=descending]::after { content: " \\25BC"; }
td.src, td.refs, td.out { max-width: 28em; }
#sentence-table td, #sentence-table th { overflow-wrap: anywhere; }  /* long tokens wrap, not widen */
.ref + .ref { border-top: 1px dotted #ccc; }
.tok { border-radius: 2px; padding: 0 1px; }
.tok.copied { background: #dbe9f6; } .tok.generated { background: #c7ecc7; }
.tok.unk { background: #ffb347; font-weight: bold; } .tok.invented { background: #f7b6b6; }
.tok.deleted { color: #a00; text-decoration: line-through; }
.tok.matched { background: #c7ecc7; } .tok.unmatched { background: #eeeeee; }
.runaway { color: #a00; font-style: italic; white-space: nowrap; }
.deleted-list { color: #777; font-size: 85%; margin-top: 2px; }
.legend .tok { margin-left: 1em; }
.tok[style] { box-shadow: inset 0 -4px rgba(117, 40, 160, var(--g)); }  /* the gate value: --g */
#pager button { margin: 0 0.3em; }
.note { color: #555; font-size: 90%; }
.hists svg { margin-right: 2em; vertical-align: top; }
.h-title { font-weight: bold; font-size: 13px; } .h-axis { font-size: 10px; fill: #333; }
tr[hidden] { display: none; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var table = document.getElementById("sentence-table");
  var tbody = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var filterBox = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var pageRows = parseInt(table.getAttribute("data-page-rows"), 10);
  // every row: the body's, then those waiting in the template (not laid out until shown)
  var allRows = Array.prototype.slice.call(tbody.rows);
  var more = document.getElementById("more-rows");
  if (more) {
    allRows = allRows.concat(Array.prototype.slice.call(more.content.children));
  }
  var view = allRows.slice();  // the rows that pass the filter, in the current order
  var state = {key: null, desc: false, filter: "", page: 0};
  var texts = new Map();  // row -> its lowercased text, computed once

  function pages() { return Math.max(1, Math.ceil(view.length / pageRows)); }

  function render() {
    state.page = Math.min(Math.max(state.page, 0), pages() - 1);
    var start = state.page * pageRows, rows = view.slice(start, start + pageRows);
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(document.adoptNode(r)); });
    while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
    tbody.appendChild(frag);
    shown.textContent = view.length + " of " + allRows.length + " shown";
    var info = document.getElementById("page-info");
    if (info) {
      info.textContent = view.length ? "rows " + (start + 1) + "\u2013" + (start + rows.length) + " of " + view.length
                                     : "no rows";
      document.getElementById("prev").disabled = state.page === 0;
      document.getElementById("next").disabled = state.page >= pages() - 1;
    }
  }

  function sortKey(idx, numeric) {
    return function (r) {
      var v = r.cells[idx].getAttribute("data-v");
      return numeric ? parseFloat(v) : v;
    };
  }

  function sortBy(key, desc) {
    var th = headers.filter(function (h) { return h.getAttribute("data-key") === key; })[0];
    if (!th) { return; }
    var numeric = th.getAttribute("data-type") === "num", get = sortKey(th.cellIndex, numeric);
    var keyed = allRows.map(function (r) { return [get(r), parseInt(r.getAttribute("data-id"), 10), r]; });
    keyed.sort(function (a, b) {
      var c = numeric ? a[0] - b[0] : a[0].localeCompare(b[0]);
      if (desc) { c = -c; }
      return c === 0 ? a[1] - b[1] : c;
    });
    allRows = keyed.map(function (k) { return k[2]; });
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", desc ? "descending" : "ascending");
    state.key = key; state.desc = desc;
    applyFilter(state.filter);
  }

  function rowText(r) {
    var t = texts.get(r);
    if (t === undefined) { t = r.textContent.toLowerCase(); texts.set(r, t); }
    return t;
  }

  function applyFilter(text) {
    var q = text.toLowerCase();
    view = q === "" ? allRows.slice() : allRows.filter(function (r) { return rowText(r).indexOf(q) >= 0; });
    state.filter = text;
  }

  function saveState() {
    var params = new URLSearchParams();
    if (state.key) { params.set("sort", state.key); if (state.desc) { params.set("order", "desc"); } }
    if (state.filter) { params.set("filter", state.filter); }
    if (state.page) { params.set("page", String(state.page + 1)); }
    try { history.replaceState(null, "", "#" + params.toString()); } catch (e) { /* file:// in some browsers */ }
  }

  // a token's title, built when the pointer reaches it: its class and, where the cell has them,
  // its log2 probability and gate (data-logp, data-gate: one value per token, then </s>'s)
  document.addEventListener("mouseover", function (e) {
    var t = e.target;
    if (!t.classList || !t.classList.contains("tok") || t.hasAttribute("title")) { return; }
    var cls = Array.prototype.filter.call(t.classList, function (c) { return c !== "tok"; })[0];
    var parts = [TOKEN_LEGEND[cls] || cls], cell = t.parentNode;
    if (t.tagName === "SPAN" && cell.classList && cell.classList.contains("out")) {
      var index = Array.prototype.indexOf.call(cell.querySelectorAll(":scope > span.tok"), t);
      var p = cell.getAttribute("data-logp"), g = cell.getAttribute("data-gate");
      if (p) { parts.push("log2 p = " + p.split(" ")[index]); }
      if (g) { parts.push(GATE_LABEL + " = " + g.split(" ")[index]); }
    }
    t.setAttribute("title", parts.join(" | "));
  });

  headers.forEach(function (th) {
    th.addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      sortBy(key, state.key === key ? !state.desc : false);
      state.page = 0; render(); saveState();
    });
  });
  filterBox.addEventListener("input", function () {
    applyFilter(filterBox.value); state.page = 0; render(); saveState();
  });
  if (document.getElementById("pager")) {
    document.getElementById("prev").addEventListener("click", function () { state.page -= 1; render(); saveState(); });
    document.getElementById("next").addEventListener("click", function () { state.page += 1; render(); saveState(); });
  }

  var params = new URLSearchParams(location.hash.replace(/^#/, ""));
  if (params.get("filter")) { filterBox.value = params.get("filter"); applyFilter(filterBox.value); }
  if (params.get("sort")) { sortBy(params.get("sort"), params.get("order") === "desc"); }
  if (params.get("page")) { state.page = (parseInt(params.get("page"), 10) || 1) - 1; }
  render();
  document.body.setAttribute("data-ready", "1");
})();
"""
