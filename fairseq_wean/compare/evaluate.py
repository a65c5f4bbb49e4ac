"""Decode one trained system's test sets, in one process (used by ``fairseq-wean-compare``).

    python -m fairseq_wean.compare.evaluate PLAN.json

PLAN (JSON) names the binarized data, the checkpoint fairseq-train selected by its validation
score (``PLAN["selected"]``: epoch, checkpoint, the validation curve it logged; ``--task
translation_with_metrics``), the test subsets and the fairseq-generate options. This script

1. decodes every test subset with that checkpoint (beam search as given, e.g. ``--beam 5``),
   writing the plain outputs and, for word-level data, the outputs after attention-based UNK
   replacement (fairseq's ``--replace-unk`` semantics, see ``replace_unk``); ``<unk-N>``
   markers are mapped back to source words,
2. counts the model's parameters and output-layer parameters,

and writes everything to PLAN["out"] (JSON). fairseq-generate runs in-process with its
command-line arguments (``fairseq_cli.generate.main``), so the ~4 s import of torch and fairseq
is paid once per system. Logs are read with the project's one generate-log parser
(``fairseq_wean.scoring.generate_log``).
"""
import json
import os
import shlex
import time


def replace_unk(hyp, src, alignment, unk="<unk>"):
    """fairseq's --replace-unk without a dictionary: each <unk> becomes the source word it attends to most.

    ``alignment``: (source word index, target word index) pairs from fairseq-generate
    ``--print-alignment`` (the argmax of the attention, fairseq's ``extract_hard_alignment``).
    The rule is ``fairseq_wean.unk_replacement.replace_unk_words``, the one fairseq-generate and
    fairseq-interactive ``--replace-unk`` use with the plugin loaded.
    """
    from fairseq_wean.unk_replacement import replace_unk_words

    return " ".join(replace_unk_words(hyp.split(), src.split(), alignment, unk))


def write_lines(path, lines):
    from fairseq_wean import textio

    with textio.atomic_output(path) as f:
        for line in lines:
            f.write(line + "\n")


def read_lines(path):
    from fairseq_wean import textio

    return textio.read_lines(path)


def generate(plan, ckpt, subset, out_dir, align=False):
    """fairseq-generate DATA --path CKPT --gen-subset SUBSET ... --results-path OUT_DIR."""
    from fairseq import options
    from fairseq_cli import generate as fairseq_generate

    gen_args = list(plan["gen_args"])
    if align:  # its own --batch-size 1 (below) instead of the plan's: one value per option in the command
        i = gen_args.index("--batch-size") if "--batch-size" in gen_args else None
        if i is not None:
            del gen_args[i:i + 2]
    argv = [plan["data"], "--user-dir", plan["user_dir"], "--path", ckpt, "--gen-subset", subset,
            "--results-path", out_dir] + gen_args
    if plan.get("post_process"):
        argv += ["--post-process", plan["post_process"]]
    if align:
        # One sentence per batch when aligning: no padding, so the attention positions and the
        # source positions fairseq aligns them with agree for every architecture. (fairseq's own
        # LSTM attends in its encoder's right-padded order while extract_hard_alignment reads the
        # left-padded src_tokens; this plugin's models map their attention back to input order.)
        argv += ["--print-alignment", "--batch-size", "1"]
    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(parser, input_args=argv)
    t0 = time.time()
    fairseq_generate.main(args)
    return os.path.join(out_dir, "generate-{}.txt".format(subset)), time.time() - t0, argv


def extract_outputs(log_path, orig_path, out_prefix, with_replace_unk, markers=False):
    """Write OUT_PREFIX.txt (and OUT_PREFIX.replace-unk.txt) in sentence order; returns the paths.

    ``markers``: the data use source-position markers ``<unk-N>`` (preprocess.unk_markers),
    mapped back to the source words here.
    """
    from fairseq_wean.scoring.generate_log import GenerateLog, parse_hard_alignment

    from fairseq_wean.scoring.inputs import check_log_matches_inputs

    src = read_lines(orig_path)
    log = GenerateLog.read(log_path)
    hyps = log.hypotheses(len(src))
    # the log's S- lines are fairseq's view of these sources: else the outputs are paired with other sentences
    check_log_matches_inputs(log, len(src), src, orig_path, None, None, flags=("the sources", "the references"))
    outputs = {"plain": hyps}
    if with_replace_unk:
        aligns = [parse_hard_alignment(a) for a in log.ordered(log.align, len(src), "alignment (A- line)")]
        outputs["replace_unk"] = [replace_unk(h, s, a) for h, s, a in zip(hyps, src, aligns)]
    paths = {}
    for kind, lines in outputs.items():
        if markers:
            from fairseq_wean.data.markers import decode_hypothesis

            # paired by sentence id: a marker past its source's end is the model's own output
            lines = [" ".join(decode_hypothesis(s.split(), h.split(), past_end="unk")) for s, h in zip(src, lines)]
        paths[kind] = out_prefix + (".txt" if kind == "plain" else ".replace-unk.txt")
        write_lines(paths[kind], lines)
    return paths


def count_parameters(ckpt, data):
    """(all parameters, output-layer parameters, output layer tied to an embedding?) of a checkpoint's
    model: see :func:`output_layer_parameters`."""
    from fairseq import checkpoint_utils

    models, _cfg, _task = checkpoint_utils.load_model_ensemble_and_task([ckpt], arg_overrides={"data": data})
    model = models[0]
    return (sum(p.numel() for p in model.parameters()),) + output_layer_parameters(model)


