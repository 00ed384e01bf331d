"""Training throughput of ffnlab's model against a minimal plain-PyTorch GPT, and FFN overheads.

Prints, for the device it runs on:
1. the peak matmul FLOP/s, the MFU denominator (a listed GPU's published dense peak, else measured
   over square shapes and the model's own: :mod:`ffnlab.training.peak`);
2. tokens/s and MFU of a full training step (forward, backward, AdamW) for ffnlab's DecoderLM and
   for a reference GPT written below in plain PyTorch with identical shapes and precision, and
   their ratio (target: ffnlab >= 1.0x);
3. for each FFN kind, forward+backward time of the FFN module divided by the time of its bare
   matmuls at the same shapes (target <= 1.10x).

    python benchmarks/train_throughput.py [--device cpu|cuda] [--quick]

On CPU it uses a small config; on CUDA a GPT-2-124M shape in bf16.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.training.nn import DenseFFN, build_model
from ffnlab.training.peak import device_peak, mfu_text, model_flops_utilisation, model_gemms


# -- a minimal reference GPT (plain PyTorch, pre-norm, learned positions, GELU MLP, tied head) --
class RefBlock(nn.Module):
    def __init__(self, d: int, h: int, ff: int):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class RefGPT(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, h: int, ff: int, ctx: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(RefBlock(d, h, ff) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_steps(step, device: str, warmup: int, iters: int) -> float:  # noqa: ANN001
    for _ in range(warmup):
        step()
    _sync(device)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def train_step_fn(model: nn.Module, idx: torch.Tensor, dtype: torch.dtype | None, ffnlab: bool):  # noqa: ANN201
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=idx.is_cuda)

    def step() -> None:
        ctx = torch.autocast("cuda", dtype=dtype) if dtype is not None else torch.autocast("cpu", enabled=False)
        with ctx:
            loss = model(idx, idx)[1] if ffnlab else model(idx, idx)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def gpt2_like(d: int, layers: int, heads: int, ctx: int, vocab: int) -> ModelConfig:
    """ffnlab's config of the reference GPT's shape (GELU-tanh MLP at 4x, biases, LayerNorm, tied)."""
    return ModelConfig(d_model=d, n_layers=layers, vocab_size=vocab, ffn=FFNSpec("gelu_tanh", 4 * d, bias=True),
                       attn=AttentionSpec(heads, qkv_bias=True, out_bias=True), norm="layernorm",
                       positions="learned", max_positions=ctx, tied_embeddings=True)


def reference_step_fn(vocab: int, d: int, layers: int, heads: int, ctx: int, batch: int, device: str,
                      compile_: bool = False):  # noqa: ANN201
    """One training step of the reference GPT (bf16 autocast on CUDA), optionally compiled."""
    torch.manual_seed(0)
    ref = RefGPT(vocab, d, layers, heads, 4 * d, ctx).to(device)
    idx = torch.randint(0, vocab, (batch, ctx), device=device)
    # torch.compile of a Module returns an OptimizedModule (a Module); its stubs say only Callable
    return train_step_fn(cast(nn.Module, torch.compile(ref)) if compile_ else ref, idx,
                         torch.bfloat16 if device.startswith("cuda") else None, False)


def compare_models(device: str, quick: bool) -> dict[str, float]:
    cuda = device.startswith("cuda")
    d, layers, heads, ctx, batch, vocab = (768, 12, 12, 1024, 8, 50304) if cuda else (256, 4, 4, 256, 8, 256)
    dtype = torch.bfloat16 if cuda else None
    cfg = gpt2_like(d, layers, heads, ctx, vocab)
    peak = device_peak(device, "bf16" if cuda else "fp32", model_gemms(cfg, batch * ctx))
    print(f"device {device}: peak matmul {peak.describe()}")
    idx = torch.randint(0, vocab, (batch, ctx), device=device)
    fpt = flops_per_token(cfg, ctx).training
    torch.manual_seed(0)
    ours = build_model(cfg).to(device)
    torch.manual_seed(0)
    ref = RefGPT(vocab, d, layers, heads, 4 * d, ctx).to(device)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())
    warm, iters = (2, 5) if quick else (3, 15)
    results = {}
    for name, model, flag in (("ffnlab", ours, True), ("reference", ref, False)):
        t = time_steps(train_step_fn(model, idx, dtype, flag), device, warm, iters)
        tok_s = batch * ctx / t
        results[name] = tok_s
        print(f"  {name:<10} d={d} L={layers} ctx={ctx} batch={batch}: {t * 1000:8.1f} ms/step "
              f"{tok_s:10,.0f} tok/s  MFU {mfu_text(model_flops_utilisation(tok_s * fpt, peak.flops))}")
    print(f"  ffnlab / reference throughput: {results['ffnlab'] / results['reference']:.3f}x (target >= 1.0x)")
    return results


def ffn_overheads(device: str, quick: bool, d: int | None = None, n: int | None = None,
                  repeats: int = 3) -> list[dict[str, float | str]]:
    """Per FFN kind: forward+backward time of the module and of its six bare matmuls, and the ratio
    (minima over ``repeats`` interleaved timings)."""
    cuda = device.startswith("cuda")
    d = d or (2048 if cuda else 512)
    n = n or (8192 if cuda else 2048)
    dtype = torch.bfloat16 if cuda else torch.float32
    print(f"FFN forward+backward time / bare matmul time, d_model={d}, tokens={n}, {dtype}:")
    warm, iters = (1, 3) if quick else (2, 5)
    rows: list[dict[str, float | str]] = []
    for kind, spec in FFN_KINDS.items():
        ff = (8 * d) // 3 if spec.gated else 4 * d
        torch.manual_seed(0)
        mod = DenseFFN(d, ff, kind).to(device=device, dtype=dtype)
        x = torch.randn(n, d, device=device, dtype=dtype, requires_grad=True)
        gy = torch.randn(n, d, device=device, dtype=dtype)

        def module_step(mod: nn.Module = mod, x: torch.Tensor = x, gy: torch.Tensor = gy) -> None:
            mod(x).backward(gy)

        w_in, w_out = mod.w_in.weight.detach(), mod.w_out.weight.detach()
        xd = x.detach()
        h2 = torch.randn(n, ff, device=device, dtype=dtype)
        g_in = torch.randn(n, w_in.shape[0], device=device, dtype=dtype)

        def bare_step(xd: torch.Tensor = xd, w_in: torch.Tensor = w_in, w_out: torch.Tensor = w_out,
                      h2: torch.Tensor = h2, g_in: torch.Tensor = g_in, gy: torch.Tensor = gy) -> None:
            # the same six matmuls on preallocated operands, nothing else
            xd @ w_in.t()
            h2 @ w_out.t()
            gy @ w_out
            gy.t() @ h2
            g_in @ w_in
            g_in.t() @ xd

        tm, tb = [], []
        for _ in range(repeats):  # interleave so that drift in machine load hits both alike
            tm.append(time_steps(module_step, device, warm, iters))
            tb.append(time_steps(bare_step, device, warm, iters))
        tm_, tb_ = min(tm), min(tb)
        rows.append({"kind": kind, "d_model": d, "d_ff": ff, "tokens": n, "module_ms": tm_ * 1000,
                     "bare_ms": tb_ * 1000, "ratio": tm_ / tb_})
        print(f"  {kind:<10} d_ff={ff:5d}: module {tm_ * 1000:7.2f} ms, bare matmuls {tb_ * 1000:7.2f} ms, "
              f"ratio {tm_ / tb_:5.3f}x (target <= 1.10x)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    compare_models(a.device, a.quick)
    ffn_overheads(a.device, a.quick)


if __name__ == "__main__":
    main()
