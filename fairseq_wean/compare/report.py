"""The comparison's results: scores of the test outputs, p-values, tables, the figure.

Scores come from the scoring library (:func:`fairseq_wean.scoring.score`, what
``fairseq-wean-score --json`` prints).
"""
import csv
import os

from fairseq_wean import textio
from fairseq_wean.compare.runner import epochs_trained, fmt_secs, run_seed
from fairseq_wean.compare.systems import BASELINE, METRIC_NAMES, PAPER_EXACT, SYSTEMS, TASKS, WORD_ATTENTION_ABLATION
from preprocess import common

# A system's test outputs: as decoded, and with each <unk> replaced by the most attended source word
# (evaluate.extract_outputs writes both where the model's attention allows it).
DECODINGS = ("plain", "replace_unk")
REPLACE_UNK_NOTE = ("UNK `replace-unk`: each `<unk>` replaced by the source word with the highest attention "
                    "(fairseq's --replace-unk rule).")


def baseline_outputs(args, recipe):
    """Copy-the-source and LEAD-N outputs: {row name: {test name: {"plain": path}}}."""
    data_out = os.path.join(args.out, "data")
    rows = {}
    out_dir = os.path.join(args.out, "runs", "baselines")
    os.makedirs(out_dir, exist_ok=True)
    for kind in TASKS[args.task]["baselines"]:
        if kind == "copy":
            rows["copy source"] = {t: {"plain": os.path.join(data_out, s["orig"])} for t, s in recipe["tests"].items()}
        elif kind == "lead":
            for n in recipe.get("lead_n", [10]):
                name = "LEAD-{}".format(n)
                rows[name] = {}
                for t, s in recipe["tests"].items():
                    path = os.path.join(out_dir, "{}.{}.txt".format(name, t))
                    src = common.read_lines(os.path.join(data_out, s["orig"]))
                    common.write_lines(path, (" ".join(l.split()[:n]) for l in src))
                    rows[name][t] = {"plain": path}
    return rows


def score(sys_path, spec, data_out, compare_to=None, metrics=None):
    """The scores of the output file ``sys_path`` on a recipe's test ``spec`` (the dict of
    ``fairseq-wean-score --json``; ``spec["score_args"]`` are its options such as ``--rouge-chars``)."""
    from fairseq_wean.scoring import score as score_corpus
    from fairseq_wean.scoring.inputs import check_distinct_roles
    from fairseq_wean.scoring.scores import options_from_score_args

    # fairseq-wean-score's rule: no file in two roles (a system scored as its own reference), none twice
    check_distinct_roles({"--sys": sys_path, "--compare-to": compare_to, "--orig": os.path.join(data_out, spec["orig"]),
                          "--refs": [os.path.join(data_out, r) for r in spec["refs"]]})
    return score_corpus(
        # every file here was found in a folder (a run's, a published one, the prepared data), not
        # named by the user: read only as itself (textio.open_in_folder)
        textio.read_lines(sys_path, "system output", folder=os.path.dirname(os.path.abspath(sys_path))),
        sources=textio.read_lines(os.path.join(data_out, spec["orig"]), "sources", folder=data_out),
        references=[textio.read_lines(os.path.join(data_out, r), "references", folder=data_out) for r in spec["refs"]],
        metrics=metrics or spec["metrics"],
        compare_to=textio.read_lines(compare_to, "baseline output", folder=os.path.dirname(os.path.abspath(compare_to)))
        if compare_to else None,
        **options_from_score_args(spec.get("score_args", [])))


def legacy_sari(sys_path, spec, data_out, compare_to=None):
    """SARI with EASSE's legacy=True, the mode behind published TurkCorpus numbers: (score, p
    against ``compare_to`` or None)."""
    legacy = dict(spec, score_args=spec.get("score_args", []) + ["--sari-mode", "legacy"])
    s = score(sys_path, legacy, data_out, compare_to=compare_to, metrics="sari")
    return s["sari"], s["p_values"]["sari"] if compare_to else None


