"""LoRA and QLoRA fine-tuning: the adapters' parameters and the states a step keeps (issue 32).

LoRA (Hu et al. 2021) freezes the base model and trains, beside each adapted linear layer
``W (fan_in -> fan_out)``, two matrices ``A (fan_in -> r)`` and ``B (r -> fan_out)``:
``r * (fan_in + fan_out)`` parameters per adapted matrix. Which layers are adapted is
``targets``: ``attention`` (the q, k, v and output projections; MLA's low-rank projections),
``ffn`` (the FFN's gate, up and down), ``all-linear`` (both, as peft's ``"all-linear"``, which
leaves the LM head out), or a comma-separated list of those. The count equals peft's
``get_nb_trainable_parameters`` for the same model and targets (tests/test_finetune.py builds the
peft model and compares).

States: the frozen base has no gradients and no optimizer state; it is kept in the training
dtype (LoRA) or in 4-bit NF4 with double quantisation (QLoRA, Dettmers et al. 2023; the
embedding, head and norms stay in 16 bits as bitsandbytes leaves them). peft keeps the adapters
in fp32 (its ``autocast_adapter_dtype`` default), so each adapter parameter holds 4 B of weight,
4 B of gradient and the optimizer's fp32 state. Activations are not counted here: backward through
frozen layers keeps a different set of tensors than full training, and that set has not been
measured yet.

Routed MoE experts are stored as 3-D parameters in transformers 5, which peft adapts through
``target_parameters`` with its own shapes; adapting them is refused until that is modelled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.byte_rules import dtype_bytes, shape_free_states
from ffnlab.sizing.memory.quant import weight_bytes
from ffnlab.sizing.shapes import Matrix, matrices

FINETUNE_MODES = ("full", "lora", "qlora")
TARGET_GROUPS = ("attention", "ffn")
ALL_LINEAR = "all-linear"
ADAPTER_BYTES = 4  # peft casts 16-bit adapters to fp32 (autocast_adapter_dtype=True)
FFN_MATRICES = (" gate", " up", " down")  # the FFN's own linear layers (not an embedding projection)


def parse_targets(text: str) -> tuple[str, ...]:
    """``attention``, ``ffn``, ``all-linear``, or a comma-separated list of the first two."""
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if names == (ALL_LINEAR,):
        return TARGET_GROUPS
    bad = [n for n in names if n not in TARGET_GROUPS]
    require(bool(names) and not bad, f"--lora-targets must be {ALL_LINEAR} or a comma-separated list of "
                                     f"{', '.join(TARGET_GROUPS)}, got {text!r}")
    return tuple(dict.fromkeys(names))


def _group(m: Matrix) -> str | None:
    if m.part == "attention":
        return "attention"
    if m.part == "ffn" and m.name.endswith(FFN_MATRICES) and "FFN" in m.name:
        return "ffn"
    if m.part == "expert":
        return "expert"
    return None


def _fuse_qkv(mats: list[Matrix]) -> list[Matrix]:
    """One q|k|v matrix where the family fuses them (GPT-2's c_attn, GPT-NeoX's query_key_value):
    one adapter on it, ``r * (d + q + 2 kv)``, not three. :func:`ffnlab.sizing.shapes.matrices`
    lists each attention's q, k, v and output in that order."""
    out: list[Matrix] = []
    for m in mats:
        if m.part == "attention" and m.name.endswith((" k", " v")):
            out[-1] = replace(out[-1], fan_out=out[-1].fan_out + m.fan_out)  # into the q before it
        else:
            out.append(m)
    return out


@dataclass(frozen=True)
class LoraCount:
    """The adapters' parameters for one model, rank and set of targets."""

    rank: int
    targets: tuple[str, ...]
    trainable: int  # the adapters' parameters (peft's trainable params)
    base: int  # the frozen model's parameters
    adapted_matrices: int  # linear layers given an adapter, over all layers

    @property
    def total(self) -> int:
        """peft's "all params": the base and the adapters."""
        return self.base + self.trainable

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}


def lora_params(cfg: ModelConfig, rank: int, targets: tuple[str, ...] = TARGET_GROUPS) -> LoraCount:
    """The parameters LoRA of rank ``rank`` adds to the ``targets`` of ``cfg``."""
    require(isinstance(rank, int) and rank >= 1, f"--lora-rank must be an integer >= 1, got {rank}")
    mats = matrices(cfg)
    if "ffn" in targets:
        require(not any(m.part == "expert" for m in mats),
                "LoRA on routed MoE experts is not modelled yet (peft adapts their 3-D parameters through "
                "target_parameters): use --lora-targets attention for an MoE model")
    chosen = [m for m in mats if _group(m) in targets]
    if "attention" in targets and cfg.attn.qkv_fused and not cfg.is_mla:
        chosen = _fuse_qkv(chosen)
    trainable = sum(rank * (m.fan_in + m.fan_out) * m.count for m in chosen)
    return LoraCount(rank=rank, targets=targets, trainable=trainable, base=count_params(cfg).total,
                     adapted_matrices=sum(m.count for m in chosen))


@dataclass(frozen=True)
class FinetuneStates:
    """Bytes of what a LoRA/QLoRA step keeps besides its activations (one GPU, no sharding)."""

    mode: str
    base_weights: int
    adapter_weights: int
    adapter_gradients: int
    adapter_optimizer: int
    base_rule: str

    @property
    def total(self) -> int:
        return self.base_weights + self.adapter_weights + self.adapter_gradients + self.adapter_optimizer

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}


def finetune_states(cfg: ModelConfig, lora: LoraCount, *, mode: str = "lora", dtype: str = "bf16",
                    optimizer: str = "adamw") -> FinetuneStates:
    """The frozen base (``dtype`` for LoRA, NF4 for QLoRA) and the fp32 adapters with their
    gradients and ``optimizer`` state."""
    require(mode in ("lora", "qlora"), f"--finetune must be lora or qlora for adapter states, got {mode!r}")
    if mode == "qlora":
        wb = weight_bytes(cfg, "nf4")
        base, rule = wb.total, wb.rule
    else:
        per = dtype_bytes(dtype)
        base, rule = int(lora.base * per), f"{lora.base:,} frozen params x {per:g} B"
    n = lora.trainable
    return FinetuneStates(mode=mode, base_weights=base, adapter_weights=n * ADAPTER_BYTES,
                          adapter_gradients=n * ADAPTER_BYTES,
                          adapter_optimizer=n * shape_free_states(optimizer, ADAPTER_BYTES), base_rule=rule)


__all__ = ["ADAPTER_BYTES", "ALL_LINEAR", "FINETUNE_MODES", "FinetuneStates", "LoraCount", "TARGET_GROUPS",
           "finetune_states", "lora_params", "parse_targets"]
