"""``python -m bench.run --device DEVICE``: the benchmark measured in one process, on a GPU (``cuda``)
or, as its stand-in with the same code, on the CPU (``cpu``).

Why in one process: on a GPU a ``fairseq-train`` or ``fairseq-generate`` process spends seconds
importing fairseq and starting CUDA for a fraction of a second of measured work, and a GPU check
has minutes (``scripts/gpu_check.sh``); and the peak GPU memory of a piece of work is
``torch.cuda.max_memory_allocated`` of the process that did it.

What runs is what those commands run. The options are parsed by fairseq's own training parser
(``bench.run``'s model arguments, plus ``--amp`` or ``--fp16``); training is fairseq's ``Trainer``
(``train_step``: its FP16Optimizer or AMPOptimizer, loss scaling and autocast as fairseq-train
has them); decoding is the task's ``SequenceGenerator`` built from fairseq's generation options
(beam 5, every hypothesis ``--gen-len`` tokens) through ``task.inference_step``, as
fairseq-generate runs it. Every time is wall-clock with the device synchronised before and after:

- training: target tokens/s (what fairseq's ``wps`` counts) over ``--updates`` train steps on
  real batches of ``--max-tokens``, after ``--warmup`` steps (cuDNN's plans, the allocator);
- generation: sentences/s over the test split at batch 64, and latency, ms per generated token,
  over ``test1`` one sentence at a time; the time of ``inference_step`` alone, as fairseq-generate's
  timer. fairseq-generate has ``--fp16`` (``model.half()``) but no ``--amp``, and ``--cpu-bf16``
  is a training option, so the ``amp`` and ``cpu-bf16`` rows have no generation figures of their
  own: they decode as the ``fp32`` row;
- peak memory (CUDA only): ``torch.cuda.max_memory_allocated`` of training (weights, gradients,
  optimizer state, activations) and of generation (the trained weights and the beam search, the
  training state freed first), each from a reset of the peak. fairseq's Trainer resets the peak
  after every step for its ``gb_free`` meter; :func:`make_trainer` turns that meter off
  (``trainer.cuda_env = None``, nothing else reads it), so the peak is of the whole training;
- utilisation: the model's matrix-product FLOPs per target token of a training step
  (:mod:`bench.flops`, counted on a CPU copy of the model before it moves: the count is of the
  model's arithmetic, and cuDNN's fused RNN kernels are invisible to torch's counter) times the
  measured tokens/s, as a share of the device's peak matrix-product FLOP/s in that precision
  (float32 with TF32 off, fairseq's default, for ``fp32``; float16 for ``amp`` and ``fp16``;
  bfloat16 for ``cpu-bf16``), measured in the same process.

Imports nothing heavy at module level: ``scripts/gpu_check.sh`` renders its tables
(:func:`tables_markdown`) before anything is installed.
"""
import copy
import math
import os
import time

# fairseq-train flags of each precision; "cpu-bf16" is the plugin's task's CPU bfloat16 autocast
PRECISIONS = {"fp32": [], "amp": ["--amp"], "fp16": ["--fp16"], "cpu-bf16": ["--task", "translation_with_metrics", "--cpu-bf16"]}
# the dtype whose peak a precision's FLOP/s are a share of
PEAK_DTYPE = {"fp32": "float32", "amp": "float16", "fp16": "float16", "cpu-bf16": "bfloat16"}
# the precisions fairseq-generate decodes in; the others decode as fp32 (see the docstring)
GENERATES = ("fp32", "fp16")
ANCHORS = ("lstm", "transformer")  # every figure is also a ratio to these, measured in the same run


def sync(device):
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def reset_peak(device):
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()


def peak_mib(device):
    """Peak allocated MiB since the last :func:`reset_peak`; None on the CPU (no per-piece peak there)."""
    if device != "cuda":
        return None
    import torch

    return torch.cuda.max_memory_allocated() / 2 ** 20


