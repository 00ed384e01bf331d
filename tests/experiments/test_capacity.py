"""Synthetic facts, the Allen-Zhu & Li capacity measure on cases with known answers, the capacity
preset and report."""

from __future__ import annotations

import json
import math

import pytest
import torch
from cli_run import assert_usage_error, run

from ffnlab.errors import FfnlabError
from ffnlab.experiments.capacity.analysis import ArmCapacity, verdict_gated, verdict_peak
from ffnlab.sizing.claims import VERDICTS
from ffnlab.training.capacity import (
    CONTEXT,
    encode,
    measure_logits,
    stored_bits,
    value_losses,
)
from ffnlab.training.corpus.facts import BIO_RELATIONS, FactSpec, make_bank, parse_spec
from ffnlab.training.corpus.sources import join_documents, resolve_source

SMALL = "facts:subjects=40,relations=3,values=8,value_len=1,seed=3"


# ---------------------------------------------------------------- the generator


def test_bank_is_deterministic_with_known_entropy_and_a_holdout():
    spec = parse_spec(SMALL)
    a, b = make_bank(spec), make_bank(FactSpec(subjects=40, relations=3, values=8, value_len=1, seed=3))
    assert a.documents == b.documents and len(a.facts) == 40 * 3
    assert spec.bits_per_fact == 3.0
    assert all(len(pool) == 8 == len(set(pool)) for pool in a.pools)
    assert all(f.value in a.pools[f.relation] for f in a.facts)
    for f in a.facts:  # each prompt is the document up to the value, and the value follows it
        assert a.documents[f.subject].startswith(f.prompt + f.value)
    assert [f.subject for f in a.heldout_facts()][::3] == [0, 10, 20, 30]
    train, val = a.split()
    assert len(train) == 36 and len(val) == 4 and val[0] == a.documents[0]
    assert make_bank(parse_spec(SMALL.replace("seed=3", "seed=4"))).documents != a.documents


def test_bio_style_uses_templates_and_relation_names():
    bank = make_bank(parse_spec("facts:subjects=12,relations=4,style=bio,values=16"))
    doc = bank.documents[1]
    name = bank.subjects[1].capitalize()
    assert doc.count(name) >= 4 and doc.endswith(".\n")
    for f in bank.facts[4:8]:
        heads = [t.split("{v}")[0].replace("{s}", name) for t in BIO_RELATIONS[f.relation][1]]
        assert any(f.prompt.endswith(h) for h in heads)


@pytest.mark.parametrize("bad, fragment", [
    ("facts:subjects=5", "subjects"), ("facts:style=poem", "style"), ("facts:values=99,value_len=1", "values"),
    ("facts:colour=red", "KEY=VALUE"), ("facts:subjects=ten", "integer"), ("facts:relations=9,style=bio", "relations"),
])
def test_bad_fact_specs(bad, fragment):
    with pytest.raises(FfnlabError, match=fragment):
        parse_spec(bad)


def test_facts_corpus_source_is_canonical_and_splits_by_subject():
    src = resolve_source("facts: values=8 ,subjects=40, value_len=1,relations=3,seed=3")
    assert src.spec == parse_spec(SMALL).spec()
    texts = src.load()
    bank = make_bank(parse_spec(SMALL))
    assert texts.train == bank.split()[0] and texts.val == bank.split()[1]
    # what training reads: documents joined by one blank line, so CONTEXT precedes every later document
    joined = join_documents(texts.train)
    assert CONTEXT + texts.train[1] in joined


# ---------------------------------------------------------------- the measure


def test_stored_bits_by_hand():
    ln2 = math.log(2)
    full = stored_bits([0.0] * 6, [0, 0, 0, 1, 1, 1], 5.0)
    assert full["bits"] == 30.0 and full["entropy_bits"] == 30.0 and full["fraction"] == 1.0
    # relation 0 at 2 bits of loss per fact: 3 x (5 - 2) = 9; relation 1 worse than chance: clipped to 0
    mixed = stored_bits([2 * ln2] * 3 + [7 * ln2] * 3, [0, 0, 0, 1, 1, 1], 5.0)
    assert mixed["bits"] == pytest.approx(9.0)
    assert [r["bits"] for r in mixed["relations"]] == [pytest.approx(9.0), 0.0]
    # the paper's bound uses the mean loss per relation: losses 0 and 4 bits average to 2
    assert stored_bits([0.0, 4 * ln2], [0, 0], 5.0)["bits"] == pytest.approx(6.0)