# ---------------------------------------------------------------------------------------------
def ref_variant(evals, variant):
    """The vocabulary of the fairseq lstm a row is compared with: its own, else the word-level one."""
    for v in (variant, "word"):
        if (BASELINE, v) in evals:
            return v
    return None


def reference_run(evals, variant):
    v = ref_variant(evals, variant)
    return evals[(BASELINE, v)] if v else None


def build_rows(args, recipe, evals, baselines):
    """One row per (system, vocabulary, decoding): metrics, p-values vs lstm, sizes, times."""
    data_out = os.path.join(args.out, "data")
    rows = []
    entries = [(name, None, "-", outs, None) for name, outs in baselines.items()]
    for key, ev in evals.items():
        if len(key) > 2:
            continue  # an extra seed: in the seed table (seed_rows), not in the main table
        system, variant = key
        for decoding in DECODINGS:
            if all(decoding in ev["outputs"][t] for t in recipe["tests"]):
                entries.append((system, variant, decoding, {t: ev["outputs"][t] for t in recipe["tests"]}, ev))
    for name, variant, decoding, outs, ev in entries:
        row = {"system": name, "vocab": variant or "-", "decoding": decoding if ev else "-"}
        ref = reference_run(evals, variant) if variant else None
        for test, spec in recipe["tests"].items():
            other = None
            if ref is not None and not (name == BASELINE and variant == ref_variant(evals, variant)):
                other = ref["outputs"][test].get(decoding, ref["outputs"][test]["plain"])
            hyp = outs[test][decoding if ev else "plain"]
            s = score(hyp, spec, data_out, compare_to=other)
            if "sari_legacy" in spec["table"]:
                s["sari_legacy"], p_legacy = legacy_sari(hyp, spec, data_out, compare_to=other)
                if other:
                    s["p_values"]["sari_legacy"] = p_legacy
            for m in spec["metrics"].split(",") + (["sari_legacy"] if "sari_legacy" in spec["table"] else []):
                if m == "stats":
                    if test == recipe["main_test"]:
                        row["avg_len"] = s["stats"]["avg_len"]
                        row["unk_pct"] = s["stats"]["unk_pct"]
                        row["copy_pct"] = s["stats"]["copy_pct"]
                        row["exact_copy_pct"] = s["stats"]["exact_copy_pct"]
                        for k in ("invented_pct", "invented_sent_pct"):  # faithfulness: words in no source/reference
                            if k in s["stats"]:
                                row[k] = s["stats"][k]
                    continue
                row["{}/{}".format(test, m)] = s[m]
                if other:
                    row["{}/{}/p".format(test, m)] = s["p_values"].get(m)
        if ev:
            row.update(params=ev["params"], output_params=ev["output_params"], output_tied=ev.get("output_tied", False),
                       train_seconds=round(ev["train_seconds"], 1), best_epoch=ev["best_epoch"],
                       best_valid=round(ev["best_valid"], 2),
                       epochs_trained=epochs_trained(ev))
        rows.append(row)
    return rows


def columns(args, recipe):
    cols = [("system", "System"), ("vocab", "Vocab"), ("decoding", "UNK")]
    for test, spec in recipe["tests"].items():
        for m in spec["table"]:
            name = METRIC_NAMES[m] + (" ({})".format(bleu_tokenization(spec)) if m == "bleu" else "")
            cols.append(("{}/{}".format(test, m), "{} {}".format(test, name)))
            cols.append(("{}/{}/p".format(test, m), "p"))
    cols += [("avg_len", "len"), ("unk_pct", "UNK %"), ("copy_pct", "copy %"), ("exact_copy_pct", "= src %")]
    if args.task != "translation":  # faithfulness (paraphrasing tasks): output words in no source or reference
        cols += [("invented_pct", "invented %"), ("invented_sent_pct", "sent. with invented %")]
    cols += [("params", "params"), ("output_params", "output-layer params"), ("output_tied", ""),
             ("train_seconds", "train time"), ("best_epoch", "best epoch")]
    if getattr(args, "budget", "short") == "converged":
        cols.append(("epochs_trained", "epochs"))
    return cols


