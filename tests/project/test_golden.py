"""Every command's answers against its golden file (tests/golden/COMMAND.json, written by
tools/golden.py): each invocation runs again here, in-process, and must print the same JSON and
exit with the same status. The results no flag can express are kept the same way, one file per
Python function (tests/golden/api_FUNCTION.json, its inputs as JSON, tools/golden_api.py). A
deliberate change is a rewritten golden file in the same commit."""

from __future__ import annotations

import json
import sys

import pytest
from cli_inproc import run_cli
from paths import ROOT

GOLDEN = ROOT / "tests" / "golden"
SIZING_COMMANDS = ("size", "plan", "explain", "fit", "audit", "zoo", "claims", "table")
API_FUNCTIONS = ("memory_summary", "structure_memory", "fit_all", "serving_figures", "capacity")


def _docs() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN.glob("*.json"))}


def _cases(api: bool) -> list:
    return [pytest.param(name, case, id=f"{name}-{case.get('name', i)}")
            for name, doc in _docs().items() if name.startswith("api_") == api
            for i, case in enumerate(doc["cases"])]


def test_every_sizing_command_has_a_golden_file_of_its_own():
    docs = _docs()
    assert set(SIZING_COMMANDS) <= set(docs)
    assert {f"api_{f}" for f in API_FUNCTIONS} == {n for n in docs if n.startswith("api_")}
    for name, doc in docs.items():
        assert doc["cases"], name
        if name.startswith("api_"):
            assert doc["function"] == name[4:] and all({"name", "call", "json"} <= set(c) for c in doc["cases"]), name
        else:
            assert doc["command"] == name, name
            assert all(c["args"][0] == name and "--json" in c["args"] and "json" in c for c in doc["cases"]), name


@pytest.mark.parametrize("command, case", _cases(api=False))
def test_the_command_answers_as_its_golden_file_says(capsys, monkeypatch, command, case):
    if case.get("needs"):
        pytest.importorskip(case["needs"])
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    got = run_cli(capsys, *case["args"])
    assert got.returncode == case["exit"], got.stderr
    assert (json.loads(got.stdout) if got.stdout.strip() else None) == case["json"], (
        f"ffnlab {' '.join(case['args'])} answers differently: if on purpose, run `make golden` and commit the diff")


@pytest.mark.parametrize("name, case", _cases(api=True))
def test_the_function_answers_as_its_golden_file_says(monkeypatch, name, case):
    monkeypatch.syspath_prepend(str(ROOT / "tools"))
    sys.modules.pop("golden_api", None)
    from golden_api import answer

    got = answer(name[4:], case["call"])
    # the same keys in the same order, nested ones too, as the JSON writes them
    assert json.dumps(got) == json.dumps(case["json"]), (
        f"{name[4:]} ({case['name']}) answers differently: if on purpose, run `make golden` and commit the diff")
