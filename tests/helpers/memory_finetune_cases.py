"""LoRA fine-tuning steps measured on CPU, and ffnlab's predicted peak for each: the cases of
``tests/sizing/memory/test_memory_finetune.py``.

A case is a training step of ``memory_step_cases`` (the model, batch, sequence, loss and
recompute policy) whose model peft wraps with ``LoraConfig(r=rank, target_modules=...,
lora_dropout=0.0)`` and ``get_peft_model``: the base frozen, fp32 adapters. The step is measured
as the training steps are (:func:`memory_step_cases.measure`: one step to make the optimizer
state, then the next one under :class:`ffnlab.training.live_bytes.LiveBytes`), AdamW over the
adapters. Gradient checkpointing is the usual recipe: transformers'
``model.gradient_checkpointing_enable()`` before ``get_peft_model`` (non-reentrant in
transformers 5, and it makes the embeddings' output require grad); ffnlab's own model checkpoints
with ``torch.utils.checkpoint(use_reentrant=False)`` and leaves the embeddings' output alone. The
prediction is :func:`ffnlab.sizing.finetune.finetune_peak` for the config ffnlab reads, in the
case's dtype (fp32, or bf16: the base cast to bf16 before peft wraps it, the adapters fp32 as peft
keeps them; no autocast).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_step_cases import GPT2, HF_COMMON, Case, build, ff_shape, ffnlab_config, step_options
from paths import DATA

LLAMA_LIKE = {"attention": ["q_proj", "k_proj", "v_proj", "o_proj"], "ffn": ["gate_proj", "up_proj", "down_proj"],
              "qv": ["q_proj", "v_proj"]}
PEFT_TARGETS: dict[str, dict[str, Any]] = {
    "LlamaConfig": LLAMA_LIKE, "Qwen2Config": LLAMA_LIKE, "MixtralConfig": LLAMA_LIKE,
    "GPT2Config": {"attention": ["c_attn", "attn.c_proj"], "ffn": ["c_fc", "mlp.c_proj"], "qv": ["c_attn"]},
    "ffnlab": {"attention": ["qkv", "out"], "ffn": ["w_in", "w_out"]},  # DecoderLM's nn.Linear names
}


@dataclass(frozen=True)
class LoraCase:
    name: str
    step: Case  # the model and the step
    targets: str  # attention | ffn | all-linear
    rank: int = 8
    dtype: str = "fp32"  # bf16: the base model in bf16 before peft wraps it (the adapters stay fp32)
    dropout: float = 0.0  # peft's lora_dropout (on CPU the dropout's mask is in its input's dtype: 4 B)


def peft_targets(case: LoraCase) -> Any:
    names = PEFT_TARGETS[case.step.family]
    if case.targets != "all-linear":
        return names[case.targets]
    # peft's "all-linear" needs a transformers model; ffnlab's model gets the same layers by name
    return names["attention"] + names["ffn"] if case.step.family == "ffnlab" else "all-linear"


LLAMA = dict(HF_COMMON, vocab_size=8000)
LLAMA8 = dict(HF_COMMON, vocab_size=512, num_hidden_layers=8)
LLAMA_FFN = dict(HF_COMMON, vocab_size=128, num_hidden_layers=4, intermediate_size=512)
WIDE = dict(HF_COMMON, hidden_size=512, intermediate_size=1408, num_attention_heads=8, num_key_value_heads=8,
            vocab_size=512)
MIXTRAL = dict(HF_COMMON, num_local_experts=4, num_experts_per_tok=2)

CASES = [
    LoraCase("Llama, attention adapters (the loss leads)", Case("", "LlamaConfig", LLAMA), "attention"),
    LoraCase("Llama, FFN adapters", Case("", "LlamaConfig", LLAMA), "ffn"),
    LoraCase("Llama, all-linear", Case("", "LlamaConfig", LLAMA), "all-linear"),
    LoraCase("Llama 8 layers, vocab 512, batch 4 x 128, all-linear (activations lead)",
             Case("", "LlamaConfig", LLAMA8, 4, 128), "all-linear"),
    LoraCase("Llama 8 layers, vocab 512, attention adapters", Case("", "LlamaConfig", LLAMA8, 4, 128), "attention"),
    LoraCase("Llama 4 layers, vocab 128, d_ff 512, all-linear (a layer's backward leads)",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "all-linear"),
    LoraCase("Llama 4 layers, vocab 128, d_ff 512, attention adapters (frozen FFN backward)",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "attention"),
    LoraCase("Llama 8 layers, gradient checkpointing, all-linear",
             Case("", "LlamaConfig", LLAMA8, 4, 128, recompute="full"), "all-linear"),
    LoraCase("Llama 8 layers, gradient checkpointing, FFN adapters",
             Case("", "LlamaConfig", LLAMA8, 4, 128, recompute="full"), "ffn"),
    LoraCase("Llama wide, batch 1 x 16, rank 64 (the weights lead)", Case("", "LlamaConfig", WIDE, 1, 16),
             "all-linear", 64),
    LoraCase("Llama wide, batch 1 x 16, rank 64, for-loop AdamW", Case("", "LlamaConfig", WIDE, 1, 16,
                                                                      optimizer_impl="for-loop"), "all-linear", 64),
    LoraCase("Qwen2, tied embeddings, all-linear",
             Case("", "Qwen2Config", dict(LLAMA, tie_word_embeddings=True)), "all-linear"),
    LoraCase("Qwen2, FFN adapters, rank 16", Case("", "Qwen2Config", LLAMA), "ffn", 16),
    LoraCase("GPT-2 (fused c_attn, Conv1D), attention adapters", Case("", "GPT2Config", dict(GPT2, vocab_size=2000)),
             "attention"),
    LoraCase("GPT-2, all-linear", Case("", "GPT2Config", dict(GPT2, vocab_size=2000)), "all-linear"),
    LoraCase("GPT-2, gradient checkpointing, all-linear",
             Case("", "GPT2Config", dict(GPT2, vocab_size=2000, n_layer=6), 4, 128, recompute="full"), "all-linear"),
    LoraCase("Mixtral 4 experts top-2, attention adapters", Case("", "MixtralConfig", dict(MIXTRAL, vocab_size=4000)),
             "attention"),
    LoraCase("Mixtral, vocab 256, attention adapters (frozen experts lead)",
             Case("", "MixtralConfig", dict(MIXTRAL, vocab_size=256), 4), "attention"),
    LoraCase("Mixtral 8 experts top-2, vocab 256, batch 4 x 256, attention adapters",
             Case("", "MixtralConfig", dict(MIXTRAL, vocab_size=256, num_local_experts=8), 4), "attention"),
    LoraCase("ffnlab swiglu MoE 4 experts top-2, attention adapters",
             Case("", "ffnlab", ff_shape(64, 2, 4, 128, kind="swiglu", vocab_size=97, n_experts=4, top_k=2), 4, 128),
             "attention"),
    LoraCase("ffnlab gelu, vocab 97, all adapters",
             Case("", "ffnlab", ff_shape(64, 2, 4, 256, kind="gelu", vocab_size=97), 4), "all-linear"),
    LoraCase("ffnlab swiglu gqa, attention adapters",
             Case("", "ffnlab", ff_shape(64, 2, 4, 160, kind="swiglu", vocab_size=4000, n_kv_heads=2)), "attention"),
    LoraCase("ffnlab relu 6 layers, full recompute, FFN adapters",
             Case("", "ffnlab", ff_shape(64, 6, 4, 256, kind="relu", vocab_size=97), 4, recompute="full"), "ffn"),
    # bf16 bases: peft casts each adapted layer's input to its fp32 adapter (one copy per adapter)
    LoraCase("bf16 Llama, all-linear", Case("", "LlamaConfig", LLAMA), "all-linear", dtype="bf16"),
    LoraCase("bf16 Llama 4 layers, d_ff 512, all-linear (a layer's backward leads)",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "all-linear", dtype="bf16"),
    LoraCase("bf16 Llama 4 layers, d_ff 512, attention adapters",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "attention", dtype="bf16"),
    LoraCase("bf16 Llama 8 layers, gradient checkpointing, all-linear",
             Case("", "LlamaConfig", LLAMA8, 4, 128, recompute="full"), "all-linear", dtype="bf16"),
    LoraCase("bf16 GPT-2, all-linear", Case("", "GPT2Config", dict(GPT2, vocab_size=2000)), "all-linear",
             dtype="bf16"),
    LoraCase("bf16 Mixtral, vocab 256, attention adapters",
             Case("", "MixtralConfig", dict(MIXTRAL, vocab_size=256), 4), "attention", dtype="bf16"),
    # the LoRA paper's q and v (peft target_modules ["q_proj", "v_proj"]; GPT-2's fused c_attn)
    LoraCase("Llama 8 layers, vocab 512, q and v adapters", Case("", "LlamaConfig", LLAMA8, 4, 128), "qv"),
    LoraCase("bf16 Llama 4 layers, d_ff 512, q and v adapters", Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "qv",
             dtype="bf16"),
    LoraCase("GPT-2 (fused c_attn), q|k|v adapter only", Case("", "GPT2Config", dict(GPT2, vocab_size=2000)), "qv"),
]

# lora_dropout > 0: each adapter keeps its own dropped-out input (in the adapters' fp32) and the
# dropout's mask (tests/sizing/memory/test_memory_finetune.py, test_lora_dropout_*)
DROPOUT_CASES = [
    LoraCase("Llama 4 layers, d_ff 512, all-linear, lora_dropout 0.1 (a layer's backward leads)",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "all-linear", dropout=0.1),
    LoraCase("bf16 Llama 4 layers, d_ff 512, all-linear, lora_dropout 0.1",
             Case("", "LlamaConfig", dict(LLAMA_FFN), 4), "all-linear", dtype="bf16", dropout=0.1),
    LoraCase("bf16 Llama 8 layers, vocab 512, attention adapters, lora_dropout 0.05 (activations lead)",
             Case("", "LlamaConfig", LLAMA8, 4, 128), "attention", dtype="bf16", dropout=0.05),
    LoraCase("bf16 Llama 8 layers, gradient checkpointing, all-linear, lora_dropout 0.1",
             Case("", "LlamaConfig", LLAMA8, 4, 128, recompute="full"), "all-linear", dtype="bf16", dropout=0.1),
    LoraCase("GPT-2, all-linear, lora_dropout 0.1", Case("", "GPT2Config", dict(GPT2, vocab_size=2000)),
             "all-linear", dropout=0.1),
    LoraCase("bf16 Llama 8 layers, q and v adapters, lora_dropout 0.05 (activations lead)",
             Case("", "LlamaConfig", LLAMA8, 4, 128), "qv", dtype="bf16", dropout=0.05),
]


def build_lora(case: LoraCase) -> tuple[Any, Any, Callable[[Any], tuple[Any, Any]], Any]:
    """(the peft model, ffnlab's config, the loss function, peft's (trainable, all) counts)."""
    import torch
    from peft import LoraConfig, get_peft_model

    model, cfg, loss_fn = build(case.step)  # checkpointing, if any, is enabled before peft wraps the model
    if case.dtype == "bf16":
        model.to(torch.bfloat16)
    peft_model = get_peft_model(model, LoraConfig(r=case.rank, lora_alpha=2 * case.rank,
                                                  target_modules=peft_targets(case), lora_dropout=case.dropout))
    return peft_model, cfg, loss_fn, peft_model.get_nb_trainable_parameters()


def predict(case: LoraCase, cfg: Any) -> Any:
    """ffnlab's fine-tuning step for the case (one GPU)."""
    from ffnlab.sizing.finetune import FinetuneOptions, finetune_peak, parse_targets
    from ffnlab.sizing.memory.workload import Workload

    s = case.step
    work = Workload(seq_len=s.seq_len, batch=s.batch, dtype=case.dtype, recompute=s.recompute, attention=s.attention,
                    step=step_options(s), dropout_mask_bytes=4,  # CPU dropout: a mask in the fp32 input's dtype
                    finetune=FinetuneOptions(mode="lora", rank=case.rank, targets=parse_targets(case.targets),
                                             lora_dropout=case.dropout))
    # transformers' gradient_checkpointing_enable makes the embeddings' output require grad; ffnlab's doesn't
    input_grads = s.recompute == "full" and s.family != "ffnlab"
    return finetune_peak(cfg, work, input_grads=input_grads, grouped_experts=s.family != "ffnlab")


