"""The sizing results typed last (explain, fine-tuning, serving capacity, claims) read one way: a
frozen dataclass by attribute, its ``as_dict()`` what the command prints for the same inputs.

Oracles: the golden files (tests/golden/, written by tools/golden.py: ``explain``, ``size
--finetune``, ``fit --mode serve`` and ``claims``, each with ``--json``); and a planted result for
the one new rule of the dict view (a field that is a key of the view but not of the JSON).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from paths import SRC
from result_checks import check_read_only_view, golden

from ffnlab.render import _json_default
from ffnlab.sizing.claims import ClaimCheck, check_claims, load_claims
from ffnlab.sizing.explain import Explanation, WidthExplained, explain
from ffnlab.sizing.finetune import FinetuneOptions, FinetuneSummary, LoraCount, finetune_summary
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result, plain
from ffnlab.sizing.serving import Capacity, capacity
from ffnlab.sizing.zoo import find


def _same(res: Result, expected: Any) -> None:
    """``res`` is what the command printed: as plain data, as JSON (keys in order), as the CLI writes it."""
    got = plain(res)
    assert got == expected
    assert json.dumps(got, indent=1) == json.dumps(expected, indent=1)
    assert json.dumps(res, indent=1, default=_json_default) == json.dumps(expected, indent=1)


@pytest.mark.parametrize("d_model, d_ff, kind", [(768, 3072, "gelu"), (1000, 1008, "gelu"), (3072, 8192, "geglu"),
                                                 (2048, 8192, "swiglu")])
def test_explain_is_what_the_command_prints(d_model: int, d_ff: int, kind: str) -> None:
    res = explain(d_model, d_ff, kind)
    expected = golden("explain", "--d-model", str(d_model), "--d-ff", str(d_ff), "--ffn", kind)
    _same(res, expected)
    assert isinstance(res, WidthExplained) and all(isinstance(r, Explanation) for r in res.rules)
    assert [r.describe for r in res.rules] == [r["describe"] for r in expected["rules"]]
    assert res.alignment.pow2_divisor == expected["alignment"]["pow2_divisor"]
    check_read_only_view(res, expected, "d_ff")


def test_finetune_summary_is_what_size_prints() -> None:
    res = finetune_summary(find("llama-3-8b").config(),  # type: ignore[arg-type]
                           Workload(finetune=FinetuneOptions(mode="qlora", rank=64), recompute="full", batch=4))
    expected = golden("size", "--from", "llama-3-8b", "--finetune", "qlora", "--lora-rank", "64", "--recompute",
                      "full", "--batch", "4", "--engine", "ffnlab")["finetune"]
    _same(res, expected)
    assert isinstance(res, FinetuneSummary) and isinstance(res.lora, LoraCount)
    assert res.peak.peak_bytes == expected["peak"]["peak_bytes"]
    assert plain(res.peak.peak_alive) == expected["peak"]["peak_alive"]
    assert res.states.total == expected["states"]["total"]
    check_read_only_view(res, expected, "mode")


def test_capacity_is_what_fit_prints_for_its_layout() -> None:
    res = capacity(find("mistral-7b").config(), Layout(), usable_bytes=80 * 2**30, context=8192)  # type: ignore[arg-type]
    assert isinstance(res, Capacity)
    expected = golden("fit", "mistral-7b", "--gpu-memory", "80", "--reserve", "0", "--gpus", "1", "--mode", "serve",
                      "--seq-len", "8192")["serving"]["capacity"]
    _same(res, expected)
    assert expected["max_context_at_batch_1"] is None  # Mistral 7B v0.1 slides: any context fits


def test_claim_rows_keep_their_keys_and_name_their_source_text() -> None:
    rows = check_claims()
    printed = golden("claims")
    assert all(isinstance(r, ClaimCheck) for r in rows)
    assert [list(r.as_dict()) for r in rows] == [list(p) for p in printed]
    assert {r.id: r.as_dict()["seed"] for r in rows} == {p["id"]: p["seed"] for p in printed}
    sources = json.loads((SRC / "ffnlab" / "data" / "claims.json").read_text(encoding="utf-8"))["sources"]
    assert {r.source_text for r in rows} <= set(sources)
    assert len(rows) == len(load_claims())


@dataclass(frozen=True)
class _Planted(Result):
    NOT_JSON: ClassVar[frozenset[str]] = frozenset({"handle"})

    name: str
    handle: object
    counts: tuple[int, ...]


def test_a_field_outside_the_json_is_an_attribute_only() -> None:
    handle = object()
    r = _Planted("x", handle, (1, 2))
    assert r.as_dict() == {"name": "x", "counts": [1, 2]} and r.handle is handle
    with pytest.raises(TypeError):
        r["handle"]  # noqa: B018 - no dict view


@dataclass(frozen=True)
class _Written(Result):
    paths: dict[str, Path]
    names: tuple[str, ...]


def test_a_path_in_a_result_is_its_string_in_the_json() -> None:
    r = _Written(paths={"html": Path("reports") / "index.html"}, names=("a",))
    assert json.loads(json.dumps(r.as_dict())) == {"paths": {"html": "reports/index.html"}, "names": ["a"]}
