"""Every command's answers against its golden file (tests/golden/COMMAND.json, written by
tools/golden.py): each invocation runs again here, in-process, and must print the same JSON and
exit with the same status. A deliberate change is a rewritten golden file in the same commit."""

from __future__ import annotations

import json

import pytest
from cli_inproc import run_cli
from paths import ROOT

GOLDEN = ROOT / "tests" / "golden"
SIZING_COMMANDS = ("size", "plan", "explain", "fit", "audit", "zoo", "claims", "table")


def _cases() -> list:
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        for i, case in enumerate(json.loads(path.read_text(encoding="utf-8"))["cases"]):
            out.append(pytest.param(path.stem, case, id=f"{path.stem}-{i}"))
    return out


def test_every_sizing_command_has_a_golden_file_of_its_own():
    docs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in GOLDEN.glob("*.json")}
    assert set(SIZING_COMMANDS) <= set(docs)
    for name, doc in docs.items():
        assert doc["command"] == name and doc["cases"], name
        assert all(c["args"][0] == name and "--json" in c["args"] and "json" in c for c in doc["cases"]), name


@pytest.mark.parametrize("command, case", _cases())
def test_the_command_answers_as_its_golden_file_says(capsys, monkeypatch, command, case):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    got = run_cli(capsys, *case["args"])
    assert got.returncode == case["exit"], got.stderr
    assert (json.loads(got.stdout) if got.stdout.strip() else None) == case["json"], (
        f"ffnlab {' '.join(case['args'])} answers differently: if on purpose, run `make golden` and commit the diff")
