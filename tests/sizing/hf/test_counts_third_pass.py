"""A third adversarial pass over ``audit``'s counts, with inputs new to the suite (written by
someone who did not write the earlier fixes), kept as tests. Oracle: transformers' own model built
from the same config.json on the meta device, or its refusal (``hf_counts_all.check``).

Where the RoPE theta comes from: 5.25's RoPE standardisation is overridden by GPT-NeoX (the theta of
a flat ``rope_parameters`` or ``rope_scaling``, else ``rotary_emb_base``; never the top-level
``rope_theta``), by Gemma 3 (one dict per layer type: full layers from ``rope_theta``, sliding ones
from ``rope_local_base_freq``) and by OLMo 3 (full layers from ``rope_theta``, sliding ones the
class default), and a per-layer-type rotary embedding builds only the layer types ``layer_types``
uses. The pass wrote thetas of the wrong kind (a string, null) in each of those places, a layer
pattern that makes each layer type used or not, a ``rope_scaling`` without the dict it merges
into, and ``rope_parameters`` of the wrong JSON kind. Before the fixes: 21 of the 38 configs off
(counted where transformers refuses: 10 Gemma 3, 8 GPT-NeoX, 2 OLMo 3, 1 Llama), none a traceback.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from hf_counts_all import assert_as_transformers, exact_defaults, set_keys  # noqa: E402

_DEFAULTS = exact_defaults()
_BAD = {"rope_type": "default", "rope_theta": "x"}
_GOOD = {"rope_type": "default", "rope_theta": 10000.0}


CASES = {  # id -> (model type, edit, the verdict transformers' own behaviour makes right)
    # GPT-NeoX: rope_parameters' (or rope_scaling's) theta, else rotary_emb_base; rope_theta unread
    "gpt_neox-rope-parameters-theta-string": ("gpt_neox", set_keys(rope_parameters=_BAD), "refused"),
    "gpt_neox-rope-parameters-theta-numeric-string": (
        "gpt_neox", set_keys(rope_parameters={"rope_type": "default", "rope_theta": "10000"}), "refused"),
    "gpt_neox-rope-parameters-theta-null": (
        "gpt_neox", set_keys(rope_parameters={"rope_type": "default", "rope_theta": None}), "refused"),
    "gpt_neox-rope-scaling-theta-string": ("gpt_neox", set_keys(rope_scaling=_BAD), "refused"),
    "gpt_neox-rotary-emb-base-string": ("gpt_neox", set_keys(rotary_emb_base="x"), "refused"),
    "gpt_neox-rotary-emb-base-null": ("gpt_neox", set_keys(rotary_emb_base=None), "refused"),
    "gpt_neox-rotary-emb-base-negative": ("gpt_neox", set_keys(rotary_emb_base=-5.0), "exact"),
    "gpt_neox-rope-theta-string": ("gpt_neox", set_keys(rope_theta="x"), "exact"),  # never read
    "gpt_neox-parameters-win-over-base": ("gpt_neox", set_keys(rope_parameters=_GOOD, rotary_emb_base="x"), "exact"),
    "gpt_neox-parameters-string-base-number": (
        "gpt_neox", set_keys(rope_parameters=_BAD, rotary_emb_base=10000), "refused"),
    "gpt_neox-parameters-by-layer-type": ("gpt_neox", set_keys(rope_parameters={"full_attention": _BAD}), "exact"),
    "gpt_neox-rope-parameters-string": ("gpt_neox", set_keys(rope_parameters="x"), "refused"),
    # Gemma 3 (3 layers: all sliding by default): rope_local_base_freq feeds the sliding layers
    "gemma3-local-base-freq-string": ("gemma3_text", set_keys(rope_local_base_freq="x"), "refused"),
    "gemma3-local-base-freq-null": ("gemma3_text", set_keys(rope_local_base_freq=None), "refused"),
    "gemma3-local-base-freq-negative": ("gemma3_text", set_keys(rope_local_base_freq=-5.0), "exact"),
    "gemma3-rope-theta-string-no-full-layer": ("gemma3_text", set_keys(rope_theta="x"), "exact"),
    "gemma3-sliding-parameters-win": (
        "gemma3_text", set_keys(rope_local_base_freq="x", rope_parameters={"sliding_attention": _GOOD,
                                                                        "full_attention": _GOOD}), "exact"),
    "gemma3-sliding-parameters-string": (
        "gemma3_text", set_keys(rope_parameters={"sliding_attention": _BAD, "full_attention": _GOOD}), "refused"),
    "gemma3-full-parameters-only": (
        "gemma3_text", set_keys(rope_local_base_freq="x", rope_parameters={"full_attention": _GOOD}), "refused"),
    "gemma3-full-parameters-null": (
        "gemma3_text", set_keys(rope_parameters={"full_attention": None, "sliding_attention": _GOOD}), "exact"),
    "gemma3-flat-parameters-ignored": ("gemma3_text", set_keys(rope_parameters=_BAD), "exact"),
    "gemma3-scaling-without-full-dict": (
        "gemma3_text", set_keys(rope_scaling={"rope_type": "linear", "factor": 2.0},
                            rope_parameters={"sliding_attention": _GOOD}), "refused"),
    "gemma3-scaling-theta-string-unused": (
        "gemma3_text", set_keys(rope_scaling={"rope_type": "linear", "factor": 2.0, "rope_theta": "x"}), "exact"),
    "gemma3-every-layer-full-theta-string": ("gemma3_text", set_keys(sliding_window_pattern=1, rope_theta="x"),
                                             "refused"),
    "gemma3-every-layer-full-local-string": (
        "gemma3_text", set_keys(sliding_window_pattern=1, rope_local_base_freq="x"), "exact"),
    "gemma3-every-second-full-theta-string": ("gemma3_text", set_keys(sliding_window_pattern=2, rope_theta="x"),
                                              "refused"),
    "gemma3-layer-types-full-theta-string": (
        "gemma3_text", set_keys(layer_types=["full_attention"] * 3, rope_theta="x"), "refused"),
    "gemma3-layer-types-full-local-string": (
        "gemma3_text", set_keys(layer_types=["full_attention"] * 3, rope_local_base_freq="x"), "exact"),
    "gemma3-no-window-local-string": ("gemma3_text", set_keys(sliding_window=None, rope_local_base_freq="x"),
                                      "refused"),
    "gemma3-zero-layers-local-string": ("gemma3_text", set_keys(num_hidden_layers=0, rope_local_base_freq="x"),
                                        "exact"),
    "gemma3-pattern-null": ("gemma3_text", set_keys(sliding_window_pattern=None), "refused"),
    "gemma3-pattern-string": ("gemma3_text", set_keys(sliding_window_pattern="6"), "refused"),
    # OLMo 3 (1 layer: sliding): the sliding theta is the class default whatever rope_theta says
    "olmo3-sliding-parameters-string": (
        "olmo3", set_keys(rope_parameters={"full_attention": _GOOD, "sliding_attention": _BAD}), "refused"),
    "olmo3-rope-theta-string-no-full-layer": ("olmo3", set_keys(rope_theta="x"), "exact"),
    "olmo3-full-layer-theta-string": ("olmo3", set_keys(layer_types=["full_attention"], rope_theta="x"), "refused"),
    # a rope_parameters nested by layer type on a type without layer types is flat: unread
    "llama-parameters-by-layer-type": ("llama", set_keys(rope_parameters={"full_attention": _BAD}), "exact"),
    "llama-rope-parameters-list": ("llama", set_keys(rope_parameters=[1]), "refused"),
    "qwen2-parameters-by-layer-type": ("qwen2", set_keys(rope_parameters={"full_attention": _BAD}), "refused"),
    # what every config class checks, read by ffnlab or not: layer_types' names and length, id2label's
    # keys, a dtype naming a torch dtype
    "gpt2-layer-types-unknown": ("gpt2", lambda c: {**c, "layer_types": ["foo"] * c["n_layer"]}, "refused"),
    "llama-layer-types-short": ("llama", set_keys(layer_types=["full_attention"]), "refused"),
    "mistral-layer-types-string": ("mistral", set_keys(layer_types="full_attention"), "refused"),
    "llama-layer-types-legacy-name": ("llama", lambda c: {**c, "layer_types": ["attention"] * c["num_hidden_layers"]},
                                      "exact"),
    "qwen2-layer-types-chunked": (
        "qwen2", lambda c: {**c, "layer_types": ["chunked_attention"] * c["num_hidden_layers"]}, "exact"),
    "qwen2-id2label-string": ("qwen2", set_keys(id2label="x"), "refused"),
    "phi3-id2label-word-key": ("phi3", set_keys(id2label={"a": "x"}), "refused"),
    "phi3-id2label-number-key": ("phi3", set_keys(id2label={"0": "x", "1": "y"}), "exact"),
    "llama-torch-dtype-unknown": ("llama", set_keys(torch_dtype="float7"), "refused"),
    "opt-dtype-unknown": ("opt", set_keys(dtype="auto"), "refused"),
    "olmo2-dtype-wins-over-torch-dtype": ("olmo2", set_keys(dtype="bfloat16", torch_dtype="float7"), "exact"),
    "gemma2-torch-dtype-bfloat16": ("gemma2", set_keys(torch_dtype="bfloat16"), "exact"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_third_pass_config_counts_or_is_refused_as_transformers_does(tmp_path, name):
    model_type, edit, expected = CASES[name]
    assert_as_transformers(edit(_DEFAULTS[model_type]), expected, tmp_path)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[2] == "exact"))
def test_the_translators_alone_count_what_transformers_builds(tmp_path, name):
    """Without transformers to ask, the translators themselves count these (a translator that
    refused them would leave audit nothing to say on a machine without transformers)."""
    from hf_counts_all import reference

    from ffnlab.sizing.counting import count_params
    from ffnlab.sizing.hf import from_hf_dict

    model_type, edit, _ = CASES[name]
    config = edit(_DEFAULTS[model_type])
    if model_type == "gemma3_text" and config.get("num_hidden_layers") == 0:
        pytest.skip("no translator counts a model of 0 layers")
    assert count_params(from_hf_dict(config)).total == reference(config)["total"]


def test_the_rope_theta_sources_are_this_transformers():
    """:data:`ROPE_THETA_SOURCES`, probed: with every layer of one type, a string theta under the
    key named is refused and one under the top-level ``rope_theta`` is not, unless that is the key."""
    from hf_counts_all import reference

    from ffnlab.sizing.hf.keys import ROPE_THETA_SOURCES

    for model_type, sources in ROPE_THETA_SOURCES.items():
        base = _DEFAULTS[model_type]
        for layer_type, key in sources.items():
            layered = {**base, "layer_types": [layer_type] * base["num_hidden_layers"]} if layer_type else base
            for candidate in ("rope_theta", "rotary_emb_base", "rope_local_base_freq"):
                refused = "refused" in reference({**layered, candidate: "x"})
                assert refused == (candidate == key), (model_type, layer_type, candidate)


def test_the_layer_kinds_are_this_transformers():
    from transformers import configuration_utils

    from ffnlab.sizing.hf.keys import LAYER_TYPE_NAMES

    legacy = set(configuration_utils._LEGACY_LAYER_TYPE_REMAP)
    assert set(configuration_utils.ALLOWED_ATTN_LAYER_TYPES) | legacy == LAYER_TYPE_NAMES
