import re
from dataclasses import replace

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import make_config
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.explain import explain
from ffnlab.sizing.plan import parse_count, plan
from ffnlab.sizing.widths import make_rule, resolve_d_ff
from ffnlab.sizing.zoo import find, load_zoo

SEED_TABLE = {"gpt2": (768, 3072), "gpt-3-175b": (12288, 49152), "llama-7b": (4096, 11008),
              "llama-13b": (5120, 13824), "llama-30b": (6656, 17920), "mistral-7b": (4096, 14336),
              "falcon-40b": (8192, 32768)}


def test_zoo_is_sourced_data():
    zoo = load_zoo()
    assert len(zoo) >= 40
    assert len({e.name for e in zoo}) == len(zoo)
    for e in zoo:
        assert re.fullmatch(r"[a-z0-9.-]+", e.name)
        if e.has_config:
            assert e.source, e.name
            e.config()  # translates and validates
        elif e.counted:  # a type counted through transformers: its structure is stored
            assert e.source and e.hf_config and e.structure() is not None, e.name
        else:
            assert e.estimate and e.source is None  # only the GPT-4 estimate has no architecture
    families = {e.family for e in zoo}
    for fam in ("GPT-2", "GPT-3", "Pythia", "OPT", "BLOOM", "LLaMA", "Llama-2", "Llama-3", "Mistral", "Mixtral",
                "Qwen2", "Gemma", "Phi", "OLMo", "T5"):
        assert any(f.startswith(fam) for f in families), fam


@pytest.mark.parametrize("name, dims", SEED_TABLE.items())
def test_seed_table_rows_are_in_the_zoo(name, dims):
    cfg = find(name).config()
    assert (cfg.d_model, cfg.ffn.d_ff) == dims


def test_lookup_is_case_insensitive_and_suggests():
    assert find("MISTRALAI/MISTRAL-7B-V0.1").name == "mistral-7b"
    with pytest.raises(FfnlabError, match="did you mean"):
        find("mistral-7")


def test_explain_finds_llama_and_ratio_rules():
    out = explain(4096, 11008, "swiglu").as_dict()
    rules = {(r["rule"], r["ffn_dim_multiplier"]): r for r in out["rules"] if r["rule"] == "llama"}
    assert rules[("llama", None)]["multiples_of"] == [128, 256]
    assert out["ratio_raw_exact"] == "43/16"
    plain = explain(768, 3072, "gelu").as_dict()
    assert plain["rules"][0]["ratio"] == "4" and not plain["gated"]


@pytest.mark.parametrize("text, value", [("125M", 125_000_000), ("7B", 7_000_000_000), ("1.3e9", 1_300_000_000),
                                         ("350k", 350_000), (1000, 1000), ("1e30", 10**30)])
def test_parse_count(text, value):
    assert parse_count(text) == value


def _conventions_broken(cfg):
    """Independent restatement of plan's conventions: d%128, d_ff%256, heads%4."""
    return [name for name, ok in (("d_model%128", cfg.d_model % 128 == 0), ("d_ff%256", cfg.ffn.d_ff % 256 == 0),
                                  ("heads%4", cfg.attn.n_heads % 4 == 0)) if not ok]


@pytest.mark.parametrize("target", ["125M", "350M", "1.3B", "7B"])
def test_plan_proposes_shapes_people_build(target):
    n = parse_count(target)
    best, *rest = plan(n, "swiglu")  # default: the LLaMA rule, shapes that keep every convention
    cfg = best.config
    assert abs(best.error) <= 0.02 and best.trades == ()
    assert cfg.d_model % 128 == 0 and cfg.head_dim in (64, 128) and cfg.attn.n_heads % 4 == 0
    assert cfg.ffn.d_ff == resolve_d_ff(cfg.d_model, "swiglu", make_rule("llama")) and cfg.ffn.d_ff % 256 == 0
    assert 32 <= cfg.d_model / cfg.n_layers <= 160
    assert count_params(cfg).total == best.params  # the planner's number is the counter's number
    for c in [best, *rest]:
        assert list(c.trades) == _conventions_broken(c.config)
        assert c.config.d_model % 64 == 0 and c.config.head_dim in (64, 128)
        assert 32 <= c.config.d_model / c.config.n_layers <= 160
        assert count_params(c.config).total == c.params
        assert c.error == (c.params - n) / n
    # shapes that keep every convention come before any that trades one
    keeps = [i for i, c in enumerate(rest) if not c.trades and abs(c.error) <= 0.02]
    trading = [i for i, c in enumerate(rest) if c.trades]
    assert not keeps or not trading or max(keeps) < min(trading)
    assert [abs(rest[i].error) for i in keeps] == sorted(abs(rest[i].error) for i in keeps)


def test_plan_7b_swiglu_is_no_longer_an_odd_shape():
    # before: d_model 3776, 39 layers, 59 heads, d_ff 10070 came first
    best = plan(7 * 10**9, "swiglu")[0].config
    assert (best.d_model % 128, best.attn.n_heads % 4, best.ffn.d_ff % 256) == (0, 0, 0)
    old_rule = plan(7 * 10**9, "swiglu", make_rule("param-matched", ratio=4))
    assert all(("d_ff%256" in c.trades) == (c.config.ffn.d_ff % 256 != 0) for c in old_rule)


@pytest.mark.parametrize("target, fragment", [(10_000, "smallest shape allowed is already bigger"),
                                              (10**30, "beyond the shapes")])
def test_plan_refuses_targets_it_cannot_meet(target, fragment):
    with pytest.raises(FfnlabError, match=fragment) as e:
        plan(target, "swiglu")
    assert "no shape comes within 2%" in str(e.value)


