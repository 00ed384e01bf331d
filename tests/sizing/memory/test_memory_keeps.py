"""What each FFN kind keeps for backward (``sizing.memory.FFN_KEEPS``), measured on ffnlab's own
module with ``torch.autograd.graph.saved_tensors_hooks`` (``saved_tensors.saved_storages``, as
test_memory_saved_tensors.py, one FFN at a time so every kind is covered in milliseconds), and
the MoE capacity factor's share of the activations by hand."""

from __future__ import annotations

import pytest
import torch
from saved_tensors import saved_storages as recording_saved

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import make_config
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.sizing.memory.activations import FFN_KEEPS, activation_memory
from ffnlab.training.nn.ffn import DenseFFN

D, D_FF, TOKENS = 16, 40, 12


def saved_storages(module: torch.nn.Module, x: torch.Tensor) -> dict[int, int]:
    """Bytes of each distinct storage autograd saves in one forward pass, parameters left out."""
    with recording_saved(module) as seen:
        y = module(x)
    y.sum().backward()  # what was saved is what backward needs
    return seen


def test_every_kind_has_a_keep_count() -> None:
    assert set(FFN_KEEPS) == set(FFN_KINDS)


@pytest.mark.parametrize("kind", sorted(FFN_KINDS))
@pytest.mark.parametrize("bias", [False, True])
def test_ffn_keeps_is_what_the_module_saves(kind: str, bias: bool) -> None:
    torch.manual_seed(0)
    ffn = DenseFFN(D, D_FF, kind, bias=bias)
    x = torch.randn(TOKENS, D, requires_grad=True)
    saved = saved_storages(ffn, x)
    input_bytes = TOKENS * D * 4  # the FFN's input, kept by its first projection (the norm-output term)
    assert saved.pop(x.untyped_storage().data_ptr()) == input_bytes
    hidden = sum(saved.values())
    assert hidden % (TOKENS * D_FF * 4) == 0, saved
    assert hidden // (TOKENS * D_FF * 4) == FFN_KEEPS[kind]


# -- capacity factor: every per-routed-copy term holds c x top_k copies ------------------------------

def moe():
    return make_config(64, 2, 4, 160, kind="geglu", vocab_size=97, max_positions=48, n_experts=4, top_k=2)


def test_capacity_factor_scales_the_routed_copies_by_hand() -> None:
    # per token and routed copy, fp32: dispatched token and index 64 x 4 + 8 = 264 B; GEGLU hidden
    # 4 x 160 x 4 = 2,560 B; expert output, weighted copy, weight and index 2 x 64 x 4 + 4 + 8 = 524 B;
    # together 3,348 B. Capacity 1.25 with top-2: 0.5 more copies, x 96 tokens (2 x 48) x 2 layers
    base = activation_memory(moe(), seq_len=48, batch=2, dtype="fp32").total
    padded = activation_memory(moe(), seq_len=48, batch=2, dtype="fp32", capacity_factor=1.25).total
    assert padded - base == 3348 * 0.5 * 96 * 2 == 321_408
    same = activation_memory(moe(), seq_len=48, batch=2, dtype="fp32", capacity_factor=1.0).total
    assert same == base  # c = 1: exactly top_k copies, as ffnlab's dropless dispatch holds


def test_capacity_factor_does_not_touch_a_dense_model() -> None:
    dense = make_config(64, 2, 4, 160, kind="geglu", vocab_size=97, max_positions=48)
    assert (activation_memory(dense, seq_len=48, batch=2, capacity_factor=2.0).total
            == activation_memory(dense, seq_len=48, batch=2).total)


@pytest.mark.parametrize("factor", [0, -1.0])
def test_capacity_factor_must_be_positive(factor: float) -> None:
    with pytest.raises(FfnlabError, match="^capacity factor must be > 0$"):
        activation_memory(moe(), seq_len=48, batch=2, capacity_factor=factor)
