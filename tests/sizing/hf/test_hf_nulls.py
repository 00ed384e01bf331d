"""config.json keys set to null or left out, read as transformers reads them, and the
configs transformers builds that ffnlab once refused. Oracle: transformers' own model
built from the same dict (tests/helpers/hf_count.py), or its refusal."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from hf_cases import MODEL_TYPES, case  # noqa: E402
from hf_count import hf_param_count  # noqa: E402

from ffnlab.errors import FfnlabError  # noqa: E402
from ffnlab.sizing.audit import audit  # noqa: E402
from ffnlab.sizing.counting import count_params  # noqa: E402
from ffnlab.sizing.hf import from_hf_dict  # noqa: E402
from ffnlab.sizing.hf.rules import CLASS_DEFAULTS, HEADS_DIVIDE_HIDDEN, PROBED_WITH  # noqa: E402


def theirs(config: dict) -> int | None:
    """transformers' count, or None when it refuses to build the config."""
    try:
        n, forced_tie = hf_param_count(config)
    except Exception:  # noqa: BLE001 - any refusal of transformers
        return None
    # transformers ties T5's head always; ffnlab counts the untied head a config asks for
    # (T5Config's defaults: vocab 32128, d_model 512)
    return n + config.get("vocab_size", 32128) * config.get("d_model", 512) if forced_tie else n


def ours(config: dict) -> int | None:
    try:
        return count_params(from_hf_dict(config)).total
    except FfnlabError as e:
        assert "\n" not in str(e) and len(str(e)) < 1000
        return None


# where ffnlab and transformers 5.25 still differ, and why (each checked to still differ)
KNOWN = {
    ("granitemoe", "num_attention_heads", "missing"): "32 default heads over a 24-wide model: transformers builds "
                                                      "zero-width heads; ffnlab refuses them",
    ("dbrx", "d_model", "missing"): "heads not dividing d_model give DBRX unequal q and k widths ffnlab cannot express",
    ("dbrx", "n_heads", "missing"): "the same for the default 16 heads",
}


def _variants(model_type: str, seed: int) -> list[tuple[str, str, dict]]:
    base = case(model_type, seed)
    inner = "text_config" in base
    keys = [k for k in (base["text_config"] if inner else base) if k != "model_type"]
    out = []
    for key in keys:
        for mode in ("null", "missing"):
            c = json.loads(json.dumps(base))
            target = c["text_config"] if inner else c
            if mode == "null":
                target[key] = None
            else:
                del target[key]
            out.append((key, mode, c))
    return out


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_null_and_missing_keys_read_as_transformers_reads_them(model_type):
    """Every key of a random config, set to null and left out in turn: ffnlab counts what
    transformers builds, exactly, and refuses (one line) what it refuses."""
    wrong = []
    for key, mode, config in _variants(model_type, 1):
        a, b = ours(config), theirs(config)
        known = (model_type, key, mode) in KNOWN
        if (a != b) != known:
            wrong.append((key, mode, a, b, "expected to differ" if known else "differs"))
    assert not wrong, wrong


def test_probed_rules_are_from_this_transformers():
    """The probed table (src/ffnlab/sizing/hf/rules.py, written by tests/helpers/hf_class_rules.py) was
    probed from the installed transformers; its class defaults are the classes' own."""
    import dataclasses

    import transformers
    from transformers import CONFIG_MAPPING

    assert transformers.__version__ == PROBED_WITH
    for model_type, defaults in CLASS_DEFAULTS.items():
        fields = {f.name: f for f in dataclasses.fields(CONFIG_MAPPING[model_type])}
        for key, value in defaults.items():
            f = fields[key]
            got = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert got == value, (model_type, key)
    assert {"llama", "deepseek_v2"} <= HEADS_DIVIDE_HIDDEN


# -- configs ffnlab once refused, and configs with keys null or left out ---------------------------

QWEN15_MOE = {  # Qwen/Qwen1.5-MoE-A2.7B config.json (architecture keys)
    "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
    "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1, "use_sliding_window": False, "sliding_window": 0, "max_window_layers": 21,
    "tie_word_embeddings": False,
}


def _same(config: dict) -> int:
    n = ours(config)
    assert n is not None and n == theirs(config), config
    return n


def test_disabled_sliding_window_with_window_zero_is_counted():
    assert _same(QWEN15_MOE) == 14_315_784_192


def test_enabled_sliding_window_of_zero_builds_windowless():
    cfg = {**QWEN15_MOE, "use_sliding_window": True}
    _same(cfg)
    assert from_hf_dict(cfg).attn.sliding_window is None


def test_deepseek_v2_without_top_k_counts_and_marks_active_unknown(tmp_path):
    config = case("deepseek_v2", 1)
    config.pop("num_experts_per_tok")
    _same(config)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    row = audit(str(path)).as_dict()
    assert row["params_total"] == theirs(config)
    assert row["params_active"] is None and row["flops_per_token"] is None and row["top_k"] is None
    assert "top-k" in row["note"] and "unknown" in row["verdict"]


def test_glm4_moe_heads_not_dividing_hidden_take_transformers_head_width():
    config = dict(case("glm4_moe", 1), hidden_size=100, num_attention_heads=3)
    config.pop("head_dim", None)
    assert _same(config) > 0
    assert from_hf_dict(config).head_dim == 100 // 3


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size"])
def test_null_required_width_is_refused_like_transformers(key):
    config = dict(case("qwen2", 1), **{key: None})
    assert theirs(config) is None
    with pytest.raises(FfnlabError, match=f"'{key}' is null"):
        from_hf_dict(config)


