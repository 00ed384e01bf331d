"""Unsloth's fused kernels as ffnlab prices them (data/fused_kernels.json, sizing/memory/fused_kernels.py).

Oracle: a CPU stand-in of one Llama decoder layer whose autograd Functions save what
research/unsloth_e3162dc.md reads from Unsloth's source at e3162dc (written from that accounting,
not from Unsloth's code), recomputed as Unsloth's offloaded checkpointer recomputes it; torch's
saved-tensor hooks count the distinct storages autograd keeps, which must equal ffnlab's per-token
price of the recomputed layer's saved set. The stand-in's gradients must equal an eager reference
layer's (autograd through plain ops), so the Functions save enough for a correct backward.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from saved_tensors import saved_storages
from torch.autograd import Function

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary
from ffnlab.sizing.memory import fused_kernels as fk
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find

DT = torch.bfloat16
EPS = 1e-5
RANK, SCALE = 4, 2.0


def tiny_llama() -> ModelConfig:
    """Llama 3.1's layout (GQA 4:1, SwiGLU, RMSNorm) at a size a CPU runs in a moment."""
    cfg = find("llama-3.1-8b").config()
    assert cfg is not None
    return replace(cfg, d_model=64, n_layers=2, ffn=replace(cfg.ffn, d_ff=160),
                   attn=replace(cfg.attn, n_heads=4, n_kv_heads=1, head_dim=16))


