"""The memory result against a snapshot of its dicts (tests/data/memory_summary_snapshot.json, written
by the code before the result became a dataclass): same keys, same order, same values, same JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from paths import DATA
from result_checks import check_read_only_view, workload

from ffnlab.render import _json_default
from ffnlab.sizing.audit import entry_basis
from ffnlab.sizing.hf.structure import Structure
from ffnlab.sizing.memory.parallel import MemorySummary, memory_summary
from ffnlab.sizing.memory.structure import structure_memory
from ffnlab.sizing.zoo import find

SNAPSHOT = json.loads((DATA / "memory_summary_snapshot.json").read_text())


def _same(res: MemorySummary, expected: dict[str, Any]) -> None:
    assert isinstance(res, MemorySummary)
    got = res.as_dict()
    assert type(got) is dict
    assert list(got) == list(expected)  # the order of the keys, as the JSON shows them
    assert got == expected
    assert json.dumps(got, indent=2) == json.dumps(expected, indent=2)
    # as the command writes it: the result itself, through render's JSON default
    assert json.dumps(res, indent=2, default=_json_default) == json.dumps(expected, indent=2)
    check_read_only_view(res, expected, "peak_bytes")
    # the typed fields hold what the keys show
    assert res.layout.as_dict() == expected["layout"] and res.peak_bytes == expected["peak_bytes"]
    assert res.counted_by_structure == ("cache_rule" in expected)


@pytest.mark.parametrize("name", sorted(SNAPSHOT["config"]))
def test_memory_summary_matches_the_snapshot(name: str) -> None:
    case = SNAPSHOT["config"][name]
    work, lay, rest = workload(case["options"])
    assert not rest
    _same(memory_summary(entry_basis(find(case["model"])), work, lay), case["expected"])


@pytest.mark.parametrize("name", sorted(SNAPSHOT["structure"]))
def test_structure_memory_matches_the_snapshot(name: str) -> None:
    case = SNAPSHOT["structure"][name]
    s = Structure.from_dict(SNAPSHOT["structures"][case["model"]])
    work, lay, rest = workload(case["options"])
    assert not rest
    _same(structure_memory(s, work, lay), case["expected"])


def test_both_results_have_one_type_and_its_keys() -> None:
    """memory_summary and structure_memory return one type: every key either JSON object has is a
    field, and the keys they share are the fields both set."""
    from dataclasses import fields

    # either result's with an engine (--engine), host memory with --offload or a paged optimizer: none in the snapshots
    engine_only = {"trainer", "offload", "host_bytes", "host_terms"}
    names = [f.name for f in fields(MemorySummary) if f.name not in engine_only]
    config = next(iter(SNAPSHOT["config"].values()))["expected"]
    structure = next(iter(SNAPSHOT["structure"].values()))["expected"]
    assert [k for k in names if k in config] == list(config)  # a config's keys in the fields' order
    assert set(names) == set(config) | set(structure)
    assert set(config) ^ set(structure) == MemorySummary.OMITTED_WHEN_NONE - engine_only