def output_layer_parameters(model):
    """(output-layer parameters, tied to an embedding?) of a model.

    Output layer = parameters used only to map the decoder output to vocabulary scores (WEAN's
    Table 5 accounting): ``decoder.output_layer_num_parameters()`` where the model defines it,
    else fairseq LSTM's ``fc_out`` (+ ``additional_fc``) or the transformer's
    ``output_projection``; a matrix tied to an input embedding counts 0 (it is counted once, as
    an embedding). fairseq's ``LSTMDecoder`` with ``--share-decoder-input-output-embed`` has no
    ``fc_out`` at all: it scores with ``embed_tokens.weight`` directly, so its flag says "tied".
    """
    dec = model.decoder
    if hasattr(dec, "output_layer_num_parameters"):
        return int(dec.output_layer_num_parameters()), False
    embeddings = {id(m.weight) for m in model.modules() if m.__class__.__name__ == "Embedding"}
    out, tied = 0, bool(getattr(dec, "share_input_output_embed", False))
    for name in ("fc_out", "additional_fc", "output_projection"):
        layer = getattr(dec, name, None)
        if layer is None:
            continue
        for p in layer.parameters():
            if id(p) in embeddings:
                tied = True
            else:
                out += p.numel()
    return out, tied


PROG = "python -m fairseq_wean.compare.evaluate"
# the keys of a plan (fairseq_wean.compare.runner writes it) this script reads, and their JSON types
PLAN_KEYS = {"data": str, "data_root": str, "user_dir": str, "gen_dir": str, "out": str, "gen_args": list,
             "valid": dict, "selected": dict, "tests": dict}


def get_parser():
    import argparse

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", metavar="PLAN.json", help="the plan fairseq-wean-compare wrote for one system")
    return parser


def read_plan(path):
    """The plan at ``path``, checked: a JSON object with every key this script reads (one line otherwise)."""
    from fairseq_wean import textio
    from fairseq_wean.errors import FairseqWeanError

    text = "\n".join(textio.read_lines(path, "PLAN.json"))
    try:
        plan = json.loads(text)
    except ValueError as exc:
        raise FairseqWeanError("plan {} is not JSON ({}): give the plan file fairseq-wean-compare "
                               "wrote".format(path, str(exc).splitlines()[0])) from None
    if not isinstance(plan, dict):
        raise FairseqWeanError("plan {} is not a JSON object: give the plan file fairseq-wean-compare "
                               "wrote".format(path))
    bad = [k for k, kind in PLAN_KEYS.items() if not isinstance(plan.get(k), kind)]
    selected = plan.get("selected") if isinstance(plan.get("selected"), dict) else {}
    bad += ["selected." + k for k, kind in (("epoch", int), ("checkpoint", str), ("curve", list))
            if not isinstance(selected.get(k), kind)]
    if not bad and not isinstance(plan["valid"].get("metric"), str):
        bad.append("valid.metric")
    if not bad:
        metric, epoch = plan["valid"]["metric"], selected["epoch"]
        if not any(isinstance(r, dict) and r.get("epoch") == epoch and metric in r for r in selected["curve"]):
            bad.append("selected.curve (no {} for epoch {})".format(metric, epoch))
        bad += ["tests.{}".format(name) for name, spec in plan["tests"].items()
                if not (isinstance(spec, dict) and isinstance(spec.get("subset"), str)
                        and isinstance(spec.get("orig"), str))]
    if bad:
        raise FairseqWeanError("plan {} lacks or has a malformed {}: give the plan file fairseq-wean-compare "
                               "wrote".format(path, ", ".join(bad)))
    return plan


def main(argv=None):
    args = get_parser().parse_args(argv)
    return evaluate(read_plan(args.plan))


def evaluate(plan):
    root = plan["data_root"]
    gen_dir = plan["gen_dir"]
    os.makedirs(gen_dir, exist_ok=True)
    metric = plan["valid"]["metric"]
    selected = plan["selected"]
    curve, best_epoch, best_ckpt = selected["curve"], selected["epoch"], selected["checkpoint"]
    best_valid = next(r[metric] for r in curve if r["epoch"] == best_epoch)
    result = {"curve": curve, "best_epoch": best_epoch, "best_valid": best_valid, "valid_metric": metric,
              "checkpoint": best_ckpt, "outputs": {}, "decode_seconds": {}}
    for name, spec in plan["tests"].items():
        d = os.path.join(gen_dir, "test-" + name)
        log, secs, argv = generate(plan, best_ckpt, spec["subset"], d, align=plan.get("replace_unk", False))
        result["outputs"][name] = extract_outputs(log, os.path.join(root, spec["orig"]), os.path.join(d, "hyp"),
                                                  plan.get("replace_unk", False), plan.get("markers"))
        result["decode_seconds"][name] = round(secs, 1)
        result.setdefault("generate_command", "fairseq-generate " + shlex.join(argv))
        print("EVAL decoded {} ({:.0f}s)".format(name, secs), flush=True)
    result["params"], result["output_params"], result["output_tied"] = count_parameters(best_ckpt, plan["data"])
    from fairseq_wean import textio

    with textio.atomic_output(plan["out"], (), "eval.json") as f:  # replaces a planted link, never writes through
        json.dump(result, f, indent=2)
    return result


def cli_main(argv=None):
    """A ``FairseqWeanError`` (a malformed plan, a refused checkpoint, ...) is one line named
    ``fairseq-wean`` (fairseq runs in this process, with the plugin's errors) and exit status 1."""
    from fairseq_wean import errors

    errors.run_cli(main, errors.PROG, argv)


if __name__ == "__main__":
    cli_main()
