"""The sizing results typed last (explain, fine-tuning, serving capacity, claims) against what
the dicts they replace gave.

Oracles: tests/data/typed_results_snapshot.json, written by the code before these results became
dataclasses (same keys, same order, same values, same JSON); and a planted result for the one new
rule of the dict view (a field that is a key of the view but not of the JSON).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from paths import DATA, SRC
from result_checks import check_read_only_view

from ffnlab.render import _json_default
from ffnlab.sizing.claims import ClaimCheck, check_claims, load_claims
from ffnlab.sizing.explain import Explanation, WidthExplained, explain
from ffnlab.sizing.finetune import FinetuneOptions, FinetuneSummary, LoraCount, finetune_summary
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result, plain
from ffnlab.sizing.serving import Capacity, capacity
from ffnlab.sizing.zoo import find

SNAPSHOT = json.loads((DATA / "typed_results_snapshot.json").read_text(encoding="utf-8"))

# the arguments the snapshot was written with (its keys name them)
FINETUNE: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "llama-3-8b-lora": ("llama-3-8b", {"mode": "lora"}, {}),
    "llama-3-8b-qlora-r64-ckpt": ("llama-3-8b", {"mode": "qlora", "rank": 64}, {"recompute": "full", "batch": 4}),
    "mistral-7b-lora-ffn-int8": ("mistral-7b", {"mode": "qlora", "targets": ("ffn",), "base_format": "int8"},
                                 {"seq_len": 4096}),
    "mixtral-attn-lora": ("mixtral-8x7b", {"mode": "lora", "targets": ("attention",)},
                          {"dtype": "fp32", "optimizer": "sgd"}),
}
CAPACITY = {"llama-2-7b-80g": ("llama-2-7b", 80 * 2**30, 4096), "mistral-7b-80g": ("mistral-7b", 80 * 2**30, 8192),
            "llama-2-70b-100g": ("llama-2-70b", 100 * 2**30, 4096)}


def _same(res: Result, expected: Any) -> None:
    """``res`` is the snapshot: as plain data, as JSON (keys in order), as the CLI writes it."""
    got = plain(res)
    assert got == expected
    assert json.dumps(got, indent=1) == json.dumps(expected, indent=1)
    assert json.dumps(res, indent=1, default=_json_default) == json.dumps(expected, indent=1)


def test_the_snapshot_covers_every_case() -> None:
    assert set(SNAPSHOT["finetune"]) == set(FINETUNE) and set(SNAPSHOT["capacity"]) == set(CAPACITY)
    assert len(SNAPSHOT["explain"]) >= 10


@pytest.mark.parametrize("name", sorted(SNAPSHOT["explain"]))
def test_explain_matches_the_snapshot(name: str) -> None:
    d_model, d_ff, kind = name.split("-")
    res = explain(int(d_model), int(d_ff), kind)
    expected = SNAPSHOT["explain"][name]
    _same(res, expected)
    assert isinstance(res, WidthExplained) and all(isinstance(r, Explanation) for r in res.rules)
    assert [r.describe for r in res.rules] == [r["describe"] for r in expected["rules"]]
    assert res.alignment.pow2_divisor == expected["alignment"]["pow2_divisor"]
    check_read_only_view(res, expected, "d_ff")


def test_the_snapshot_has_widths_with_and_without_an_explanation() -> None:
    counts = [len(v["rules"]) for v in SNAPSHOT["explain"].values()]
    assert 0 in counts and max(counts) >= 2


@pytest.mark.parametrize("name", sorted(FINETUNE))
def test_finetune_summary_matches_the_snapshot(name: str) -> None:
    model, opts, kw = FINETUNE[name]
    res = finetune_summary(find(model).config(), Workload(finetune=FinetuneOptions(**opts), **kw))
    expected = SNAPSHOT["finetune"][name]
    _same(res, expected)
    assert isinstance(res, FinetuneSummary) and isinstance(res.lora, LoraCount)
    assert res.peak.peak_bytes == expected["peak"]["peak_bytes"]
    assert plain(res.peak.peak_alive) == expected["peak"]["peak_alive"]
    assert res.states.total == expected["states"]["total"]
    check_read_only_view(res, expected, "mode")


@pytest.mark.parametrize("name", sorted(CAPACITY))
def test_capacity_matches_the_snapshot(name: str) -> None:
    model, usable, context = CAPACITY[name]
    res = capacity(find(model).config(), Layout(), usable_bytes=usable, context=context)
    assert isinstance(res, Capacity)
    _same(res, SNAPSHOT["capacity"][name])


def test_a_sliding_window_model_has_any_context_in_the_snapshot() -> None:
    assert SNAPSHOT["capacity"]["mistral-7b-80g"]["max_context_at_batch_1"] is None  # Mistral 7B v0.1 slides
    assert SNAPSHOT["capacity"]["llama-2-7b-80g"]["max_context_at_batch_1"] > 4096


def test_claim_rows_keep_their_keys_and_name_their_source_text() -> None:
    rows = check_claims()
    assert all(isinstance(r, ClaimCheck) for r in rows)
    assert [list(r.as_dict()) for r in rows] == [SNAPSHOT["claims"]["keys"]] * len(rows)
    assert {r.id: r.as_dict()["seed"] for r in rows} == SNAPSHOT["claims"]["sources"]
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