# -- saved measurements: tests/data/finetune_measured.json ------------------------------------------
# The live measurement needs torch, peft and transformers and takes a minute for all cases; the
# saved bytes (with the config ffnlab read for each case) let tests/sizing/memory/test_memory_finetune_saved.py
# judge the rules in pure Python, so ``make mutate`` can check every mutant against every case.
#     PYTHONPATH=src:tests/helpers python tests/helpers/memory_finetune_cases.py --write

SAVED = DATA / "finetune_measured.json"


def record(case: LoraCase) -> dict[str, Any]:
    """The case measured now: its peak bytes and the config ffnlab read (HF's to_dict, or make_config's)."""
    from memory_step_cases import measure

    model, cfg, loss_fn, _ = build_lora(case)
    measured, _, _ = measure(case.step, built=(model, cfg, loss_fn))
    source = ({"make_config": dict(case.step.model)} if case.step.family == "ffnlab"
              else {"hf_config": model.get_base_model().config.to_dict()})
    return {"id": case.name, "measured_bytes": int(measured), **source}


def saved_config(r: dict[str, Any], case: LoraCase) -> Any:
    """ffnlab's config for a saved record, without torch or transformers."""
    if "make_config" in r:
        return ffnlab_config(r["make_config"], case.step.seq_len)
    from ffnlab.sizing.hf import from_hf_dict

    return from_hf_dict(r["hf_config"])


def load_saved() -> list[dict[str, Any]]:
    return list(json.loads(SAVED.read_text())["records"])


if __name__ == "__main__":
    import sys

    records = [record(c) for c in CASES]
    text = json.dumps({"note": "peak live bytes of one LoRA step per case of tests/helpers/memory_finetune_cases.py, "
                               "measured on CPU (fp32 or bf16 base); written by --write",
                       "records": records}, indent=1, default=str) + "\n"
    if "--write" in sys.argv:
        SAVED.write_text(text)
        print(f"wrote {SAVED}: {len(records)} cases")
    else:
        print(text)
