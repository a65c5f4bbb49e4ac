"""fairseq patches for data-parallel training on CPU (gloo); applied by :func:`fairseq_wean.compat.apply`.

fairseq (0.12) starts distributed training in three ways, and on a machine without CUDA
two of them die before training:

- ``fairseq-train --cpu --distributed-world-size 2`` spawns one worker per CUDA device and
  asserts "world size is 2 but have 0 available devices";
- under ``torchrun`` it sets ``device_id = rank % torch.cuda.device_count()``: a modulo by zero;
- one process per rank, each told its rank and a rendezvous address
  (``--distributed-init-method tcp://HOST:PORT --distributed-rank R --distributed-no-spawn``),
  works: this is what the launcher ``fairseq-wean-train-cpu-dist``
  (:mod:`fairseq_wean.cli.train_cpu_dist`) does, locally, for N ranks.

And then the default ``--ddp-backend pytorch_ddp`` fails too, because fairseq builds
``DistributedDataParallel(module, device_ids=[args.device_id], output_device=...)``, and
torch only accepts ``device_ids`` for GPU modules ("device_ids and output_device arguments
only work with single-device/multiple-device GPU modules or CPU modules, but got device_ids
[0] ... module parameters {device(type='cpu')}"). For a CPU module torch wants
``device_ids=None``; nothing else differs.

Decision: we patch that one call rather than force ``--ddp-backend legacy_ddp`` on CPU.
``pytorch_ddp`` is the backend GPU users run, and it is the strict one: with
``find_unused_parameters=False`` it fails on the step after any parameter gets no gradient.
Testing our models on CPU under ``pytorch_ddp`` therefore proves, without a GPU, what the
docs/training.md claims for GPUs (``--find-unused-parameters`` is not needed). ``legacy_ddp`` keeps
working unchanged.

The patches (:func:`install`, called from :func:`fairseq_wean.compat.apply`, i.e. whenever
the plugin is imported, with ``--user-dir`` or by the launcher's ranks):

1. ``fairseq.models.distributed_fairseq_model.DistributedDataParallel`` becomes
   :class:`CPUDistributedDataParallel`, which drops ``device_ids``/``output_device`` when
   the module's parameters are all on the CPU and is torch's class otherwise (GPU runs are
   untouched).
2. Under ``torchrun`` without CUDA, ``device_id`` becomes 0 instead of ``rank % 0`` (so
   ``torchrun --nproc-per-node 2 $(which fairseq-train) --cpu --distributed-backend gloo
   --distributed-world-size 2 ...`` works too; without ``--distributed-world-size``, which
   defaults to the number of GPUs, fairseq ignores torchrun and each rank trains alone).
3. Only when the environment variable ``FAIRSEQ_WEAN_DUMP_RANK_PARAMS=DIR`` is set (the
   launcher's ``--dump-rank-params DIR``): every time fairseq saves a checkpoint, *every*
   rank (fairseq only saves on rank 0) also writes its parameters to ``DIR/rank{R}.pt``, so
   a test can check that the ranks hold bit-identical weights.
"""
import os

import torch
from torch.nn.parallel import DistributedDataParallel

from fairseq_wean.patching import replace_once, same_code, wrap_once

# Read by the patched save_checkpoint; the launcher sets it for --dump-rank-params.
DUMP_ENV = "FAIRSEQ_WEAN_DUMP_RANK_PARAMS"

# gloo broadcasts bool tensors from torch 2 on (torch 1.13: "RuntimeError: Invalid scalar type")
GLOO_BROADCASTS_BOOL = int(torch.__version__.split(".")[0]) >= 2


class CPUDistributedDataParallel(DistributedDataParallel):
    """torch's ``DistributedDataParallel``, minus the GPU-only arguments for a CPU module.

    fairseq passes ``device_ids=[device_id]`` and ``output_device=device_id`` whatever the
    device; torch requires ``None`` for both when the module lives on the CPU. For any other
    module the arguments are passed on unchanged.
    """

    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        devices = {p.device.type for p in module.parameters()}
        if devices == {"cpu"}:
            device_ids, output_device = None, None
            if not GLOO_BROADCASTS_BOOL:
                # torch < 2's gloo cannot broadcast a bool tensor ("Invalid scalar type"): leave
                # bool buffers (core_copy's U mask) out of DDP's start-up sync; every rank builds
                # them from the same dictionary and files, so they are equal already
                bools = [name for name, b in module.named_buffers() if b.dtype == torch.bool]
                if bools:
                    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(module, bools)
        super().__init__(module, device_ids, output_device, *args, **kwargs)