def parse_training(argv):
    """fairseq's training config from a fairseq-train command line (the plugin loaded by --user-dir)."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv])
    return convert_namespace_to_omegaconf(args)


def training_argv(name, data_bin, table, precision, device, dim, max_tokens, dropout, lr, save_dir):
    from bench import run as bench_run

    argv = [data_bin, "--user-dir", bench_run.USER_DIR, *bench_run.model_args(name, table, dim),
            "--dropout", dropout, "--optimizer", "adam", "--lr", lr, "--max-tokens", max_tokens,
            "--seed", 1, "--num-workers", 0, "--save-dir", save_dir, *PRECISIONS[precision]]
    return argv + (["--cpu"] if device == "cpu" else [])


def build(argv):
    """(cfg, task, model, criterion) as fairseq-train builds them: seeds set first, so every
    precision of a model starts from the same weights."""
    import numpy as np
    from fairseq import tasks, utils

    cfg = parse_training(argv)
    np.random.seed(cfg.common.seed)
    utils.set_torch_seed(cfg.common.seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    return cfg, task, model, criterion


def batches(task, split, model, count=None, **kwargs):
    """The first ``count`` batches (CPU tensors) of ``split`` in fairseq's epoch order, seed 1."""
    from fairseq import utils

    task.load_dataset(split)
    itr = task.get_batch_iterator(dataset=task.dataset(split), seed=1, ignore_invalid_inputs=True,
                                  max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
                                  **kwargs).next_epoch_itr(shuffle=split == "train")
    out = []
    for sample in itr:
        out.append(sample)
        if count is not None and len(out) == count:
            break
    return out


class StepLosses:
    """The unrounded loss per target token (base 2, as fairseq logs it) of every ``train_step`` and
    ``valid_step`` of a task: fairseq's logged values are rounded to 3 decimals."""

    def __init__(self, task):
        self.train, self.valid = [], []
        train_step, valid_step = task.train_step, task.valid_step

        def recorded_train_step(sample, *args, **kwargs):
            loss, sample_size, log = train_step(sample, *args, **kwargs)
            self.train.append(float(loss.detach().float()) / max(float(sample_size), 1.0) / math.log(2))
            return loss, sample_size, log

        def recorded_valid_step(sample, *args, **kwargs):
            loss, sample_size, log = valid_step(sample, *args, **kwargs)
            self.valid.append((float(loss.detach().float()), float(sample_size)))
            return loss, sample_size, log

        task.train_step, task.valid_step = recorded_train_step, recorded_valid_step

    def valid_loss(self):
        total = sum(n for _, n in self.valid)
        return sum(loss for loss, _ in self.valid) / total / math.log(2) if total else None


def make_trainer(cfg, task, model, criterion):
    from fairseq.logging import metrics
    from fairseq.trainer import Trainer

    metrics.reset()
    trainer = Trainer(cfg, task, model, criterion)
    trainer.cuda_env = None  # else train_step resets the peak memory after every step (its gb_free meter)
    return trainer


def generation_config(data_bin, gen_len, precision, device, batch_size):
    """fairseq-generate's options for this benchmark, parsed by fairseq's generation parser."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from bench import run as bench_run

    argv = [data_bin, "--user-dir", bench_run.USER_DIR, "--path", "unused.pt", "--beam", 5,
            "--batch-size", batch_size, "--max-len-a", 0, "--max-len-b", gen_len, "--min-len", gen_len,
            "--required-batch-size-multiple", 1, "--num-workers", 0, "--quiet"]
    argv += (["--fp16"] if precision == "fp16" else []) + (["--cpu"] if device == "cpu" else [])
    args = options.parse_args_and_arch(options.get_generation_parser(), [str(a) for a in argv])
    return convert_namespace_to_omegaconf(args)


def generate(task, model, samples, gen_cfg, device):
    """(sentences, generated tokens, seconds) of fairseq-generate's loop over ``samples``."""
    from fairseq import utils

    generator = task.build_generator([model], gen_cfg.generation)
    sentences = tokens = 0
    seconds = 0.0
    for sample in samples:
        sample = utils.move_to_cuda(sample) if device == "cuda" else sample
        sync(device)
        start = time.perf_counter()
        hypos = task.inference_step(generator, [model], sample)
        sync(device)
        seconds += time.perf_counter() - start
        sentences += sample["nsentences"]
        tokens += sum(len(h[0]["tokens"]) for h in hypos)
    return sentences, tokens, seconds


