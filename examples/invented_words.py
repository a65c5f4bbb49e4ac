"""Where do invented words come from? Decode trained systems of a comparison several ways and count them.

    python examples/invented_words.py OUT --runs wean_lstm:spm,transformer:spm,transformer_untied:spm \
        [--decodings beam5,greedy] [--test turkcorpus] [--published docs/results/simplification] \
        [--outputs DRESS-LS=../shared/data/simplification/system_outputs/Dress-Ls.tok.low]

OUT is the ``--out`` of a comparison run with ``--keep-checkpoints`` (``fairseq-wean-compare``):
each run's ``runs/SYSTEM-VOCAB/eval_plan.json`` names its data, test sets, decoding options and
the checkpoint fairseq-train selected by its validation score. For every run and every decoding
this decodes the test set with that one checkpoint (fairseq-generate, in this process) and
prints one markdown row: SARI (legacy and EASSE default), BLEU, and the share of output words
found in neither the source nor any reference ("invented", ``fairseq_wean.scoring.metrics.
invented_words``), of words and of sentences, and the share of those that are no word of the
comparison's training text either (``OUT/data/text/train.*``, lowercased): non-words such as a
rare source word re-spelled piece by piece, as against real words no input has (substitutions).

It answers the decoding question of issue 15 (does beam search make the words up, or does the
model prefer them already step by step?) by decoding the same checkpoint with beam 5 (the
comparison's setting), greedily (beam 1) and with beam 12; ``beam5-known`` decodes with beam 5
that may spell only words of the training text or of the sentence's source (``--task
translation_with_metrics --known-words``, sentencepiece runs only): a decoding choice against
non-words. The vocabulary questions (pieces against words,
pieces as output keys against a separate output matrix: ``transformer`` against
``transformer_untied``) by the choice of runs. With
``--published`` the beam-5 outputs are checked against the published ``TEST.hyp`` of each system,
so the rows are known to come from the checkpoint the tables were made with. ``--outputs
NAME=FILE`` adds rows for outputs made elsewhere (the published DRESS-LS outputs, say), scored
against the same test set and training text.

Runs whose comparison replaces ``<unk>`` (word vocabularies) are decoded as the comparison
decoded them, one sentence per batch with ``--print-alignment`` (fairseq's maximum output length
depends on the longest source of a batch, so the batching changes outputs that reach it), and
their rows score the outputs with ``<unk>`` replaced (decoding ``beam5+replace-unk``, say);
``--published`` then checks both ``TEST.hyp`` and ``TEST.replace-unk.hyp``.

Outputs go to OUT/invented/SYSTEM-VOCAB/DECODING/ (``hyp.txt``, ``hyp.replace-unk.txt`` where
``<unk>`` is replaced, and fairseq-generate's log).
"""
import argparse
import json
import os
import sys

DECODINGS = {
    # name: what replaces the comparison's --beam 5 (every other generation option is kept)
    "beam5": ["--beam", "5"],
    "greedy": ["--beam", "1"],
    "beam12": ["--beam", "12"],
    # beam 5 that spells only words of the training text or of the sentence's source (--known-words)
    "beam5-known": ["--beam", "5"],
}
KNOWN_WORDS_DECODINGS = {"beam5-known"}


