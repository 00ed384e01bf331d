"""config.json read as transformers 5.25 reads it (``PreTrainedConfig._dict_from_json_file``:
``json.loads`` of the text, then the tagged special floats decoded), beyond the ninth pass's kept
files: the oracle is transformers' own reader of the same bytes and its build of what it read
(``hf_counts_all.reference``); audit must count what it builds and refuse what it refuses.

* a key given twice in one object: ``json.loads`` keeps the last value; audit reads it so and says
  which keys (a note, on stderr beside the table and in the --json row), while ffnlab's own files
  (sweep specs, claims evidence) still refuse a key given twice;
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from hf_counts_all import reference  # noqa: E402

_SMALL = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
          "intermediate_size": 32, "vocab_size": 100}
_MAMBA2: dict[str, Any] = {"model_type": "mamba2", "hidden_size": 64, "num_heads": 8, "head_dim": 16, "n_groups": 1,
                           "state_size": 16, "num_hidden_layers": 2, "vocab_size": 100, "expand": 2}


def _members(config: dict[str, Any]) -> str:
    return ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in config.items())


def _transformers_reads(path: Path) -> dict[str, Any]:
    """transformers' verdict on the config.json at ``path``: its reader, then its build."""
    from transformers import PreTrainedConfig

    try:
        data = PreTrainedConfig._dict_from_json_file(path)
    except Exception as e:  # noqa: BLE001 - any failure to read is a refusal
        return {"refused": f"{type(e).__name__}: {e}"[:200]}
    if not isinstance(data.get("model_type"), str):
        return {"refused": "no model_type"}
    return reference(data)


def _audit(path: Path) -> Any:
    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.audit import audit
    from ffnlab.training.hf_count import count_with_transformers

    try:
        return audit(str(path), count_with_transformers)
    except FfnlabError as e:
        return e


def _as_transformers(tmp_path: Path, text: str) -> tuple[Any, dict[str, Any]]:
    """audit's row (or refusal) of ``text`` as a config.json, checked against transformers' verdict."""
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    ref, got = _transformers_reads(path), _audit(path)
    if "refused" in ref:
        assert isinstance(got, Exception), f"counted {got.params_total:,} where transformers refuses: {ref}"
        assert "\n" not in str(got)
    else:
        assert not isinstance(got, Exception), f"refused a model transformers builds ({ref['total']:,}): {got}"
        assert got.params_total == ref["total"], (got.params_total, ref)
    return got, ref


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ffnlab", *args], capture_output=True, text=True)


# -- a key given twice ------------------------------------------------------------------------------------

TWICE = {  # name -> config.json text with a key given twice
    "width-twice-last-larger": "{" + _members(_SMALL) + ', "hidden_size": 128}',
    "layers-three-times": "{" + _members(_SMALL) + ', "num_hidden_layers": 5, "num_hidden_layers": 3}',
    "model_type-twice-last-llama": '{"model_type": "gpt2", ' + _members(_SMALL) + "}",
    "model_type-twice-last-unknown": "{" + _members(_SMALL) + ', "model_type": "no_such_type"}',
    "nested-rope-type-twice": "{" + _members(_SMALL) + ', "rope_scaling": {"rope_type": "no_such", '
                              '"rope_type": "linear", "factor": 2.0}}',
    "nested-in-a-list": "{" + _members(_SMALL) + ', "extra": [{"a": 1, "a": 2}]}',
    "null-then-value": "{" + _members({**_SMALL, "intermediate_size": None}) + ', "intermediate_size": 48}',
    "value-then-null": "{" + _members(_SMALL) + ', "num_attention_heads": null}',
    "untranslated-mamba2": "{" + _members(_MAMBA2) + ', "num_hidden_layers": 3}',
}


@pytest.mark.parametrize("name", sorted(TWICE))
def test_a_key_given_twice_is_read_with_its_last_value_as_transformers_reads_it(tmp_path, name):
    _as_transformers(tmp_path, TWICE[name])


def test_a_key_given_twice_is_named_in_a_note(tmp_path):
    """Read with the last value, never silently: the row's note names the key (once, whatever the count)."""
    got, _ = _as_transformers(tmp_path, TWICE["layers-three-times"])
    assert got.note is not None and "'num_hidden_layers'" in got.note and "last value" in got.note
    assert got.note.count("num_hidden_layers") == 1
    once, _ = _as_transformers(tmp_path, "{" + _members(_SMALL) + "}")
    assert once.note is None or "twice" not in once.note


def test_the_cli_counts_a_config_with_a_key_twice_and_says_so(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(TWICE["width-twice-last-larger"])
    total = _transformers_reads(path)["total"]
    p = _cli("audit", str(path), "--json")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    row = row[0] if isinstance(row, list) else row
    assert row["params_total"] == total and "'hidden_size'" in row["note"]
    table = _cli("audit", str(path))
    assert table.returncode == 0 and "Traceback" not in table.stderr
    assert "'hidden_size'" in table.stdout + table.stderr


@pytest.mark.parametrize("name, text", [
    ("spec.json", '{"name": "x", "name": "y"}'),
    ("evidence.json", '{"claims": {}, "claims": {}}'),
])
def test_ffnlab_own_json_files_still_refuse_a_key_twice(tmp_path, name, text):
    """Only a model's config.json is read as transformers reads it: ffnlab's own files (sweep specs,
    claims evidence: files.read_data without ``duplicates``) still refuse a key given twice."""
    from ffnlab.errors import FfnlabError
    from ffnlab.files import read_data

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FfnlabError, match="duplicate key"):
        read_data(path, "file")