def oracle(bank, known, vocab=256, pool_only=False):
    """Logits that put (almost) all mass on the right next value character for the facts in
    ``known``, and spread it evenly over the relation's pool for every other fact."""
    table: dict[tuple[int, ...], list[int]] = {}
    for f in bank.facts:
        ctx = tuple(encode(CONTEXT + f.prompt))
        if f in known and not pool_only:
            table[ctx] = [encode(f.value)[0]]
        else:
            table[ctx] = [encode(v)[0] for v in bank.pools[f.relation]]

    def logits_fn(ids):
        out = torch.zeros(*ids.shape, vocab)
        for b in range(ids.shape[0]):
            row = ids[b].tolist()
            for t in range(len(row)):
                hit = table.get(tuple(row[:t + 1]))
                if hit:
                    out[b, t] = -1e4
                    out[b, t, hit] = 0.0
        return out

    return logits_fn


def test_a_model_that_memorised_every_fact_stores_the_full_entropy():
    bank = make_bank(parse_spec(SMALL))
    r = measure_logits(oracle(bank, set(bank.facts)), bank)
    n = len(bank.trained_facts())
    assert r["trained"]["entropy_bits"] == n * 3.0
    assert r["trained"]["bits"] == pytest.approx(n * 3.0, rel=1e-6)
    assert r["trained"]["mean_value_loss_nats"] == pytest.approx(0.0, abs=1e-6)


def test_knowing_only_the_value_pool_stores_nothing_and_half_the_facts_half():
    bank = make_bank(parse_spec(SMALL))
    pool = measure_logits(oracle(bank, set(), pool_only=True), bank)
    assert pool["trained"]["mean_value_loss_nats"] == pytest.approx(math.log(8), rel=1e-6)
    assert pool["trained"]["bits"] == pytest.approx(0.0, abs=1e-6)
    trained = bank.trained_facts()
    half = {f for f in trained if f.subject % 2 == 1}  # the odd subjects, for every relation
    r = measure_logits(oracle(bank, half), bank)
    n_half = len(half)
    # per relation: N x (3 - mean bits) with mean bits = (N - n_r) / N x 3 -> n_r x 3 in total
    assert r["trained"]["bits"] == pytest.approx(n_half * 3.0, rel=1e-6)
    assert r["heldout"]["bits"] == pytest.approx(0.0, abs=1e-6)


def test_an_untrained_model_stores_about_nothing():
    from ffnlab.training import runconfig
    from ffnlab.training.nn import build_model

    bank = make_bank(parse_spec(SMALL))
    cfg = runconfig.from_dict({"model": {"d_model": 32, "n_layers": 2, "n_heads": 2}, "train": {"seq_len": 64}})
    model = build_model(runconfig.model_config(cfg, 256), seed=0, max_seq_len=64).eval()
    r = measure_logits(lambda ids: model(ids)[0], bank)
    assert r["trained"]["bits"] <= 0.01 * r["trained"]["entropy_bits"]
    # and its value loss is about ln 256 per byte (a random model spreads mass over all bytes)
    assert r["trained"]["mean_value_loss_nats"] == pytest.approx(math.log(256), rel=0.05)


def test_value_losses_count_only_the_value_tokens():
    bank = make_bank(parse_spec("facts:subjects=10,relations=2,values=16,value_len=3"))
    facts = bank.facts[:4]
    uniform = value_losses(lambda ids: torch.zeros(*ids.shape, 256), facts, batch_size=3)
    assert uniform == pytest.approx([3 * math.log(256)] * 4, rel=1e-6)


# ---------------------------------------------------------------- verdicts


def arm(name, ratio, gated, values, params=1000):
    a = ArmCapacity("b", name, "swiglu" if gated else "gelu", gated, 32, int(32 * ratio), ratio,
                    ratio * (1.5 if gated else 1), params)
    a.runs = [{"bits_per_param": v} for v in values]
    return a