def lora(x: torch.Tensor, w: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A frozen 16-bit weight (the dequantised 4-bit one) plus a scaled adapter, in x's dtype."""
    return x @ w.t() + (x @ a.to(x.dtype).t()) @ (SCALE * b.to(x.dtype)).t()


def lora_grads(x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, a: torch.Tensor,
               b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Input gradient and the adapter's two weight gradients of :func:`lora` (x, dy flattened)."""
    da = SCALE * (dy @ b.to(dy.dtype)).t() @ x
    db = SCALE * dy.t() @ (x @ a.to(x.dtype).t())
    dx = dy @ w + (dy @ (SCALE * b.to(dy.dtype))) @ a.to(dy.dtype)
    return dx, da.to(a.dtype), db.to(b.dtype)


class Norm(Function):
    """RMSNorm keeping its input, its weight and one fp32 inverse RMS per row."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        r = torch.rsqrt(rows.float().pow(2).mean(-1) + EPS)
        ctx.save_for_backward(x, w, r)
        return ((rows.float() * r[:, None]).to(x.dtype) * w).view_as(x)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, None]:
        x, w, r = ctx.saved_tensors
        n = x.reshape(-1, x.shape[-1]).float() * r[:, None]
        g = dy.reshape(n.shape).float() * w.float()
        dx = r[:, None] * (g - n * (g * n).mean(-1, keepdim=True))
        return dx.to(x.dtype).view_as(x), None


class QKV(Function):
    """The q, k, v projections with adapters, keeping their shared input only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, *p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ws, ab = p[0::3], [(p[i + 1], p[i + 2]) for i in range(0, 9, 3)]
        ctx.ws = ws  # the frozen weights: module attributes, not saved tensors
        ctx.save_for_backward(x, *[t for pair in ab for t in pair])
        return tuple(lora(x, w, a, b) for w, (a, b) in zip(ws, ab, strict=True))  # type: ignore[return-value]

    @staticmethod
    def backward(ctx: Any, *dys: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, *ab = ctx.saved_tensors
        flat = x.reshape(-1, x.shape[-1])
        dx = torch.zeros_like(flat)
        out: list[torch.Tensor | None] = []
        for i, (dy, w) in enumerate(zip(dys, ctx.ws, strict=True)):
            g, da, db = lora_grads(flat, dy.reshape(flat.shape[0], -1), w, ab[2 * i], ab[2 * i + 1])
            dx += g
            out += [None, da, db]
        return (dx.view_as(x), *out)


class Rope(Function):
    """RoPE applied in place; cos and sin (one shared cache) kept as attributes."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        ctx.cos, ctx.sin = cos, sin
        half = q.shape[-1] // 2
        q1, q2 = q[..., :half].clone(), q[..., half:].clone()  # per-row scratch, as the kernel's registers
        c, s = cos[None, :, None, :half], sin[None, :, None, :half]
        q[..., :half] = q1 * c - q2 * s
        q[..., half:] = q2 * c + q1 * s
        ctx.mark_dirty(q)
        return q

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        half = dy.shape[-1] // 2
        c, s = ctx.cos[None, :, None, :half], ctx.sin[None, :, None, :half]
        d1, d2 = dy[..., :half], dy[..., half:]
        return torch.cat((d1 * c + d2 * s, d2 * c - d1 * s), -1), None, None


class Attention(Function):
    """Causal attention over kv heads as given (GQA not expanded), keeping q, k, v, its output and
    an fp32 log-sum-exp per head and row, as flash-attn does."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores, mask = Attention.scores(q, k)
        lse = torch.logsumexp(scores, -1)  # (b, h, s) fp32
        out = (torch.exp(scores - lse[..., None]) @ Attention.expand(v, q).float()).to(q.dtype).transpose(1, 2)
        out = out.contiguous()
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def expand(kv: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return kv.transpose(1, 2).repeat_interleave(q.shape[2] // kv.shape[2], dim=1)

    @staticmethod
    def scores(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = q.shape[1]
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        scores = q.transpose(1, 2).float() @ Attention.expand(k, q).float().transpose(-1, -2) / math.sqrt(q.shape[-1])
        return scores.masked_fill(mask, float("-inf")), mask

    @staticmethod
    def backward(ctx: Any, do: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v, out, lse = ctx.saved_tensors
        scores, _ = Attention.scores(q, k)
        p = torch.exp(scores - lse[..., None])
        dof = do.transpose(1, 2).float()
        dv = p.transpose(-1, -2) @ dof
        dp = dof @ Attention.expand(v, q).float().transpose(-1, -2)
        ds = p * (dp - (dof * out.transpose(1, 2).float()).sum(-1, keepdim=True)) / math.sqrt(q.shape[-1])
        dq = ds @ Attention.expand(k, q).float()
        dk = ds.transpose(-1, -2) @ q.transpose(1, 2).float()
        group = q.shape[2] // k.shape[2]

        def fold(t: torch.Tensor) -> torch.Tensor:  # (b, h, s, hd) -> (b, s, h_kv, hd), GQA groups summed
            b, h, s, hd = t.shape
            return t.view(b, h // group, group, s, hd).sum(2).transpose(1, 2)

        return dq.transpose(1, 2).to(q.dtype), fold(dk).to(k.dtype), fold(dv).to(v.dtype)


class OProj(Function):
    """The output projection with its adapter, keeping its input."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.w = w
        ctx.save_for_backward(a, b, x)
        return lora(x, w, a, b)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor, torch.Tensor]:
        a, b, x = ctx.saved_tensors
        flat = x.reshape(-1, x.shape[-1])
        dx, da, db = lora_grads(flat, dy.reshape(flat.shape[0], -1), ctx.w, a, b)
        return dx.view_as(x), None, da, db


class MLP(Function):
    """SwiGLU with adapters on gate, up and down, keeping its input, e = gate(x) and g = up(x)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, *p: torch.Tensor) -> torch.Tensor:
        (gw, ga, gb), (uw, ua, ub), (dw, da, db) = p[0:3], p[3:6], p[6:9]
        e, g = lora(x, gw, ga, gb), lora(x, uw, ua, ub)
        h = F.silu(e.float()).to(x.dtype) * g  # made here, not kept
        ctx.ws = (gw, uw, dw)
        ctx.save_for_backward(ga, gb, ua, ub, da, db, x, e, g)
        return lora(h, dw, da, db)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        ga, gb, ua, ub, da_, db_, x, e, g = ctx.saved_tensors
        gw, uw, dw = ctx.ws
        flat, dyf = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
        ef, gf = e.reshape(-1, e.shape[-1]).float(), g.reshape(-1, g.shape[-1])
        se = torch.sigmoid(ef)
        f = (ef * se).to(x.dtype)
        h = f * gf
        dh, dda, ddb = lora_grads(h, dyf, dw, da_, db_)
        dg = dh * f
        de = ((dh * gf).float() * se * (1 + ef * (1 - se))).to(x.dtype)
        dxu, dua, dub = lora_grads(flat, dg, uw, ua, ub)
        dxg, dga, dgb = lora_grads(flat, de, gw, ga, gb)
        return (dxu + dxg).view_as(x), None, dga, dgb, None, dua, dub, None, dda, ddb


class Layer(torch.nn.Module):
    """One decoder layer: frozen 16-bit weights and fp32 adapters as parameters, the RoPE cache as
    buffers, so that the saved-tensor count leaves them out (ffnlab counts them apart)."""

    def __init__(self, cfg: ModelConfig, seq: int, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        d, da, dkv, dff = cfg.d_model, cfg.d_attn, cfg.d_kv, cfg.layer_ffn(0).d_ff
        shapes = {"q": (da, d), "k": (dkv, d), "v": (dkv, d), "o": (d, da), "gate": (dff, d), "up": (dff, d),
                  "down": (d, dff)}
        for name, (out, inp) in shapes.items():
            self.register_parameter(f"{name}_w", torch.nn.Parameter(
                (torch.randn(out, inp, generator=gen) / math.sqrt(inp)).to(DT), requires_grad=False))
            self.register_parameter(f"{name}_a", torch.nn.Parameter(torch.randn(RANK, inp, generator=gen) * 0.1))
            self.register_parameter(f"{name}_b", torch.nn.Parameter(torch.randn(out, RANK, generator=gen) * 0.1))
        self.n1 = torch.nn.Parameter(torch.ones(d, dtype=DT) + 0.1 * torch.randn(d, generator=gen).to(DT),
                                     requires_grad=False)
        self.n2 = torch.nn.Parameter(torch.ones(d, dtype=DT), requires_grad=False)
        inv = 10_000 ** (torch.arange(0, cfg.head_dim, 2) / cfg.head_dim)
        pos = torch.arange(seq, dtype=torch.float32)[:, None] / inv
        self.register_buffer("cos", torch.cat((pos, pos), -1).cos().to(DT))
        self.register_buffer("sin", torch.cat((pos, pos), -1).sin().to(DT))
        self.heads, self.kv, self.hd = cfg.attn.n_heads, cfg.n_kv_heads, cfg.head_dim

    def p(self, name: str) -> list[torch.Tensor]:
        return [getattr(self, f"{name}_{s}") for s in "wab"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        y1 = Norm.apply(x, self.n1)
        q, k, v = QKV.apply(y1, *self.p("q"), *self.p("k"), *self.p("v"))
        q = Rope.apply(q.view(b, s, self.heads, self.hd), self.cos, self.sin)
        k = Rope.apply(k.view(b, s, self.kv, self.hd), self.cos, self.sin)
        a = Attention.apply(q, k, v.view(b, s, self.kv, self.hd))
        h1 = x + OProj.apply(a.view(b, s, -1), *self.p("o"))
        y2 = Norm.apply(h1, self.n2)
        return h1 + MLP.apply(y2, *self.p("gate"), *self.p("up"), *self.p("down"))

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The same layer through plain autograd ops."""
        b, s, _ = x.shape

        def norm(t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return (t.float() * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + EPS)).to(t.dtype) * w

        def rope(t: torch.Tensor) -> torch.Tensor:
            half = t.shape[-1] // 2
            c, sn = self.cos[None, :, None, :half], self.sin[None, :, None, :half]
            return torch.cat((t[..., :half] * c - t[..., half:] * sn, t[..., half:] * c + t[..., :half] * sn), -1)

        y1 = norm(x, self.n1)
        q = rope(lora(y1, *self.p("q")).view(b, s, self.heads, self.hd)).transpose(1, 2)
        k = rope(lora(y1, *self.p("k")).view(b, s, self.kv, self.hd)).transpose(1, 2)
        v = lora(y1, *self.p("v")).view(b, s, self.kv, self.hd).transpose(1, 2)
        g = self.heads // self.kv
        a = F.scaled_dot_product_attention(q.float(), k.repeat_interleave(g, 1).float(),
                                           v.repeat_interleave(g, 1).float(), is_causal=True).to(DT)
        h1 = x + lora(a.transpose(1, 2).reshape(b, s, -1), *self.p("o"))
        y2 = norm(h1, self.n2)
        e, up = lora(y2, *self.p("gate")), lora(y2, *self.p("up"))
        return h1 + lora(F.silu(e.float()).to(DT) * up, *self.p("down"))


def recompute_saved(layer: Layer, x_host: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """The offloaded checkpointer's backward: the input back as a leaf requiring grad, the layer
    recomputed under grad with every saved storage counted, then backward from dY.
    Returns (saved bytes, the input's gradient, dY)."""
    x = x_host.clone().detach().requires_grad_(True)
    with saved_storages(layer) as seen:
        out = layer(x)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(DT)
    out.backward(dy)
    assert x.grad is not None
    return sum(seen.values()), x.grad, dy


@pytest.mark.parametrize("seq", [24, 40])
def test_the_recomputed_layer_saves_what_ffnlab_prices_per_token(seq: int) -> None:
    cfg = tiny_llama()
    layer = Layer(cfg, seq)
    x = torch.randn(1, seq, cfg.d_model, generator=torch.Generator().manual_seed(2)).to(DT)
    with torch.no_grad(), saved_storages(layer) as none:  # the checkpointer's forward: nothing saved
        layer(x)
    assert none == {}
    measured, _, _ = recompute_saved(layer, x)
    p = fk.profile("unsloth")
    b = torch.finfo(DT).bits // 8
    reloaded = fk.part(p["outside_layer"], "layer_input")  # saved by the first norm
    priced = seq * (fk.per_token(p["layer_saved"], cfg, RANK, b) + fk.per_token(reloaded, cfg, RANK, b))
    assert measured == priced, (measured, priced)


def test_the_stand_in_back_propagates_as_the_eager_layer() -> None:
    cfg, seq = tiny_llama(), 24
    layer = Layer(cfg, seq)
    x = torch.randn(1, seq, cfg.d_model, generator=torch.Generator().manual_seed(3)).to(DT)
    _, got, dy = recompute_saved(layer, x)
    fused = {n: p.grad.clone() for n, p in layer.named_parameters() if p.grad is not None}
    layer.zero_grad()
    ref_x = x.clone().requires_grad_(True)
    layer.reference(ref_x).backward(dy)
    assert ref_x.grad is not None
    torch.testing.assert_close(got.float(), ref_x.grad.float(), rtol=0.05, atol=0.05)
    for name, g in fused.items():
        ref = dict(layer.named_parameters())[name].grad
        assert ref is not None
        torch.testing.assert_close(g, ref, rtol=0.05, atol=0.05 * float(ref.abs().max()))


def unsloth_work(seq_len: int, **step: Any) -> Workload:
    ft = FinetuneOptions(mode="qlora", rank=32, targets=("attention", "ffn"), base_format="nf4")
    opts = StepOptions(loss="fused", logits_held=False, offload_activations=True, fused_kernels="unsloth", **step)
    return Workload(seq_len=seq_len, batch=1, dtype="bf16", recompute="full", attention="fused",
                    optimizer="adamw", step=opts, finetune=ft)


def test_the_peak_is_the_mlp_backward_of_a_recomputed_layer_and_linear_in_tokens() -> None:
    cfg = find("llama-3.1-8b").config()
    assert cfg is not None
    p = fk.profile("unsloth")
    one = finetune_summary(cfg, unsloth_work(8192)).peak.timeline
    two = finetune_summary(cfg, unsloth_work(16384)).peak.timeline
    assert one.peak.name == "backward, layer 1 of 32, FFN (recomputed, unsloth kernels)"
    per_token = sum(fk.per_token(p[k], cfg, 32, 2) for k in ("outside_layer", "layer_saved", "ffn_backward_peak",
                                                             "sequence"))
    assert two.peak_bytes - one.peak_bytes == 8192 * per_token  # the RoPE cache grows by 8,192 rows each
    # Llama 3.1 8B at the peak, per token: 4 d-wide outer tensors, the saved set, two d_ff-wide temporaries
    assert per_token == 4 * 8192 + 102_536 + 57_408 + 520


def test_fused_kernels_refuse_a_step_they_do_not_describe() -> None:
    cfg = find("llama-3.1-8b").config()
    assert cfg is not None
    with pytest.raises(FfnlabError, match="Cut Cross Entropy"):
        work = unsloth_work(4096)
        finetune_summary(cfg, replace(work, step=replace(work.step, loss="chunked")))
    with pytest.raises(FfnlabError, match="lora_dropout 0"):
        work = unsloth_work(4096)
        finetune_summary(cfg, replace(work, finetune=replace(work.finetune, lora_dropout=0.1)))
    with pytest.raises(FfnlabError, match="fused_kernels must be one of"):
        StepOptions(fused_kernels="liger").check()


def test_every_fact_names_its_source_line() -> None:
    for engine in fk.engines():
        p = fk.profile(engine)
        for items in p.values():
            if isinstance(items, list) and items and isinstance(items[0], dict) and "tensor" in items[0]:
                for item in items:
                    assert set(item.get("per_token", item.get("per_vocab_row", {}))) <= set(fk.UNITS), item
                    assert ":" in item["source"] and item["source"].split()[0] in p["refs"], item


def test_the_parts_the_step_selects_are_keys_of_every_item_not_labels() -> None:
    """Each list the step prices in parts gives every item a known ``part``, every part is used,
    and the timeline's moments are built from them (the project rule: terms by structure)."""
    for engine in fk.engines():
        p = fk.profile(engine)
        for key, names in fk.PARTS.items():
            assert {i["part"] for i in p[key]} == set(names), (engine, key)
        assert "attention_saved_only" not in p


def test_8bit_adam_state_of_the_adapters_follows_the_tensors_peft_makes() -> None:
    """``--optimizer adam8bit`` for adapters (Unsloth's examples' adamw_8bit): bitsandbytes'
    Optimizer2State keeps two uint8 states and two fp32 absmax per 256 values of each tensor of at
    least 4,096 values, two fp32 states for a smaller one (the facts ffnlab.sizing.memory.optimizers
    keeps); the oracle is each adapter tensor peft makes for a Llama model on the meta device."""
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from ffnlab.sizing.finetune import finetune_states, lora_params
    from ffnlab.sizing.hf import from_hf_dict
    from ffnlab.sizing.memory.optimizers import ADAM8BIT_BLOCK, ADAM8BIT_MIN_SIZE

    hf = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=8,
                     num_key_value_heads=2, vocab_size=1000)
    with torch.device("meta"):
        model = LlamaForCausalLM(hf)
    rank = 16  # A of a 256-wide input: 4,096 values, 8-bit; B of the 64-wide k and v: 1,024, fp32 states
    peft_model = get_peft_model(model, LoraConfig(r=rank, target_modules="all-linear"))
    expected = 0
    for _, p in peft_model.named_parameters():
        if p.requires_grad:
            n = p.numel()
            expected += 2 * n + 8 * math.ceil(n / ADAM8BIT_BLOCK) if n >= ADAM8BIT_MIN_SIZE else 8 * n
    cfg = from_hf_dict(hf.to_dict())
    lora = lora_params(cfg, rank, ("attention", "ffn"))
    got = finetune_states(cfg, lora, mode="qlora", optimizer="adam8bit").adapter_optimizer
    assert got == expected
    assert got < finetune_states(cfg, lora, mode="qlora", optimizer="adamw").adapter_optimizer