def bleu_tokenization(spec):
    """sacreBLEU's tokenization of a test spec's BLEU (its ``score_args``), as the tables name it:
    ``13a`` (sacreBLEU's default, for detokenized text) or ``tok none`` (multi-bleu's convention for
    tokenized text, which the Multi30k and IWSLT'14 literature reports)."""
    from fairseq_wean.scoring.metrics import BLEU_TOKENIZE
    from fairseq_wean.scoring.scores import options_from_score_args

    tok = options_from_score_args(spec.get("score_args", [])).get("bleu_tokenize", BLEU_TOKENIZE)
    return "13a" if tok == "13a" else "tok " + tok


def fmt_p(value):
    """A p-value as the tables print it."""
    return "<0.001" if value < 0.001 else "{:.3f}".format(value)


def cell(key, value):
    if value is None or value == "":
        return ""
    if key.endswith("/p"):
        return fmt_p(value)
    if key in ("params", "output_params"):
        return "{:,}".format(value)
    if key == "output_tied":
        return "tied" if value else ""
    if key == "train_seconds":
        return fmt_secs(value)
    if isinstance(value, float):
        return "{:.2f}".format(value)
    return str(value).replace("replace_unk", "replace-unk")


def budget_sentence(args, recipe):
    metric = recipe["valid"]["metric"]
    if getattr(args, "budget", "short") == "converged":
        return ("Converged budget: --max-tokens batches; each system trained until its validation {} (beam 5, "
                "computed inside fairseq-train by --task translation_with_metrics) had not improved for {} epochs "
                "(fairseq --patience), at most {} epochs; each system is its checkpoint with the best validation {} "
                "(checkpoint_best.pt); test decoding beam 5.".format(metric, args.patience, args.max_epoch, metric))
    return ("Epoch budget {} for every system; each system is its epoch with the best validation {} "
            "(decoded with beam 5); test decoding beam 5.".format(args.epochs, metric))


def seed_rows(args, recipe, evals):
    """The word-attention ablation (RNNsearch < + word attention < + contextual gates) over seeds: one
    dict per system of WORD_ATTENTION_ABLATION and decoding of DECODINGS that has runs in ``evals``:
    ``system``, ``decoding`` (as in :func:`build_rows`), ``scores`` [(seed, score)] for the seeds it
    has run, ``mean``, ``sd`` (sample standard deviation; None for one seed), ``against`` (the row
    above) and ``p_values`` [(seed, p)]. The rows as decoded come first, then those with ``<unk>`` replaced, where the
    runs have such outputs.

    The score is the main test set's validation metric, and p the paired bootstrap against the row
    above trained with the same seed and scored with the same UNK handling, for each seed both rows
    have, within one vocabulary (the one with the most ablation runs). [] when there is nothing to
    compare: fewer than two ablation runs on that vocabulary (e.g. ``word_attn_gated`` alone, as in
    the summarization comparison, or on words and on pieces, as in the simplification one).
    """
    import statistics

    data_out = os.path.join(args.out, "data")
    test = recipe["main_test"]
    spec = recipe["tests"][test]
    metric = recipe["valid"]["metric"]
    # runs are compared within one vocabulary: the one with the most ablation runs (word, where
    # the seeds are), so word_attn_gated on words and on pieces is not taken for two runs
    by_vocab = {}  # {vocabulary: {(system, seed): eval}}
    for key, ev in evals.items():
        if key[0] in WORD_ATTENTION_ABLATION:
            by_vocab.setdefault(key[1], {})[(key[0], run_seed(args, key))] = ev
    runs = max(by_vocab.values(), key=len, default={})
    if len(runs) < 2:
        return []
    systems = [s for s in WORD_ATTENTION_ABLATION if s in {system for system, _ in runs}]
    seeds = sorted({seed for _, seed in runs})
    rows = []

    def output(system, seed, decoding):
        ev = runs.get((system, seed))
        return ev["outputs"][test].get(decoding) if ev else None

    for decoding in DECODINGS:
        for i, system in enumerate(systems):
            scores, p_values = [], []
            for seed in seeds:
                hyp = output(system, seed, decoding)
                if hyp is None:
                    continue
                other = output(systems[i - 1], seed, decoding) if i else None
                s = score(hyp, spec, data_out, compare_to=other, metrics=metric)
                scores.append((seed, s[metric]))
                if other:
                    p_values.append((seed, s["p_values"][metric]))
            if not scores:
                continue
            values = [v for _, v in scores]
            rows.append({"system": system, "decoding": decoding, "scores": scores,
                         "mean": statistics.mean(values),
                         "sd": statistics.stdev(values) if len(values) > 1 else None,
                         "against": systems[i - 1] if i else None, "p_values": p_values})
    return rows


