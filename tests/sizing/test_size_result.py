"""The ``size`` result read one way: a frozen dataclass by attribute, its ``as_dict()`` the JSON
that ``ffnlab size --json`` prints for the same inputs (the oracle: tests/golden/size.json,
written by tools/golden.py), keys in order; the command's own key (finetune) last."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from result_checks import check_read_only_view, golden

from ffnlab.render import _json_default
from ffnlab.sizing.audit import entry_basis
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.size import Alignment, ModelSummary, SizeSummary, size_model, size_summary
from ffnlab.sizing.widths import alignment, make_rule
from ffnlab.sizing.zoo import find


def _without_memory(d: dict) -> dict:
    return {**d, "model": {k: v for k, v in d["model"].items() if k != "memory"}}


def test_a_width_is_what_size_prints() -> None:
    res = size_summary(4096, "swiglu", make_rule(rule="llama"))
    expected = golden("size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama")
    assert isinstance(res, SizeSummary) and isinstance(res.alignment, Alignment) and res.model is None
    check_read_only_view(res, expected, "d_ff")
    assert json.dumps(res, default=_json_default) == json.dumps(expected)
    assert res.d_ff == expected["d_ff"] and res.alignment.as_dict() == expected["alignment"]


def test_a_model_is_what_size_from_prints_with_its_memory_and_without() -> None:
    """``--engine ffnlab`` prices the Workload's own defaults; the command adds the engine's name
    (``trainer``) to the memory object, the function has none. Without a workload, no memory key."""
    cfg = entry_basis(find("llama-3-8b"))
    expected = golden("size", "--from", "llama-3-8b", "--engine", "ffnlab")
    expected["model"]["memory"] = {k: v for k, v in expected["model"]["memory"].items() if k != "trainer"}
    res = size_model(cfg, "llama-3-8b", None, None, workload=Workload())  # type: ignore[arg-type]
    assert isinstance(res, SizeSummary) and isinstance(res.model, ModelSummary) and res.from_model == "llama-3-8b"
    check_read_only_view(res, expected, "d_ff")
    assert res.model.params.total == expected["model"]["params"]["total"]
    assert res.model.as_dict() == expected["model"] and "from_model" not in res.as_dict()
    bare = size_model(cfg, "llama-3-8b", None, None)  # type: ignore[arg-type]
    assert bare.model is not None and bare.model.memory is None
    assert json.dumps(bare.as_dict()) == json.dumps(_without_memory(golden("size", "--from", "llama-3-8b")))


@pytest.mark.parametrize("d_ff", [1, 3, 64, 96, 128, 2730, 11008, 14336, 28672])
def test_alignment_is_the_widths_alignment(d_ff: int) -> None:
    assert Alignment.of(d_ff).as_dict() == alignment(d_ff)


def test_finetune_is_the_last_key() -> None:
    """``size --finetune`` sets ``finetune`` with ``dataclasses.replace``: it comes after ``model``."""
    res = size_model(entry_basis(find("llama-3-8b")), "llama-3-8b", None, None,  # type: ignore[arg-type]
                     workload=Workload())
    with_ft = replace(res, finetune={"mode": "lora"})
    assert list(with_ft.as_dict()) == [*res.as_dict(), "finetune"]
    assert list(golden("size", "--from", "llama-3-8b", "--finetune", "lora", "--engine", "ffnlab")) == list(
        with_ft.as_dict())
    assert with_ft.as_dict()["finetune"] == {"mode": "lora"} and "finetune" not in res.as_dict()
