"""Where the time goes: torch.profiler over training steps and one beam-search batch per model.

    python -m bench.profile                       # 50k vocabulary, every model
    python -m bench.profile --vocab 8000 --models lstm,wean_lstm

Uses the benchmark's synthetic data (``bench.run`` makes it; made here if missing) and the same
model arguments as ``bench.run``. For each model it reports, per training step (fairseq's
criterion forward, backward, Adam step; batches of ``--max-tokens``) and per generation batch
(64 sentences, beam 5, 16 tokens each):

- the split of a training step into forward (model + loss), backward and optimizer;
- inclusive forward time of the encoder's and decoder's sub-modules (forward hooks), and of
  ``get_normalized_probs`` (the softmax over the vocabulary, or the model's own mixture);
- the operators with the most self CPU time (torch.profiler), training and generation.

It writes a markdown section between markers into ``--out`` (default docs/results/performance.md),
with the command, the date and the machine; each model's subsection names the vocabulary, so that
the sections of two vocabularies on one page have different headings.
"""
import argparse
import collections
import datetime
import os
import sys
import time

import torch

from bench import run as bench_run
from bench import synthetic
from fairseq_wean.errors import at_least
from fairseq_wean.cli.options import once, quantity  # each option given once (argparse keeps the last)

MARKERS = "<!-- profile-v{}:begin -->", "<!-- profile-v{}:end -->"


class ModuleTimer:
    """Inclusive forward wall time of chosen sub-modules, via forward pre/post hooks."""

    def __init__(self, model):
        self.totals = collections.defaultdict(float)
        self._start = {}
        self.handles = []
        for part in ("encoder", "decoder"):
            for name, module in getattr(model, part).named_children():
                if any(True for _ in module.parameters()) or name.startswith(("attention", "output", "score")):
                    self._hook(module, "{}.{}".format(part, name))
        original = model.get_normalized_probs

        def timed(*args, **kwargs):
            t = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals["get_normalized_probs"] += time.process_time() - t

        model.get_normalized_probs = timed

    def _hook(self, module, label):
        def pre(_m, _inp):
            self._start[label] = time.process_time()

        def post(_m, _inp, _out):
            self.totals[label] += time.process_time() - self._start.pop(label)

        self.handles.append(module.register_forward_pre_hook(pre))
        self.handles.append(module.register_forward_hook(post))

    def reset(self):
        self.totals.clear()


def build(name, data_bin, table, max_tokens):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = [data_bin, "--user-dir", bench_run.USER_DIR, *bench_run.model_args(name, table), "--cpu",
            "--max-tokens", str(max_tokens), "--optimizer", "adam", "--lr", "0.0005", "--dropout", "0.1"]
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(1)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    return task, model, criterion


def batches(task, split, **kwargs):
    task.load_dataset(split)
    itr = task.get_batch_iterator(dataset=task.dataset(split), seed=1, **kwargs)
    return list(itr.next_epoch_itr(shuffle=False))


def top_ops(prof, n):
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    return [(e.key, e.self_cpu_time_total / total, e.count) for e in events[:n]], total / 1e3


