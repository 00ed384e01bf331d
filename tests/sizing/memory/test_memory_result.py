"""The memory result read one way: a frozen dataclass by attribute, its ``as_dict()`` the memory
object that ``ffnlab size --from MODEL --engine ffnlab --json`` prints (the oracle:
tests/golden/size.json; the command adds the engine's name, ``trainer``) or, for a stored
structure, tests/golden/api_structure_memory.json, keys in order."""

from __future__ import annotations

import json
from dataclasses import fields

from result_checks import check_read_only_view, golden, golden_api

from ffnlab.render import _json_default
from ffnlab.sizing.audit import entry_basis
from ffnlab.sizing.memory.parallel import Layout, MemorySummary, memory_summary
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find


def _config_memory() -> dict:
    mem = golden("size", "--from", "llama-3-8b", "--engine", "ffnlab")["model"]["memory"]
    return {k: v for k, v in mem.items() if k != "trainer"}


def test_the_memory_object_is_what_size_prints() -> None:
    res = memory_summary(entry_basis(find("llama-3-8b")), Workload(), Layout())  # type: ignore[arg-type]
    expected = _config_memory()
    assert isinstance(res, MemorySummary)
    assert json.dumps(res, default=_json_default) == json.dumps(expected)
    check_read_only_view(res, expected, "peak_bytes")
    assert res.layout.as_dict() == expected["layout"] and res.peak_bytes == expected["peak_bytes"]
    assert res.counted_by_structure is False


def test_both_results_have_one_type_and_its_keys() -> None:
    """memory_summary and structure_memory return one type: every key either JSON object has is a
    field, and the keys they share are the fields both set."""
    # either result's with an engine (--engine), host memory with --offload or a paged optimizer: none here
    engine_only = {"trainer", "offload", "host_bytes", "host_terms"}
    names = [f.name for f in fields(MemorySummary) if f.name not in engine_only]
    config, structure = _config_memory(), golden_api("structure_memory", "persimmon-default")
    assert [k for k in names if k in config] == list(config)  # a config's keys in the fields' order
    assert set(names) == set(config) | set(structure)
    assert set(config) ^ set(structure) == MemorySummary.OMITTED_WHEN_NONE - engine_only
