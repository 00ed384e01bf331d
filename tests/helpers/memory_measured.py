"""Activation bytes measured on ffnlab's own modules, saved: ``tests/data/saved_tensor_bytes.json``.

Each record is a small model (``make_config`` keywords), a batch shape and attention kernel, and
the bytes autograd saved for backward in one forward pass on CPU in fp32
(``saved_tensors.saved_bytes``: saved_tensors_hooks, each storage once, parameters and
buffers left out). ``test_memory_measured.py`` checks ``sizing.memory.activation_memory``
against them without torch, so mutation testing (``make mutate``) judges each mutant in about a
second; it re-measures a sample live, so the file cannot drift from the modules unnoticed.
Regenerate after changing the modules in ``training/nn``:

    PYTHONPATH=src:tests/helpers python tests/helpers/memory_measured.py
"""

from __future__ import annotations

import json
from typing import Any

from paths import DATA

PATH = DATA / "saved_tensor_bytes.json"
BASE = dict(d_model=64, n_layers=2, n_heads=4, d_ff=160, vocab_size=97)
CASES: dict[str, dict[str, Any]] = {
    **{f"{k}-dense": dict(kind=k) for k in ("relu", "gelu", "gelu_tanh", "silu", "relu2", "swiglu", "geglu",
                                             "reglu", "glu", "bilinear")},
    "gelu-learned-layernorm-bias": dict(kind="gelu", positions="learned", norm="layernorm", bias=True),
    "swiglu-gqa": dict(kind="swiglu", n_kv_heads=2),
    "silu-mqa-rmsnorm": dict(kind="silu", n_kv_heads=1, norm="rmsnorm"),
    "relu2-layernorm-untied": dict(kind="relu2", norm="layernorm", tied_embeddings=False),
    "geglu-moe": dict(kind="geglu", n_experts=4, top_k=2),
    "swiglu-moe-shared": dict(kind="swiglu", n_experts=4, top_k=1, n_shared_experts=1),
    "gelu-moe-top3": dict(kind="gelu", n_experts=4, top_k=3),
    "reglu-3-layers-head-dim-8": dict(kind="reglu", n_layers=3, n_heads=8),
}
SHAPES = ({"batch": 2, "seq_len": 48, "attention": "fused"}, {"batch": 3, "seq_len": 20, "attention": "eager"})


def config(r: dict[str, Any]) -> Any:
    from memory_step_cases import ffnlab_config

    return ffnlab_config({**BASE, **r["model"]}, r["seq_len"])


def measure(r: dict[str, Any]) -> int:
    from saved_tensors import saved_bytes

    return saved_bytes(config(r), batch=r["batch"], seq_len=r["seq_len"], math_sdpa=r["attention"] == "eager")


def records() -> list[dict[str, Any]]:
    return [{"id": f"{name}-{s['attention']}", "model": model, **s} for name, model in CASES.items() for s in SHAPES]


def load() -> list[dict[str, Any]]:
    return json.loads(PATH.read_text())["records"]


def main() -> None:
    import torch

    saved = [{**r, "measured_bytes": measure(r)} for r in records()]
    lines = ",\n".join(json.dumps(r, sort_keys=True) for r in saved)
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(f'{{"torch": "{torch.__version__}", "records": [\n{lines}\n]}}\n')
    print(f"{len(saved)} records -> {PATH}")


if __name__ == "__main__":
    main()
