"""RoPE scaling and padding ids, counted or refused as transformers 5.25 does (oracle: the model
transformers builds from the same config.json on the meta device, or its refusal).

Eight edits applied to every translated model type's default config found audit counting 258
configs transformers refuses (none after the fix, and nine valid edits stay exact):
a ``rope_scaling`` missing a key its type's validator requires (yarn without a factor, llama3
without its frequency factors, longrope without its factor lists), a factor written as a string
(the rotary embedding computes with it), a rope_type the model cannot compute, a ``pad_token_id``
outside the vocabulary (the token embedding takes it as padding index), DeepSeek's unused but
divided-by ``num_key_value_heads: 0``, DBRX with tied embeddings, and Phi-3 / Phi-3.5-MoE's own
RoPE validators. What each type does is probed into ``data/hf_rules.json``
(``tests/helpers/hf_class_rules.py``); the keys each scaling type requires are transformers' own
table, checked here against its error message.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("transformers")

from hf_counts_all import assert_as_transformers, exact_defaults, reference, set_keys  # noqa: E402

_DEFAULTS = exact_defaults()
_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 16}


def _scaling(**scaling):  # noqa: ANN003, ANN202
    return set_keys(rope_scaling=scaling)


CASES = {  # id -> (model type, edit, transformers' verdict)
    "llama-yarn-without-factor": ("llama", _scaling(rope_type="yarn"), "refused"),
    "llama-yarn-original-filled": ("llama", _scaling(rope_type="yarn", factor=2.0), "exact"),
    "llama-yarn-string-factor": ("llama", _scaling(rope_type="yarn", factor="2.0"), "refused"),
    "qwen2-llama3-without-frequency-factors": ("qwen2", _scaling(rope_type="llama3", factor=8.0), "refused"),
    "qwen2-llama3-complete": ("qwen2", set_keys(rope_scaling=_LLAMA3), "exact"),
    "mistral-longrope-without-lists": ("mistral", _scaling(rope_type="longrope", factor=2.0), "refused"),
    "deepseek_v3-linear-string-factor": ("deepseek_v3", _scaling(rope_type="linear", factor="2"), "refused"),
    "cohere-dynamic-string-factor": ("cohere", _scaling(rope_type="dynamic", factor="2"), "refused"),
    "granite-type-alias-linear": ("granite", _scaling(type="linear", factor=2.0), "exact"),
    "olmo-unknown-rope-type": ("olmo", _scaling(rope_type="ntk-by-parts", factor=2.0), "refused"),
    "gpt2-unknown-rope-type-unread": ("gpt2", _scaling(rope_type="ntk-by-parts", factor=2.0), "exact"),
    "bloom-llama3-without-theta": ("bloom", set_keys(rope_scaling=_LLAMA3), "refused"),
    "opt-linear-without-factor": ("opt", set_keys(rope_parameters={"rope_type": "linear"}), "refused"),
    "phi-default-with-string-factor": ("phi", _scaling(rope_type="default", factor="x"), "exact"),
    "stablelm-empty-scaling": ("stablelm", set_keys(rope_scaling={}), "exact"),
    "phi3-linear": ("phi3", _scaling(rope_type="linear", factor=2.0), "refused"),
    "phi3-proportional": ("phi3", _scaling(rope_type="proportional", rope_theta=10000.0), "refused"),
    "phi3-proportional-parameters": (
        "phi3", set_keys(rope_parameters={"rope_type": "proportional", "rope_theta": 500.0}), "refused"),
    "phi3-proportional-type-alias": ("phi3", _scaling(type="proportional", rope_theta=10000.0), "refused"),
    "phi3-default": ("phi3", set_keys(rope_parameters={"rope_type": "default", "rope_theta": 500.0}), "exact"),
    "phimoe-proportional": ("phimoe", _scaling(rope_type="proportional", rope_theta=10000.0), "refused"),
    "llama-proportional": ("llama", _scaling(rope_type="proportional", rope_theta=10000.0), "exact"),
    "qwen3-proportional-partial": (
        "qwen3", _scaling(rope_type="proportional", rope_theta=10000.0, partial_rotary_factor=0.5), "exact"),
    "phi3-longrope-short-list": ("phi3", _scaling(rope_type="longrope", factor=2.0, short_factor=[1.0],
                                                  long_factor=[1.0], original_max_position_embeddings=16), "refused"),
    "phimoe-longrope-without-mscale": (
        "phimoe", _scaling(rope_type="longrope", factor=2.0, short_factor=[1.0], long_factor=[1.0],
                           original_max_position_embeddings=16), "refused"),
    "llama-pad-at-vocab": ("llama", lambda c: {**c, "pad_token_id": c["vocab_size"]}, "refused"),
    "gemma2-pad-below-minus-vocab": ("gemma2", lambda c: {**c, "pad_token_id": -c["vocab_size"] - 1}, "refused"),
    "qwen3-pad-minus-one": ("qwen3", set_keys(pad_token_id=-1), "exact"),
    "gpt2-pad-at-vocab-unread": ("gpt2", lambda c: {**c, "pad_token_id": c["vocab_size"]}, "exact"),
    "deepseek_v2-zero-kv-heads": ("deepseek_v2", set_keys(num_key_value_heads=0), "refused"),
    "deepseek_v3-null-kv-heads": ("deepseek_v3", set_keys(num_key_value_heads=None), "exact"),
    "dbrx-tied-embeddings": ("dbrx", set_keys(tie_word_embeddings=True), "refused"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rope_scaling_and_padding_count_or_refuse_as_transformers_does(tmp_path, name):
    model_type, edit, expected = CASES[name]
    assert_as_transformers(edit(_DEFAULTS[model_type]), expected, tmp_path)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[2] == "refused"))
def test_the_translators_alone_refuse_them(name):
    """Without transformers to ask, the translators themselves refuse these, in one line."""
    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.hf import from_hf_dict

    model_type, edit, _ = CASES[name]
    with pytest.raises(FfnlabError) as e:
        from_hf_dict(edit(_DEFAULTS[model_type]))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kind", ["linear", "dynamic", "yarn", "longrope", "llama3", "proportional"])
def test_the_required_keys_are_transformers_own(kind):
    """A rope_scaling of the rope_type alone: transformers names the keys it misses, which are the
    table's less those Llama's standardisation fills (rope_theta, original_max_position_embeddings)."""
    from ffnlab.sizing.hf.rules import ROPE_REQUIRED_KEYS, ROPE_SCALING

    assert {"fills-theta", "fills-original"} <= ROPE_SCALING["llama"]
    ref = reference({**_DEFAULTS["llama"], "rope_scaling": {"rope_type": kind}})
    expected = set(ROPE_REQUIRED_KEYS[kind]) - {"rope_theta", "original_max_position_embeddings"}
    if not expected:
        assert "total" in ref, ref
        return
    found = re.search(r"Missing required keys in `rope_parameters` for 'rope_type'='\w+': \{([^}]*)\}", ref["refused"])
    assert found, ref
    assert set(re.findall(r"'(\w+)'", found.group(1))) == expected


# partial_rotary_factor values whose product with the head width is not finite (or barely above
# zero): transformers' int(head width x factor) raises OverflowError on an infinite product (Phi-3's
# validate_rope, GPT-OSS's split, the odd-head check of every RoPE type), and builds the model
# where the product is finite; ffnlab's translators computed the same int() and raised the
# OverflowError as a traceback. Checked against transformers' build of each config.
_TINY = 1e-320  # a subnormal: a rotary width of 0, which transformers builds
_ROTARY_CASES = {  # id -> (model type, edit)
    "phi3-top-1e308": ("phi3", set_keys(partial_rotary_factor=1e308)),
    "phi3-top-minus-1e308": ("phi3", set_keys(partial_rotary_factor=-1e308)),
    "phi3-top-inf": ("phi3", set_keys(partial_rotary_factor=float("inf"))),
    "phi3-top-subnormal": ("phi3", set_keys(partial_rotary_factor=_TINY)),
    "phi3-rope-dict-1e308": ("phi3", set_keys(rope_parameters={"rope_type": "default",
                                                                "partial_rotary_factor": 1e308})),
    "gpt_oss-top-1e308": ("gpt_oss", set_keys(partial_rotary_factor=1e308)),
    "gpt_oss-top-inf": ("gpt_oss", set_keys(partial_rotary_factor=float("inf"))),
    "gpt_oss-top-subnormal": ("gpt_oss", set_keys(partial_rotary_factor=_TINY)),
    "llama-odd-head-1e308": ("llama", set_keys(head_dim=7, partial_rotary_factor=1e308)),
    "llama-odd-head-dict-inf": ("llama", set_keys(head_dim=7, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": float("inf")})),
    "qwen3-odd-head-minus-1e308": ("qwen3", set_keys(head_dim=9, partial_rotary_factor=-1e308)),
    "mistral-odd-head-1e308": ("mistral", set_keys(head_dim=9, partial_rotary_factor=1e308)),
    "llama-odd-head-subnormal": ("llama", set_keys(head_dim=7, partial_rotary_factor=_TINY)),
}


@pytest.mark.parametrize("name", sorted(_ROTARY_CASES))
def test_a_partial_rotary_factor_overflowing_the_width_is_judged_as_transformers_does(tmp_path, name):
    model_type, edit = _ROTARY_CASES[name]
    config = edit(_DEFAULTS[model_type])
    ref = reference(config)  # the oracle: what transformers does with it
    assert_as_transformers(config, "refused" if "refused" in ref else "exact", tmp_path)


@pytest.mark.parametrize("command", ["audit", "size --from"])
def test_a_json_1e309_factor_is_one_error_line(tmp_path, command):
    """1e309 in config.json reads as infinity: one error line and exit 2, never a traceback."""
    from cli_run import assert_usage_error, run

    (tmp_path / "config.json").write_text('{"model_type": "phi3", "partial_rotary_factor": 1e309}')
    assert reference({"model_type": "phi3", "partial_rotary_factor": float("inf")}).get("refused")
    assert_usage_error(run(*command.split(), str(tmp_path / "config.json")), "partial_rotary_factor")


def _probed_types() -> list[str]:
    from hf_class_rules import MODEL_TYPES

    return list(MODEL_TYPES)


@pytest.mark.parametrize("model_type", _probed_types())
def test_the_rope_kinds_each_type_refuses_are_this_transformers(model_type):
    """hf_rules.json's "refuses-<kind>" tags, which check_rope_scaling reads, derived again from the
    installed transformers: every RoPE type it computes (ROPE_INIT_FUNCTIONS and default, less
    longrope, whose complete dict depends on the type), built with complete parameters."""
    from hf_class_rules import _base, _builds, rope_kind_refusals

    from ffnlab.sizing.hf.rules import ROPE_SCALING

    config, _, text_type = _base(model_type)
    if not _builds(config):
        pytest.skip(f"{model_type}'s probe case does not build")
    held = {t for t in ROPE_SCALING.get(text_type, frozenset()) if t.startswith("refuses-")}
    assert set(rope_kind_refusals(config)) == held
