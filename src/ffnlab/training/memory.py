"""The memory pre-check: what a run needs, estimated before anything is allocated.

Built on the sizing model that ``ffnlab size`` and ``fit`` use, so there is one activation model:

* weights, gradients and AdamW's two moments come from the exact parameter count, in fp32 as this
  trainer keeps them (:func:`ffnlab.sizing.memory.optimizers.training_memory`, 16 B per parameter);
* activations are :func:`ffnlab.sizing.memory.activations.activation_memory` for one process's micro-batch,
  fused attention (the trainer calls ``scaled_dot_product_attention``), in bf16 where the trainer
  runs under bf16 autocast (CUDA, ``train.dtype`` auto or bf16) and fp32 otherwise; the CPU figure is
  the one ``tests/sizing/memory/test_memory_saved_tensors.py`` measures with saved-tensor hooks;
* with several processes, DDP's gradient buckets (a second fp32 copy of the gradients).

It leaves out what no term counts (the allocator's caching and fragmentation, autocast's bf16
weight copies, kernel workspaces), so it does not overstate: a run it refuses needs at least the
figure it prints, and ``tests/training/test_memory_precheck.py`` checks that a run whose measured tensors fit
is not refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ffnlab.errors import FfnlabError
from ffnlab.render import gib_or_mib
from ffnlab.sizing.memory.activations import activation_memory
from ffnlab.sizing.memory.byte_rules import INDEX_BYTES
from ffnlab.sizing.memory.optimizers import training_memory
from ffnlab.training import runconfig


@dataclass(frozen=True)
class RunMemory:
    """Bytes a run needs on its device (``state`` + ``activations`` + ``buckets``) and in RAM
    (``batch_index``)."""

    state: int  # weights, gradients, AdamW moments
    activations: int  # kept for backward, one micro-batch of one process
    batch_index: int  # the int64 window offsets of one optimizer step
    buckets: int = 0  # DDP's gradient buckets (several processes)

    @property
    def device(self) -> int:
        return self.state + self.activations + self.buckets

    @property
    def total(self) -> int:
        return self.device + self.batch_index


def vocab_guess(cfg: runconfig.RunConfig) -> int:
    """The vocabulary the tokenizer will have (256 bytes, or the BPE target), before any data work."""
    return 256 if cfg.data.tokenizer == "byte" else cfg.data.bpe_vocab_size


def activation_dtype(cfg: runconfig.RunConfig, device: str) -> str:
    """The dtype the trainer's activations have: bf16 under autocast on CUDA, fp32 otherwise."""
    return runconfig.compute_dtype(cfg.train.dtype, device)


def estimate(cfg: runconfig.RunConfig, vocab_size: int | None = None, world_size: int = 1,
             device: str = "cpu") -> RunMemory:
    """The memory of ``cfg`` per process (pure arithmetic on Python integers: never overflows)."""
    t = cfg.train
    mc = runconfig.model_config(cfg, vocab_size or vocab_guess(cfg))
    micro = max(1, t.batch_size // world_size)
    state = training_memory(mc, "fp32")
    acts = activation_memory(mc, seq_len=t.seq_len, batch=micro, dtype=activation_dtype(cfg, device),
                             attention="fused")
    return RunMemory(state=int(state.total), activations=acts.total,
                     batch_index=INDEX_BYTES * t.batch_size * t.grad_accum,
                     buckets=int(state.grads) if world_size > 1 else 0)


def ram_bytes() -> int | None:
    """Physical memory of this machine (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def device_bytes(device: str) -> int | None:
    """Memory of the CUDA device (None on CPU, where RAM is the limit)."""
    if not device.startswith("cuda"):
        return None
    import torch

    index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
    return int(torch.cuda.get_device_properties(index).total_memory)


def check_fits(cfg: runconfig.RunConfig, device: str, *, vocab_size: int | None = None,
               world_size: int = 1, ram: int | None = None, gpu: int | None = None) -> RunMemory:
    """Refuse ``cfg`` with the numbers if it cannot fit this machine's RAM or its GPU."""
    need = estimate(cfg, vocab_size, world_size, device)
    ram = ram if ram is not None else ram_bytes()
    gpu = gpu if gpu is not None else device_bytes(device)
    t = cfg.train
    what = (f"{gib_or_mib(need.state)} for fp32 weights, gradients and AdamW moments + "
            f"{gib_or_mib(need.activations)} of activations for micro-batches of "
            f"{max(1, t.batch_size // world_size)} x {t.seq_len} tokens"
            + (f" + {gib_or_mib(need.buckets)} of DDP gradient buckets" if need.buckets else ""))
    advice = ("; choose a smaller model (model.d_model, model.n_layers, FFN width) or smaller micro-batches "
              "(train.batch_size, train.seq_len; train.grad_accum keeps the tokens per step)")
    if gpu is not None and need.device > gpu:
        raise FfnlabError(f"this run needs about {gib_or_mib(need.device)} on {device} ({what}) "
                          f"but the GPU has {gib_or_mib(gpu)}{advice}")
    on_ram = need.batch_index + (0 if gpu is not None else need.device)
    if ram is not None and on_ram > ram:
        if gpu is None:
            what += f" + {gib_or_mib(need.batch_index)} of batch offsets"
        else:
            what = f"{gib_or_mib(need.batch_index)} of batch offsets for train.batch_size x train.grad_accum windows"
        raise FfnlabError(f"this run needs about {gib_or_mib(on_ram)} of RAM ({what}) but this machine has "
                          f"{gib_or_mib(ram)}{advice}")
    return need


def check_splits(n_train: int, n_val: int, seq_len: int) -> None:
    """Refuse a corpus too short for this run's windows before the run folder is written."""
    for split, n, need in (("training", n_train, seq_len + 2), ("validation", n_val, seq_len + 1)):
        if n < need:
            raise FfnlabError(f"the corpus's {split} split has {n:,} tokens, too few for windows of train.seq_len="
                              f"{seq_len} tokens (needs at least {need:,}); use a shorter train.seq_len or more text")