def parse_args(argv=None):
    from fairseq_wean.cli import options

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the --out directory of a comparison run with --keep-checkpoints")
    p.add_argument("--runs", required=True, help="SYSTEM:VOCAB,... (as fairseq-wean-compare --runs)")
    p.add_argument("--decodings", default="beam5,greedy", help="comma list from: " + ", ".join(DECODINGS))
    p.add_argument("--test", default="turkcorpus", help="test set, as the tables name it (default: turkcorpus)")
    p.add_argument("--published", default=None,
                   help="docs/results/TASK: check that the beam-5 outputs equal the published TEST.hyp")
    p.add_argument("--outputs", default="",
                   help="NAME=FILE,...: also score these outputs of the test set (one line per sentence, "
                        "e.g. another system's published outputs), without decoding")
    args = options.once(p).parse_args(argv)
    args.run_list = []
    for item in args.runs.split(","):
        system, sep, vocab = item.strip().partition(":")
        if not sep or not system or not vocab:
            p.error("--runs: {!r} is not SYSTEM:VOCAB".format(item))
        args.run_list.append((system, vocab))
    args.decoding_list = [d.strip() for d in args.decodings.split(",") if d.strip()]
    for d in args.decoding_list:
        if d not in DECODINGS:
            p.error("--decodings: unknown {!r}; choose from {}".format(d, ", ".join(DECODINGS)))
    args.output_list = []
    for item in filter(None, (i.strip() for i in args.outputs.split(","))):
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            p.error("--outputs: {!r} is not NAME=FILE".format(item))
        if not os.path.isfile(path):
            p.error("--outputs: {} not found".format(path))
        args.output_list.append((name, path))
    for option, items in (("--runs", ["{}:{}".format(*r) for r in args.run_list]), ("--decodings", args.decoding_list),
                          ("--outputs", [name for name, _ in args.output_list])):
        twice = sorted({i for i in items if items.count(i) > 1})
        if twice:
            p.error("{}: {} given twice: give each once".format(option, ", ".join(twice)))
    if not args.decoding_list:
        p.error("--decodings: no decoding named; choose from {}".format(", ".join(DECODINGS)))
    return args


def with_decoding(gen_args, decoding):
    """The comparison's generation options with --beam replaced by ``decoding``'s."""
    out, i = [], 0
    while i < len(gen_args):
        if gen_args[i] == "--beam":
            i += 2
            continue
        out.append(gen_args[i])
        i += 1
    return DECODINGS[decoding] + out


# the generation options a plan may hold (the comparison's GEN_ARGS), each with a numeric value;
# --beam is replaced by the decoding's
PLAN_GEN_OPTIONS = ("--beam", "--batch-size", "--max-len-a", "--max-len-b")
POST_PROCESS = (None, "sentencepiece", "subword_nmt")


def plan_problem(plan, test):
    """What in ``plan`` (a parsed eval_plan.json) this script cannot use, or None: a missing or malformed
    key, a generation option it does not know (the plan's fairseq-generate argv is not taken as given)."""
    from fairseq_wean.compare.evaluate import PLAN_KEYS

    if not isinstance(plan, dict):
        return "is not a JSON object"
    used = ("data", "data_root", "gen_args", "selected", "tests")
    bad = [k for k in used if not isinstance(plan.get(k), PLAN_KEYS[k])]
    selected = plan.get("selected") if isinstance(plan.get("selected"), dict) else {}
    bad += ["selected." + k for k, kind in (("epoch", int), ("checkpoint", str))
            if not isinstance(selected.get(k), kind)]
    bad += [k for k in ("markers", "replace_unk") if not isinstance(plan.get(k, False), bool)]
    if plan.get("post_process") not in POST_PROCESS:
        bad.append("post_process")
    if bad:
        return "lacks or has a malformed {}".format(", ".join(bad))
    if test not in plan["tests"]:
        return "has no test set {!r} (it has {})".format(test, ", ".join(plan["tests"]))
    spec = plan["tests"][test]
    if not (isinstance(spec, dict) and isinstance(spec.get("subset"), str) and isinstance(spec.get("orig"), str)
            and isinstance(spec.get("refs"), list) and all(isinstance(r, str) for r in spec["refs"])):
        return "lacks or has a malformed tests.{} (subset, orig, refs)".format(test)
    args = plan["gen_args"]
    options = args[0::2]
    if len(args) % 2 or any(o not in PLAN_GEN_OPTIONS for o in options) or len(set(options)) != len(options):
        return "has generation options {} (this script takes {}, each once with a number)".format(
            " ".join(map(str, args)), ", ".join(PLAN_GEN_OPTIONS))
    for value in args[1::2]:
        try:
            float(value)
        except (TypeError, ValueError):
            return "has generation options {} (a value that is not a number: {!r})".format(
                " ".join(map(str, args)), value)
    return None


