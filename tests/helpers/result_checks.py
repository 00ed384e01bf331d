"""Helpers of the result tests (``test_*_result.py``): what a golden file (tests/golden/, written by
tools/golden.py) holds for one invocation, the oracle a result's ``as_dict()`` is read against; and
the check that a result (:class:`ffnlab.sizing.result.Result`) is read one way, by attribute."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
from paths import ROOT


def golden(command: str, *args: str) -> Any:
    """The JSON that tests/golden/COMMAND.json holds for ``ffnlab COMMAND ARGS --json``."""
    doc = json.loads((ROOT / "tests" / "golden" / f"{command}.json").read_text(encoding="utf-8"))
    want = [command, *args, "--json"]
    found = [c["json"] for c in doc["cases"] if c["args"] == want]
    assert found, f"no golden case for ffnlab {' '.join(want)}"
    return found[0]


def golden_api(function: str, name: str) -> Any:
    """The JSON that tests/golden/api_FUNCTION.json holds for its case ``name``."""
    doc = json.loads((ROOT / "tests" / "golden" / f"api_{function}.json").read_text(encoding="utf-8"))
    return next(c["json"] for c in doc["cases"] if c["name"] == name)


def check_read_only_view(res: Any, expected: dict[str, Any], key: str) -> None:
    """One way to read a result: its attributes, with ``as_dict()`` the JSON object ``expected`` (its
    keys in order, as the command prints them); it is no mapping (the transitional dict view is gone) and is
    read-only (``key``, one of its fields, cannot be set)."""
    assert res.as_dict() == expected and list(res.keys()) == list(expected)
    assert json.dumps(res.as_dict()) == json.dumps(expected)
    with pytest.raises(TypeError):
        res[key]  # noqa: B018 - not subscriptable
    with pytest.raises(TypeError):
        dict(res)
    with pytest.raises(FrozenInstanceError):
        setattr(res, key, 0)
