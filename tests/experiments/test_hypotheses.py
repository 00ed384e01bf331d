"""A sweep is the user's own experiment: the report decides the hypotheses its spec names, in the
spec's words, and a spec that names none gets no verdict and none of the seed document's claims
(ratio-4-optimal, the 8% speed-up, the golden preset's power figure, the source note's table).

The oracle for the verdicts is the fake sweep's construction (fake_sweeps.py): arms whose final
losses and speeds are set, so which arm ends lower is known before the analysis runs."""

from __future__ import annotations

import json

import pytest
from fake_sweeps import fake_sweep

from ffnlab.errors import FfnlabError
from ffnlab.experiments.reporting.glossary import TERMS
from ffnlab.experiments.reporting.report import write_report
from ffnlab.experiments.sweep.spec import load_spec, spec_from_dict

SEED_PHRASES = ("ratio-4-optimal", "golden-transformer-8pct", "glu-beats-plain", "gated-ratio-4", "1.08",
                "8% faster", "source note", "golden preset", "0.021 nats", "claimed speed-up is")
ARMS = {"gelu-r2": (-0.1, 1.3), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9), "swiglu-pm4": (-0.02, 1.05)}


def _texts(paths: dict) -> list[str]:
    return [paths["html"].read_text(), paths["markdown"].read_text(), paths["claims"].read_text()]


def test_a_spec_without_hypotheses_gets_no_verdict_and_no_seed_claim(tmp_path):
    fake_sweep(tmp_path, ARMS, 6, 0.01, spec_extra={"hypotheses": [], "name": "my-own-sweep"})
    paths = write_report(tmp_path, tmp_path / "report")
    assert json.loads(paths["claims"].read_text()) == {}
    html, md, _ = _texts(paths)
    for text in (html, md):
        for phrase in SEED_PHRASES:
            assert phrase not in text, phrase
    assert 'class="card ' not in html and "names no hypotheses" in html
    # the comparisons are still computed and shown: ratio 2 against the reference, decided by nothing
    assert "gelu-r2 - gelu-r4" in html


def test_the_report_uses_the_specs_own_words(tmp_path):
    mine = [{"id": "wide-is-worse", "sentence": "Our ratio-4 baseline beats the ratio-2 and ratio-8 GELUs.",
             "comparison": "ratio_optimal", "margin": 0.01, "claimed_effect": 0.05,
             "effect_source": "our pilot run"},
            {"id": "gate-pays", "sentence": "The SwiGLU arm ends below the GELU baseline.",
             "comparison": "glu_vs_plain", "arms": ["swiglu-pm4", "gelu-r4"]}]
    fake_sweep(tmp_path, ARMS, 6, 0.01, spec_extra={"hypotheses": mine, "name": "my-own-sweep"})
    paths = write_report(tmp_path, tmp_path / "report")
    claims = json.loads(paths["claims"].read_text())
    assert set(claims) == {"ratio_optimal", "glu_vs_plain"}  # no convergence verdict: not hypothesised
    # ratio 2 was built 0.1 nats lower (and faster): the baseline is not best; SwiGLU was built lower
    assert claims["ratio_optimal"]["verdict"] == "false" and claims["glu_vs_plain"]["verdict"] == "true"
    # its own margin, 1% of the reference's final loss (built as 5 - 0.003 x 1000 = 2 nats, plus noise)
    assert claims["ratio_optimal"]["numbers"]["margin"] == pytest.approx(0.01 * 2.0, rel=0.05)
    html, md, text = _texts(paths)
    for h in mine:
        assert f"{h['id']}: <span" in html and h["sentence"] in html and f"### {h['id']}:" in md
    assert "0.05 nats (our pilot run)" in html  # the power quoted for the claimed effect
    for phrase in SEED_PHRASES:
        assert phrase not in html and phrase not in md and phrase not in text, phrase


