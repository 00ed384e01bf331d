"""A trainer's fused kernels priced from what they keep (``data/fused_kernels.json``).

Some trainers replace the eager modules ffnlab prices (peft's LoRA layers, transformers' norms,
RoPE and attention, the cross-entropy) with autograd Functions of their own, which save other
tensors and overwrite buffers in place. The data file lists, per engine and read from its source
at a commit, every tensor alive at the moments that can make the step's peak, each with its width
per token (in the model's dimensions), its dtype and the source line. :func:`fused_step_timeline`
builds the step's moments from those lists; ``StepOptions.fused_kernels`` selects it from
:func:`ffnlab.sizing.memory.step.step_timeline`.

Unsloth (``unsloth``, at e3162dc): every decoder layer runs through its offloaded checkpointer
(the layer's input copied to the host in forward, back in backward, the layer recomputed), so no
moment holds another layer's activations; the recomputed layer keeps the fused LoRA Functions'
saved inputs, flash-attn's q, k, v, output and log-sum-exp, the two norms' fp32 row statistics
and the MLP's gate and up outputs; the largest moment is the start of the MLP's backward, where
the down projection's input gradient and the adapter's full-width term are made beside them.
Cut Cross Entropy keeps no logits. Pure Python: no torch.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.memory.byte_rules import FP32_BYTES, INDEX_BYTES
from ffnlab.validation import show

if TYPE_CHECKING:
    from ffnlab.sizing.memory.step import FinetuneStep, StepInputs, StepTimeline
    from ffnlab.sizing.memory.workload import Workload

DATA = "fused_kernels.json"
UNITS = ("1", "d_model", "d_attn", "d_kv", "d_ff", "heads", "head_dim", "rank")


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The parsed ``data/fused_kernels.json``."""
    text = resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


def engines() -> tuple[str, ...]:
    """The engines whose fused kernels ffnlab prices."""
    return tuple(load()["engines"])


def profile(engine: str) -> dict[str, Any]:
    """One engine's lists of kept tensors, refused with one line for an engine not in the file."""
    found = load()["engines"].get(engine)
    require(found is not None, f"fused kernels must be one of {', '.join(engines())}, got {show(engine)}")
    assert found is not None
    return dict(found)


def _dims(cfg: ModelConfig, rank: int, layer: int = 0) -> dict[str, int]:
    return {"1": 1, "d_model": cfg.d_model, "d_attn": cfg.d_attn, "d_kv": cfg.d_kv,
            "d_ff": cfg.layer_ffn(layer).d_ff, "heads": cfg.attn.n_heads, "head_dim": cfg.head_dim, "rank": rank}


def item_bytes_per_token(item: dict[str, Any], cfg: ModelConfig, rank: int, act_bytes: float,
                         layer: int = 0) -> float:
    """One listed tensor's bytes per token: its widths in the model's dimensions times its dtype's bytes."""
    dims = _dims(cfg, rank, layer)
    width = sum(int(n) * dims[unit] for unit, n in item["per_token"].items())
    per = {"act": act_bytes, "fp32": float(FP32_BYTES), "int64": float(INDEX_BYTES)}[str(item["dtype"])]
    return width * per


def per_token(items: list[dict[str, Any]], cfg: ModelConfig, rank: int, act_bytes: float, layer: int = 0) -> float:
    """Bytes per token of a list of tensors (each distinct: the file names a shared storage once)."""
    return sum(item_bytes_per_token(i, cfg, rank, act_bytes, layer) for i in items)


# the structural key (``"part"``) of each list whose items the step prices apart: the step selects
# on it, never on a tensor's label
PARTS: dict[str, tuple[str, ...]] = {
    "outside_layer": ("embedding_output", "layer_input", "layer_output", "layer_output_grad"),
    "layer_saved": ("attention", "ffn"),
    "loss_saved": ("final_norm", "loss"),
}


