"""torchtitan's op-level selective checkpointing policy as a ``torch.utils.checkpoint`` context.

Built from ``data/op_checkpoint_policies.json`` (ffnlab's copy of the facts, with their source):
the ops on the save list are saved, every second ``mm`` of a checkpointed block recomputed, one
count per block call (torchtitan's ``_apply_op_sac``). On CPU, SDPA runs
``_scaled_dot_product_flash_attention_for_cpu``, which stands in for the CUDA flash kernel.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

CPU_STAND_INS = {
    "aten._scaled_dot_product_flash_attention.default": "aten._scaled_dot_product_flash_attention_for_cpu.default"}


def _op(name: str) -> Any:
    namespace, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


def save_list(policy: dict[str, Any]) -> set[Any]:
    """The policy's ops as torch op overloads (those this PyTorch has), with the CPU flash kernel."""
    out = set()
    for name in [*policy["saved_ops"], *(CPU_STAND_INS[n] for n in policy["saved_ops"] if n in CPU_STAND_INS)]:
        try:
            out.add(_op(name))
        except (AttributeError, ValueError):  # an op this PyTorch build lacks, or flex_attention
            continue
    return out


def context_fn(policy: dict[str, Any]) -> Any:
    """A ``context_fn`` for ``torch.utils.checkpoint.checkpoint`` applying ``policy``."""
    ops, every = save_list(policy), int(policy["mm_recompute_every"])

    def make() -> Any:
        meta: dict[str, int] = defaultdict(int)  # a fresh count per block call

        def rule(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
            key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
            if func == torch.ops.aten.mm.default:
                meta[key] += 1
            save = func in ops and not (func == torch.ops.aten.mm.default and meta[key] % every == 0)
            return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(rule)

    return make
