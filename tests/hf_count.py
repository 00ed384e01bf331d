"""Count the parameters of transformers' own model for a config.json dict (meta device)."""

from __future__ import annotations

from typing import Any


def hf_param_count(config: dict[str, Any]) -> tuple[int, bool]:
    """Return (unique parameter count, whether transformers tied an LM head the config left untied)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, T5ForConditionalGeneration

    d = dict(config)
    mt = d.pop("model_type")
    for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        d.setdefault(key, 0)  # the classes' defaults can lie outside a tiny test vocabulary
    cfg = AutoConfig.for_model(mt, **d)
    with torch.device("meta"):
        model = T5ForConditionalGeneration(cfg) if mt == "t5" else AutoModelForCausalLM.from_config(cfg)
    n = sum(p.numel() for p in model.parameters())  # parameters() yields shared tensors once
    forced_tie = False
    if mt == "t5" and config.get("tie_word_embeddings") is False:
        forced_tie = model.lm_head.weight is model.shared.weight
    return n, forced_tie
