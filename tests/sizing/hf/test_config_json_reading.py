"""config.json read as transformers 5.25 reads it (``PreTrainedConfig._dict_from_json_file``:
``json.loads`` of the text, then the tagged special floats decoded), beyond the ninth pass's kept
files: the oracle is transformers' own reader of the same bytes and its build of what it read
(``hf_counts_all.reference``); audit must count what it builds and refuse what it refuses.

* a key given twice in one object: ``json.loads`` keeps the last value; audit reads it so and says
  which keys (a note, on stderr beside the table and in the --json row), while ffnlab's own files
  (sweep specs, claims evidence) still refuse a key given twice;
* the tagged special floats ``{"__float__": "Infinity" | "-Infinity" | "NaN"}`` that 5.25's
  ``save_pretrained`` writes (``_encode_special_floats``, used here to write them) are decoded as its
  reader decodes them, at any depth, translated types and types counted through transformers,
  local files and Hub downloads alike; any other tag (an unknown name, a number, a second key)
  stays an object, as transformers keeps it. (A sweep of the same kind over every translated
  type's default, 1,496 configs: the float fields, max_position_embeddings and rope_theta at each
  of the three values, a tagged list and dict, four malformed tags: all agree.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from hf_counts_all import reference, reference_of_file  # noqa: E402

_SMALL = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
          "intermediate_size": 32, "vocab_size": 100}
_MAMBA2: dict[str, Any] = {"model_type": "mamba2", "hidden_size": 64, "num_heads": 8, "head_dim": 16, "n_groups": 1,
                           "state_size": 16, "num_hidden_layers": 2, "vocab_size": 100, "expand": 2}


def _members(config: dict[str, Any]) -> str:
    return ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in config.items())


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
    ref, got = reference_of_file(path), _audit(path)
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
    total = reference_of_file(path)["total"]
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


# -- tagged special floats --------------------------------------------------------------------------------

def _tagged(config: dict[str, Any]) -> str:
    """``config`` as transformers' own save_pretrained writes it: its special floats tagged."""
    from transformers import PreTrainedConfig

    text = json.dumps(PreTrainedConfig._encode_special_floats(config))
    assert "Infinity" in text or "NaN" in text  # the tag is there to decode
    return text


INF, NAN = float("inf"), float("nan")
TAGGED: dict[str, dict[str, Any]] = {  # name -> a config with special floats (written tagged)
    "llama-rope_theta-inf": {**_SMALL, "rope_theta": INF},
    "llama-rope_theta-minus-inf": {**_SMALL, "rope_theta": -INF},
    "llama-rms_norm_eps-nan": {**_SMALL, "rms_norm_eps": NAN},
    "llama-initializer_range-inf": {**_SMALL, "initializer_range": INF},
    "llama-max_position_embeddings-inf": {**_SMALL, "max_position_embeddings": INF},
    "llama-rope-factor-inf": {**_SMALL, "rope_scaling": {"rope_type": "linear", "factor": INF}},
    "llama-rope-factor-nan": {**_SMALL, "rope_scaling": {"rope_type": "dynamic", "factor": NAN}},
    "llama-tag-in-a-list-in-a-dict": {**_SMALL, "extra": {"a": [0.0, {"b": [-INF, NAN]}]}},
    "gpt2-layer_norm_epsilon-inf": {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2,
                                    "vocab_size": 100, "layer_norm_epsilon": INF},
    "gptj-max_position_embeddings-inf": {"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 2,
                                         "rotary_dim": 8, "vocab_size": 100, "max_position_embeddings": INF},
    "gemma3-text_config-rope_theta-inf": {"model_type": "gemma3", "text_config": {
        "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "rope_theta": INF}},
    "mamba2-time_step_limit-default": {**_MAMBA2, "time_step_limit": [0.0, INF]},
    "mamba2-initializer_range-nan": {**_MAMBA2, "initializer_range": NAN},
}


@pytest.mark.parametrize("name", sorted(TAGGED))
def test_a_tagged_special_float_is_read_as_transformers_decodes_it(tmp_path, name):
    _as_transformers(tmp_path, _tagged(TAGGED[name]))


def test_a_tagged_float_counts_as_the_same_float_written_by_python_json(tmp_path):
    """The decoded tag and Python's own Infinity literal are one value: the same row."""
    config = TAGGED["llama-rope_theta-inf"]
    tagged, _ = _as_transformers(tmp_path, _tagged(config))
    literal, _ = _as_transformers(tmp_path, json.dumps(config))
    assert tagged.params_total == literal.params_total and tagged.note == literal.note


MALFORMED = {  # name -> a tag transformers' reader keeps as an object
    "unknown-name": {"__float__": "Banana"},
    "lower-case": {"__float__": "inf"},
    "a-number": {"__float__": 1},
    "a-second-key": {"__float__": "Infinity", "x": 1},
}


@pytest.mark.parametrize("key", ["rope_theta", "extra"])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_tag_transformers_does_not_decode_stays_an_object(tmp_path, name, key):
    """rope_theta an object: both refuse; an unused key holding it: both count."""
    got, ref = _as_transformers(tmp_path, json.dumps({**_SMALL, key: MALFORMED[name]}))
    assert ("refused" in ref) == (key == "rope_theta")


def test_a_config_transformers_saved_counts_through_its_translator(tmp_path):
    """A LlamaConfig saved by save_pretrained with an infinite rope_theta: the file holds the tag,
    and audit's translator (not the fallback) counts it as transformers builds it."""
    import transformers

    transformers.LlamaConfig(**{k: v for k, v in TAGGED["llama-rope_theta-inf"].items()
                                if k != "model_type"}).save_pretrained(tmp_path)
    assert '"__float__": "Infinity"' in (tmp_path / "config.json").read_text()
    from transformers import PreTrainedConfig

    ref = reference(PreTrainedConfig._dict_from_json_file(tmp_path / "config.json"))
    got = _audit(tmp_path / "config.json")
    assert not isinstance(got, Exception), got
    assert got.params_total == ref["total"] and got.counted_by is None


@pytest.mark.slow
def test_a_hub_config_with_tagged_floats_is_decoded(tmp_path):
    """A Hub download is read by the same reader: the row equals the local file's."""
    from fake_hub import FakeHub

    text = _tagged(TAGGED["mamba2-time_step_limit-default"])
    local = tmp_path / "local" / "config.json"
    local.parent.mkdir()
    local.write_text(text)
    fake = FakeHub()
    fake.add("org/mamba", {"main": {"config.json": text.encode()}})
    server, url = fake.serve()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
        env |= {"HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
                "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
        rows = [subprocess.run([sys.executable, "-m", "ffnlab", "audit", target, "--json"], capture_output=True,
                               text=True, env=env, timeout=600) for target in ("org/mamba", str(local))]
    finally:
        server.shutdown()
    for p in rows:
        assert p.returncode == 0, p.stderr
    hub_row, local_row = (json.loads(p.stdout)[0] for p in rows)
    assert hub_row["params_total"] == local_row["params_total"] == reference_of_file(local)["total"]
