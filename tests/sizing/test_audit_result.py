"""The audit row against a snapshot of its dicts (tests/data/audit_rows_snapshot.json, written by the
code before the row became a dataclass): same keys, same order, same values, same JSON, for both
counting paths (a translated config, a structure counted through transformers or stored in the
zoo) and an estimate; and the rows as ``ffnlab audit --json`` writes them, memory and fine-tuning
keys included."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from paths import DATA, HELPERS
from result_checks import check_read_only_view

from ffnlab.render import _json_default
from ffnlab.sizing.audit import AuditRow, audit, audit_config, audit_entry, entry_basis, memory_of
from ffnlab.sizing.audit_row import COUNTED_FIELDS
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import plain
from ffnlab.sizing.size import Alignment
from ffnlab.sizing.zoo import find

SNAPSHOT_PATH = DATA / "audit_rows_snapshot.json"

# zoo entries: translated configs (dense, GQA, MoE, MLA + MTP, encoder-decoder), stored structures
# (counted through transformers once), an estimate without an architecture
ZOO = ("gpt2", "llama-7b", "mistral-7b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "t5-small",
       "gemma-3-4b", "llama-4-scout", "gpt-oss-20b", "gpt-4-rumoured", "longcat-flash-chat", "jamba-v0.1",
       "qwen3-next-80b-a3b", "kimi-linear-48b-a3b", "lfm2-1.2b", "nemotron-nano-12b-v2-base")

# config.json files ffnlab translates (a MoE without its top-k: those figures unknown)
CONFIGS: dict[str, dict[str, Any]] = {
    "llama-config": {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000},
    "mixtral-no-top-k": {"model_type": "mixtral", "hidden_size": 128, "intermediate_size": 256,
                         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                         "vocab_size": 500, "num_local_experts": 4},
}

# config.json files only transformers counts (built on the meta device)
COUNTED: dict[str, dict[str, Any]] = {
    "persimmon-counted": {"model_type": "persimmon", "hidden_size": 64, "intermediate_size": 96,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
                          "max_position_embeddings": 128, "pad_token_id": 0, "bos_token_id": 0,
                          "eos_token_id": 0},
}

# ``ffnlab audit ... --json``: the rows with the keys the command adds (memory, finetune, their errors)
CLI: dict[str, tuple[str, ...]] = {
    "cli-errors-finetune": ("gpt-4-rumoured", "longcat-flash-chat", "llama-7b", "mixtral-8x7b", "--finetune",
                            "lora"),
    "cli-memory-error": ("gpt-4-rumoured", "llama-7b", "--tp", "3"),
}

CASES = sorted([*(f"zoo-{n}" for n in ZOO), *(f"config-{n}" for n in ZOO[:3]), *CONFIGS, *COUNTED, *CLI])


def _write(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def compute(name: str, tmp_path: Path) -> Any:
    """The row (or, for a command, the rows as JSON) of the case ``name``."""
    if name.startswith("zoo-"):
        return audit_entry(find(name[4:]))
    if name.startswith("config-"):  # audit_config on a zoo entry's translated config
        e = find(name[7:])
        cfg = entry_basis(e)
        return audit_config(cfg, name=e.name, model_type=e.model_type, source=e.source,  # type: ignore[arg-type]
                            family=e.family, note=e.note)
    if name in CONFIGS:
        row = audit(_write(tmp_path, name, CONFIGS[name]))
        return replace(row, source="config.json")  # the path of the temporary folder varies
    if name in COUNTED:
        pytest.importorskip("transformers")
        from ffnlab.training.hf_count import count_with_transformers

        row = audit(_write(tmp_path, name, COUNTED[name]), count_with_transformers)
        return replace(row, source="config.json")
    from cli_run import run_json

    return run_json("audit", *CLI[name])


def _plain(res: Any) -> Any:
    return json.loads(json.dumps(res, default=_json_default))


SNAPSHOT = json.loads(SNAPSHOT_PATH.read_text()) if SNAPSHOT_PATH.exists() else {}


def test_the_snapshot_has_every_case() -> None:
    assert sorted(SNAPSHOT) == CASES


@pytest.mark.parametrize("name", CASES)
def test_audit_row_matches_the_snapshot(name: str, tmp_path: Path) -> None:
    res, expected = compute(name, tmp_path), SNAPSHOT[name]
    got = _plain(res)
    rows, want = (got, expected) if name in CLI else ([got], [expected])
    for r, w in zip(rows, want, strict=True):
        assert list(r) == list(w)  # the order of the keys, as the JSON shows them
    assert got == expected
    # as the command writes it: the result itself, through render's JSON default
    assert json.dumps(res, indent=2, default=_json_default) == json.dumps(expected, indent=2)
    if name in CLI:
        return
    # one typed row for both counting paths, its alignment typed too
    assert isinstance(res, AuditRow) and res.as_dict() == plain(res) == expected
    assert (res.counted_by is not None) == ("counted_by" in expected)
    assert (res.counted_by is None) == COUNTED_FIELDS.isdisjoint(expected)
    assert res.alignment is None or (isinstance(res.alignment, Alignment)
                                     and res.alignment.as_dict() == expected["alignment"])
    check_read_only_view(res, expected, "d_ff")
    assert "memory" not in res.as_dict() and "finetune" not in res.as_dict()
    assert res.params_total == expected["params_total"] and res.verdict == expected["verdict"]


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


if __name__ == "__main__":  # rewrite the snapshot (only ever with the code before the dataclasses)
    import sys
    import tempfile

    sys.path.insert(0, str(HELPERS))
    with tempfile.TemporaryDirectory() as tmp:
        SNAPSHOT_PATH.write_text(json.dumps({n: _plain(compute(n, Path(tmp))) for n in CASES}, indent=2) + "\n")
