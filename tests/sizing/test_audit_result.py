"""The audit row read one way: a frozen dataclass by attribute, for both counting paths (a
translated config, a structure counted through transformers and stored in the zoo) and an
estimate, its ``as_dict()`` the row that ``ffnlab audit NAME --json`` prints (the oracle:
tests/golden/audit.json, written by tools/golden.py) less the keys the command adds, in order."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from result_checks import check_read_only_view, golden

from ffnlab.render import _json_default
from ffnlab.sizing.audit import AuditRow, audit_config, audit_entry, entry_basis, memory_of
from ffnlab.sizing.audit_row import COUNTED_FIELDS
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import plain
from ffnlab.sizing.size import Alignment
from ffnlab.sizing.zoo import find

# a translated config (dense, MoE), a stored structure, an estimate without an architecture
NAMES = ("gpt2", "mixtral-8x7b", "jamba-v0.1", "gpt-4-rumoured")


def _row(name: str) -> dict:
    (row,) = golden("audit", name)
    return {k: v for k, v in row.items() if k not in ("memory", "memory_error")}


@pytest.mark.parametrize("name", NAMES)
def test_the_row_is_what_audit_prints(name: str) -> None:
    res, expected = audit_entry(find(name)), _row(name)
    assert isinstance(res, AuditRow) and res.as_dict() == plain(res) == expected
    assert json.dumps(res, default=_json_default) == json.dumps(expected)
    assert (res.counted_by is not None) == ("counted_by" in expected)
    assert (res.counted_by is None) == COUNTED_FIELDS.isdisjoint(expected)
    assert res.alignment is None or (isinstance(res.alignment, Alignment)
                                     and res.alignment.as_dict() == expected["alignment"])
    check_read_only_view(res, expected, "d_ff")
    assert res.params_total == expected["params_total"] and res.verdict == expected["verdict"]


def test_a_translated_config_audits_as_its_zoo_entry() -> None:
    e = find("llama-7b")
    res = audit_config(entry_basis(e), name=e.name, model_type=e.model_type, source=e.source,  # type: ignore[arg-type]
                       family=e.family, note=e.note)
    assert json.dumps(res.as_dict()) == json.dumps(_row("llama-7b"))


def test_the_command_keys_follow_the_row_in_their_order() -> None:
    """``audit`` sets memory, finetune and their errors with ``dataclasses.replace``: after the
    row's own keys, memory first (None beside its error), then finetune, finetune_error,
    memory_error, as the command's dicts had them."""
    row = audit_entry(find("llama-7b"))
    own = list(row.as_dict())
    mem = memory_of(entry_basis(find("llama-7b")), Workload(seq_len=2048, dtype="bf16"))  # type: ignore[arg-type]
    assert list(replace(row, memory=mem).as_dict()) == [*own, "memory"]
    assert replace(row, memory=mem).as_dict()["memory"] == mem.as_dict()
    assert list(replace(row, memory_error="x").as_dict()) == [*own, "memory", "memory_error"]
    assert replace(row, memory_error="x").as_dict()["memory"] is None
    both = replace(row, finetune_error="f", memory_error="m")
    assert list(both.as_dict()) == [*own, "memory", "finetune", "finetune_error", "memory_error"]
    assert list(replace(row, memory=mem, finetune={"mode": "lora"}).as_dict()) == [*own, "memory", "finetune"]
    printed = golden("audit", "gpt-4-rumoured", "longcat-flash-chat", "llama-7b", "mixtral-8x7b", "--finetune", "lora")
    assert all(list(r)[:len(own)] == own for r in printed if r["name"] == "llama-7b")