def profile_model(name, data_bin, table, cfg):
    from torch.profiler import ProfilerActivity, profile, record_function

    task, model, criterion = build(name, data_bin, table, cfg.max_tokens)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    train = batches(task, "train", max_tokens=cfg.max_tokens)[: cfg.steps + 1]
    timer = ModuleTimer(model)
    phases = collections.defaultdict(float)

    def step(sample, record):
        model.train()
        optimizer.zero_grad()
        t0 = time.process_time()
        with record_function("forward+loss"):
            loss, sample_size, _ = criterion(model, sample)
        t1 = time.process_time()
        with record_function("backward"):
            (loss / sample_size).backward()
        t2 = time.process_time()
        with record_function("optimizer"):
            optimizer.step()
        t3 = time.process_time()
        if record:
            phases["forward+loss"] += t1 - t0
            phases["backward"] += t2 - t1
            phases["optimizer"] += t3 - t2

    step(train[0], record=False)  # warm-up
    timer.reset()
    with profile(activities=[ProfilerActivity.CPU]) as train_prof:
        for sample in train[1:]:
            step(sample, record=True)
    train_modules = dict(timer.totals)
    target_tokens = sum(s["ntokens"] for s in train[1:])

    from fairseq.sequence_generator import SequenceGenerator

    model.eval()
    generator = SequenceGenerator([model], task.target_dictionary, beam_size=5, max_len_a=0,
                                  max_len_b=cfg.gen_len, min_len=cfg.gen_len)
    gen = batches(task, "test", max_sentences=64, required_batch_size_multiple=1)[:2]
    with torch.no_grad():
        generator.generate([model], gen[0])  # warm-up
        timer.reset()
        t = time.process_time()
        with profile(activities=[ProfilerActivity.CPU]) as gen_prof:
            generator.generate([model], gen[1])
        gen_wall = time.process_time() - t
    gen_modules = dict(timer.totals)
    return {
        "steps": len(train) - 1, "target_tokens": target_tokens, "phases": dict(phases),
        "train_modules": train_modules, "train_ops": top_ops(train_prof, cfg.top),
        "gen_wall": gen_wall, "gen_sentences": gen[1]["nsentences"], "gen_modules": gen_modules,
        "gen_ops": top_ops(gen_prof, cfg.top),
        "params": sum(p.numel() for p in model.parameters()),
    }


def markdown(results, cfg):
    begin, end = (m.format(cfg.vocab) for m in MARKERS)
    out = [begin, "### Where the time goes (torch.profiler, vocabulary {:,})".format(cfg.vocab), "",
           "Command: `python -m bench.profile {}`; date: {} UTC; machine: {}. {} training steps of "
           "--max-tokens {} after one warm-up step; one generation batch of 64 sentences, beam 5, {} tokens "
           "each, after one warm-up batch. One thread; phase and module times are process CPU time (the "
           "machine is shared), operator shares are torch.profiler's.".format(
               " ".join(sys.argv[1:]), datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
               bench_run.machine_description(1), cfg.steps, cfg.max_tokens, cfg.gen_len), ""]
    out += ["| model | parameters | train ms/step: forward+loss / backward / optimizer | train ms per 1k target tokens "
            "| generate s per batch of 64 | generate: get_normalized_probs share |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        p = r["phases"]
        total = sum(p.values())
        gen_probs = r["gen_modules"].get("get_normalized_probs", 0.0)
        out.append("| {} | {:,} | {:.0f} / {:.0f} / {:.0f} | {:.0f} | {:.2f} | {:.0%} |".format(
            name, r["params"], *(1000 * p[k] / r["steps"] for k in ("forward+loss", "backward", "optimizer")),
            1e6 * total / r["target_tokens"], r["gen_wall"], gen_probs / r["gen_wall"]))
    out.append("")
    for name, r in results.items():
        out += ["#### {}, vocabulary {:,}".format(name, cfg.vocab), ""]
        fwd = r["phases"]["forward+loss"]
        mods = sorted(r["train_modules"].items(), key=lambda kv: -kv[1])
        out.append("- training forward, inclusive module time as a share of forward+loss: " + ", ".join(
            "{} {:.0%}".format(k, v / fwd) for k, v in mods if v / fwd >= 0.02))
        mods = sorted(r["gen_modules"].items(), key=lambda kv: -kv[1])
        out.append("- generation, inclusive module time as a share of the batch (the rest is beam search "
                   "in SequenceGenerator): " + ", ".join(
                       "{} {:.0%}".format(k, v / r["gen_wall"]) for k, v in mods if v / r["gen_wall"] >= 0.02))
        for label, (ops, total_ms) in (("training", r["train_ops"]), ("generation", r["gen_ops"])):
            out.append("- {} top operators by self CPU time ({:.0f} ms profiled): ".format(label, total_ms) + ", ".join(
                "`{}` {:.0%}".format(k, share) for k, share, _ in ops))
        out.append("")
    out.append(end)
    return "\n".join(out)


def get_parser():
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=at_least(1), default=50000)
    p.add_argument("--models", default=",".join(bench_run.MODELS))
    p.add_argument("--steps", type=at_least(1), default=3, help="profiled training steps (default 3)")
    p.add_argument("--max-tokens", type=bench_run.fairseq_ranged("max_tokens"), default=2048)
    p.add_argument("--gen-len", type=quantity("length"), default=16)
    p.add_argument("--top", type=at_least(1), default=8, help="operators listed per model and phase")
    p.add_argument("--workdir", default=os.path.join(bench_run.REPO, "work_dirs", "bench"))
    p.add_argument("--n-train", type=at_least(1), default=6000)
    p.add_argument("--out", default=os.path.join(bench_run.REPO, "docs", "results", "performance.md"))
    return once(p)


