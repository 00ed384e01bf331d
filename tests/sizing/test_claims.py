import json
import re

import pytest
from paths import ROOT

from ffnlab.errors import FfnlabError
from ffnlab.sizing.claims import CHECKS, VERDICTS, check_claims, load_claims, load_evidence
from ffnlab.sizing.counting import dense_ffn_params
from ffnlab.sizing.zoo import find


@pytest.fixture(scope="module")
def verdicts():
    return {r.id: r.as_dict() for r in check_claims()}


def test_every_claim_gets_a_known_verdict(verdicts):
    assert len(verdicts) == len(load_claims()) >= 25
    assert all(r["verdict"] in VERDICTS and r["evidence"] for r in verdicts.values())


# verdicts that follow from zoo data and arithmetic; the claims whose verdict is fixed by
# construction (golden-law, gpt4-uses-4x, the needs-experiment ones, the constant sympy
# identities) are tested through their numbers and premises below instead
@pytest.mark.parametrize("claim_id, verdict", [
    ("golden-identity", "false"), ("llama-suboptimal", "false"),
    ("mistral-suboptimal", "false"), ("mixtral-smaller-experts", "false"),
    ("llama-fewer-params-for-bandwidth", "false"),
    ("seed-table-gpt4", "unverifiable"), ("seed-table-gpt2-small", "true"), ("seed-table-falcon-40b", "true"),
    ("seed-table-llama-7b", "misleading"), ("seed-table-mistral-7b", "misleading"),
    ("llama-11008-rounding", "true"),
    ("llama-multiples-of-256", "true"), ("openai-uses-4x", "true"), ("moe-decouples", "true"),
])
def test_verdicts(verdicts, claim_id, verdict):
    assert verdicts[claim_id]["verdict"] == verdict


@pytest.mark.parametrize("row, verdict", [
    ({"model": "gpt2", "d_model": 768, "d_ff": 3072, "ratio": 4.0, "deviation": 0.0}, "true"),
    ({"model": "gpt2", "d_model": 768, "d_ff": 3000, "ratio": 3.9, "deviation": -0.02}, "false"),
    ({"model": "gpt2", "d_model": 768, "d_ff": 3072, "ratio": 4.0, "deviation": -0.1}, "false"),
    ({"model": "llama-7b", "d_model": 4096, "d_ff": 11008, "ratio": 2.69, "deviation": -0.328}, "misleading"),
    ({"model": "llama-7b", "d_model": 4096, "d_ff": 14336, "ratio": 3.5, "deviation": -0.125}, "false"),
])
def test_table_rows_are_checked_against_the_zoo(row, verdict):
    """The seed-table check says false when a row's numbers are wrong (4096 x 14336 is Mistral's)."""
    assert CHECKS["table_row"](row)[0] == verdict


def test_golden_law_numbers_are_the_zoos_ratios(verdicts):
    nums = verdicts["golden-law"]["numbers"]
    assert nums["identity_verdict"] == verdicts["golden-identity"]["verdict"] == "false"
    # raw ratios of published configs, by hand: GPT-2 3072/768, LLaMA-7B 11008/4096,
    # Mistral 7B 14336/4096, Gemma 7B 24576/3072
    assert {4.0, 2.6875, 3.5, 8.0} <= set(nums["zoo_raw_ratios"])
    assert nums["zoo_raw_ratios"] == sorted(nums["zoo_raw_ratios"])


def test_unverifiable_claims_rest_on_models_without_an_architecture(verdicts):
    """'unverifiable' is only honest while the zoo really has no published shape for the model."""
    for c in load_claims():
        if verdicts[c["id"]]["verdict"] == "unverifiable" and "model" in c.get("args", {}):
            entry = find(c["args"]["model"])
            assert not entry.has_config and entry.source is None, c["id"]