@pytest.mark.slow
def test_report_and_claims_name_a_custom_hypothesis_not_a_seed_claim(tmp_path):
    """`ffnlab report` prints each verdict under its hypothesis's id, and `ffnlab claims --evidence`
    does not take a custom ratio_optimal hypothesis (ratio 2 against 8 here) as the seed's
    ratio-4-optimal claim: the spec shares the analysis, not the claim."""
    from cli_run import run

    mine = [{"id": "two-beats-eight", "sentence": "The ratio-2 GELU ends below the ratio-8 GELU.",
             "comparison": "ratio_optimal", "arms": ["gelu-r8"]}]
    arms = {"gelu-r2": (-0.1, 1.3), "gelu-r8": (0.05, 0.9)}
    fake_sweep(tmp_path, arms, 4, 0.01, spec_extra={"hypotheses": mine, "name": "mine", "reference": "gelu-r2"})
    p = run("report", str(tmp_path))
    assert p.returncode == 0, p.stderr
    heads = [line.split(":")[0] for line in p.stdout.splitlines() if " - " in line]
    assert heads == ["two-beats-eight"], p.stdout
    p = run("claims", "--evidence", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    row = next(r for r in json.loads(p.stdout) if r["id"] == "ratio-4-optimal")
    assert row["verdict"] == "needs-experiment" and "two-beats-eight" in row["evidence"]
    assert "gelu-r8 - gelu-r2" not in row["evidence"]


def test_every_html_page_ends_with_the_glossary(tmp_path):
    fake_sweep(tmp_path, ARMS, 3, 0.01, spec_extra={"hypotheses": []})
    html = write_report(tmp_path, tmp_path / "report")["html"].read_text()
    glossary = html[html.index('<h2 id="glossary">'):]
    assert html.index('<a href="#glossary">') < html.index("<h2")  # linked at the top of the page
    md = (tmp_path / "report" / "report.md").read_text()
    assert md.index("](#glossary)") < md.index("\n## ") < md.index("\n## Glossary")
    for t in TERMS:
        assert f"<dt>{t.term.replace(chr(39), '&#39;')}</dt>" in glossary
    for word in ("Dunnett", "TOST", "Levene", "Fieller", "tokens per parameter"):
        assert word in glossary


def test_the_seed_claims_live_in_the_presets_that_test_them():
    golden = load_spec("golden-quick")
    ids = {h.id for h in golden.hypotheses}
    assert {"ratio-4-optimal", "golden-transformer-8pct"} <= ids
    speed = next(h for h in golden.hypotheses if h.comparison == "convergence_speed")
    assert speed.claimed_effect == pytest.approx(1.08)  # the seed note's "8% faster"


BASE = {"name": "h", "seeds": [0, 1], "control": "fixed-d-model",
        "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2}},
        "arms": [{"name": "a", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
                 {"name": "b", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 2}}]}


@pytest.mark.parametrize(("hyps", "fragment"), [
    ([{"id": "x", "sentence": "s", "comparison": "nope"}], "comparison"),
    ([{"id": "x", "sentence": "", "comparison": "ratio_optimal"}], "sentence"),
    ([{"id": "x", "sentence": "s", "comparison": "ratio_optimal"},
      {"id": "x", "sentence": "t", "comparison": "convergence_speed"}], "unique"),
    ([{"id": "x", "sentence": "s", "comparison": "ratio_optimal", "arms": ["zz"]}], "arms"),
    ([{"id": "x", "sentence": "s", "comparison": "ratio_optimal", "margin": 2}], "margin"),
])
def test_a_bad_hypothesis_is_one_clear_error(hyps, fragment):
    with pytest.raises(FfnlabError, match=fragment):
        spec_from_dict({**BASE, "hypotheses": hyps})


def test_a_spec_without_hypotheses_has_none():
    assert spec_from_dict(dict(BASE)).hypotheses == []


def test_a_presets_seed_hypothesis_states_the_catalogued_claim():
    """Every preset hypothesis named after a claim of data/claims.json says what the catalogue says."""
    from ffnlab.experiments.sweep.spec import PRESET_DIR
    from ffnlab.sizing.claims import load_claims

    said = {c["id"]: c["claim"] for c in load_claims()}
    checked = 0
    for path in sorted(PRESET_DIR.glob("*.yaml")):
        if path.stem.startswith("capacity"):
            continue
        for h in load_spec(path.stem).hypotheses:
            if h.id in said:
                assert h.sentence == said[h.id], (path.stem, h.id)
                checked += 1
    assert checked >= 10


def test_a_users_best_arm_hypothesis_needs_no_ratio_4_reference(tmp_path):
    """The seed claim is about ratio 4; a user's "my reference is best" is about their reference."""
    mine = [{"id": "r2-best", "sentence": "GELU at ratio 2 beats ratios 4 and 8.", "comparison": "ratio_optimal"}]
    fake_sweep(tmp_path, ARMS, 6, 0.01, spec_extra={"hypotheses": mine, "reference": "gelu-r2"})
    claims = json.loads(write_report(tmp_path, tmp_path / "report")["claims"].read_text())
    # ratio 2 was built 0.1 nats below ratio 4 and 0.15 below ratio 8
    assert claims["ratio_optimal"]["verdict"] == "true"
    assert claims["ratio_optimal"]["unit"] == "nats (alternative - gelu-r2)"
