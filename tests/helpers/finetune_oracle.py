"""peft's own count of a LoRA model: the oracle for ffnlab's adapter counts."""

from __future__ import annotations

import pytest


def peft_count(config: dict, rank: int, targets) -> tuple[int, int]:
    """peft's (trainable, total) for the model of ``config`` built on the meta device, with
    ``LoraConfig(r=rank, target_modules=targets)``."""
    pytest.importorskip("peft")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(config)
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    peft_model = get_peft_model(model, LoraConfig(r=rank, target_modules=targets))
    return peft_model.get_nb_trainable_parameters()
