"""The values of a RoPE dict, thrown at the translated types: ``audit`` counts what transformers
builds and refuses, in one line, what it refuses (``keys.check_rope_values``; the seventh pass's G4,
G7, G8 and G9). Oracle: transformers 5.25 building the same config.json on the meta device, live
(``hf_counts_all.check``).

Each value each scaling type's validator or RoPE init reads (linear, dynamic, yarn, llama3,
longrope: factor, rope_theta, original_max_position_embeddings, beta_fast / beta_slow, mscale /
mscale_all_dim, attention_factor, low / high_freq_factor, short / long_factor) set to null, 0, -1,
a string, a list, 0.5 or true, as rope_parameters or rope_scaling, each on one of several types in
turn (with RoPE and without: GPT-2 and OPT validate the dict all the same); longrope and linear
where head_dim is left out (Mixtral's and Ministral's class keep it null); dicts per layer type
(Gemma 3, OLMo 3), each filled from its own theta key; and the top-level keys
5.25's standardisation fills the dict from (rope_theta, original_max_position_embeddings,
max_position_embeddings, partial_rotary_factor, GPT-NeoX's rotary_pct), alone and under a yarn dict
that leaves them out.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("transformers")

from hf_counts_all import check, exact_defaults  # noqa: E402

DROP = "<drop>"  # an edit that removes the key
BAD = (None, 0, -1, "4", [1.0], 0.5, True)
# the types thrown, in turn: RoPE computed (MLA, partial rotary, sliding), and only validated
TYPES = ("llama", "qwen2", "deepseek_v3", "gpt_neox", "phi", "stablelm", "mistral", "gpt2", "opt", "granite")
HEAD = 8  # the longrope factor lists' length: these types' default rotary width is 16 or less

DICTS: dict[str, dict[str, Any]] = {
    "linear": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32,
             "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0, "attention_factor": 1.0, "rope_theta": 10000.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "rope_theta": 10000.0},
    "longrope": {"rope_type": "longrope", "short_factor": [1.0] * HEAD, "long_factor": [1.0] * HEAD,
                 "original_max_position_embeddings": 64, "factor": 2.0, "attention_factor": 1.0,
                 "rope_theta": 10000.0},
}
TOP_KEYS = ("rope_theta", "original_max_position_embeddings", "max_position_embeddings", "partial_rotary_factor")


def _cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (model type, the edits to its stored default config)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    turn = 0
    for kind, base in DICTS.items():
        for key in base:
            if key == "rope_type":
                continue
            for value in BAD:
                model_type = TYPES[turn % len(TYPES)]
                where = ("rope_parameters", "rope_scaling")[(turn + turn // len(TYPES)) % 2]
                turn += 1
                out[f"{model_type}-{where}.{kind}.{key}={value!r}"] = (model_type, {where: {**base, key: value}})
    for key in TOP_KEYS:
        for value in BAD:
            model_type = TYPES[turn % len(TYPES)]
            turn += 1
            out[f"{model_type}-top-{key}={value!r}"] = (model_type, {key: value})
            model_type = TYPES[turn % len(TYPES)]
            turn += 1
            out[f"{model_type}-top-{key}={value!r}-under-bare-yarn"] = (
                model_type, {key: value, "rope_parameters": {"rope_type": "yarn", "factor": 4.0}})
    for value in (*BAD, 1e308):
        out[f"gpt_neox-rotary_pct={value!r}"] = ("gpt_neox", {"rotary_pct": value})
    yarn_bare = {name: {"rope_type": "yarn", "factor": 4.0} for name in ("full_attention", "sliding_attention")}
    for value in BAD:  # one dict per layer type, each filled from its own theta key
        for key in ("rope_theta", "rope_local_base_freq"):
            out[f"gemma3_text-top-{key}={value!r}-under-bare-yarn-per-layer-type"] = (
                "gemma3_text", {key: value, "rope_parameters": yarn_bare})
        out[f"olmo3-rope_parameters.sliding_attention.llama3.low_freq_factor={value!r}"] = ("olmo3", {
            "rope_parameters": {"full_attention": {"rope_type": "default"},
                                "sliding_attention": {**DICTS["llama3"], "low_freq_factor": value}}})
    for model_type in ("mixtral", "ministral", "llama", "qwen2"):  # a head_dim its class keeps null, or not
        for kind in ("longrope", "linear"):
            out[f"{model_type}-head_dim-absent-{kind}"] = (model_type, {"head_dim": DROP,
                                                                         "rope_parameters": DICTS[kind]})
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def defaults() -> dict[str, dict[str, Any]]:
    return exact_defaults()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rope_value_counts_or_is_refused_as_transformers_does(tmp_path, defaults, name):
    model_type, edits = CASES[name]
    config = {**copy.deepcopy(defaults[model_type]), **copy.deepcopy(edits)}
    config = {k: v for k, v in config.items() if v != DROP}
    rec = check(config, tmp_path)
    assert rec["status"] in ("exact", "refused"), (rec["reason"], rec["audit"], rec["reference"])
    if rec["status"] == "refused":
        assert "\n" not in rec["audit"]["refused"]


def test_the_cases_cover_both_verdicts(tmp_path, defaults):
    """The classes thrown hold models transformers builds and models it refuses (so the test
    above is not vacuous): one of each, checked live."""
    built = CASES["stablelm-rope_scaling.linear.factor=0.5"]
    refused = CASES["gpt_neox-rotary_pct=None"]
    for (model_type, edits), status in ((built, "exact"), (refused, "refused")):
        rec = check({**copy.deepcopy(defaults[model_type]), **copy.deepcopy(edits)}, tmp_path)
        assert rec["status"] == status, rec