def seed_table(args, recipe, rows):
    """The ablation table of :func:`seed_rows`: a column per seed that any row has run ("-" where
    a system has not run that seed yet), mean, sd, the row compared against and p per seed."""
    metric = METRIC_NAMES.get(recipe["valid"]["metric"], recipe["valid"]["metric"])
    seeds = sorted({seed for r in rows for seed, _ in r["scores"]})
    lines = ["", "### Word-attention ablation over {} seed{} ({} {})".format(
                 len(seeds), "" if len(seeds) == 1 else "s", recipe["main_test"], metric), "",
             "| system | UNK | " + " | ".join("seed {}".format(s) for s in seeds) + " | mean | sd | against | p per seed |",
             "|---|---|" + "---|" * len(seeds) + "---|---|---|---|"]
    for r in rows:
        by_seed = dict(r["scores"])
        cells = ["{:.2f}".format(by_seed[seed]) if seed in by_seed else "-" for seed in seeds]
        p = ", ".join("{}: {}".format(seed, fmt_p(v)) for seed, v in r["p_values"])
        lines.append("| {} | {} | {} | {:.2f} | {} | {} | {} |".format(
            r["system"], cell("decoding", r["decoding"]), " | ".join(cells), r["mean"],
            "-" if r["sd"] is None else "{:.2f}".format(r["sd"]), r["against"] or "", p))
    lines += ["", "p: paired bootstrap (1000 resamples) of each seed's run against the row above trained with the "
                  "same seed and scored with the same UNK handling (RNNsearch < + word attention < + contextual "
                  "gates), as seed: p; mean and sd (sample standard deviation) over the seeds a row has run; "
                  "\"-\": not run (yet). " + REPLACE_UNK_NOTE]
    return lines