def _infer_torch_distributed_launch_init_cpu(cfg, _original):
    """fairseq's torchrun set-up; without a GPU, device id 0 instead of ``rank % 0``."""
    if torch.cuda.device_count() > 0:
        return _original(cfg)
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = 0  # no GPU to pick; fairseq would call torch.cuda.set_device for > 0
    cfg.distributed_no_spawn = True


def _save_checkpoint_and_dump_params(cfg, trainer, epoch_itr, val_loss, _original):
    """fairseq's ``save_checkpoint``; then this rank's parameters go to ``$DUMP/rank{R}.pt``."""
    result = _original(cfg, trainer, epoch_itr, val_loss)
    dump_dir = os.environ.get(DUMP_ENV)
    if dump_dir:
        from fairseq_wean import textio

        os.makedirs(dump_dir, exist_ok=True)
        state = {k: v.detach().cpu().clone() for k, v in trainer.get_model().state_dict().items()}
        path = os.path.join(dump_dir, "rank{}.pt".format(trainer.data_parallel_rank))
        # a temporary file of a fresh name beside it, renamed over it: a symbolic link there is replaced,
        # never written through; a pipe, device or folder there is refused in one line
        with textio.atomic_output(path, (), "--dump-rank-params file", mode="wb", folder=dump_dir) as f:
            torch.save({"num_updates": trainer.get_num_updates(), "model": state}, f)
    return result


def install():
    """Apply the patches described in the module docstring (idempotent, no device work)."""
    from fairseq import checkpoint_utils
    from fairseq.distributed import utils as distributed_utils
    from fairseq.models import distributed_fairseq_model

    same_code("compat 4 / distributed (CPU, gloo)", "fairseq's DDP wrapper passes device_ids=[cuda "
              "device] on CPU; torchrun's LOCAL_RANK is taken for a CUDA device")
    replace_once(distributed_fairseq_model, "DistributedDataParallel", CPUDistributedDataParallel)
    wrap_once(distributed_utils, "_infer_torch_distributed_launch_init", _wrap_torch_distributed_launch_init)
    if os.environ.get(DUMP_ENV):
        wrap_once(checkpoint_utils, "save_checkpoint", _wrap_save_checkpoint)
    from fairseq_wean.patching import add_option_check

    add_option_check(spawn_problem)


TORCHRUN_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


def uses_cuda(args):
    """Whether this run may use CUDA devices: torch sees CUDA and neither --cpu nor --tpu is given (fairseq's own
    choice of device). The one home of the decision: :func:`cuda_devices`, and option_rules' precision rows."""
    return torch.cuda.is_available() and not getattr(args, "cpu", False) and not getattr(args, "tpu", False)


def cuda_devices(args):
    """How many CUDA devices this run may use (0 where :func:`uses_cuda` is false)."""
    return torch.cuda.device_count() if uses_cuda(args) else 0


def spawn_problem(args):
    """fairseq-train --distributed-world-size N where fairseq would spawn one worker per CUDA device (no
    --distributed-init-method, not under torchrun or Slurm) and the machine has fewer than N: fairseq asserts
    "world size is N but have M available devices" (a traceback); one line at parse naming the launcher, or
    None."""
    from fairseq_wean.patching import running_command

    world = getattr(args, "distributed_world_size", 1)
    if running_command() != "train" or not isinstance(world, int) or world <= 1 \
            or getattr(args, "distributed_init_method", None) is not None or getattr(args, "tpu", False) \
            or all(key in os.environ for key in TORCHRUN_ENV) \
            or os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST"):
        return None
    devices = cuda_devices(args)
    if world <= devices:
        return None
    return ("--distributed-world-size {} makes fairseq-train start one worker per CUDA device, and this run has {}: "
            "on the CPU run the ranks with fairseq-wean-train-cpu-dist --nproc-per-node {} (it starts one process "
            "per rank), or give --distributed-init-method".format(world, devices if devices else
                                                                  "none" + (" (--cpu)" if getattr(args, "cpu", False)
                                                                            else ""), world))


def _wrap_torch_distributed_launch_init(original):
    def _infer_torch_distributed_launch_init(cfg):
        return _infer_torch_distributed_launch_init_cpu(cfg, original)

    return _infer_torch_distributed_launch_init


def _wrap_save_checkpoint(original):
    # fairseq stores the best validation loss as an attribute of the function it finds under
    # this name (``save_checkpoint.best``); the wrapper takes that role.
    def save_checkpoint(cfg, trainer, epoch_itr, val_loss):
        return _save_checkpoint_and_dump_params(cfg, trainer, epoch_itr, val_loss, original)

    return save_checkpoint
