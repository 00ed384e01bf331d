"""A sweep's analysis, typed: :class:`ffnlab.experiments.analysis.analyse.Analysis` against the
kept reports' ``results.json`` (docs/results/*/), written when the analysis returned a dict: same
keys, same order, same values; the arms themselves in the dict view, where the dict held them."""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError

import pytest
from paths import ROOT

RESULTS = ROOT / "docs" / "results"


@pytest.mark.parametrize("name", ["golden-quick", "golden-mature"])
def test_a_sweeps_analysis_is_its_kept_results_json(name: str) -> None:
    """The JSON object of the typed analysis is the kept report's results.json (written when the
    analysis was a dict), less the provenance the report adds."""
    from ffnlab.experiments.analysis.analyse import Analysis, analyse
    from ffnlab.experiments.reporting.pages import json_safe
    from ffnlab.experiments.sweep.runs import ArmStats

    kept = json.loads((RESULTS / name / "results.json").read_text(encoding="utf-8"))
    kept.pop("provenance")
    res = analyse(RESULTS / name)
    assert isinstance(res, Analysis)
    got = json.loads(json.dumps(json_safe(res.as_dict()), default=str))
    assert list(got) == list(kept)
    assert _same(got, kept), next(k for k in kept if not _same(got[k], kept[k]))
    # the arms themselves: an attribute, not a key of the JSON; the result is read one way
    assert "arm_objects" not in res.as_dict() and all(isinstance(a, ArmStats) for a in res.arm_objects)
    with pytest.raises(TypeError):
        res["claims"]  # noqa: B018 - no dict view
    with pytest.raises(FrozenInstanceError):
        res.claims = {}  # type: ignore[misc]


def _same(a: object, b: object) -> bool:
    """Equal, floats to 1e-9 relative: a fitted optimum (numpy's least squares) moves in its last
    digits between numpy builds (2.4.6 gives best_ratio 1.0928148196843919 where the kept file, written
    under an earlier one, says 1.0928148196843843)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
