"""The activation model against what ffnlab's own modules really keep for backward.

``torch.autograd.graph.saved_tensors_hooks`` sees every tensor autograd saves during a forward
pass; counting each storage once and leaving out parameters and buffers gives the bytes held for
the backward pass. ffnlab's estimate (:func:`ffnlab.sizing.memory.activations.activation_memory`, pure
arithmetic) must agree within 5%. What remains is a few scalars (the loss's total weight, the MoE
load-balancing loss terms): the tests print the gap and require it below 0.1%.
"""

from __future__ import annotations

import pytest
import torch
from saved_tensors import saved_bytes, saved_storages

from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.activations import activation_memory
from ffnlab.training.nn import build_model

CASES = {
    "gelu-mha-learned": dict(kind="gelu"),
    "relu-mha": dict(kind="relu"),
    "swiglu-gqa-rope": dict(kind="swiglu", n_kv_heads=2),
    "bilinear-mqa": dict(kind="bilinear", n_kv_heads=1),
    "geglu-moe": dict(kind="geglu", n_experts=4, top_k=2),
    "swiglu-moe-shared": dict(kind="swiglu", n_experts=4, top_k=1, n_shared_experts=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_attention_saved_tensors(name: str) -> None:
    cfg = make_config(64, 2, 4, 160, vocab_size=97, max_positions=48, **CASES[name])
    measured = saved_bytes(cfg, batch=2, seq_len=48)
    est = activation_memory(cfg, seq_len=48, batch=2, dtype="fp32", attention="fused").total
    gap = (measured - est) / measured
    print(f"{name}: measured {measured:,} B, estimated {est:,} B, gap {gap:+.4%}")
    assert abs(gap) < 0.05
    assert abs(gap) < 0.001  # the remainder is a handful of scalars


@pytest.mark.parametrize("kind", ["gelu", "swiglu"])
def test_eager_attention_saved_tensors(kind: str) -> None:
    cfg = make_config(64, 2, 4, 160, kind=kind, vocab_size=97, max_positions=40,
                      n_kv_heads=2 if kind == "swiglu" else None)
    measured = saved_bytes(cfg, batch=2, seq_len=40, math_sdpa=True)
    est = activation_memory(cfg, seq_len=40, batch=2, dtype="fp32", attention="eager").total
    assert abs(measured - est) / measured < 0.001, (measured, est)
    # and the s x s term is what selective recomputation drops
    sel = activation_memory(cfg, seq_len=40, batch=2, dtype="fp32", attention="eager", recompute="selective")
    assert est - sel.total == 2 * 4 * 40 * 40 * 2 * 4  # layers x heads x s x s x batch x 4 B


def test_full_recompute_keeps_layer_inputs() -> None:
    """With torch.utils.checkpoint around each block only the block inputs stay saved."""
    from torch.utils.checkpoint import checkpoint

    cfg = make_config(64, 3, 4, 160, kind="swiglu", vocab_size=97, max_positions=32)
    model = build_model(cfg, seed=0, max_seq_len=32)
    idx, targets = torch.randint(0, 97, (2, 2, 32), generator=torch.Generator().manual_seed(0))
    rope = (model.rope_cos, model.rope_sin)
    with saved_storages(model) as seen:
        x = model.tok_emb(idx)
        for block in model.blocks:
            x, _ = checkpoint(block, x, rope, use_reentrant=True)
        logits = model.lm_head(model.norm_f(x))
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 97), targets.reshape(-1))
    est = activation_memory(cfg, seq_len=32, batch=2, dtype="fp32", recompute="full")
    kept = sum(est.per_layer) + est.head  # what stays saved; recompute_peak is transient
    assert abs(sum(seen.values()) - kept) / kept < 0.001, (sum(seen.values()), kept)
    loss.backward()


def _gpt2_saved_bytes(p: float) -> int:
    """Saved-tensor bytes of one training forward of a small transformers GPT-2 with dropout ``p``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=97, n_positions=32, resid_pdrop=p, embd_pdrop=p,
                     attn_pdrop=p, activation_function="gelu", bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg).train()
    idx = torch.randint(0, 97, (2, 32), generator=torch.Generator().manual_seed(0))
    with saved_storages(model) as seen:
        model(idx, labels=idx)
    return sum(seen.values())


def test_dropout_masks_against_transformers_gpt2() -> None:
    """What dropout adds (GPT-2: embedding, attention probabilities, both residual branches),
    measured as the difference between p = 0.1 and p = 0 in transformers' own GPT-2. On CPU,
    PyTorch's unfused dropout keeps a mask of the input's dtype (fp32 here)."""
    cfg = make_config(64, 2, 4, 256, kind="gelu", vocab_size=97, max_positions=32)
    kw = dict(seq_len=32, batch=2, dtype="fp32", attention="eager", dropout_mask_bytes=4)
    est = (activation_memory(cfg, dropout=True, **kw).total - activation_memory(cfg, **kw).total)
    measured = _gpt2_saved_bytes(0.1) - _gpt2_saved_bytes(0.0)
    assert measured == est, (measured, est)
    fused = activation_memory(cfg, seq_len=32, batch=2, dropout=True).total - activation_memory(
        cfg, seq_len=32, batch=2).total
    assert fused == 2 * 32 * (2 * 2 * 64 + 64)  # fused attention: residual and embedding masks only, 1 B


def test_cuda_dropout_mask_is_one_byte() -> None:
    """The CUDA path of F.dropout is ``torch.native_dropout``, whose mask is bool (1 byte)."""
    _, mask = torch.native_dropout(torch.ones(8, 8), 0.5, True)
    assert mask.dtype == torch.bool and mask.element_size() == 1