def inside(out, stored_root, root, path, what, source):
    """``path``, a path the plan ``source`` stores under the folder ``stored_root`` (the comparison's folder,
    or its data folder for a test set's files, when the plan was written), as the same path under ``root``
    (that folder inside the comparison folder ``out`` now: the folder may have moved since). A path that
    leaves its folder (``..``, another folder, a link out of ``out``) is refused in one line: a plan names
    only its own comparison's files."""
    from fairseq_wean.errors import FairseqWeanError

    rel = os.path.relpath(os.path.normpath(os.path.join(stored_root, path)), stored_root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise FairseqWeanError("{} names {} {}, outside {}: refused (a plan names only its comparison's "
                               "files)".format(source, what, path, stored_root))
    local = os.path.join(root, rel)
    real, top = os.path.realpath(local), os.path.realpath(out)
    if os.path.commonpath([real, top]) != top:
        raise FairseqWeanError("{} names {} {}, which leads out of {} through a symbolic link: refused".format(
            source, what, local, out))
    return local


def load_plan(out, system, vocab, test):
    """The run's eval_plan.json, found in the comparison folder ``out``: read as a file of that folder
    (``textio.open_in_folder``: no link, pipe or hard link), checked (one line for a missing key, an
    unknown generation option), and its paths taken as paths inside ``out`` (:func:`inside`)."""
    import json

    from fairseq_wean import textio
    from fairseq_wean.compare.runner import run_name
    from fairseq_wean.errors import FairseqWeanError

    path = os.path.join(out, "runs", run_name((system, vocab)), "eval_plan.json")
    if textio.node_kind(path) is None:
        raise FairseqWeanError("{} not found: {}:{} was not trained in {}".format(path, system, vocab, out))
    with textio.open_in_folder(path, "r", out, "eval_plan.json") as f:
        text = f.read()
    try:
        plan = json.loads(text)
    except ValueError as exc:
        raise FairseqWeanError("{} is not JSON ({})".format(path, str(exc).splitlines()[0])) from None
    problem = plan_problem(plan, test)
    if problem is not None:
        raise FairseqWeanError("{} {}: give the plan fairseq-wean-compare wrote".format(path, problem))
    stored_root = os.path.normpath(plan["data_root"])  # the runner's OUT/data
    stored_out = os.path.dirname(stored_root)
    for key in ("data_root", "data"):
        plan[key] = inside(out, stored_out, out, plan[key], key, path)
    plan["selected"] = dict(plan["selected"], checkpoint=inside(
        out, stored_out, out, plan["selected"]["checkpoint"], "selected.checkpoint", path))
    spec = plan["tests"][test]
    plan["tests"] = dict(plan["tests"], **{test: dict(spec, **{
        "orig": inside(out, stored_root, plan["data_root"], spec["orig"], "tests.{}.orig".format(test), path),
        "refs": [inside(out, stored_root, plan["data_root"], r, "tests.{}.refs".format(test), path)
                 for r in spec["refs"]]})})
    plan["folder"] = out  # the files it names are files found in the comparison folder
    ckpt = plan["selected"]["checkpoint"]
    if textio.node_kind(ckpt) != textio.REGULAR:
        raise FairseqWeanError("{} {}: run the comparison with --keep-checkpoints".format(
            ckpt, "not found" if textio.node_kind(ckpt) is None else "is not a regular file"))
    return plan


def decode(plan, test, decoding, out_dir, known_words=None):
    """Decode ``test`` with the plan's checkpoint as the comparison did: ``{"plain": lines}`` in
    test order (markers mapped back), plus ``"replace_unk"`` where the comparison replaces ``<unk>``.
    ``known_words``: the word file for the decodings in KNOWN_WORDS_DECODINGS."""
    from fairseq_wean.compare.evaluate import extract_outputs, generate

    import fairseq_wean

    spec = plan["tests"][test]
    # The plugin this process imported, not the plan's: the comparison may have run from another
    # checkout, and fairseq refuses a --user-dir whose package name is already imported from elsewhere.
    plugin_dir = os.path.dirname(os.path.abspath(fairseq_wean.__file__))
    gen_args = with_decoding(plan["gen_args"], decoding)
    if decoding in KNOWN_WORDS_DECODINGS:
        gen_args += ["--task", "translation_with_metrics", "--known-words", known_words]
    plan = dict(plan, gen_args=gen_args, user_dir=plugin_dir)
    with_replace_unk = bool(plan.get("replace_unk"))
    log, _secs, _argv = generate(plan, plan["selected"]["checkpoint"], spec["subset"], out_dir, align=with_replace_unk)
    paths = extract_outputs(log, spec["orig"], os.path.join(out_dir, "hyp"), with_replace_unk, plan.get("markers"))
    return {kind: found_lines(plan, path, "output") for kind, path in paths.items()}


def found_lines(plan, path, what):
    """The lines of ``path``, a file found in the comparison folder (:func:`load_plan`): read as a file of
    that folder (``textio``: no link, pipe or hard link), one line when it is missing."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    if textio.node_kind(path) is None:
        raise FairseqWeanError("{} {}: no such file in {}".format(what, path, plan["folder"]))
    return textio.read_lines(path, what, folder=plan["folder"])


def training_words(plan):
    """The lowercased whitespace tokens of the comparison's training text, both sides
    (``DATA_ROOT/text/train.*``, the plain text the recipes binarize)."""
    import glob

    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    paths = sorted(glob.glob(os.path.join(glob.escape(plan["data_root"]), "text", "train.*")))
    if not paths:
        raise FairseqWeanError("no training text {} found".format(os.path.join(plan["data_root"], "text", "train.*")))
    words = set()
    for path in paths:
        for line in textio.iter_lines(path, "training text", folder=plan["folder"]):
            words.update(line.lower().split())
    return words


def score_row(plan, test, hyps, train_words):
    from fairseq_wean.scoring.metrics import invented_words
    from fairseq_wean.scoring.scores import score

    spec = plan["tests"][test]
    src = found_lines(plan, spec["orig"], "test source")
    refs = [found_lines(plan, r, "test reference") for r in spec["refs"]]
    legacy = score(hyps, sources=src, references=refs, metrics="sari,bleu,stats", sari_mode="legacy")
    default = score(hyps, sources=src, references=refs, metrics="sari")
    stats = legacy["stats"]
    # the invented words that are no word of the training text either: the model spelled them
    non_words = [[w for w in invented_words(h, s, [r[i] for r in refs]) if w not in train_words]
                 for i, (h, s) in enumerate(zip(hyps, src))]
    n_words = sum(len(h.split()) for h in hyps)
    return {"sari_legacy": legacy["sari"], "sari": default["sari"], "bleu": legacy["bleu"],
            "invented_pct": stats["invented_pct"], "invented_sent_pct": stats["invented_sent_pct"],
            "copy_pct": stats["copy_pct"], "avg_len": stats["avg_len"],
            "non_word_pct": 100.0 * sum(map(len, non_words)) / max(n_words, 1),
            "non_word_sent_pct": 100.0 * sum(1 for n in non_words if n) / max(len(hyps), 1)}


def format_row(system, vocab, decoding, epoch, r):
    return ("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} "
            "| {:.2f} | {:.2f} |").format(
        system, vocab, decoding, epoch, r["sari_legacy"], r["sari"], r["bleu"], r["invented_pct"],
        r["invented_sent_pct"], r["copy_pct"], r["avg_len"], r["non_word_pct"], r["non_word_sent_pct"])


def main(argv=None):
    args = parse_args(argv)
    from fairseq_wean import textio
    from fairseq_wean.compare.evaluate import read_lines
    from fairseq_wean.compare.runner import published_name, run_name
    from fairseq_wean.errors import FairseqWeanError

    # every checkpoint and every given output is there (and of the test set's length) before
    # anything is decoded
    plans = [load_plan(args.out, system, vocab, args.test) for system, vocab in args.run_list]
    n_test = len(found_lines(plans[0], plans[0]["tests"][args.test]["orig"], "test source"))
    given = []
    for name, path in args.output_list:
        hyps = read_lines(path)
        if len(hyps) != n_test:
            raise FairseqWeanError("--outputs {}: {} has {} lines, the test set {} has {}".format(
                name, path, len(hyps), args.test, n_test))
        given.append((name, hyps))
    for (system, vocab), plan in zip(args.run_list, plans):
        if set(args.decoding_list) & KNOWN_WORDS_DECODINGS and plan.get("post_process") != "sentencepiece":
            raise FairseqWeanError("{}:{}: {} decodes sentencepiece runs only".format(
                system, vocab, ", ".join(sorted(set(args.decoding_list) & KNOWN_WORDS_DECODINGS))))
    # the folders the decodings write in (fairseq-generate makes its --results-path through anything):
    # a link, file or pipe on the way is refused now, before any work
    out_dirs = {(run, decoding): os.path.join(args.out, "invented", run_name(run), decoding)
                for run in args.run_list for decoding in args.decoding_list}
    for out_dir in out_dirs.values():
        parts = os.path.relpath(out_dir, args.out).split(os.sep)
        for depth in range(1, len(parts) + 1):
            step = os.path.join(args.out, *parts[:depth])
            if textio.node_kind(step) not in (None, textio.FOLDER):
                raise FairseqWeanError("OUT folder {} is {}, not a folder: refused (this script makes its own "
                                       "folders there); remove it".format(step, textio.node_kind(step)))
    train_words = training_words(plans[0])
    known_words = None
    if set(args.decoding_list) & KNOWN_WORDS_DECODINGS:
        known_words = os.path.join(args.out, "invented", "known-words.txt")
        # OUT's own files: a symbolic link on the way is refused, one at the file replaced (never written
        # through), a pipe, device or folder there refused in one line
        textio.makedirs_in_folder(os.path.dirname(known_words), args.out, "OUT folder")
        with textio.atomic_output(known_words, (), "known-words.txt", folder=args.out) as f:
            f.write("\n".join(sorted(train_words)) + "\n")
    print("| system | vocab | decoding | epoch | SARI (legacy) | SARI | BLEU | invented % words "
          "| invented % sentences | copy % | len | not a training word % words | not a training word % sentences |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, hyps in given:
        print(format_row(name, "-", "given", "-", score_row(plans[0], args.test, hyps, train_words)), flush=True)
    for (system, vocab), plan in zip(args.run_list, plans):
        for decoding in args.decoding_list:
            out_dir = textio.makedirs_in_folder(out_dirs[(system, vocab), decoding], args.out, "OUT folder")
            outputs = decode(plan, args.test, decoding, out_dir, known_words)
            if args.published and decoding == "beam5":
                for kind, hyps in outputs.items():
                    published = os.path.join(args.published, run_name((system, vocab)),
                                             published_name(args.test, kind))
                    if found_lines({"folder": args.published}, published, "published output") != hyps:
                        raise FairseqWeanError("the beam-5 outputs of {}:{} differ from {}".format(
                            system, vocab, published))
            kind = "replace_unk" if "replace_unk" in outputs else "plain"
            r = score_row(plan, args.test, outputs[kind], train_words)
            label = decoding + ("+replace-unk" if kind == "replace_unk" else "")
            print(format_row(system, vocab, label, plan["selected"]["epoch"], r), flush=True)
    return 0


if __name__ == "__main__":
    from fairseq_wean.errors import FairseqWeanError, error_line

    try:
        sys.exit(main())
    except FairseqWeanError as exc:  # a refused output: one line, no traceback
        sys.stdout.flush()
        sys.exit(error_line("examples/invented_words.py", exc))
