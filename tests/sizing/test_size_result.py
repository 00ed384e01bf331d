"""The ``size`` result against a snapshot of its dicts (tests/data/size_summary_snapshot.json, written
by the code before the result became a dataclass): same keys, same order, same values, same JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from paths import DATA
from result_checks import check_read_only_view, workload

from ffnlab.render import _json_default
from ffnlab.sizing.audit import entry_basis
from ffnlab.sizing.result import plain
from ffnlab.sizing.size import Alignment, ModelSummary, SizeSummary, size_model, size_summary
from ffnlab.sizing.widths import alignment, make_rule
from ffnlab.sizing.zoo import find

SNAPSHOT_PATH = DATA / "size_summary_snapshot.json"

# what the CLI's memory flags gave by default (the keyword arguments of memory_summary before the
# Workload and Layout), as JSON; result_checks.workload makes them a Workload and a Layout
CLI_MEMORY = {"batch": 1, "recompute": "none", "attention": "fused", "kv_dtype": None, "weights_dtype": None,
              "group_size": None, "grad_dtype": None, "optimizer": "adamw", "dropout": False,
              "sharding": {}, "step": {}, "lay": {}}


def _cli(**changes: Any) -> dict[str, Any]:
    return {**CLI_MEMORY, **changes}


# name: (function, its arguments as JSON); "rule": make_rule's keywords, "memory": memory_summary's
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "width-llama": ("size_summary", {"d_model": 4096, "kind": "swiglu", "rule": {"rule": "llama"}}),
    "width-moe": ("size_summary", {"d_model": 1024, "kind": "swiglu", "rule": {"ratio": "4"}, "n_experts": 4,
                                   "top_k": 1}),
    "model-untied": ("size_summary", {"d_model": 4096, "kind": "swiglu", "rule": {"rule": "llama"}, "n_layers": 32,
                                      "n_heads": 32, "vocab_size": 32000, "tied": False, "memory": _cli()}),
    "model-no-memory": ("size_summary", {"d_model": 768, "kind": "gelu", "rule": {"ratio": "4"}, "n_layers": 12}),
    "model-moe-plain-fp32": ("size_summary", {"d_model": 2048, "kind": "gelu", "rule": {"ratio": "4"},
                                              "n_layers": 16, "n_experts": 8, "top_k": 2, "dtype": "fp32",
                                              "seq_len": 1024, "memory": {"batch": 2}}),
    "model-learned-gqa": ("size_summary", {"d_model": 512, "kind": "swiglu", "rule": {"ratio": "8/3",
                                                                                       "multiple_of": 64},
                                           "n_layers": 4, "n_heads": 8, "n_kv_heads": 2, "norm": "layernorm",
                                           "positions": "learned", "bias": True, "memory": {"optimizer": "sgd"}}),
    "model-serving": ("size_summary", {"d_model": 2048, "kind": "swiglu", "rule": {"rule": "llama"},
                                       "n_layers": 16, "n_heads": 16, "memory": _cli(batch=4),
                                       "serving_on": "H100"}),
    "from-llama-3-8b": ("size_model", {"model": "llama-3-8b", "memory": _cli()}),
    "from-llama-3-8b-no-memory": ("size_model", {"model": "llama-3-8b"}),
    "from-llama-3-8b-gelu": ("size_model", {"model": "llama-3-8b", "kind": "gelu", "memory": _cli()}),
    "from-mixtral-ratio-3": ("size_model", {"model": "mixtral-8x7b", "rule": {"ratio": "3"}, "memory": _cli()}),
    "from-llama-2-7b-serving": ("size_model", {"model": "llama-2-7b", "seq_len": 4096, "memory": _cli(batch=8),
                                               "serving_on": "H100"}),
    "from-deepseek-v3-tp8-pp2-zero1": ("size_model", {"model": "deepseek-v3",
                                                      "memory": _cli(lay={"tp": 8, "pp": 2, "zero": 1})}),
    "from-gpt2-fp32": ("size_model", {"model": "gpt2", "dtype": "fp32", "memory": _cli(optimizer="adafactor")}),
}


def compute(name: str) -> Any:
    """The result of the case ``name``."""
    fn, args = CASES[name]
    a = dict(args)
    memory = a.pop("memory", None)
    if memory is not None:
        a["workload"], a["layout"], rest = workload({**memory, "seq_len": a.get("seq_len", 2048),
                                                     "dtype": a.get("dtype", "bf16")})
        assert not rest
    rule = make_rule(**a.pop("rule")) if "rule" in a else None
    if fn == "size_summary":
        return size_summary(a.pop("d_model"), a.pop("kind"), rule, **a)
    model = a.pop("model")
    return size_model(entry_basis(find(model)), model, rule, a.pop("kind", None), **a)


def _plain(res: Any) -> dict[str, Any]:
    out: dict[str, Any] = plain(res)  # a result's as_dict(), nested results included
    return out


SNAPSHOT = json.loads(SNAPSHOT_PATH.read_text()) if SNAPSHOT_PATH.exists() else {}


def test_the_snapshot_has_every_case() -> None:
    assert sorted(SNAPSHOT) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_size_result_matches_the_snapshot(name: str) -> None:
    res, expected = compute(name), SNAPSHOT[name]
    got = _plain(res)
    assert type(got) is dict
    assert list(got) == list(expected)  # the order of the keys, as the JSON shows them
    assert got == expected
    # as the command writes it: the result itself, through render's JSON default
    assert json.dumps(res, indent=2, default=_json_default) == json.dumps(expected, indent=2)
    # one typed result, its nested results typed too
    assert isinstance(res, SizeSummary) and isinstance(res.alignment, Alignment)
    assert (res.model is not None) == ("model" in expected) and (res.from_model is not None) == ("from" in expected)
    if res.model is not None:
        assert isinstance(res.model, ModelSummary)
        assert res.model.params.total == expected["model"]["params"]["total"]
        assert (res.model.memory is not None) == ("memory" in expected["model"])
        assert res.model.as_dict() == expected["model"]
    check_read_only_view(res, expected, "d_ff")
    assert "from_model" not in res.as_dict()
    assert res.d_ff == expected["d_ff"] and res.alignment.as_dict() == expected["alignment"]


@pytest.mark.parametrize("d_ff", [1, 3, 64, 96, 128, 2730, 11008, 14336, 28672])
def test_alignment_is_the_widths_alignment(d_ff: int) -> None:
    assert Alignment.of(d_ff).as_dict() == alignment(d_ff)


def test_finetune_is_the_last_key() -> None:
    """``size --finetune`` sets ``finetune`` with ``dataclasses.replace``: it comes after ``model``."""
    res = compute("from-llama-3-8b")
    with_ft = replace(res, finetune={"mode": "lora"})
    assert list(with_ft.as_dict()) == [*SNAPSHOT["from-llama-3-8b"], "finetune"]
    assert with_ft.as_dict()["finetune"] == {"mode": "lora"} and "finetune" not in res.as_dict()


if __name__ == "__main__":  # rewrite the snapshot (only ever with the code before the dataclasses)
    SNAPSHOT_PATH.write_text(json.dumps({n: _plain(compute(n)) for n in sorted(CASES)}, indent=2,
                                        default=_json_default) + "\n")