def part(items: list[dict[str, Any]], *names: str) -> list[dict[str, Any]]:
    """The items of one list whose ``part`` is one of ``names``."""
    return [i for i in items if i["part"] in names]


def _tokens(item: dict[str, Any], n_tok: int) -> int:
    step = int(item.get("round_tokens", 1))
    return math.ceil(n_tok / step) * step


def _bytes(items: list[dict[str, Any]], cfg: ModelConfig, rank: int, b: float, n_tok: int, layer: int = 0) -> int:
    return math.ceil(sum(item_bytes_per_token(i, cfg, rank, b, layer) * _tokens(i, n_tok) for i in items))


NONE_HINT = "or --fused-kernels none to price the eager modules"


def check_step(work: Workload) -> None:
    """Refuse, with one line, a workload whose step options the engine's kernel lists do not
    describe (what can be told before a model is read: the command line checks it once the engine's
    facts and the flags are applied)."""
    engine = work.step.fused_kernels
    require(engine == "unsloth", f"fused kernels must be one of {', '.join(engines())}, got {show(engine)}")
    o, ft = work.step, work.finetune
    if ft is not None and ft.adapters:
        require("attention" in ft.targets and "ffn" in ft.targets,
                "Unsloth's fused kernels need LoRA or QLoRA adapters on q, k, v, o, gate, up and down "
                f"(--lora-targets all-linear), got {'+'.join(ft.targets)} ({NONE_HINT})")
        require(ft.lora_dropout == 0, "Unsloth's fused LoRA kernels run only with lora_dropout 0 (--lora-dropout 0; "
                                      f"with dropout Unsloth keeps peft's modules: {NONE_HINT})")
    require(work.recompute == "full" and o.offload_activations,
            "Unsloth's fused kernels are priced under its offloaded checkpointing (--recompute full --offload-acts; "
            f"{NONE_HINT})")
    require(o.loss == "fused",
            f"Unsloth's fused kernels are priced with its fused loss (Cut Cross Entropy: --loss fused; {NONE_HINT})")
    require(work.attention == "fused",
            f"Unsloth's fused kernels are priced with flash-attn (--attention fused; {NONE_HINT})")
    require(o.grad_accum == 1,
            f"Unsloth's fused kernels are priced for one micro-batch per step (--grad-accum 1; {NONE_HINT})")


def check_applies(cfg: ModelConfig, work: Workload, ft: FinetuneStep | None) -> None:
    """Refuse, with one line, a step the engine's kernel lists do not describe: the engine, the
    adapters and the step's options (:func:`check_step`, the one home of those rules), that there
    is an adapter step at all, then the model."""
    check_step(work)
    require(ft is not None, "Unsloth's fused kernels need LoRA or QLoRA adapters on q, k, v, o, gate, up and down "
                            f"(--finetune lora or qlora, --lora-targets all-linear; {NONE_HINT})")
    require(cfg.encoder_layers == 0 and not any(cfg.layer_ffn(i).is_moe for i in range(cfg.n_layers)),
            f"Unsloth's fused kernels are priced for dense decoder-only models ({NONE_HINT})")
    require(cfg.layer_ffn(0).kind == "swiglu",
            f"Unsloth's fused LoRA MLP is priced for SwiGLU FFNs, got {cfg.layer_ffn(0).kind} ({NONE_HINT})")


