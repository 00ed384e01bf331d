"""Whole training steps measured on CPU, and ffnlab's predicted peak for each: the cases of
``tests/sizing/memory/test_memory_step.py`` and ``benchmarks/memory_peak.py``.

A case builds a model (ffnlab's ``DecoderLM`` or a transformers model from its config class),
runs one step to create the optimizer state, then measures the next step's live bytes op by op
(:class:`ffnlab.training.live_bytes.LiveBytes`): forward, loss, backward, optimizer step and
``zero_grad(set_to_none=True)``, in fp32. The prediction is
:func:`ffnlab.sizing.memory.parallel.training_peak` for the config ffnlab reads (ffnlab's own, or
``from_hf_dict`` of the transformers config), one GPU, fp32, the same step options.

The training loop (:func:`run_step`) is the usual one: the caller keeps the current
micro-batch's output (the logits) until the optimizer step ends when ``held`` is set, as
``out = model(**batch); out.loss.backward(); opt.step()`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

HF_COMMON = dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=512)
GPT2 = dict(n_embd=64, n_layer=2, n_head=4, n_positions=512)


@dataclass(frozen=True)
class Case:
    name: str
    family: str  # "ffnlab" or a transformers config class name ("LlamaConfig")
    model: dict[str, Any]
    batch: int = 2
    seq_len: int = 256
    loss: str = "full"
    optimizer_impl: str = "foreach"
    recompute: str = "none"
    recompute_every: int = 1
    grad_accum: int = 1
    attention: str = "fused"
    dropout: bool = False
    held: bool = True
    pure_bf16: bool = False  # the model cast to bf16 before the optimizer is made (no master copy)
    extra: dict[str, Any] = field(default_factory=dict)


def ff_shape(d: int, layers: int, heads: int, d_ff: int, **kw: Any) -> dict[str, Any]:
    """An ffnlab model's shape: make_config's arguments (see :func:`ffnlab_config`)."""
    return dict(d_model=d, n_layers=layers, n_heads=heads, d_ff=d_ff, **kw)


def ffnlab_config(shape: dict[str, Any], seq_len: int) -> Any:
    """ffnlab's config of a model shape (:func:`ff_shape`) at ``seq_len`` positions (no torch)."""
    from ffnlab.sizing.config import make_config

    kw = dict(shape)
    return make_config(kw.pop("d_model"), kw.pop("n_layers"), kw.pop("n_heads"), kw.pop("d_ff"),
                       max_positions=seq_len, **kw)


def step_options(case: Case) -> Any:
    """The step options a case runs with (its loss, optimizer, accumulation, recomputation, held logits)."""
    from ffnlab.sizing.memory.step import StepOptions

    return StepOptions(loss=case.loss, optimizer_impl=case.optimizer_impl, grad_accum=case.grad_accum,
                       recompute_every=case.recompute_every, logits_held=case.held)


