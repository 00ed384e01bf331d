"""A second adversarial pass over the CLI's input promises, with inputs new to the suite (written
by someone who did not write the fixes they check), kept as tests.

The pass threw: 43 sweep specs and train configs, each to ``sweep`` and ``train`` (86 calls: JSON
nested 50,000 deep, 1e400, Infinity, NaN, a 5,000-digit seed, a lone surrogate, a BOM, keys
given twice inside an arm, names with RTL marks, newlines, NUL and ``../``; YAML nested 20,000
deep, a list bomb of anchors, merge keys from a list of maps, python/object and binary tags, two
documents, complex and integer keys, hex and sexagesimal seeds, a 400-digit seed, 100,000 seeds,
-.inf and .NaN, a 3 MB name, 20,000 arms through one anchor, a self-merging anchor, non-UTF-8);
35 spellings of a number (suffix forms 1.5k, 1kk, 1e3k, 1Ki, -0k, 1 k; fullwidth, superscript,
Roman and mathematical digits; 1,000, 2**10, 0b101, 1/2, 0x1p4, nan(123), 1e999, a zero-width
space inside) on nine size and total flags of size, fit, plan and audit, with and without --json
(630 calls); two ``train`` processes started at once on one new folder (6 times) and two refused
for a short corpus under one new parent (6 times). Every refusal was one ``error:`` line with exit
2 that wrote nothing, every --json answer strict JSON, every race one run and one "another ffnlab
train is running" with no temporary left. A sample of each runs here.
"""

from __future__ import annotations

import json
import re

import pytest
from fuzz_cli import cli, snapshot

BASE = {"name": "adv2", "control": "fixed-d-model", "seeds": [0],
        "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2},
                 "train": {"seq_len": 16, "batch_size": 4, "max_steps": 2}},
        "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 2}}]}
SPEC = json.dumps(BASE)
YAML_HEAD = "name: adv2\nseeds: [0]\narms: [{name: a, ffn: {kind: gelu, rule: ratio, ratio: 2}}]\n"

FILES = {  # file name -> (text, a fragment of the one error line)
    "deep.json": ('{"name": "x", "base": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
    "ratio-1e400.json": (SPEC.replace('"ratio": 2', '"ratio": 1e400'), "finite"),
    "seed-5000-digits.json": (SPEC.replace('"seeds": [0]', '"seeds": [' + "9" * 5000 + "]"), "more than 4,300 digits"),
    "dup-in-arm.json": (SPEC.replace('"kind": "gelu"', '"kind": "gelu", "kind": "relu"'), "duplicate key 'kind'"),
    "name-newline.json": (SPEC.replace('"name": "a"', '"name": "a\\nerror: fake"'), "arm name"),
    "name-rtl.json": (SPEC.replace('"name": "a"', '"name": "\\u202egnp.exe"'), "arm name"),
    "deep.yaml": ("name: x\nbase: " + "[" * 20_000 + "]" * 20_000 + "\n", ""),
    "list-bomb.yaml": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True))
        + "name: x\n", ""),
    "python-tag.yaml": (YAML_HEAD + "extra: !!python/object/apply:os.system ['echo pwned > pwned.txt']\n", ""),
    "binary-tag.yaml": (YAML_HEAD + "base: {train: {seq_len: !!binary aGVsbG8=}}\n", ""),
    "two-documents.yaml": (YAML_HEAD + "---\nname: other\n", ""),
    "seed-400-digits.yaml": (YAML_HEAD.replace("seeds: [0]", "seeds: [" + "9" * 400 + "]"), "seeds"),
    "self-merge.yaml": ("a: &a {<<: *a}\n", ""),
    "arms-20000-by-anchor.yaml": ("name: x\nseeds: [0]\narms: [&arm {name: a, ffn: {kind: gelu, rule: ratio, "
                                  "ratio: 2}}, " + ",".join(["*arm"] * 19_999) + "]\n", ""),
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("command", ["sweep", "train"])
def test_a_hostile_spec_or_config_is_one_error_line_and_writes_nothing(tmp_path, name, command):
    text, fragment = FILES[name]
    (tmp_path / name).write_text(text)
    before = snapshot(tmp_path)
    r = cli(command, name, "--out", "out", where=tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert len(lines[0]) < 1000 and (command == "train" or fragment in lines[0]), lines[0]
    assert snapshot(tmp_path) == before


SPELLINGS = ["1kk", "-2k", "\uff11\uff12", "1,000", "2**10", "0b101", "1/2", "nan(123)", "1e999", "-0k",
             "\u2075", "\u216b", "\U0001d7d5", "4k.", "k", "1 k", "1\u200bk", "0x1p4"]
FLAGS = [(["size", "--d-model", "512", "--ratio", "4"], "--n-layers"), (["fit", "gpt2", "--gpus", "8"], "--tokens"),
         (["plan", "125M"], "--vocab")]


@pytest.mark.parametrize("base, flag", FLAGS, ids=[f"{b[0]}{f}" for b, f in FLAGS])
def test_a_number_no_parser_reads_is_one_error_line(tmp_path, base, flag):
    for value in SPELLINGS:
        r = cli(*base, flag, value, "--json", where=tmp_path)
        lines = [x for x in r.stderr.splitlines() if x.strip() and not re.match(r"note: \S+ \S+ read as ", x)]
        assert r.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (flag, value, r.stderr)
    assert list(tmp_path.iterdir()) == []


def test_two_trainers_refused_at_once_under_one_new_parent_leave_nothing_of_theirs(tmp_path):
    """Both refused (too short a corpus, or the other holds the run's lock) while racing to make
    the same new parent and run folder: one line each, and neither leaves its run folder or a
    temporary behind."""
    import os
    import subprocess
    import sys

    (tmp_path / "tiny.txt").write_text("to be or not to be, " * 3)
    out = tmp_path / "new" / "deeper" / "run"
    argv = [sys.executable, "-m", "ffnlab", "train", "--out", str(out), "--set", f"data.corpus={tmp_path / 'tiny.txt'}",
            "--set", f"data.cache_dir={tmp_path / 'cache'}", "--set", "train.seq_len=64", "--set", "train.progress=off"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    racers = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
              for _ in range(2)]
    for p in racers:
        _, err = p.communicate(timeout=300)
        lines = [x for x in err.splitlines() if x.strip()]
        assert p.returncode == 2 and len(lines) == 1, err[-2000:]
        assert "too few" in lines[0] or "another ffnlab train is running" in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".ffnlab-tmp")]