def fused_step_timeline(cfg: ModelConfig, work: Workload, states: StepInputs, ft: FinetuneStep) -> StepTimeline:
    """The step's moments with the fused kernels ``work.step.fused_kernels`` names (:data:`DATA`):
    the loss's forward and backward, the final norm's backward, each recomputed layer's FFN and
    attention backward, the embedding's backward and the optimizer step."""
    from ffnlab.sizing.memory.byte_rules import ACTIVATION_DTYPES, dtype_bytes
    from ffnlab.sizing.memory.step import Moment, StepTimeline

    check_applies(cfg, work, ft)
    engine = work.step.fused_kernels
    assert engine is not None  # check_step refused anything else
    p = profile(engine)
    b = dtype_bytes(work.dtype, ACTIVATION_DTYPES, "activation dtype")
    n_tok = work.seq_len * work.batch
    r, d, n_layers = ft.rank, cfg.d_model, cfg.n_layers

    def size(key: str, layer: int = 0) -> int:
        return _bytes(p[key], cfg, r, b, n_tok, layer)

    base = [("weights", states.weights), ("optimizer state", states.optimizer)]
    if states.working:
        base.append(("engine working memory", states.working))

    def moment(name: str, *parts: tuple[str, int]) -> Moment:
        return Moment(name, tuple((w, v) for w, v in (*base, *parts) if v))

    embed_out = ("the embeddings' output (held by its AccumulateGrad)",
                 _bytes(part(p["outside_layer"], "embedding_output"), cfg, r, b, n_tok))
    sequence = ("RoPE cache and ignored-label column", size("sequence"))
    loss_saved = ("final norm and Cut Cross Entropy saved tensors", size("loss_saved"))
    head_rows = cfg.vocab_size
    dc = math.ceil(sum(head_rows * sum(n * _dims(cfg, r)[u] for u, n in i["per_vocab_row"].items()) * b
                       for i in p["loss_backward_fixed"]))
    moments = [moment("forward end (Cut Cross Entropy)", embed_out, sequence, loss_saved),
               moment("loss backward (Cut Cross Entropy)", embed_out, sequence, loss_saved,
                      ("Cut Cross Entropy: input gradient", size("loss_backward")),
                      ("Cut Cross Entropy: the head's gradient (dropped, the head is frozen)", dc))]
    final_norm = part(p["loss_saved"], "final_norm")
    moments.append(moment("final norm backward (in place)", embed_out, sequence,
                          ("final norm saved tensors", _bytes(final_norm, cfg, r, b, n_tok)),
                          ("gradient of its output (overwritten in place)", math.ceil(n_tok * d * b))))
    around = ("the layer's input, its output and the gradient flowing in",
              _bytes(part(p["outside_layer"], "layer_input", "layer_output", "layer_output_grad"), cfg, r, b, n_tok))
    attn_saved = part(p["layer_saved"], "attention")
    done = 0
    for i in reversed(range(n_layers)):
        where = f"backward, layer {i + 1} of {n_layers}"
        moments.append(moment(f"{where}, FFN (recomputed, {engine} kernels)", ("gradients", done), embed_out,
                              sequence,
                              around,
                              ("this layer's saved tensors (recomputed)", size("layer_saved", i)),
                              ("FFN backward: down input gradient and adapter term", size("ffn_backward_peak", i))))
        moments.append(moment(f"{where}, attention (recomputed, {engine} kernels)",
                              ("gradients", done + math.ceil(ft.ffn_params[i] * ft.adapter_bytes)), embed_out,
                              sequence,
                              around,
                              ("this layer's attention saved tensors (recomputed)",
                               _bytes(attn_saved, cfg, r, b, n_tok, i)),
                              ("attention backward temporaries", size("attention_backward_peak", i))))
        done += math.ceil(ft.layer_params[i] * ft.adapter_bytes)
    moments.append(moment("embedding backward", ("gradients", states.gradients), embed_out,
                          ("gradient of the embeddings' output", math.ceil(n_tok * d * b))))
    moments.append(moment("optimizer step", ("gradients", states.gradients),
                          ("optimizer temporaries", states.opt_temp)))
    host = n_layers * math.ceil(n_tok * d * b)  # each layer's input, copied to the host in forward
    return StepTimeline(tuple(moments), work.step, kept_activations_bytes=embed_out[1] + loss_saved[1],
                        host_bytes=host)


__all__ = ["DATA", "NONE_HINT", "PARTS", "check_applies", "check_step", "engines", "fused_step_timeline",
           "item_bytes_per_token", "load", "part", "per_token", "profile"]