def measure(name, data_bin, table, precision, s, work, flops_per_token):
    """One model in one precision: training, then (fp32, fp16) generation and latency."""
    import gc

    import torch

    from bench import flops

    device = s["device"]
    argv = training_argv(name, data_bin, table, precision, device, s["dim"], s["max_tokens"], 0.1, 5e-4,
                         os.path.join(work, "unused-save-dir"))
    cfg, task, model, criterion = build(argv)
    train = batches(task, "train", model, s["warmup"] + s["updates"], max_tokens=s["max_tokens"])
    if len(train) < s["warmup"] + s["updates"]:
        raise RuntimeError("{} training batches, fewer than --warmup + --updates = {}".format(
            len(train), s["warmup"] + s["updates"]))
    row = {"model": name, "precision": precision}
    if flops_per_token is None and s["flop_batches"]:
        flops_per_token = flops.training_flops_per_token(model, criterion, copy.deepcopy(train[: s["flop_batches"]]))
    row["train_flops_per_token"] = flops_per_token
    reset_peak(device)
    trainer = make_trainer(cfg, task, model, criterion)
    for sample in train[: s["warmup"]]:
        trainer.train_step([sample])
    timed = train[s["warmup"]:]
    sync(device)
    start = time.perf_counter()
    for sample in timed:
        trainer.train_step([sample])
    sync(device)
    seconds = time.perf_counter() - start
    row["train_tok_s"] = sum(int(b["ntokens"]) for b in timed) / seconds
    row["train_sent_s"] = sum(int(b["nsentences"]) for b in timed) / seconds
    row["train_peak_mib"] = peak_mib(device)
    row["train_params"] = sum(p.numel() for p in model.parameters())
    model = trainer.get_model()
    del trainer
    model.zero_grad(set_to_none=True)
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    if precision in GENERATES:
        model.eval()
        for key, split, batch_size in (("gen", "test", 64), ("latency", "test1", 1)):
            gen_cfg = generation_config(data_bin, s["gen_len"], precision, device, batch_size)
            model.prepare_for_inference_(gen_cfg)
            samples = batches(task, split, model, max_sentences=batch_size)
            reset_peak(device)
            sentences, tokens, secs = generate(task, model, samples, gen_cfg, device)
            if key == "gen":
                row.update(gen_sent_s=sentences / secs, gen_tok_s=tokens / secs, gen_peak_mib=peak_mib(device))
            else:
                row["latency_ms"] = 1000.0 * secs / max(tokens, 1)
    return row


def device_peaks(device, threads, sizes):
    """{dtype: peak matrix-product FLOP/s} of this device: the best of square products of each of
    ``sizes``; on CUDA timed with CUDA events (TF32 off for float32), on the CPU by bench.flops."""
    import torch

    from bench import flops

    if device == "cpu":
        found = flops.peaks(threads, sizes)
        return {"float32": found["float32"], "float16": None, "bfloat16": found["bfloat16"]}
    peaks = {}
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            best = 0.0
            for size in sizes:
                a = torch.randn(size, size, device="cuda", dtype=dtype)
                b = torch.randn(size, size, device="cuda", dtype=dtype)
                torch.mm(a, b)
                for _ in range(5):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    torch.mm(a, b)
                    end.record()
                    end.synchronize()
                    best = max(best, 2.0 * size ** 3 / (start.elapsed_time(end) / 1000.0))
                del a, b
            peaks[str(dtype)[6:]] = best
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.cuda.empty_cache()
    return peaks


def write_json(path, data):
    """``path``'s whole JSON through a temporary file renamed over it (bench.gpu_check.write_file):
    a planted symbolic link or named pipe there (or at a ``.tmp`` beside it) is replaced, never
    written through."""
    from bench.gpu_check import write_json as write

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write(path, data)


def write_results(path, data):
    """``--json`` (default WORKDIR/results.json) as a whole, through :func:`fairseq_wean.textio.atomic_output`:
    a folder, pipe or device there is one line (checked before any work by bench.run_checks too)."""
    import json

    from fairseq_wean.textio import atomic_output

    with atomic_output(path, (), "--json") as f:
        json.dump(data, f, indent=1, default=str)