CASES = [
    Case("ffnlab gelu, vocab 97 (activations lead)", "ffnlab", ff_shape(64, 2, 4, 256, kind="gelu", vocab_size=97), 4),
    Case("ffnlab swiglu gqa rope, vocab 4000", "ffnlab",
         ff_shape(64, 2, 4, 160, kind="swiglu", vocab_size=4000, n_kv_heads=2)),
    Case("ffnlab swiglu, vocab 16000, chunked loss", "ffnlab", ff_shape(64, 2, 4, 160, kind="swiglu", vocab_size=16000),
         loss="chunked"),
    Case("ffnlab swiglu, vocab 16000, fused loss (tied)", "ffnlab",
         ff_shape(64, 2, 4, 160, kind="swiglu", vocab_size=16000), loss="fused"),
    Case("ffnlab swiglu, vocab 4000, fused loss (untied)", "ffnlab",
         ff_shape(64, 2, 4, 160, kind="swiglu", vocab_size=4000, tied_embeddings=False), loss="fused"),
    Case("ffnlab relu, batch 8 x 64, logits not held", "ffnlab", ff_shape(64, 2, 4, 256, kind="relu", vocab_size=512),
         8, 64, held=False),
    Case("ffnlab geglu MoE 4 experts top-2", "ffnlab",
         ff_shape(64, 2, 4, 128, kind="geglu", vocab_size=97, n_experts=4, top_k=2), 4, 128),
    Case("ffnlab swiglu MoE top-1 + shared expert", "ffnlab",
         ff_shape(64, 2, 4, 128, kind="swiglu", vocab_size=97, n_experts=4, top_k=1, n_shared_experts=1), 4, 128),
    Case("ffnlab gelu 6 layers, full recompute", "ffnlab", ff_shape(64, 6, 4, 256, kind="gelu", vocab_size=97), 4,
         recompute="full"),
    Case("ffnlab gelu 6 layers, recompute every 2nd layer", "ffnlab",
         ff_shape(64, 6, 4, 256, kind="gelu", vocab_size=97), 4, recompute="full", recompute_every=2),
    Case("ffnlab wide model, short batch: foreach AdamW step leads", "ffnlab",
         ff_shape(256, 2, 4, 1024, kind="gelu", vocab_size=97), 1, 32),
    Case("ffnlab wide model: fused AdamW", "ffnlab", ff_shape(256, 2, 4, 1024, kind="gelu", vocab_size=97), 1, 32,
         optimizer_impl="fused"),
    Case("ffnlab wide model: for-loop AdamW", "ffnlab", ff_shape(256, 2, 4, 1024, kind="gelu", vocab_size=97), 1, 32,
         optimizer_impl="for-loop"),
    Case("ffnlab gelu, 2 micro-batches (gradients alive across them)", "ffnlab",
         ff_shape(128, 4, 4, 512, kind="gelu", vocab_size=256), 2, 128, grad_accum=2),
    Case("ffnlab gelu, eager attention (math SDPA, s x s kept)", "ffnlab",
         ff_shape(64, 2, 4, 256, kind="gelu", vocab_size=97), 2, 256, attention="eager"),
    Case("transformers Llama, vocab 8000", "LlamaConfig", dict(HF_COMMON, vocab_size=8000)),
    Case("transformers Llama, batch 4 x 128", "LlamaConfig", dict(HF_COMMON, vocab_size=8000), 4, 128),
    Case("transformers Llama 8 layers, vocab 512", "LlamaConfig",
         dict(HF_COMMON, vocab_size=512, num_hidden_layers=8)),
    Case("transformers Llama 8 layers, gradient checkpointing", "LlamaConfig",
         dict(HF_COMMON, vocab_size=512, num_hidden_layers=8), recompute="full"),
    Case("transformers Qwen2, tied embeddings", "Qwen2Config", dict(HF_COMMON, vocab_size=8000,
                                                                    tie_word_embeddings=True)),
    Case("transformers GPT-2, eager attention, dropout 0.1", "GPT2Config", dict(GPT2, vocab_size=2000),
         attention="eager", dropout=True, extra={"attn_implementation": "eager"}),
    Case("transformers Mixtral, 4 experts top-2", "MixtralConfig",
         dict(HF_COMMON, vocab_size=4000, num_local_experts=4, num_experts_per_tok=2)),
    Case("transformers Mixtral, vocab 256 (experts lead)", "MixtralConfig",
         dict(HF_COMMON, vocab_size=256, num_local_experts=4, num_experts_per_tok=2), 4),
    Case("transformers Qwen2-MoE, shared expert", "Qwen2MoeConfig",
         dict(HF_COMMON, vocab_size=4000, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=96,
              shared_expert_intermediate_size=128)),
    Case("transformers Gemma, vocab 16000", "GemmaConfig", dict(HF_COMMON, vocab_size=16000, head_dim=16)),
]
# stepped as HF Trainer and torchtitan step it: model(**batch).loss.backward(), the output (its
# logits) dropped before backward
FREED_CASES = [replace(c, name=c.name + ", logits freed (HF Trainer)", held=False) for c in CASES if c.name in (
    "transformers Llama, vocab 8000", "transformers Llama, batch 4 x 128",
    "transformers Llama 8 layers, gradient checkpointing", "transformers Qwen2, tied embeddings",
    "transformers Mixtral, 4 experts top-2", "transformers Gemma, vocab 16000")]

# torchtitan's op-level selective checkpointing (--recompute op-selective) around each decoder layer
# of transformers' Llama (q, k, v, o, gate, up, down: the same matmul order as torchtitan's block),
# stepped with the logits held and freed
SAC_CASES = [
    Case("transformers Llama 8 layers, op-level SAC", "LlamaConfig", dict(HF_COMMON, vocab_size=512,
                                                                             num_hidden_layers=8),
         recompute="op-selective"),
    Case("transformers Llama 4 layers, op-level SAC, logits freed", "LlamaConfig",
         dict(HF_COMMON, vocab_size=2000, num_hidden_layers=4), recompute="op-selective", held=False),
]

# pure bf16 (the model cast to bf16 before AdamW is made: bf16 moments, no master copy), measured on
# CPU as the fp32 cases; eager attention and MoE are left out: their bf16 activations on CPU (math
# SDPA's upcasts, the experts' loop) are not the pure-bf16 states this checks
PURE_CASES = [replace(c, name=c.name + ", pure bf16", pure_bf16=True) for c in CASES if c.name in (
    "ffnlab gelu, vocab 97 (activations lead)", "ffnlab swiglu gqa rope, vocab 4000",
    "ffnlab wide model, short batch: foreach AdamW step leads", "ffnlab wide model: fused AdamW",
    "ffnlab wide model: for-loop AdamW", "ffnlab gelu, 2 micro-batches (gradients alive across them)",
    "transformers Llama, vocab 8000", "transformers Llama 8 layers, gradient checkpointing",
    "transformers Qwen2, tied embeddings")]


# Realistic sizes, measured on a GPU only (benchmarks/memory_cuda.py --measure scale): where the
# CPU suite's tiny models show the allocator's small-block rounding, these show a real step's.
LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True, max_position_embeddings=4096)
QWEN_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True, max_position_embeddings=4096)
SCALE_CASES = [
    Case("Llama-3.2-1B shape, batch 4 x 2048", "LlamaConfig", LLAMA_1B, 4, 2048),
    Case("Llama-3.2-1B shape, batch 4 x 2048, gradient checkpointing", "LlamaConfig", LLAMA_1B, 4, 2048,
         recompute="full"),
    Case("Qwen2-0.5B shape, batch 8 x 1024", "Qwen2Config", QWEN_05B, 8, 1024),
]


