"""The smallest sweep that trains and checkpoints: GELU and SwiGLU at ratio 4 (arms ``g4``,
``s4``), two seeds, four steps of a one-layer d_model 16 model on a facts corpus, a checkpoint
every step. The folder-promise tests (tests/cli/test_links.py) and the adversarial campaign
(benchmarks/campaign_rel.py) attack the files it writes."""

from __future__ import annotations

from typing import Any

CORPUS = "facts:subjects=24,relations=2,values=4,value_len=1"


def tiny_spec(name: str) -> dict[str, Any]:
    """The spec, named ``name`` (its progress lines read ``[name] ...``); a fresh copy each call."""
    return {
        "name": name, "control": "fixed-d-model", "reference": "g4", "seeds": [0, 1], "workers": 2,
        "threads_per_worker": 1,
        "base": {"model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                 "data": {"corpus": CORPUS, "tokenizer": "byte"},
                 "train": {"seq_len": 16, "batch_size": 4, "max_steps": 4, "warmup_steps": 0, "eval_every": 2,
                           "eval_tokens": 64, "checkpoint_every": 1, "keep_last": 4, "tensorboard": False,
                           "peak_flops": 1e11, "progress": "off"}},
        "arms": [{"name": "g4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
                 {"name": "s4", "ffn": {"kind": "swiglu", "rule": "ratio", "ratio": 4}}],
    }
