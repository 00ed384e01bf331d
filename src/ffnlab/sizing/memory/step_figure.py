"""The geometry of a step figure: live memory by moment, stacked by what is alive (pure Python).

A training step's timeline (:class:`ffnlab.sizing.memory.step.StepTimeline`: forward end, the
loss, backward layer by layer, the optimizer step) becomes one bar per moment, each stacked from
the bottom in a fixed order of groups (:data:`GROUPS`: weights, optimizer state, gradients, kept
activations, logits and loss, temporaries, buffers), so a group keeps its colour and place from
bar to bar. :func:`step_figure` gives the bars as rectangles in a plot box of fixed size (pixels,
y growing downwards as in SVG), the y ticks in GiB, the peak (its bar, its moment and a label with
its bytes in GiB) and a title naming the model, the layout and the engine priced. The drawing is
elsewhere: ``ffnlab.experiments.reporting.step_figure`` writes it as SVG (no extra dependency) or
PNG (matplotlib). :func:`timeline_of` prices the timeline a figure shows: the full-training step
of a layout, or the LoRA / QLoRA step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ffnlab.render import GIB, gib
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.finetune import finetune_peak
from ffnlab.sizing.memory.parallel import Layout, training_peak, training_table
from ffnlab.sizing.memory.step import StepTimeline
from ffnlab.sizing.memory.workload import Workload

# (group, fill colour), bottom to top
GROUPS: tuple[tuple[str, str], ...] = (
    ("weights", "#4c72b0"), ("optimizer state", "#8172b3"), ("gradients", "#dd8452"),
    ("kept activations", "#55a868"), ("logits and loss", "#c44e52"), ("temporaries", "#937860"),
    ("buffers", "#8c8c8c"),
)
WIDTH, HEIGHT = 960, 480  # the whole figure, pixels
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 56, 64  # margins: y ticks left, legend right, title top, moment labels below


def group_of(what: str) -> str:
    """The group a thing alive at a moment is drawn in (``"this layer's activations (recomputed)"``:
    kept activations; ``"loss: log-softmax (kept)"``: logits and loss)."""
    name = what.lower()
    if name.startswith(("logits", "loss:")):
        return "logits and loss"
    if name == "weights":
        return "weights"
    if name.startswith("optimizer state"):
        return "optimizer state"
    if "temporar" in name or "dequantised" in name or "flowing" in name or name.startswith("gradient of"):
        return "temporaries"
    if name.startswith(("gradients", "head gradients", "tied embedding")):
        return "gradients"
    if "activations" in name:
        return "kept activations"
    return "buffers"


@dataclass(frozen=True)
class Bar:
    """One moment's stack: its rectangles (group, x, y, width, height; pixels) and its total."""

    moment: str
    total_bytes: int
    rects: tuple[tuple[str, float, float, float, float], ...]


@dataclass(frozen=True)
class StepFigure:
    """A step figure's geometry: every bar, the y ticks (pixel y, label), the plot box, the peak
    (its bar's index, bytes and label) and the title; the groups drawn, bottom to top."""

    title: str
    width: int
    height: int
    box: tuple[float, float, float, float]  # x, y, width, height of the plot area
    bars: tuple[Bar, ...]
    y_ticks: tuple[tuple[float, str], ...]
    groups: tuple[tuple[str, str], ...]  # (group, colour) of the groups that appear
    peak_index: int
    peak_bytes: int
    peak_label: str  # "peak 19.85 GiB at loss backward"
    x_label: str


def _tick_step(top_gib: float) -> float:
    """A round tick step giving 4-8 ticks up to ``top_gib``."""
    raw = max(top_gib, 1e-9) / 6
    mag = 10 ** math.floor(math.log10(raw))
    return float(next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw))


def step_figure(timeline: StepTimeline, *, title: str) -> StepFigure:
    """The figure of ``timeline``: one bar per moment, stacked by :data:`GROUPS`, the peak marked."""
    moments = timeline.moments
    peak = timeline.peak
    peak_index = moments.index(peak)
    box_x, box_y = float(LEFT), float(TOP)
    box_w, box_h = float(WIDTH - LEFT - RIGHT), float(HEIGHT - TOP - BOTTOM)
    step = _tick_step(peak.total / GIB)
    top = max(step, math.ceil(peak.total / GIB / step) * step)  # GiB at the top of the box
    scale = box_h / (top * GIB)
    slot = box_w / len(moments)
    bar_w = slot * 0.8
    used: set[str] = set()
    bars = []
    for i, m in enumerate(moments):
        by_group: dict[str, int] = {}
        for what, b in m.alive:
            g = group_of(what)
            by_group[g] = by_group.get(g, 0) + b
        rects = []
        below = 0
        for g, _ in GROUPS:
            b = by_group.get(g, 0)
            if not b:
                continue
            used.add(g)
            y_top = box_y + box_h - (below + b) * scale
            rects.append((g, round(box_x + i * slot + (slot - bar_w) / 2, 2), round(y_top, 2), round(bar_w, 2),
                          round(b * scale, 2)))
            below += b
        bars.append(Bar(m.name, m.total, tuple(rects)))
    n_ticks = round(top / step)
    ticks = tuple((round(box_y + box_h - k * step * GIB * scale, 2), f"{k * step:g}") for k in range(n_ticks + 1))
    label = f"peak {gib(peak.total)} at {peak.name}"
    return StepFigure(title=title, width=WIDTH, height=HEIGHT, box=(box_x, box_y, box_w, box_h), bars=tuple(bars),
                      y_ticks=ticks, groups=tuple((g, c) for g, c in GROUPS if g in used), peak_index=peak_index,
                      peak_bytes=peak.total, peak_label=label,
                      x_label=f"moments of the step, in order ({len(moments)}: forward end, loss, backward layer by "
                              "layer, optimizer step)")


def timeline_of(cfg: ModelConfig, work: Workload, lay: Layout | None = None) -> StepTimeline:
    """The step timeline ``size`` and ``fit`` price for ``work`` on the layout ``lay`` (a
    :class:`ffnlab.sizing.memory.parallel.Layout`; default one GPU): the LoRA / QLoRA step with
    adapters, else the full-training step of that layout."""
    if work.adapters:
        return finetune_peak(cfg, work).timeline
    layout = lay or Layout()
    return training_peak(cfg, work, layout, training_table(cfg, work, layout))


__all__ = ["GROUPS", "Bar", "StepFigure", "group_of", "step_figure", "timeline_of"]
