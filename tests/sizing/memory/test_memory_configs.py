"""Config keys the memory model reads, against transformers' own config classes."""

from __future__ import annotations

import pytest
from cli_run import run

from ffnlab.sizing.hf import from_hf_dict
from ffnlab.sizing.memory.activations import kv_cache


def gemma3(**extra):
    return {"model_type": "gemma3_text", "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 12,
            "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 1000,
            "sliding_window": 512, **extra}


@pytest.mark.parametrize("pattern", [None, 2, 3, 1])
def test_gemma3_sliding_window_pattern_as_transformers_reads_it(pattern: int | None) -> None:
    from transformers import Gemma3TextConfig

    extra = {} if pattern is None else {"sliding_window_pattern": pattern}
    raw = gemma3(**extra)
    hf = Gemma3TextConfig(**{k: v for k, v in raw.items() if k != "model_type"})
    want = ["sliding" if t == "sliding_attention" else "full" for t in hf.layer_types]
    cfg = from_hf_dict(raw)
    assert cfg.attention_layers() == want
    # the KV cache at 32k follows: global layers hold the context, local ones the window
    per_layer = 2 * 1 * 256 * 2
    expected = sum(per_layer * (512 if k == "sliding" else 32768) for k in want)
    assert kv_cache(cfg, batch=1, context=32768).total == expected


def test_cohere2_sliding_window_pattern() -> None:
    from transformers import Cohere2Config

    raw = {"model_type": "cohere2", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 6,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "sliding_window": 64,
           "sliding_window_pattern": 3}
    hf = Cohere2Config(**{k: v for k, v in raw.items() if k != "model_type"})
    want = ["sliding" if t == "sliding_attention" else "full" for t in hf.layer_types]
    assert from_hf_dict(raw).attention_layers() == want


def test_fit_warns_past_max_position_embeddings() -> None:
    p = run("fit", "llama-2-7b", "--gpus", "8", "--gpu", "H100", "--seq-len", "8192")
    assert p.returncode == 0
    assert "max_position_embeddings 4,096" in p.stderr
    quiet = run("fit", "llama-2-7b", "--gpus", "8", "--gpu", "H100", "--seq-len", "4096")
    assert "max_position_embeddings" not in quiet.stderr
