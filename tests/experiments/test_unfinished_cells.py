"""tools/unfinished_cells.py: the complete cells of an unfinished scale sweep, analysed by ffnlab's
own analysis. Oracle: the same analysis of the finished sweep, and a run removed by hand."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_sweeps import scale_sweep
from paths import ROOT

from ffnlab.experiments.analysis.analyse import analyse as analysis


def analyse(root: Path) -> dict:
    """The analysis as the JSON object a report keeps (these tests read its keys)."""
    return analysis(root).as_dict()

TOOL = ROOT / "tools" / "unfinished_cells.py"
SIZES = {"s1": 10**5, "s2": 4 * 10**5, "s3": 16 * 10**5}


def sweep_with_steps(root: Path) -> None:
    """A three-size sweep whose best ratio doubles per 4x, with the step counts a sweep checks."""
    scale_sweep(root, {"s1": 1.5, "s2": 3.0, "s3": 6.0}, SIZES, SIZES, 0.001)
    record = json.loads((root / "sweep.json").read_text())
    for r in record["runs"]:
        r["config"]["train"] = {"max_steps": 9}  # fake_sweep logs evaluations at steps 0-9
        path = root / "runs" / r["run"] / "summary.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "steps": 9}))
    (root / "sweep.json").write_text(json.dumps(record))


def tool(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), str(folder)], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_finished_sweep_prints_what_the_report_computes(tmp_path):
    sweep_with_steps(tmp_path)
    p = tool(tmp_path)
    assert p.returncode == 0, p.stderr
    (trend,) = analyse(tmp_path)["trends"]
    assert "complete cells: s1, s2, s3; waiting: none" in p.stdout
    assert f"trend size: {trend['verdict']} - {trend['evidence']}" in p.stdout


def test_a_cell_with_a_missing_run_waits_and_so_does_its_trend(tmp_path):
    sweep_with_steps(tmp_path)
    shutil.rmtree(tmp_path / "runs" / "s3.gelu-r2-s1")
    p = tool(tmp_path)
    assert p.returncode == 0, p.stderr
    assert "complete cells: s1, s2; waiting: s3" in p.stdout
    assert "s1: best raw ratio" in p.stdout and "s3: best raw ratio" not in p.stdout
    assert "trend size" not in p.stdout  # it needs s3


def test_no_complete_cell_is_one_error_line(tmp_path):
    sweep_with_steps(tmp_path)
    for cell in SIZES:
        shutil.rmtree(tmp_path / "runs" / f"{cell}.gelu-r4-s0")
    p = tool(tmp_path)
    assert p.returncode == 2 and p.stderr.strip() == "error: no cell of this sweep has all its runs finished"