def test_null_expert_count_is_refused():
    config = dict(case("qwen3_moe", 1), num_experts=None)
    assert theirs(config) is None
    with pytest.raises(FfnlabError, match="'num_experts' is null"):
        from_hf_dict(config)


@pytest.mark.parametrize("config", [
    {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 64, "num_key_value_heads": None,
     "num_hidden_layers": 2, "intermediate_size": 512, "vocab_size": 1000},  # null kv heads = the head count
    {"model_type": "ernie4_5", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
     "intermediate_size": 96, "vocab_size": 100, "head_dim": None},
    {"model_type": "exaone4", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
     "intermediate_size": 96, "vocab_size": 100},  # no num_key_value_heads: the class default
    {"model_type": "qwen2_5_vl", "vision_config": {}},  # no text keys: Qwen2.5-VL's own text defaults (72B)
    {"model_type": "qwen2_5_vl", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
     "intermediate_size": 96, "vocab_size": 100},  # flat, no num_key_value_heads
    {"model_type": "mistral3"},  # no text_config: Mistral 3's default text model (24B)
], ids=["qwen2-null-kv", "ernie-null-head-dim", "exaone4-no-kv", "qwen2.5-vl-no-text", "qwen2.5-vl-flat",
        "mistral3-no-text"])
def test_configs_with_keys_left_out_count_as_transformers_counts(config):
    _same(config)


def test_python_json_literals_in_config_are_read(tmp_path):
    """Infinity/NaN (as Python's json writes them) are accepted in a key ffnlab does not read;
    where a number is read it is still checked."""
    cfg = dict(case("llama", 1), time_step_limit=[0.0, float("inf")], rope_scaling_factor=float("nan"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))  # writes Infinity and NaN
    assert "Infinity" in path.read_text()
    assert audit(str(path)).as_dict()["params_total"] == theirs(case("llama", 1))
    bad = dict(case("llama", 1), intermediate_size=float("inf"))
    path.write_text(json.dumps(bad))
    with pytest.raises(FfnlabError, match="intermediate_size"):
        audit(str(path))


def test_an_error_quotes_a_bounded_value():
    """700,000 layer indices in a refused key give an error line of bounded length."""
    config = dict(case("qwen3_moe", 1), mlp_only_layers=["x"] + list(range(700_000)))
    with pytest.raises(FfnlabError) as e:
        from_hf_dict(config)
    assert len(str(e.value)) < 300 and "mlp_only_layers" in str(e.value)


@pytest.mark.parametrize("model_type", ["llama", "ernie4_5", "falcon", "qwen2", "gemma"])
def test_the_odd_head_rule_is_probed_from_this_transformers(model_type):
    """ODD_HEAD_REFUSED (which types refuse an odd head width they compute) agrees with a fresh
    probe of the installed transformers, for types in the table and out of it."""
    from hf_class_rules import _base, odd_head_refused

    from ffnlab.sizing.hf.rules import ODD_HEAD_REFUSED

    assert odd_head_refused(_base(model_type)[0]) == sorted(ODD_HEAD_REFUSED.get(model_type, ()))


def test_dbrx_experts_of_another_width_are_counted_not_built():
    """DBRX with hidden_size only: transformers builds its experts at the class's d_model (2048) and
    the rest at hidden_size; ffnlab counts that and refuses to build or train it, in one line."""
    from ffnlab.sizing.config import check_trainable

    config = {"model_type": "dbrx", "hidden_size": 64, "n_heads": 4, "n_layers": 1, "vocab_size": 55,
              "attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0},
              "ffn_config": {"ffn_hidden_size": 16, "moe_num_experts": 2, "moe_top_k": 2}}
    assert ours(config) == theirs(config)
    with pytest.raises(FfnlabError, match="experts of another width"):
        check_trainable(from_hf_dict(config))


@pytest.mark.parametrize("model_type", ["phi", "gpt_oss", "qwen2", "gemma3_text", "gpt2", "dbrx", "gpt_neox"])
def test_the_probed_tags_are_this_transformers(model_type):
    """The per-type rules probed into data/hf_rules.json (dropout ranges, partial rotary factors,
    nested RoPE, layer type names, sub-config kinds) agree with a fresh probe of the installed
    transformers, for types that have each rule and types that do not."""
    from hf_class_rules import (
        _base,
        layer_type_values,
        partial_rotary_refused,
        partial_rotary_top_ignored,
        rope_nested_refused,
        sub_config_kinds,
        unit_interval,
    )

    from ffnlab.sizing.hf import rules

    config, _, text_type = _base(model_type)
    assert tuple(unit_interval(config, text_type)) == rules.UNIT_INTERVAL.get(text_type, ())
    assert set(partial_rotary_refused(config)) == rules.PARTIAL_ROTARY_REFUSED.get(text_type, frozenset())
    assert partial_rotary_top_ignored(config) == (text_type in rules.PARTIAL_ROTARY_TOP_IGNORED)
    assert rope_nested_refused(config) == (text_type in rules.ROPE_NESTED_REFUSED)
    assert set(layer_type_values(config, text_type) or ()) == rules.LAYER_TYPE_VALUES.get(text_type, frozenset())
    kinds = {name: {k: frozenset(v) for k, v in fields.items()} for name, fields in sub_config_kinds(text_type).items()}
    assert kinds == rules.SUB_CONFIG_KINDS.get(text_type, {})
