"""``train``'s flags are typed values, not YAML text: ``--ratio 0x10`` was read as YAML 1.1's hex
integer 16 (``size --ratio 0x10`` refuses it), so the same ratio meant two things in two commands.
Flags are now set as given and checked by the same width rule as ``size``; ``--set`` stays YAML.
"""

from __future__ import annotations

import pytest
import yaml
from fuzz_cli import assert_refused, cli


@pytest.mark.parametrize("text", ["0x10", "0o20", "1_6", "0:16"])
def test_a_ratio_yaml_would_read_as_a_number_is_refused_as_size_refuses_it(tmp_path, text):
    trained = assert_refused(cli("train", "--ratio", text, "--print-config", where=tmp_path), "ratio must be a number")
    sized = assert_refused(cli("size", "--d-model", "512", "--ratio", text, where=tmp_path), "ratio must be a number")
    assert trained == sized


def test_flags_keep_their_values_and_win_over_set(tmp_path):
    r = cli("train", "--ratio", "8/3", "--lr", "0.001", "--set", "train.lr=0.5", "--set", "model.n_layers=3",
            "--print-config", where=tmp_path)
    assert r.code == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)
    assert cfg["model"]["ffn"]["ratio"] == "8/3" and cfg["train"]["lr"] == 0.001 and cfg["model"]["n_layers"] == 3


def test_set_values_are_still_yaml(tmp_path):
    r = cli("train", "--set", "model.ffn.ratio=0x10", "--set", "train.max_steps=1_0", "--print-config", where=tmp_path)
    assert r.code == 0, r.stderr
    cfg = yaml.safe_load(r.stdout)  # what a config file with these lines means: YAML 1.1 integers
    assert cfg["model"]["ffn"]["ratio"] == 16 and cfg["train"]["max_steps"] == 10
