"""The trend diagnostics (experiments/trend.py): the slope between two cells against the joint
fit it must equal, exact parabolas, a cell without a minimum, and its bootstrap interval's coverage
by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ffnlab.experiments import trend

X = np.repeat(np.log2([0.5, 1, 2, 4, 8]), 3)  # five ratios, three seeds, as scale-trend's cells


def cell(axis: float, vertex: float, curvature: float, noise: float, rng: np.random.Generator,
         level: float = 2.0) -> tuple[float, np.ndarray, np.ndarray]:
    y = level + curvature * (X - vertex) ** 2 + rng.normal(0.0, noise, X.size)
    return axis, X.copy(), y


def test_a_segment_is_the_joint_fit_of_its_two_cells():
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = cell(1e5, rng.uniform(-1, 1), rng.uniform(0.005, 0.04), 0.01, rng)
        b = cell(4e5, rng.uniform(-1, 2), rng.uniform(0.005, 0.04), 0.005, rng)
        joint = trend.joint_fit([a, b])
        assert joint is not None
        assert trend.segment(a, b, n_boot=50).slope == pytest.approx(joint[0], abs=1e-6)


def test_exact_parabolas_give_the_vertex_change_per_doubling():
    rng = np.random.default_rng(0)
    a = cell(1e5, 0.5, 0.02, 0.0, rng)
    b = cell(1.6e6, 2.5, 0.01, 0.0, rng)  # 16x: four doublings, vertex +2 -> +0.5 per doubling
    s = trend.segment(a, b, n_boot=50)
    assert s.slope == pytest.approx(0.5) and s.lo == pytest.approx(0.5) and s.hi == pytest.approx(0.5)
    back = trend.segment(b, a, n_boot=50)  # the axis order, not the argument order, sets the sign
    assert back.slope == pytest.approx(0.5)


def test_a_cell_without_a_minimum_leaves_the_segment_unbounded():
    rng = np.random.default_rng(1)
    a = cell(1e5, 0.5, 0.02, 0.001, rng)
    b = cell(4e5, 0.5, -0.02, 0.001, rng)  # opens downward: no best ratio
    s = trend.segment(a, b, n_boot=200)
    assert math.isnan(s.slope) and s.lo == -math.inf and s.hi == math.inf and s.no_minimum_share > 0.9


def test_two_cells_at_one_point_of_the_axis_have_no_segment():
    rng = np.random.default_rng(4)
    s = trend.segment(cell(1e5, 0.0, 0.02, 0.01, rng), cell(1e5, 1.0, 0.02, 0.01, rng), n_boot=20)
    assert math.isnan(s.slope) and math.isnan(s.lo) and math.isnan(s.hi)


def test_the_segment_interval_covers_the_true_change_about_95_percent():
    # scale-trend's s2t2 -> s3t2 in miniature: sd 0.006 and 0.004, curvature 0.009 and 0.010,
    # vertices 0.6 and 4.3 (log2 -0.74 and 2.10), 4x apart in parameters.
    rng = np.random.default_rng(2026)
    true = (math.log2(4.3) - math.log2(0.6)) / 2
    sims, hits = 300, 0
    for _ in range(sims):
        s = trend.segment(cell(1e5, math.log2(0.6), 0.009, 0.006, rng),
                          cell(4e5, math.log2(4.3), 0.010, 0.004, rng), n_boot=400, seed=int(rng.integers(1 << 30)))
        hits += s.lo <= true <= s.hi
    # 15 runs per cell leave the variance estimate uncertain, so the interval under-covers
    # slightly; a wrong sign, scale or vertex would cover far less.
    assert hits / sims >= 0.88