def test_capacity_verdicts_follow_the_intervals():
    peak = {"b": [arm("r2", 2, False, [0.30, 0.31, 0.29]), arm("r4", 4, False, [0.40, 0.41, 0.39]),
                  arm("r8", 8, False, [0.20, 0.21, 0.19])]}
    v = verdict_peak(peak)
    assert v.verdict == "true" and "Welch" in v.evidence  # 3 seeds: nothing pooled (the rule)
    pooled = {"b": [arm("r2", 2, False, [0.30 + 0.001 * i for i in range(10)]),
                    arm("r4", 4, False, [0.40 + 0.001 * ((3 * i) % 10) for i in range(10)])]}
    assert "pooled" in verdict_peak(pooled).evidence  # 10 seeds, equal spreads: pooled
    beaten = {"b": [arm("r2", 2, False, [0.50, 0.51, 0.49]), arm("r4", 4, False, [0.40, 0.41, 0.39])]}
    assert verdict_peak(beaten).verdict == "false"
    # ratio 2 stores as much as ratio 4 within 10% (precisely measured): 4 is no peak
    flat = {"b": [arm("r2", 2, False, [0.401, 0.400, 0.399, 0.400]), arm("r4", 4, False, [0.400, 0.401, 0.399, 0.400])]}
    v = verdict_peak(flat)
    assert v.verdict == "false" and "equivalent within" in v.evidence
    noisy = {"b": [arm("r2", 2, False, [0.30, 0.50, 0.40]), arm("r4", 4, False, [0.41, 0.39, 0.40])]}
    v = verdict_peak(noisy)
    assert v.verdict == "inconclusive" and "seeds per arm" in v.evidence  # says what would decide
    # a real peak, but ratio 2 only 1% below: true numbers, negligible
    tiny = {"b": [arm("r2", 2, False, [0.396, 0.3961, 0.3959, 0.396]),
                  arm("r4", 4, False, [0.400, 0.4001, 0.3999, 0.400])]}
    assert verdict_peak(tiny).verdict == "misleading"
    one = verdict_peak({"b": [arm("r2", 2, False, [0.3]), arm("r4", 4, False, [0.4])]})
    assert one.verdict == "inconclusive" and "no interval" in one.evidence
    same = {"b": [arm("g", 8 / 3, True, [0.400, 0.401, 0.399]), arm("p", 4, False, [0.400, 0.402, 0.398])]}
    assert verdict_gated(same).verdict == "true"
    less = {"b": [arm("g", 8 / 3, True, [0.30, 0.31, 0.29]), arm("p", 4, False, [0.40, 0.41, 0.39])]}
    assert verdict_gated(less).verdict == "false"
    wide = {"b": [arm("g", 8 / 3, True, [0.20, 0.60, 0.40]), arm("p", 4, False, [0.40, 0.41, 0.39])]}
    assert verdict_gated(wide).verdict == "inconclusive"
    # a false at either budget makes the claim false
    assert verdict_gated({**same, "c": less["b"]}).verdict == "false"
    # the pair is fixed in advance: gated at parameter-matched 4 vs plain 4, not the best plain arm
    fixed = {"b": [arm("g", 8 / 3, True, [0.400, 0.401, 0.399]), arm("p", 4, False, [0.400, 0.402, 0.398]),
                   arm("p2", 2, False, [0.60, 0.61, 0.59])]}
    assert verdict_gated(fixed).verdict == "true"
    assert all(v in VERDICTS for v in ("true", "false", "misleading", "inconclusive", "needs-experiment"))


def test_capacity_pair_with_unequal_variances_uses_welch():
    from scipy import stats

    g, p = [0.30, 0.45, 0.38, 0.52], [0.400, 0.401, 0.399, 0.4005]
    quiet = arm("p2", 2, False, [0.30, 0.3001, 0.2999, 0.3])
    v = verdict_gated({"b": [arm("g", 8 / 3, True, g), arm("p", 4, False, p), quiet]})
    ci = stats.ttest_ind(g, p, equal_var=False).confidence_interval(0.95)
    assert "Welch" in v.evidence and f"[{ci.low:+.4f}, {ci.high:+.4f}]" in v.evidence


def test_every_seed_storing_nothing_is_a_clear_outcome_not_nan():
    zero = {"b": [arm("g", 8 / 3, True, [0.0, 0.0, 0.0]), arm("p", 4, False, [0.0, 0.0, 0.0])]}
    v = verdict_gated(zero)
    assert v.verdict == "inconclusive" and "nan" not in v.evidence.lower()
    assert "stored 0 bits" in v.evidence  # says why there is no interval


# ---------------------------------------------------------------- end to end


