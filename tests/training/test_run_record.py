"""model.json as the record of the trained model: every config.yaml setting that changes the built
model's function is in it (model + build), and its ``build`` is read field by field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from ffnlab.errors import FfnlabError
from ffnlab.training import runconfig, trainer
from ffnlab.training.runfiles import read_run_model

VOCAB = 61
BASES = {  # a gated FFN with RoPE and RMSNorm, a plain one with learned positions and LayerNorm
    "swiglu-rope": {
        "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "ffn": {"kind": "swiglu"}},
        "train": {"seq_len": 16, "device": "cpu"},
    },
    "gelu-learned": {
        "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "ffn": {"kind": "gelu"}},
        "train": {"seq_len": 16, "device": "cpu"},
    },
}
EDITS = {  # config.yaml edits (dotted key: another valid value); a tuple edits several keys at once
    "model.d_model": 48,
    "model.n_layers": 2,
    "model.n_heads": 1,
    "model.n_kv_heads": 1,
    "model.head_dim": 8,
    "model.norm": "layernorm-nobias",
    "model.positions": "none",
    "model.tied_embeddings": False,
    "model.bias": True,
    "model.rope_theta": 500000.0,
    "model.norm_eps": 1e-3,
    "model.ffn.kind": "geglu",
    "model.ffn.ratio": 2,
    "model.ffn.multiple_of": 64,
    "model.ffn.rounding": "down",
    "model.ffn.bias": True,
    "model.ffn.aux_loss_coef": 0.5,
    "train.seq_len": 24,
    "train.seed": 7,
    ("model.ffn.n_experts", "model.ffn.top_k"): (4, 2),
}


def _edited(base: dict, keys: str | tuple[str, ...], values: object) -> dict:
    out = copy.deepcopy(base)
    for key, value in zip(*((keys, values) if isinstance(keys, tuple) else ((keys,), (values,))), strict=True):
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def _built(tree: dict) -> tuple[torch.nn.Module, dict]:
    """The model ``train`` builds for a config (trainer._build) and the record it writes of it."""
    cfg = runconfig.from_dict(tree)
    mcfg, _, model, _ = trainer._build(cfg, VOCAB, "cpu")
    return model, {"model": {**mcfg.to_dict(), "name": None}, "build": runconfig.build_settings(cfg)}


def _same_function(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """Whether two built models compute the same logits once they hold the same weights."""
    sa, sb = a.state_dict(), b.state_dict()
    if sa.keys() != sb.keys() or any(sa[k].shape != sb[k].shape for k in sa):
        return False
    b.load_state_dict(sa)
    idx = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return torch.equal(a.eval()(idx)[0], b.eval()(idx)[0])


@pytest.mark.parametrize("base", sorted(BASES))
def test_every_config_setting_that_changes_the_built_model_changes_its_record(base):
    # oracle: the built model's logits (same weights loaded), for one edit of each model setting
    # config.yaml holds; where they differ, model.json (model + build) must differ too, or an edit
    # made after training goes unnoticed by check_run_model
    model, record = _built(BASES[base])
    changed_function = []
    for keys, value in EDITS.items():
        try:
            other, other_record = _built(_edited(BASES[base], keys, value))
        except FfnlabError:  # an edit this base refuses (no model to compare)
            continue
        if not _same_function(model, other):
            changed_function.append(keys)
            assert other_record != record, (keys, value)
    # the oracle itself tells functions apart (norm_eps by 1e-3) and alike (an initial seed, a loss weight)
    assert {"model.n_heads", "model.norm_eps"} <= set(changed_function), changed_function
    assert not {"train.seed", "model.ffn.aux_loss_coef"} & set(changed_function), changed_function
    if base == "swiglu-rope":  # RoPE reads rope_theta; its tables are longer than the input
        assert "model.rope_theta" in changed_function and "train.seq_len" not in changed_function
    else:  # learned positions: a table of seq_len rows, no rope_theta
        assert "model.rope_theta" not in changed_function and "train.seq_len" in changed_function


def _run_with(tmp_path: Path, **top: object) -> Path:
    record = {
        "model": _built(BASES["swiglu-rope"])[1]["model"],
        "params": {"total": 10, "non_embedding": 5},
        "prepared_data": str(tmp_path),
        **top,
    }
    record["model"]["name"] = "swiglu-param-matched"
    (tmp_path / "model.json").write_text(json.dumps(record))
    return tmp_path


@pytest.mark.parametrize(
    "build, fragment",
    [
        ([1.0], "build must be a mapping"),
        ({"rope_theta": "1e4"}, "build.rope_theta"),  # a string, not a number
        ({"norm_eps": 0}, "build.norm_eps"),
        ({"norm_eps": -1e-5}, "build.norm_eps"),
        ({"rope_theta": True}, "build.rope_theta"),
        ({"max_seq_len": 16}, "unknown key 'max_seq_len'"),
    ],
)
def test_a_tampered_build_record_is_one_line(tmp_path, build, fragment):
    with pytest.raises(FfnlabError, match="model.json") as e:
        read_run_model(_run_with(tmp_path, build=build))
    assert fragment in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_model_json_without_build_or_with_some_of_it_reads_as_not_recorded(tmp_path):
    # runs written before the record was kept: None (nothing recorded), or the keys they hold
    assert read_run_model(_run_with(tmp_path)).build is None
    assert read_run_model(_run_with(tmp_path, build={"rope_theta": 1e4})).build == {"rope_theta": 1e4}