def paper_exact_rows(args, recipe, evals):
    """The paper-exact variants (issue 41; systems.PAPER_EXACT) against today's model and fairseq
    ``lstm``: one dict per variant run (seed --seed) whose base system ran on the same vocabulary,
    per decoding of DECODINGS both have and per metric: ``system``, ``base``, ``vocab``,
    ``decoding``, ``metric``, ``score``, ``base_score``, ``p_base`` and, where ``lstm`` ran
    (:func:`reference_run`), ``lstm_score``, ``p_lstm`` (else None). The metrics are the main test
    set's validation metric, and legacy SARI where the test's table has it (the TurkCorpus
    convention); p is the paired bootstrap of the variant's output against the other's with the
    same UNK handling."""
    data_out = os.path.join(args.out, "data")
    test = recipe["main_test"]
    spec = recipe["tests"][test]
    metrics = [recipe["valid"]["metric"]] + (["sari_legacy"] if "sari_legacy" in spec.get("table", []) else [])

    def scored(hyp, metric, compare_to=None):
        if metric != "sari_legacy":
            return score(hyp, spec, data_out, compare_to=compare_to, metrics=metric)
        value, p = legacy_sari(hyp, spec, data_out, compare_to=compare_to)
        return {"sari_legacy": value, "p_values": {"sari_legacy": p}}

    rows = []
    for key, ev in evals.items():
        if len(key) > 2 or key[0] not in PAPER_EXACT:
            continue
        system, variant = key
        base_ev = evals.get((PAPER_EXACT[system][0], variant))
        if base_ev is None:
            continue
        ref = reference_run(evals, variant)
        for decoding in DECODINGS:
            hyp, base = ev["outputs"][test].get(decoding), base_ev["outputs"][test].get(decoding)
            if hyp is None or base is None:
                continue
            for metric in metrics:
                against_base = scored(hyp, metric, compare_to=base)
                row = {"system": system, "base": PAPER_EXACT[system][0], "vocab": variant, "decoding": decoding,
                       "metric": metric, "score": against_base[metric], "base_score": scored(base, metric)[metric],
                       "p_base": against_base["p_values"][metric], "lstm_score": None, "p_lstm": None}
                if ref is not None:
                    lstm = ref["outputs"][test].get(decoding, ref["outputs"][test]["plain"])
                    row["lstm_score"] = scored(lstm, metric)[metric]
                    row["p_lstm"] = scored(hyp, metric, compare_to=lstm)["p_values"][metric]
                rows.append(row)
    return rows


def paper_exact_table(args, recipe, rows):
    """The table of :func:`paper_exact_rows`."""
    lines = ["", "### Paper-exact variants against today's models and fairseq `lstm` ({})".format(
                 recipe["main_test"]), "",
             "| variant | today's model | vocab | UNK | metric | variant | today's | p | fairseq `lstm` | p |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {} | {} | {} |".format(
            r["system"], r["base"], r["vocab"], cell("decoding", r["decoding"]), METRIC_NAMES.get(r["metric"], r["metric"]),
            r["score"], r["base_score"], fmt_p(r["p_base"]),
            "-" if r["lstm_score"] is None else "{:.2f}".format(r["lstm_score"]),
            "-" if r["p_lstm"] is None else fmt_p(r["p_lstm"])))
    lines += ["", "Each variant is its model with the paper's own forms of the departures on "
                  "(fairseq_wean.compare.systems.PAPER_EXACT: " + "; ".join(
                      "`{}` = `{}` {}".format(name, base, " ".join(flags))
                      for name, (base, flags) in PAPER_EXACT.items() if name in {r["system"] for r in rows}) +
              "), all else equal. p: paired bootstrap (1000 resamples) of the variant's output against today's "
              "model's and against fairseq `lstm`'s (same vocabulary, else words), with the same UNK handling. " +
              REPLACE_UNK_NOTE]
    return lines


