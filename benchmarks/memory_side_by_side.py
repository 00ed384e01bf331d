"""ffnlab's memory model next to llm-analysis and the EleutherAI cookbook, on five models.

The peers' numbers come from their *published formulas*, written out here from their
documentation and source (not their code): llm-analysis (github.com/cli99/llm-analysis,
``llm_analysis/analysis.py``: ``get_num_params_*``, ``get_memory_optimizer_state_and_gradient_*``,
``get_activation_memory_per_layer*`` and ``get_memory_kv_cache_per_layer``, default options) and
the cookbook (github.com/EleutherAI/cookbook, ``calc/calc_transformer_mem.py``, default options,
as run with a Hugging Face config: 2 MLP matrices, ``kv_size_ratio`` 1, ``--num-experts`` given for
MoE). Setting: one GPU, no parallelism or ZeRO, bf16 weights and activations with AdamW, micro-batch
1 x 2048 tokens, no recomputation, flash attention; KV cache at 8192 tokens in bf16 (GPT-2: 1024,
its position table).

    python benchmarks/memory_side_by_side.py            # Markdown tables (docs/memory.md)
"""

from __future__ import annotations

from dataclasses import dataclass

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory.activations import kv_cache
from ffnlab.sizing.memory.parallel import Layout, Workload, training_table
from ffnlab.sizing.zoo import find

MODELS = ("gpt2", "llama-2-7b", "mistral-7b", "mixtral-8x7b", "llama-3-8b")
SEQ, BATCH, KV_CONTEXT = 2048, 1, 8192
GiB = 2**30


@dataclass(frozen=True)
class Figures:
    params: float
    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float


def lengths(cfg: ModelConfig) -> tuple[int, int]:
    """Training sequence and KV context, capped at a learned position table (GPT-2: 1024)."""
    cap = cfg.max_positions if cfg.positions == "learned" else KV_CONTEXT
    return min(SEQ, cap), min(KV_CONTEXT, cap)


def ffnlab_figures(cfg: ModelConfig) -> Figures:
    seq, ctx = lengths(cfg)
    t = {r.term: r.per_gpu_bytes for r in training_table(cfg, Workload(seq_len=seq, batch=BATCH), Layout())}
    kv = kv_cache(cfg, batch=BATCH, context=ctx).total
    return Figures(count_params(cfg).total, t["weights"], t["gradients"], t["optimizer"], t["activations"], kv)


def llm_analysis_figures(cfg: ModelConfig) -> Figures:
    """llm-analysis' formulas with its defaults (16-bit weights and activations, fp32 master weights
    and gradients, Adam, flash attention, attention dropout mask, fp32 layernorm inputs)."""
    (s, ctx), b = lengths(cfg), BATCH
    h, a, layers, v = cfg.d_model, cfg.attn.n_heads, cfg.n_layers, cfg.vocab_size
    f = cfg.ffn
    experts = max(f.n_experts, 1)
    attn_p = 2 * h * h + 2 * h * (h * cfg.n_kv_heads / a)
    mlp_p = (3 if f.gated else 2) * h * f.d_ff * experts
    router_p = h * f.n_experts if f.n_experts > 1 else 0
    params = layers * (attn_p + mlp_p + router_p + 2 * h) + h * v + h  # embedding shared by default
    sbh = s * b * h
    attn_act = (sbh + 4 * sbh) * 2 + (2 * sbh + 4 * a * s * b) * 2 + sbh  # + attention dropout mask
    ratio, k = f.d_ff / h, max(f.top_k, 1)
    if f.n_experts > 1:
        mlp_act = 2 * 2 * sbh + 2 * sbh * k + 2 * s * b * k + 2 * sbh * k + (2 + 2) * ratio * sbh * k
    else:
        mlp_act = 2 * sbh + (2 + 2) * ratio * sbh
    norm_act = 2 * sbh * 4
    acts = layers * (attn_act + mlp_act + norm_act) + 2 * sbh + 2 * s * b * v + 4 * sbh
    kv = layers * 2 * b * ctx * cfg.head_dim * cfg.n_kv_heads * 2
    return Figures(params, 2 * params, 4 * params, 12 * params, acts, kv)


def cookbook_figures(cfg: ModelConfig) -> Figures:
    """The cookbook's calc_transformer_mem.py with its defaults (ZeRO stage set to 0 here)."""
    (s, ctx), b = lengths(cfg), BATCH
    h, a, layers, v = cfg.d_model, cfg.attn.n_heads, cfg.n_layers, cfg.vocab_size
    f = cfg.ffn
    embed = 2 * v * h
    positional = h * s
    ln = 8 * h * layers + 2 * h
    attn = 2 * (1 + 1.0) * layers * h * h  # kv_size_ratio stays 1.0 with a Hugging Face config
    mlp = 2 * layers * h * (f.d_ff / h) * h  # num_mlp_linears stays 2
    params = embed + positional + ln + attn + mlp * max(f.n_experts, 1)
    acts = s * b * h * layers * ((16 * 2 + 2) + (2 * 2 + 1) * (a * s / h))
    kv = 2 * h * layers * (ctx + 1) * b  # (sequence + 1 output token) x bytes x h x L, no K/V factor
    return Figures(params, 2 * params, 4 * params, 12 * params, acts, kv)


def table(name: str) -> str:
    cfg = find(name).config()
    assert cfg is not None
    fx, la, cb = ffnlab_figures(cfg), llm_analysis_figures(cfg), cookbook_figures(cfg)
    seq, ctx = lengths(cfg)
    lines = [f"**{name}**, {BATCH} x {seq} tokens, KV for {ctx} ({cfg.d_model} wide, {cfg.n_layers} layers, "
             f"{cfg.attn.n_heads} heads / {cfg.n_kv_heads} KV, {cfg.ffn.kind} {cfg.ffn.d_ff}"
             + (f", {cfg.ffn.n_experts} experts top-{cfg.ffn.top_k}" if cfg.ffn.is_moe else "") + ")", "",
             "| term | ffnlab | llm-analysis | vs ffnlab | cookbook | vs ffnlab |", "|---|---:|---:|---:|---:|---:|"]
    for term in ("params", "weights", "gradients", "optimizer", "activations", "kv_cache"):
        x, y, z = getattr(fx, term), getattr(la, term), getattr(cb, term)
        fmt = (lambda n: f"{n / 1e9:.3f}B") if term == "params" else (lambda n: f"{n / GiB:.2f} GiB")
        lines.append(f"| {term} | {fmt(x)} | {fmt(y)} | {y / x - 1:+.1%} | {fmt(z)} | {z / x - 1:+.1%} |")
    return "\n".join(lines)


def main() -> None:
    print(f"Setting: 1 GPU, bf16 + AdamW, micro-batch {BATCH} x {SEQ}, no recompute, flash attention; "
          f"KV cache for {KV_CONTEXT} tokens, bf16.\n")
    for name in MODELS:
        print(table(name))
        print()


if __name__ == "__main__":
    main()