@pytest.mark.slow
def test_capacity_preset_run_report_and_claims(tmp_path):
    import yaml

    from ffnlab.experiments.capacity.design import budget_spec, find_preset, load_preset, run_preset
    from ffnlab.experiments.capacity.report import write_report
    from ffnlab.sizing.claims import check_claims, load_evidence

    preset = yaml.safe_load(find_preset("capacity").read_text())
    preset["exposures"] = 3
    preset["budgets"] = preset["budgets"][:1]
    preset["sweep"]["seeds"] = [0, 1]
    preset["sweep"]["arms"] = [a for a in preset["sweep"]["arms"] if a["name"] in ("gelu-r4", "swiglu-r8_3")]
    preset["sweep"]["base"]["data"] = {"corpus": "facts:subjects=60,relations=4,values=8,value_len=1",
                                       "tokenizer": "byte", "cache_dir": str(tmp_path / "cache")}
    preset["sweep"]["base"]["train"] |= {"seq_len": 32, "batch_size": 8, "eval_tokens": 256,
                                         "peak_flops": 1e11, "progress": "off"}
    path = tmp_path / "cap.yaml"
    path.write_text(yaml.safe_dump(preset))
    p = load_preset(str(path))
    spec = budget_spec(p, p.budgets[0])
    train_tokens = 54 * (6 + 4 + 2)  # 54 trained subjects of 'abcde:' + 4 values + '\n', blank line between
    assert spec.base["train"]["max_steps"] == math.ceil(3 * (train_tokens - 1) / (32 * 8))
    run_preset(p, tmp_path / "cap", workers=2)
    paths = write_report(tmp_path / "cap")
    result = json.loads(paths["json"].read_text())
    assert {r["arm"] for r in result["arms"]} == {"gelu-r4", "swiglu-r8_3"}
    for r in result["arms"]:
        assert r["n_seeds"] == 2 and r["exposures"] == pytest.approx(3, rel=0.1)
        assert 0 <= r["bits"] <= r["entropy_bits"] == 54 * 4 * 3
    claims = {c.id: c.as_dict() for c in check_claims(load_evidence(paths["dir"]))}
    for cid in ("capacity-peaks-at-ratio-4", "gated-stores-as-much"):
        assert claims[cid]["verdict"] in VERDICTS and claims[cid]["numbers"]["from_report"]
    assert "<script" not in paths["html"].read_text()
    run_dir = tmp_path / "cap" / "small" / "runs" / "gelu-r4-s0"
    p = run("capacity", "measure", str(run_dir), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bits_per_param"] >= 0


def test_capacity_cli_errors(tmp_path):
    assert_usage_error(run("capacity", "measure", str(tmp_path)), "not an ffnlab run")
    assert_usage_error(run("capacity", "report", str(tmp_path)), "no sweep.json")
    assert_usage_error(run("capacity", "run", "no-such-preset"), "no capacity preset")
    assert_usage_error(run("sweep", "capacity"), "ffnlab capacity run capacity")


def test_a_capacity_cache_is_matched_to_its_run_by_content_not_by_file_times(tmp_path):
    import os

    from ffnlab.experiments.capacity.analysis import _cached
    from ffnlab.training.capacity import summary_fingerprint

    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text('{"status": "finished", "final_val_loss": 1.0}')
    measure = {"trained": {"bits": 10.0, "fraction": 0.1, "entropy_bits": 100.0}, "heldout": {"bits": 0.0},
               "bits_per_param": 0.01, "bits_per_param_total": 0.009, "exposures": 300.0}
    (run / "capacity.json").write_text(json.dumps(measure | {"summary_sha256": summary_fingerprint(run)}))
    os.utime(run / "capacity.json", (1_000_000, 1_000_000))  # older than the summary, as after a git checkout
    assert _cached(run, remeasure=False)["bits_per_param"] == 0.01
    assert _cached(run, remeasure=True) is None
    (run / "summary.json").write_text('{"status": "finished", "final_val_loss": 0.9}')  # the run was retrained
    assert _cached(run, remeasure=False) is None
    # an older cache without the fingerprint still follows the file times
    (run / "capacity.json").write_text(json.dumps(measure))
    assert _cached(run, remeasure=False) is not None  # written after the summary
    os.utime(run / "capacity.json", (1_000_000, 1_000_000))
    assert _cached(run, remeasure=False) is None
