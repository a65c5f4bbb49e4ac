"""What this CPU can do, in one place: native bfloat16, and its vector features in words.

* :func:`native_bf16` decides where bfloat16 runs natively (avx512_bf16 or AMX tiles). On such a
  CPU ``--cpu-bf16`` trains under ``torch.autocast("cpu", torch.bfloat16)`` and the recurrent
  layers run in bfloat16 too; elsewhere ``--cpu-bf16`` falls back to float32 and, under a user's
  own CPU autocast, the recurrent layers run in float32
  (:func:`fairseq_wean.modules.layers.recurrent_dtype`): oneDNN has no bfloat16 LSTM kernel for an
  AVX2-only CPU ("could not create a primitive descriptor for the LSTM forward propagation
  primitive").
* :func:`features` and :func:`describe` name the CPU and its vector features (AVX2, AVX-512,
  avx512_bf16, AMX) beside every timing the project publishes (``bench``, ``scores.json``).
"""
import functools
import os
import platform

# /proc/cpuinfo flag -> the name printed for it, in the order printed
FEATURE_FLAGS = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "avx512_bf16"), ("amx_tile", "AMX"))


@functools.lru_cache(maxsize=None)
def native_bf16():
    """Whether this CPU computes bfloat16 natively (avx512_bf16 or AMX tiles), where CPU autocast
    speeds training up; elsewhere torch emulates bfloat16 (slower than float32) or, for ``nn.LSTM``,
    has no kernel at all."""
    import torch  # here, so that the comparison runner reads cpuinfo without importing torch

    cpu = getattr(torch, "cpu", None)
    checks = [getattr(cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(check() for check in checks if check is not None)


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """(model name, set of flags) of the first processor in ``cpuinfo``; (None, None) where it
    cannot be read (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None, None
    model, flags = None, None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and flags is None:
            flags = set(value.split())
    return model, flags


def features(flags):
    """The vector features of a set of cpuinfo flags, in words: ``"AVX2, AVX-512, avx512_bf16, AMX"``
    or ``"AVX2; no AVX-512, avx512_bf16 or AMX"``."""
    have = [name for flag, name in FEATURE_FLAGS if flag in flags]
    missing = [name for flag, name in FEATURE_FLAGS if flag not in flags]
    lacks = "no " + (missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " or " + missing[-1]) \
        if missing else ""
    return "; ".join(part for part in (", ".join(have), lacks) if part)


def describe(cpuinfo="/proc/cpuinfo"):
    """This CPU in words for a timing: ``"AMD EPYC (AVX2; no AVX-512, avx512_bf16 or AMX), 2 CPU
    core(s)"``."""
    model, flags = cpu_flags(cpuinfo)
    model = model or platform.processor() or platform.machine()
    if flags is not None:
        model = "{} ({})".format(model, features(flags))
    return "{}, {} CPU core(s)".format(model, os.cpu_count())
