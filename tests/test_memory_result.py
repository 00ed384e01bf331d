"""The memory result against a snapshot of its dicts (tests/data/memory_summary_snapshot.json, written
by the code before the result became a dataclass): same keys, same order, same values, same JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ffnlab.sizing.audit import entry_basis
from ffnlab.sizing.hf.structure import Structure
from ffnlab.sizing.memory.parallel import Layout, memory_summary
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.structure import structure_memory
from ffnlab.sizing.zoo import find

SNAPSHOT = json.loads((Path(__file__).parent / "data" / "memory_summary_snapshot.json").read_text())


def _options(opts: dict[str, Any]) -> dict[str, Any]:
    o = dict(opts)
    if "lay" in o:
        o["lay"] = Layout(**o["lay"])
    if "sharding" in o:
        o["sharding"] = Sharding(**o["sharding"])
    if "step" in o:
        o["step"] = StepOptions(**o["step"])
    return o


def _plain(res: Any) -> dict[str, Any]:
    return res.as_dict() if hasattr(res, "as_dict") else res


def _same(res: Any, expected: dict[str, Any]) -> None:
    got = _plain(res)
    assert type(got) is dict
    assert list(got) == list(expected)  # the order of the keys, as the JSON shows them
    assert got == expected
    assert json.dumps(got, indent=2) == json.dumps(expected, indent=2)


@pytest.mark.parametrize("name", sorted(SNAPSHOT["config"]))
def test_memory_summary_matches_the_snapshot(name: str) -> None:
    case = SNAPSHOT["config"][name]
    _same(memory_summary(entry_basis(find(case["model"])), **_options(case["options"])), case["expected"])


@pytest.mark.parametrize("name", sorted(SNAPSHOT["structure"]))
def test_structure_memory_matches_the_snapshot(name: str) -> None:
    case = SNAPSHOT["structure"][name]
    s = Structure.from_dict(SNAPSHOT["structures"][case["model"]])
    _same(structure_memory(s, **_options(case["options"])), case["expected"])
