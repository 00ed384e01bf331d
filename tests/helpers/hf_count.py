"""Count the parameters of transformers' own model for a config.json dict (meta device)."""

from __future__ import annotations

from typing import Any

# multimodal model types: only the language model and its head are compared (ffnlab counts the
# text_config); transformers names those parameters "...language_model..." and "lm_head..."
MULTIMODAL = ("gemma3", "llama4", "mistral3", "qwen2_5_vl")


def hf_param_count(config: dict[str, Any]) -> tuple[int, bool]:
    """Return (unique parameter count, whether transformers tied an LM head the config left untied)."""
    import torch
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        T5ForConditionalGeneration,
    )

    d = dict(config)
    mt = d.pop("model_type")
    # the classes' default token ids can lie outside a tiny test vocabulary: transformers only warns
    # of bos/eos, so they are set here; a pad_token_id indexes the embedding (refused outside it),
    # so it is left as the config has it (the cases write one where the class default lies outside)
    for key in ("bos_token_id", "eos_token_id", "decoder_start_token_id"):
        d.setdefault(key, 0)
    if mt in MULTIMODAL and isinstance(d.get("text_config"), dict):
        d["text_config"] = {
            "bos_token_id": 0,
            "eos_token_id": 0,
            **d["text_config"],
        }
    cfg = AutoConfig.for_model(mt, **d)
    with torch.device("meta"):
        if mt == "t5":
            model = T5ForConditionalGeneration(cfg)
        elif mt in MULTIMODAL:
            model = AutoModelForImageTextToText.from_config(cfg)
        else:
            model = AutoModelForCausalLM.from_config(cfg)
    if mt in MULTIMODAL:  # named_parameters() yields shared tensors once, under their first name
        n = sum(
            p.numel()
            for name, p in model.named_parameters()
            if name.startswith("lm_head.") or "language_model." in name
        )
    else:
        n = sum(p.numel() for p in model.parameters())  # parameters() yields shared tensors once
    forced_tie = False
    if mt == "t5" and config.get("tie_word_embeddings") is False:
        forced_tie = model.lm_head.weight is model.shared.weight
    return n, forced_tie