def test_parity_identities_agree_with_the_counter(verdicts):
    """The symbolic parameter counts of the FFN-notes claims, evaluated, equal counting.py's."""
    import sympy as sp

    d = sp.symbols("d", positive=True)
    nums = verdicts["swiglu-parity"]["numbers"]
    for width in (768, 3072):  # 3 divides both, so 8d/3 is a whole width
        plain = sp.sympify(nums["plain"], locals={"d": d}).subs(d, width)
        gated = sp.sympify(nums["gated"], locals={"d": d}).subs(d, width)
        assert plain == dense_ffn_params(width, 4 * width, False, False)
        assert gated == dense_ffn_params(width, 8 * width // 3, True, False) == plain
    inflation = sp.Rational(verdicts["swiglu-at-4x-inflation"]["numbers"]["ratio"])
    assert inflation == sp.Rational(dense_ffn_params(768, 3072, True, False), dense_ffn_params(768, 3072, False, False))


def test_identity_evidence_is_computed(verdicts):
    nums = verdicts["golden-identity"]["numbers"]
    assert nums["value"] == "4 + 2*sqrt(5)"
    assert nums["numeric"] == pytest.approx(8.47213595)
    assert nums["Phi3_minus_Phi_inv3"] == "4" and nums["Phi3_plus_phi3"] == "4"


def test_needs_experiment_claims_name_a_command_that_exists(verdicts):
    """Every sweep a claim tells the user to run resolves; every benchmark script is there."""
    from ffnlab.experiments.sweep.spec import ANALYSES, TREND_AXES, find_spec

    open_claims = [c for c in load_claims() if c["check"] == "experiment"]
    assert {verdicts[c["id"]]["verdict"] for c in open_claims} == {"needs-experiment"}  # no evidence given
    for c in open_claims:
        command = c["args"]["command"]
        for spec in re.findall(r"ffnlab (?:sweep|capacity run) ([\w./-]+)", command):
            find_spec(spec)  # raises FfnlabError for a spec that does not exist
        for script in re.findall(r"python (\S+\.py)", command):
            assert (ROOT / script).is_file(), script
        assert re.search(r"ffnlab (verify|sweep|capacity run)|python benchmarks/", command), command
        if re.search(r"ffnlab (verify|sweep)", command):
            assert c["args"]["experiment"] in (*ANALYSES, *(f"trend_{a}" for a in TREND_AXES))  # a report settles it


def test_evidence_from_a_report_fills_experiment_claims(tmp_path):
    (tmp_path / "claims.json").write_text(json.dumps(
        {"ratio_optimal": {"verdict": "false", "evidence": "ratio 8/3 is as good: delta 0.01 [-0.02, 0.04]"}}))
    rows = {r.id: r.as_dict() for r in check_claims(load_evidence(tmp_path))}
    assert rows["ratio-4-optimal"]["verdict"] == "false"
    assert rows["golden-transformer-8pct"]["verdict"] == "needs-experiment"


def test_a_custom_hypothesis_does_not_settle_a_seed_claim(tmp_path):
    """A report of a spec with its own hypotheses (ids of the user's choosing) shares an analysis
    with a seed claim, not the claim: ratio 3 against 6 says nothing of ratio 4."""
    finding = "relu-r6 - relu-r3 = -0.04 [-0.22, +0.15] nats"
    (tmp_path / "claims.json").write_text(json.dumps({
        "ratio_optimal": {"verdict": "false", "evidence": finding,
                          "hypothesis": {"id": "three-wins", "sentence": "Ratio 3 ends lower than ratio 6."}},
        "convergence_speed": {"verdict": "true", "evidence": "0.9 [0.8, 1.0]",
                              "hypothesis": {"id": "golden-transformer-8pct", "sentence": "8% faster"}}}))
    rows = {r.id: r.as_dict() for r in check_claims(load_evidence(tmp_path))}
    mine = rows["ratio-4-optimal"]
    assert mine["verdict"] == "needs-experiment"
    assert "three-wins" in mine["evidence"] and finding not in mine["evidence"]
    assert rows["golden-transformer-8pct"]["verdict"] == "true"  # a seed claim's own hypothesis still settles it


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


def test_every_kept_report_a_claim_points_to_is_in_the_repository():
    """A claim that says 'the measured verdict is kept in X' names a report a clone has, and that
    report settles the claim (its claims.json holds the claim's experiment)."""
    for c in load_claims():
        kept = c.get("args", {}).get("kept")
        if kept:
            claims = json.loads((ROOT / kept / "claims.json").read_text())
            assert c["args"]["experiment"] in claims, (c["id"], kept)


def test_claims_ends_with_a_count_of_its_verdicts():
    import json as _json

    from cli_run import run

    rows = _json.loads(run("claims", "--json").stdout)
    last = run("claims", "--format", "markdown").stdout.strip().splitlines()[-1]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in {r["verdict"] for r in rows}}
    assert last.startswith(f"{len(rows)} claims: ")
    assert {part.split(" ", 1)[1]: int(part.split(" ", 1)[0]) for part in last.split(": ", 1)[1].split(", ")} == counts


@pytest.mark.parametrize("kept", ["golden-quick", "golden-mature", "size-fixed-steps", "scale-trend"])
def test_every_experimental_verdict_states_the_maturity_it_was_judged_at(kept):
    # oracle: the maturity each kept report recorded beside its verdicts
    evidence = load_evidence(ROOT / "docs" / "results" / kept)
    rows = [r.as_dict() for r in check_claims(evidence) if r.numbers.get("from_report")]
    assert rows
    for r in rows:
        entry = next(e for e in evidence.values()
                     if e["verdict"] == r["verdict"] and r["evidence"].startswith(e["evidence"]))
        text = entry["maturity"]["text"]
        tpp = f"trained to {entry['maturity']['tokens_per_param']:.3g} tokens/param"
        assert (tpp in r["evidence"]) and (text in r["evidence"] or r["evidence"].startswith(tpp))