def write_tables(args, recipe, rows, meta, seeds=None, paper_exact=None):
    cols = columns(args, recipe)
    with textio.atomic_output(os.path.join(args.out, "results.csv"), (), "results.csv") as f:
        w = csv.writer(f)
        w.writerow([k for k, _ in cols])
        for r in rows:
            w.writerow([r.get(k, "") for k, _ in cols])
    lines = ["# {} comparison{}".format(args.task, " (tiny CI run: numbers are meaningless)" if args.tiny else ""), "",
             "Command: `{}`  ".format(meta["command"]),
             "Date: {}; machine: {}; total wall time {}.".format(meta["date"], meta["machine"],
                                                                fmt_secs(meta["wall_seconds"]))
             + (" ({} of {} systems were reused from an earlier invocation: their train and decoding times are in "
                "results.json, the train time column has theirs)".format(meta["reused"], meta["runs"])
                if meta.get("reused") else ""), "",
             "| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(cell(k, r.get(k)) for k, _ in cols) + " |")
    has_sari = any(h.startswith("SARI") or " SARI" in h for _, h in cols)
    lines += ["", budget_sentence(args, recipe),
              ("SARI: EASSE's corpus_sari (default: lowercase + 13a tokenization); SARI (legacy): EASSE legacy=True, "
               "the variant behind published TurkCorpus numbers. " if has_sari else "") +
              "p: paired bootstrap (1000 resamples, fairseq-wean-score --compare-to) against fairseq `lstm` with the "
              "same vocabulary (else the word-level `lstm`) and the same UNK handling. " + REPLACE_UNK_NOTE +
              " output-layer params: parameters used only to score the vocabulary; \"tied\": the output layer "
              "is the input embedding matrix (counted once, in params)." +
              (" invented %: output words found in neither the source nor any reference (fairseq-wean-score "
               "stats); sent. with invented %: sentences with at least one." if args.task != "translation" else "")]
    if seeds:
        lines += seed_table(args, recipe, seeds)
    if paper_exact:
        lines += paper_exact_table(args, recipe, paper_exact)
    lines += ["", "![validation score per epoch](valid_curve.png)", ""]
    with textio.atomic_output(os.path.join(args.out, "results.md"), (), "results.md") as f:
        f.write("\n".join(lines))


def plot_curves(args, recipe, evals):
    import logging

    # before the import, which logs its own DEBUG lines (fairseq's logging set-up lets them through)
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    metric = recipe["valid"]["metric"]
    # colour = system, line style = vocabulary: 11 simplification runs outrun any colour cycle
    colours = {system: "C{}".format(i) for i, system in enumerate(SYSTEMS)}
    styles = {"spm": "--", "char": ":", "bpe": "-."}
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for key, ev in evals.items():
        if len(key) > 2:
            continue  # extra seeds: the figure shows one run per system
        system, variant = key
        style = dict(marker="o", color=colours.get(system), linestyle=styles.get(variant, "-"),
                     label="{} ({})".format(system, variant))
        xs = [r["epoch"] for r in ev["curve"]]
        axes[0].plot(xs, [r[metric] for r in ev["curve"]], **style)
        loss = ev.get("valid_loss") or {}
        if loss:
            ks = sorted(int(k) for k in loss)
            axes[1].plot(ks, [loss[str(k)] if str(k) in loss else loss[k] for k in ks], **style)
    axes[0].set_title("validation {} per epoch (beam 5)".format(METRIC_NAMES.get(metric, metric)))
    axes[1].set_title("validation loss per epoch (base 2)")
    for ax in axes:
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("{}: training curves (cf. WEAN Figure 2)".format(args.task))
    fig.tight_layout()
    path = os.path.join(args.out, "valid_curve.png")
    with textio.atomic_output(path, (), "valid_curve.png", "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    return path


def write_html_report(args, recipe, evals, baselines):
    """The inspection page of the task's main test set (``fairseq-wean-report``'s page): every
    system's plain output (fairseq ``lstm`` first: p-values are against it) and the baselines,
    side by side. Returns its path."""
    from fairseq_wean import textio
    from fairseq_wean.report import build, render
    from fairseq_wean.scoring.scores import options_from_score_args, parse_metrics

    data_out = os.path.join(args.out, "data")
    test = recipe["main_test"]
    spec = recipe["tests"][test]
    keys = sorted((k for k in evals if len(k) == 2), key=lambda k: k[0] != BASELINE)  # stable: task order
    paths = [evals[k]["outputs"][test]["plain"] for k in keys] + [outs[test]["plain"] for outs in baselines.values()]
    names = ["{} ({})".format(*k) for k in keys] + list(baselines)
    systems, orig, refs = build.load_inputs(paths, names, os.path.join(data_out, spec["orig"]),
                                            [os.path.join(data_out, r) for r in spec["refs"]])
    metrics = [m for m in parse_metrics(spec["metrics"])]
    # the options the tables were scored with (--rouge-chars, --bleu-tokenize, ...)
    options = options_from_score_args(spec.get("score_args", []))
    page = render.render_page(build.build_report(systems, orig, refs, metrics=metrics, **options))
    path = os.path.join(args.out, "report.html")
    with textio.atomic_output(path) as f:
        f.write(page)
    return path