def test_plan_untied_counts_the_lm_head():
    vocab = 128256
    best = plan(8 * 10**9, "swiglu", vocab_size=vocab, tied=False, kv_groups=4)[0]
    cfg = best.config
    assert not cfg.tied_embeddings
    tied = count_params(replace(cfg, tied_embeddings=True)).total
    assert best.params - tied == vocab * cfg.d_model


def test_plan_rejects_impossible_constraints():
    with pytest.raises(FfnlabError):
        plan(1000, "gelu", make_rule("ratio", ratio=4), aspect_band=(10, 5))


def test_make_config_defaults_follow_kind():
    assert make_config(64, 1, 1, 128, kind="swiglu").norm == "rmsnorm"
    assert make_config(64, 1, 1, 128, kind="gelu").positions == "learned"


# --- explain returns explanations only ------------------------------------------------------

def _zoo_widths():
    return [(e.name, e.config()) for e in load_zoo() if e.config() is not None]


def test_explain_on_the_zoo_keeps_only_explanations():
    from fractions import Fraction

    from ffnlab.sizing.widths import WidthRule, resolve_d_ff

    for name, cfg in _zoo_widths():
        d, ff, kind = cfg.d_model, cfg.ffn.d_ff, cfg.ffn.kind
        rules = explain(d, ff, kind).as_dict()["rules"]
        exact_seen_rounded = False
        for r in rules:
            assert r["multiple_of"] == max(r["multiples_of"]), name
            if r["rounding"] == "exact":
                assert not exact_seen_rounded, (name, "exact rules come first")
                assert Fraction(r["ratio"]).denominator <= 3 and r["multiplier"] * d == ff, (name, r)
                continue
            exact_seen_rounded = True
            for m in r["multiples_of"]:
                assert ff // m >= 4, (name, r)  # the multiple is well below d_ff
                target = Fraction(r["multiplier"]).limit_denominator(1000) * d
                assert target != ff and abs(ff - target) <= ff / 20, (name, r)
                q = target / m
                assert q >= 1, (name, r)  # no clamp of a width that rounds to 0
                assert r["rounding"] != "nearest" or (q - Fraction(1, 2)).denominator != 1, (name, r)
                ratio = Fraction(r["ratio"])
                rule = WidthRule(r["rule"], ratio=ratio, multiple_of=m, rounding=r["rounding"],
                                 multiplier=None if r["ffn_dim_multiplier"] is None
                                 else Fraction(str(r["ffn_dim_multiplier"])))
                assert resolve_d_ff(d, kind, rule) == ff, (name, r)


@pytest.mark.parametrize("name, rule, ffn_dim_multiplier, multiple_of", [
    ("llama-7b", "llama", None, 256),        # Meta's params.json: multiple_of 256
    ("llama-2-70b", "llama", 1.3, 4096),     # params.json: ffn_dim_multiplier 1.3, multiple_of 4096
    ("llama-3-8b", "llama", 1.3, 1024),      # params.json: ffn_dim_multiplier 1.3, multiple_of 1024
    ("llama-3.1-405b", "llama", 1.2, 4096),  # params.json: ffn_dim_multiplier 1.2, multiple_of 4096
])
def test_explain_finds_the_published_llama_rule(name, rule, ffn_dim_multiplier, multiple_of):
    cfg = find(name).config()
    rules = explain(cfg.d_model, cfg.ffn.d_ff, cfg.ffn.kind).as_dict()["rules"]
    hits = [r for r in rules if r["rule"] == rule and r["ffn_dim_multiplier"] == ffn_dim_multiplier]
    assert hits and multiple_of in hits[0]["multiples_of"]
    if name == "llama-7b":  # nothing simpler reproduces 11008 from 4096: the LLaMA rule comes first
        assert rules[0] is hits[0] and rules[0]["multiple_of"] == 256


@pytest.mark.parametrize("name, ratio", [("gpt2", "4"), ("gemma-7b", "8"), ("phi-3-mini-4k", "4"),
                                         ("mistral-7b", "7/2")])
def test_explain_exact_ratio_first(name, ratio):
    cfg = find(name).config()
    rules = explain(cfg.d_model, cfg.ffn.d_ff, cfg.ffn.kind).as_dict()["rules"]
    assert rules[0]["rounding"] == "exact" and rules[0]["ratio"] == ratio
    if name == "gpt2":  # "ratio 4 rounded up to 256" is the exact rule again, not a second one
        assert len(rules) == 1


def test_explain_drops_rules_that_explain_nothing():
    rules = explain(2048, 8192, "swiglu").as_dict()["rules"]  # 26 rules before
    assert [(r["rule"], r["ratio"], r["rounding"]) for r in rules] == [("ratio", "4", "exact")]
    assert explain(4096, 11008, "swiglu").as_dict()["ratio_raw_exact"] == "43/16"
    assert all(r["ratio"] != "43/16" for r in explain(4096, 11008, "swiglu").as_dict()["rules"])
    # 1000 / 16 = 62.5: "nearest" only reaches 1008 by breaking the tie upwards; "up" is a rule
    rules = explain(1000, 1008, "gelu").as_dict()["rules"]
    assert any(r["rounding"] == "up" and 16 in r["multiples_of"] for r in rules)
    assert not any(r["rounding"] == "nearest" and 16 in r["multiples_of"] for r in rules)
    # 64 rounds to 0 multiples of 4096 "nearest" and is clamped up to one: not an explanation
    assert explain(64, 4096, "gelu").as_dict()["rules"] == []