def run(cfg, models, argv):
    """``bench.run --device``'s main: every (precision, vocabulary, model), the anchors first,
    the JSON (``--json``) rewritten after each, so that a run stopped early keeps what it measured."""
    import shlex
    import traceback

    import torch

    from bench import run as bench_run
    from bench import synthetic
    from fairseq_wean.textio import makedirs_in_folder, open_log

    device = cfg.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("python -m bench.run: error: --device cuda: torch sees no CUDA device")
    if device == "cpu":
        torch.set_num_threads(cfg.threads)
    import warnings

    warnings.filterwarnings("ignore")  # fairseq's and hydra's deprecation warnings, some once per step
    models = [m for m in ANCHORS if m in models] + [m for m in models if m not in ANCHORS]
    vocabs = [int(v) for v in str(cfg.vocabs).split(",")]
    precisions = cfg.precisions.split(",")
    s = {"device": device, "dim": cfg.dim, "max_tokens": cfg.max_tokens, "updates": cfg.updates,
         "warmup": cfg.warmup, "gen_len": cfg.gen_len, "flop_batches": cfg.flop_batches, "n_train": cfg.n_train,
         "n_test": cfg.n_test, "n_latency": cfg.n_latency, "vocabs": vocabs, "precisions": precisions, "models": models}
    out = {"device": device, "complete": False, "settings": s,
           "command": " ".join(shlex.quote(a) for a in ["python", "-m", "bench.run"] + list(argv)),
           "peaks": {}, "rows": [], "errors": []}
    json_path = cfg.json or os.path.join(cfg.workdir, "results.json")
    sizes = (4096, 8192) if device == "cuda" else (128, 256)
    if cfg.flop_batches:
        out["peaks"] = device_peaks(device, cfg.threads, sizes)
    makedirs_in_folder(cfg.workdir, cfg.workdir, "--workdir")  # where WORKDIR/results.json goes
    write_results(json_path, out)
    counted = {}  # (vocab, model): FLOPs per target token

    def log(msg):
        print("{} {}".format(time.strftime("%H:%M:%S"), msg), flush=True)

    for precision in precisions:
        for vocab in vocabs:
            # no link inside --workdir; the data log appended to across runs, only a regular file of its own
            work = makedirs_in_folder(os.path.join(cfg.workdir, "v%d" % vocab), cfg.workdir, "--workdir folder")
            with open_log(os.path.join(work, "data.log"), append=True, folder=cfg.workdir, what="--workdir file") as data_log:
                data_bin = synthetic.make(work, vocab, cfg.n_train, cfg.n_test, cfg.n_latency, bench_run.BIN, log=data_log)
                table = synthetic.align_table(work, bench_run.BIN, log=data_log) if "core_copy" in models else None
            for name in models:
                log("[{} v{} {}] {}".format(device, vocab, precision, name))
                try:
                    row = measure(name, data_bin, table, precision, s, work, counted.get((vocab, name)))
                except Exception as exc:  # noqa: BLE001  (one model's failure is a result; the others still run)
                    traceback.print_exc()
                    out["errors"].append({"vocab": vocab, "precision": precision, "model": name,
                                          "error": "{}: {}".format(type(exc).__name__, exc)[:500]})
                    write_results(json_path, out)
                    if device == "cuda":
                        torch.cuda.empty_cache()
                    continue
                counted[(vocab, name)] = row["train_flops_per_token"]
                row["vocab"] = vocab
                peak = out["peaks"].get(PEAK_DTYPE[precision])
                if row["train_flops_per_token"] and peak:
                    row["train_flop_s"] = row["train_flops_per_token"] * row["train_tok_s"]
                    row["peak_share"] = row["train_flop_s"] / peak
                out["rows"].append(row)
                write_results(json_path, out)
                log("  {:.0f} tok/s train{}{}".format(row["train_tok_s"],
                    ", {:.1f} sent/s generate, {:.2f} ms/token".format(row["gen_sent_s"], row["latency_ms"])
                    if "gen_sent_s" in row else "",
                    ", peak {:.0f} MiB".format(row["train_peak_mib"]) if row["train_peak_mib"] else ""))
    out["complete"] = True
    write_results(json_path, out)
    section = tables_markdown(out)
    print(section)
    if cfg.out:
        bench_run.write_section(cfg.out, "<!-- bench-device:begin -->\n" + section + "\n<!-- bench-device:end -->",
                                "<!-- bench-device:begin -->", "<!-- bench-device:end -->")
    log("wrote {}{}".format(json_path, " and " + cfg.out if cfg.out else ""))
    return 1 if out["errors"] else 0


