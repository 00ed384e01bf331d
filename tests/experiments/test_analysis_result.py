"""A sweep's analysis, typed: :class:`ffnlab.experiments.analysis.analyse.Analysis` against the
kept reports' ``results.json`` (docs/results/*/), written when the analysis returned a dict: same
keys, same order, same values; the arms themselves in the dict view, where the dict held them."""

from __future__ import annotations

import json
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
    assert got == kept
    # the arms themselves: an attribute, not a key of the JSON; the result is read one way
    assert "arm_objects" not in res.as_dict() and all(isinstance(a, ArmStats) for a in res.arm_objects)
    with pytest.raises(TypeError):
        res["claims"]  # noqa: B018 - no dict view
    with pytest.raises(FrozenInstanceError):
        res.claims = {}  # type: ignore[misc]