def build(case: Case) -> tuple[Any, Any, Callable[[Any], tuple[Any, Any]]]:
    """(model, ffnlab's config for it, loss function of a batch -> (loss, output held))."""
    import torch

    torch.manual_seed(0)
    if case.family == "ffnlab":
        from ffnlab.training import losses
        from ffnlab.training.nn.model import build_model

        cfg = ffnlab_config(case.model, case.seq_len)
        model = build_model(cfg, seed=0, max_seq_len=case.seq_len)
        model.checkpoint_every = case.recompute_every if case.recompute == "full" else 0

        def loss_fn(x: Any) -> tuple[Any, Any]:
            if case.loss == "full":
                logits, loss, _ = model(x, x)
                return loss, logits
            h, _ = model.features(x)
            if case.loss == "chunked":
                return losses.chunked_cross_entropy(h, model.lm_head.weight, x)
            return losses.fused_linear_cross_entropy(h, model.lm_head.weight, x), None

        return model, cfg, loss_fn
    import transformers

    from ffnlab.sizing.hf import from_hf_dict

    hf_cfg = getattr(transformers, case.family)(**case.model, **{"attn_implementation": "sdpa", **case.extra})
    if not case.dropout and case.family == "GPT2Config":
        hf_cfg.resid_pdrop = hf_cfg.embd_pdrop = hf_cfg.attn_pdrop = 0.0
    model = transformers.AutoModelForCausalLM.from_config(hf_cfg)
    if case.recompute in ("full", "op-selective"):
        kwargs: dict[str, Any] = {"use_reentrant": False}
        if case.recompute == "op-selective":  # torchtitan's op-level policy around each decoder layer
            from op_sac import context_fn

            from ffnlab.sizing.memory.activations import op_policy

            kwargs["context_fn"] = context_fn(op_policy("torchtitan"))
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        model.config.use_cache = False

    def hf_loss(x: Any) -> tuple[Any, Any]:
        if not case.held:  # model(**batch).loss: the output is never bound
            return model(input_ids=x, labels=x, use_cache=False).loss, None
        out = model(input_ids=x, labels=x, use_cache=False)
        return out.loss, out

    return model, from_hf_dict(hf_cfg.to_dict()), hf_loss


def optimizer(case: Case, model: Any) -> Any:
    """AdamW over the parameters that train (all of them, unless a fine-tuning case froze some)."""
    import torch

    kw = {"foreach": {"foreach": True}, "fused": {"fused": True}, "for-loop": {"foreach": False}}[case.optimizer_impl]
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, **kw)


def run_step(case: Case, model: Any, opt: Any, x: Any, loss_fn: Callable[[Any], tuple[Any, Any]]) -> None:
    out = None
    for _ in range(case.grad_accum):
        out = None  # the previous micro-batch's output goes before the next forward
        loss, out = loss_fn(x)
        if not case.held:
            out = None
        (loss / case.grad_accum).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    del out


def measure(case: Case, built: tuple[Any, Any, Callable[[Any], tuple[Any, Any]]] | None = None
            ) -> tuple[int, str, Any]:
    """(peak live bytes of the second step, the op at the peak, ffnlab's config); ``built``: the
    model, config and loss function to measure instead of :func:`build`'s (a peft model)."""
    import contextlib

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ffnlab.training.live_bytes import LiveBytes, model_tensors, optimizer_tensors

    model, cfg, loss_fn = built or build(case)
    if case.pure_bf16:
        model.to(torch.bfloat16)
    model.train()
    opt = optimizer(case, model)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, cfg.vocab_size, (case.batch, case.seq_len), generator=g)
    math_sdpa = case.attention == "eager" and case.family == "ffnlab"
    with sdpa_kernel(SDPBackend.MATH) if math_sdpa else contextlib.nullcontext():
        torch.manual_seed(2)
        run_step(case, model, opt, x, loss_fn)
        lb = LiveBytes()
        with lb:
            lb.add_existing(model_tensors(model) + optimizer_tensors(opt), "before the step")
            run_step(case, model, opt, x, loss_fn)
    return lb.peak, lb.peak_op, cfg


def predict(case: Case, cfg: Any) -> Any:
    """ffnlab's step timeline for the case (one GPU, fp32; dropout masks in fp32 as on CPU)."""
    from ffnlab.sizing.memory.parallel import Layout, Workload, training_peak, training_table

    work = Workload(seq_len=case.seq_len, batch=case.batch, dtype="bf16" if case.pure_bf16 else "fp32",
                    pure_bf16=case.pure_bf16, recompute=case.recompute,
                    attention=case.attention, dropout=case.dropout, step=step_options(case), dropout_mask_bytes=4)
    return training_peak(cfg, work, Layout(), training_table(cfg, work, Layout()))
