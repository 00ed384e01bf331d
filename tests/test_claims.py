import json

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.claims import VERDICTS, check_claims, load_claims, load_evidence


@pytest.fixture(scope="module")
def verdicts():
    return {r["id"]: r for r in check_claims()}


def test_every_claim_gets_a_known_verdict(verdicts):
    assert len(verdicts) == len(load_claims()) >= 25
    assert all(r["verdict"] in VERDICTS and r["evidence"] for r in verdicts.values())


@pytest.mark.parametrize("claim_id, verdict", [
    ("golden-identity", "false"), ("golden-law", "false"), ("llama-suboptimal", "false"),
    ("mistral-suboptimal", "false"), ("mixtral-smaller-experts", "false"),
    ("llama-fewer-params-for-bandwidth", "false"), ("gpt4-uses-4x", "unverifiable"),
    ("seed-table-gpt4", "unverifiable"), ("seed-table-gpt2-small", "true"), ("seed-table-falcon-40b", "true"),
    ("seed-table-llama-7b", "misleading"), ("seed-table-mistral-7b", "misleading"),
    ("swiglu-parity", "true"), ("swiglu-at-4x-inflation", "true"), ("llama-11008-rounding", "true"),
    ("llama-multiples-of-256", "true"), ("openai-uses-4x", "true"), ("moe-decouples", "true"),
    ("ratio-4-optimal", "needs-experiment"), ("golden-transformer-8pct", "needs-experiment"),
    ("glu-beats-plain", "needs-experiment"), ("unaligned-widths-slow", "needs-experiment"),
])
def test_verdicts(verdicts, claim_id, verdict):
    assert verdicts[claim_id]["verdict"] == verdict


def test_identity_evidence_is_computed(verdicts):
    nums = verdicts["golden-identity"]["numbers"]
    assert nums["value"] == "4 + 2*sqrt(5)"
    assert nums["numeric"] == pytest.approx(8.47213595)
    assert nums["Phi3_minus_Phi_inv3"] == "4" and nums["Phi3_plus_phi3"] == "4"


def test_needs_experiment_claims_name_a_command(verdicts):
    for r in verdicts.values():
        if r["verdict"] == "needs-experiment":
            assert "ffnlab" in r["numbers"]["command"] or "benchmarks/" in r["numbers"]["command"]


def test_evidence_from_a_report_fills_experiment_claims(tmp_path):
    (tmp_path / "claims.json").write_text(json.dumps(
        {"ratio_optimal": {"verdict": "false", "evidence": "ratio 8/3 is as good: delta 0.01 [-0.02, 0.04]"}}))
    rows = {r["id"]: r for r in check_claims(load_evidence(tmp_path))}
    assert rows["ratio-4-optimal"]["verdict"] == "false"
    assert rows["golden-transformer-8pct"]["verdict"] == "needs-experiment"


def test_bad_evidence(tmp_path):
    with pytest.raises(FfnlabError):
        load_evidence(tmp_path)
    for bad in ({"ratio_optimal": "false"}, {"ratio_optimal": {"verdict": "maybe", "evidence": "x"}}):
        (tmp_path / "claims.json").write_text(json.dumps(bad))
        with pytest.raises(FfnlabError, match="verdict"):
            load_evidence(tmp_path)
    (tmp_path / "claims.json").write_text("{oops")
    with pytest.raises(FfnlabError, match="not valid JSON"):
        load_evidence(tmp_path)


def test_smaller_experts_evidence_covers_coarse_and_fine_grained_designs(verdicts):
    row = verdicts["mixtral-smaller-experts"]
    designs = {r["model"]: r for r in row["numbers"]["designs"]}
    assert {designs[n]["design"] for n in ("mixtral-8x7b", "mixtral-8x22b", "dbrx")} == {"coarse"}
    fine = ("deepseek-v3", "qwen3-30b-a3b", "olmoe-1b-7b", "gpt-oss-120b")
    assert {designs[n]["design"] for n in fine} == {"fine-grained"}
    # published widths (config.json): DeepSeek-V3 2048 at d_model 7168, Qwen3-30B-A3B 768 at 2048
    assert designs["deepseek-v3"]["granularity"] == 2048 / 7168
    assert designs["qwen3-30b-a3b"]["granularity"] == 768 / 2048
    assert designs["dbrx"]["granularity"] == 10752 / 6144
    assert "true of the fine-grained designs" in row["evidence"]
