"""What the complete cells of an unfinished scale sweep already show.

A sweep with ``scales`` (e.g. ``scale-trend``) is analysed by ``ffnlab report`` only once every run
has finished. Each cell's best ratio and each pre-registered trend whose cells are all complete
do not depend on the other cells, so this script runs ffnlab's own analysis
(:func:`ffnlab.experiments.analysis.analyse.analyse`) on a view of the sweep restricted to its complete
cells, and prints those figures; the headline verdicts of the preset's ``decide_at`` cell are
left to the full report.

    python tools/unfinished_cells.py sweeps/scale-trend    # while the sweep still runs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ffnlab.experiments.analysis.analyse import analyse
from ffnlab.experiments.sweep.run import run_finished


def complete_cells(sweep: Path, record: dict[str, Any]) -> list[str]:
    cells: dict[str, bool] = {}
    for r in record["runs"]:
        cell = r["run"].split(".")[0]
        done = run_finished(sweep / "runs" / r["run"], r["config"]["train"]["max_steps"], evaluated=True)
        cells[cell] = cells.get(cell, True) and done
    return [c for c, ok in cells.items() if ok]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path, help="the sweep folder (sweep.json, runs/)")
    a = ap.parse_args()
    record = json.loads((a.sweep / "sweep.json").read_text(encoding="utf-8"))
    spec = record["spec"]
    every_cell = {r["run"].split(".")[0] for r in record["runs"]}
    done = complete_cells(a.sweep, record)
    if not done:
        print("error: no cell of this sweep has all its runs finished", file=sys.stderr)
        return 2
    spec["scales"] = [s for s in spec["scales"] if s["name"] in done]
    spec["trends"] = [t for t in spec.get("trends") or [] if set(t["scales"]) <= set(done)]
    spec["decide_at"] = done[0]  # some complete cell; its headline verdicts are not printed
    record["runs"] = [r for r in record["runs"] if r["run"].split(".")[0] in done]
    with tempfile.TemporaryDirectory() as tmp:
        view = Path(tmp)
        (view / "runs").mkdir()
        (view / "sweep.json").write_text(json.dumps(record), encoding="utf-8")
        for r in record["runs"]:
            os.symlink((a.sweep / "runs" / r["run"]).resolve(), view / "runs" / r["run"])
        result = analyse(view)
    waiting = sorted(every_cell - set(done))
    print(f"complete cells: {', '.join(done)}; waiting: {', '.join(waiting) or 'none'}")
    for c in result.cells:
        print(f"{c.scale}: best raw ratio {c.best_ratio:.3g} [{c.lo:.3g}, {c.hi:.3g}] ({c.shape}), "
              f"lack-of-fit p {c.lack_of_fit_p:.2g}, {c.params_non_embedding:,} non-embedding parameters")
        for key, v in c.claims.items():  # the cell's own pre-registered comparisons
            print(f"  {key}: {v.verdict} - {v.evidence}")
    for t in result.trends:
        print(f"trend {t.name}: {t.verdict} - {t.evidence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
