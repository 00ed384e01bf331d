"""The memory pre-check: what a run needs, estimated before anything is allocated.

Weights, gradients and AdamW moments come from the exact parameter count
(:func:`ffnlab.sizing.flops.training_memory`, fp32 as this trainer keeps them); activations are
estimated per micro-batch from the tensors each layer keeps for the backward pass (inputs of the
norms and projections, q/k/v, the attention output and probabilities, the FFN hidden units, the
logits). The estimate is a floor, not a promise: a run it accepts may still need more; a run it
refuses cannot fit, and is refused with the numbers instead of failing after minutes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ffnlab.errors import FfnlabError
from ffnlab.sizing.flops import training_memory
from ffnlab.training import runconfig

FP32 = 4


@dataclass(frozen=True)
class RunMemory:
    """Bytes a run needs on its device (``state`` + ``activations``) and in RAM (``batch_index``)."""

    state: int  # weights, gradients, AdamW moments
    activations: int  # kept for backward, one micro-batch of one process
    batch_index: int  # the int64 window offsets of one optimizer step

    @property
    def total(self) -> int:
        return self.state + self.activations + self.batch_index


def vocab_guess(cfg: runconfig.RunConfig) -> int:
    """The vocabulary the tokenizer will have (256 bytes, or the BPE target), before any data work."""
    return 256 if cfg.data.tokenizer == "byte" else cfg.data.bpe_vocab_size


def estimate(cfg: runconfig.RunConfig, vocab_size: int | None = None, world_size: int = 1) -> RunMemory:
    """The memory of ``cfg`` per process (pure arithmetic on Python integers: never overflows)."""
    t = cfg.train
    mc = runconfig.model_config(cfg, vocab_size or vocab_guess(cfg))
    tokens = max(1, t.batch_size // world_size) * t.seq_len
    f = mc.ffn
    ffn_copies = (f.top_k + f.n_shared_experts) if f.is_moe else 1
    ffn_hidden = (3 if mc.gated else 2) * f.d_ff * ffn_copies
    per_layer = 6 * mc.d_model + 3 * mc.d_attn + 2 * mc.d_kv + ffn_hidden + 2 * mc.attn.n_heads * t.seq_len
    logits = 3 * mc.vocab_size + 2 * mc.d_model
    return RunMemory(state=int(training_memory(mc, "fp32").total),
                     activations=FP32 * tokens * (mc.n_layers * per_layer + logits),
                     batch_index=8 * t.batch_size * t.grad_accum)


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


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


def check_fits(cfg: runconfig.RunConfig, device: str, *, vocab_size: int | None = None,
               world_size: int = 1, ram: int | None = None, gpu: int | None = None) -> RunMemory:
    """Refuse ``cfg`` with the numbers if it cannot fit this machine's RAM or its GPU."""
    need = estimate(cfg, vocab_size, world_size)
    ram = ram if ram is not None else ram_bytes()
    gpu = gpu if gpu is not None else device_bytes(device)
    t = cfg.train
    what = (f"{_gib(need.state)} for fp32 weights, gradients and AdamW moments + {_gib(need.activations)} of "
            f"activations for micro-batches of {t.batch_size // world_size} x {t.seq_len} tokens")
    advice = ("; choose a smaller model (model.d_model, model.n_layers, FFN width) or smaller micro-batches "
              "(train.batch_size, train.seq_len; train.grad_accum keeps the tokens per step)")
    if gpu is not None and need.state + need.activations > gpu:
        raise FfnlabError(f"this run needs about {_gib(need.state + need.activations)} on {device} ({what}) "
                          f"but the GPU has {_gib(gpu)}{advice}")
    on_ram = need.batch_index + (0 if gpu is not None else need.state + need.activations)
    if ram is not None and on_ram > ram:
        if gpu is None:
            what += f" + {_gib(need.batch_index)} of batch offsets"
        else:
            what = f"{_gib(need.batch_index)} of batch offsets for train.batch_size x train.grad_accum windows"
        raise FfnlabError(f"this run needs about {_gib(on_ram)} of RAM ({what}) but this machine has "
                          f"{_gib(ram)}{advice}")
    return need


def check_splits(n_train: int, n_val: int, seq_len: int) -> None:
    """Refuse a corpus too short for this run's windows before the run folder is written."""
    for split, n, need in (("training", n_train, seq_len + 2), ("validation", n_val, seq_len + 1)):
        if n < need:
            raise FfnlabError(f"the corpus's {split} split has {n:,} tokens, too few for windows of train.seq_len="
                              f"{seq_len} tokens (needs at least {need:,}); use a shorter train.seq_len or more text")