def check_paths(cfg):
    """Refuse, in one line before any work, a --workdir holding a symbolic link, named pipe or device
    (as ``bench.run``: the benchmark writes only its own files there) and an --out that cannot be
    replaced (``textio.check_output``: a folder, a pipe, a device) or is a symbolic link (the new
    section is merged into the old file, which is read only as itself)."""
    from fairseq_wean.errors import FairseqWeanError
    from fairseq_wean.textio import check_output, check_resolvable

    check_resolvable(cfg.workdir, "--workdir")  # as given, before anything is made (WORK/nodir/..)
    planted = bench_run.planted_entry(cfg.workdir)
    if planted:
        raise FairseqWeanError("--workdir {}: {} is a symbolic link, named pipe or device, or a hard link: the "
                               "benchmark writes only its own files there; remove it or use another --workdir".format(cfg.workdir, planted))
    if os.path.islink(cfg.workdir) or (os.path.lexists(cfg.workdir) and not os.path.isdir(cfg.workdir)):
        raise FairseqWeanError("--workdir {} is not a folder (or is a symbolic link): give a folder".format(cfg.workdir))
    if os.path.islink(cfg.out):
        raise FairseqWeanError("--out {} is a symbolic link: the section is merged into the file itself; give "
                               "the file's own path".format(cfg.out))
    os.makedirs(os.path.dirname(os.path.abspath(cfg.out)), exist_ok=True)
    check_output(cfg.out, (), "--out")


def main(argv=None):
    cfg = get_parser().parse_args(argv)
    from bench import run_checks
    from fairseq_wean.errors import FairseqWeanError

    models = [m for m in cfg.models.split(",") if m]
    unknown = [m for m in models if m not in bench_run.MODELS]
    try:
        if unknown or not models:
            raise FairseqWeanError("--models: unknown model(s) {!r} (known: {})".format(
                ",".join(unknown) or cfg.models, ", ".join(bench_run.MODELS)))
        run_checks.check_items("--models", models)
    except FairseqWeanError as exc:
        get_parser().error(str(exc))
    check_paths(cfg)
    torch.set_num_threads(1)
    work = os.path.join(cfg.workdir, "v%d" % cfg.vocab)
    os.makedirs(work, exist_ok=True)
    data_bin = synthetic.make(work, cfg.vocab, cfg.n_train, 128, 8, bench_run.BIN)
    table = synthetic.align_table(work, bench_run.BIN) if "core_copy" in models else None
    results = {}
    for name in models:
        print("profiling", name, flush=True)
        results[name] = profile_model(name, data_bin, table, cfg)
    section = markdown(results, cfg)
    print(section)
    begin, end = (m.format(cfg.vocab) for m in MARKERS)
    from fairseq_wean.textio import update_section  # read only as itself, written atomically

    update_section(cfg.out, section, begin, end, "--out")


if __name__ == "__main__":
    from fairseq_wean.errors import run_cli

    run_cli(main, "python -m bench.profile")