# ------------------------------------------------------------------------------ reporting (stdlib only)
COLUMNS = [  # key, header, format, higher is better
    ("train_tok_s", "train tok/s", "{:.0f}", True),
    ("gen_sent_s", "generate sent/s (beam 5, batch 64)", "{:.1f}", True),
    ("latency_ms", "latency ms/token (beam 5, batch 1)", "{:.2f}", False),
    ("train_peak_mib", "train peak MiB", "{:.0f}", False),
    ("gen_peak_mib", "generate peak MiB", "{:.0f}", False),
]


def _cell(row, key, fmt, anchors):
    value = row.get(key)
    if value is None:
        return "n/a"
    ratios = ["{:.2f}x".format(value / a[key]) for a in anchors if a is not None and a.get(key)]
    return fmt.format(value) + (" ({})".format(" / ".join(ratios)) if ratios else "")


def tables_markdown(bench):
    """One table per (vocabulary, precision): every figure with its ratios to lstm / transformer."""
    rows, s = bench.get("rows", []), bench.get("settings", {})
    peaks = bench.get("peaks") or {}
    unit, scale = ("TFLOP/s", 1e12) if bench.get("device") == "cuda" else ("GFLOP/s", 1e9)
    lines = ["- setting: synthetic Zipf data, {} training pairs; 2+2 layers, {} units; --max-tokens {}; "
             "training: {} timed updates after {} warm-up; generation: {} test sentences, every hypothesis "
             "{} tokens; latency: {} sentences one at a time; device {}".format(
                 s.get("n_train"), s.get("dim"), s.get("max_tokens"), s.get("updates"), s.get("warmup"),
                 s.get("n_test"), s.get("gen_len"), s.get("n_latency"), bench.get("device"))]
    if peaks:
        lines.append("- peak matrix product of this device: " + ", ".join(
            "{} {:.1f} {}".format(d, v / scale, unit) for d, v in peaks.items() if v)
            + " (float32 with TF32 off, as fairseq trains)")
    lines.append("- ratios in brackets: to fairseq lstm / transformer in the same run; generation in "
                 "`amp` and `cpu-bf16` rows: n/a (fairseq-generate decodes them as `fp32`)")
    seen = []
    for r in rows:
        if (r["vocab"], r["precision"]) not in seen:
            seen.append((r["vocab"], r["precision"]))
    for vocab, precision in seen:
        group = [r for r in rows if r["vocab"] == vocab and r["precision"] == precision]
        anchors = [next((r for r in group if r["model"] == a), None) for a in ANCHORS]
        head = ["model"] + ["{} (x {}, {})".format(h, " / ".join(ANCHORS), "higher is better" if up else "lower is better")
                            for _, h, _, up in COLUMNS] + ["GFLOPs per 1k target tokens", "training {} (share of the peak)".format(unit)]
        lines += ["", "**Vocabulary {:,} words, {}**".format(vocab, precision), "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in group:
            cells = [r["model"]] + [_cell(r, key, fmt, anchors) for key, _, fmt, _ in COLUMNS]
            cells.append("{:.2f}".format(r["train_flops_per_token"] * 1000 / 1e9) if r.get("train_flops_per_token") else "n/a")
            cells.append("{:.2f} ({:.1%})".format(r["train_flop_s"] / scale, r["peak_share"]) if r.get("peak_share") else "n/a")
            lines.append("| " + " | ".join(cells) + " |")
    for e in bench.get("errors", []):
        lines.append("- **error** {} v{} {}: {}".format(e["model"], e["vocab"], e["precision"], e["error"]))
    return "\n".join(lines)
