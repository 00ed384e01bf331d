"""Every ``--json`` is strict JSON: a NaN or an infinity is refused (one error line, exit 2), never
printed as ``NaN``/``Infinity``, which JSON parsers reject."""

from __future__ import annotations

import json
import math

import pytest
from cli_inproc import run_cli

from ffnlab import render
from ffnlab.errors import FfnlabError


def strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_the_json_writer_refuses_non_finite_numbers_and_names_where(capsys, value):
    with pytest.raises(FfnlabError, match=r"at rows\[1\]\.days"):
        render.emit_json({"rows": [{"days": 1.0}, {"days": value}]})
    assert capsys.readouterr().out == ""  # nothing half-written


def test_the_json_writer_keeps_finite_output_as_it_was(capsys):
    render.emit_json({"a": [1, 2.5, None, "é"]}, indent=1, ensure_ascii=False)
    out = capsys.readouterr().out
    assert out == json.dumps({"a": [1, 2.5, None, "é"]}, indent=1, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("argv", [
    ["fit", "gpt2", "--tokens", "1e30", "--mfu", "1e-300", "--json"],
    ["fit", "gpt2", "--tokens", "1e30", "--mfu", "1e-300", "--gpu", "H100", "--json"],
])
def test_fit_with_extreme_flags_prints_json_or_one_error_line(capsys, argv):
    p = run_cli(capsys, *argv)
    if p.returncode == 0:
        strict(p.stdout)
    else:
        assert p.returncode == 2 and p.stdout == ""
        (line,) = p.stderr.strip().splitlines()
        assert line.startswith("error: --mfu"), line


def test_fit_at_the_flag_bounds_is_finite_json(capsys):
    p = run_cli(capsys, "fit", "gpt2", "--tokens", "1e30", "--mfu", "0.001", "--json")
    assert p.returncode == 0, p.stderr
    rows = strict(p.stdout)["accelerators"]
    assert all(math.isfinite(r["days"]) for r in rows if r["days"] is not None)
