"""Regenerate docs/figures/step-llama-3-8b.svg: one training step of Llama-3-8B as ffnlab prices it.

    PYTHONPATH=src python tools/step_figure.py [--check]

The figure is what ``ffnlab size --from llama-3-8b --seq-len 4096 --plot FILE.svg`` writes (the
default engine, one GPU): live memory at each moment of the step, stacked by what is alive, the
peak and its moment marked. ``make docs`` runs it; ``--check`` exits 1 when the committed file
differs from a regeneration (tests/project/test_step_figure_doc.py checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ffnlab.cli.memory_view import step_plot
from ffnlab.experiments.reporting.step_figure import svg_text
from ffnlab.files import write_atomic
from ffnlab.sizing.memory.engines import apply_engine, default_engine
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "step-llama-3-8b.svg"
MODEL, SEQ_LEN = "llama-3-8b", 4096


def workload() -> Workload:
    """The figure's workload: ``--seq-len 4096`` under the default engine, every other flag at its default."""
    return apply_engine(Workload(seq_len=SEQ_LEN), default_engine())


def figure_text() -> str:
    cfg = find(MODEL).config()
    assert cfg is not None
    return svg_text(step_plot(cfg, MODEL, workload(), Layout()))


def main() -> int:
    text = figure_text()
    if "--check" in sys.argv[1:]:
        same = FIGURE.read_text(encoding="utf-8") == text
        print(f"{FIGURE}: {'up to date' if same else 'stale: run make docs'}")
        return 0 if same else 1
    write_atomic(FIGURE, text)
    print(f"wrote {FIGURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
