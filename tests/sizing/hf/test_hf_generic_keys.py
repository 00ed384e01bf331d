"""The keys every transformers 5.25 config class (or every model's ``from_config``) checks whatever
the model type, mirrored by ``keys.check_common``: audit counts a translated type's config that
sets them as transformers does, or refuses it in one line where transformers refuses it. Oracle:
transformers' own build of the same config on the meta device (``hf_counts_all.check``), live on
every run; the neighbours of the ninth pass's findings I1 (dtype), I2 (per_layer_config) and I3
(the other generic checks)."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("transformers")

from hf_counts_all import check, exact_defaults  # noqa: E402

from ffnlab.sizing.hf import HF_TRANSLATORS  # noqa: E402

_DEFAULTS = exact_defaults()
# translated types of different families (dense, MoE, encoder-decoder, ALiBi, MLA, windowed)
_TYPES = ("llama", "gpt2", "qwen2_moe", "t5", "mpt", "gemma2", "deepseek_v3", "falcon")


def _agrees(tmp_path, config):
    rec = check(config, tmp_path)
    assert rec["status"] in ("exact", "refused"), (rec["reason"], rec["audit"], rec["reference"])
    if rec["status"] == "refused":
        line = rec["audit"]["refused"]
        assert "\n" not in line and len(line) < 1000
    return rec


# -- I1: dtype / torch_dtype -------------------------------------------------------------------------------

def test_the_build_dtypes_are_those_transformers_builds_under():
    """``BUILD_DTYPES`` is exactly the torch dtype names 5.25's ``local_torch_dtype`` (what
    ``_from_config`` builds inside) accepts, over every dtype name of the installed torch."""
    import torch
    from transformers.modeling_utils import local_torch_dtype

    from ffnlab.sizing.hf.keys import BUILD_DTYPES

    accepted = set()
    for name in dir(torch):
        if isinstance(getattr(torch, name, None), torch.dtype):
            try:
                with local_torch_dtype(getattr(torch, name), "Probe"):
                    pass
            except Exception:  # noqa: BLE001 - any refusal
                continue
            accepted.add(name)
    assert accepted == BUILD_DTYPES


_DTYPES = ("float16", "bfloat16", "half", "float64", "float", "int8", "uint8", "bool", "complex64", "qint8",
           "float8_e5m2", "float4_e2m1fn_x2", "bits8", "auto", "", "Float16", 16, 1.5, True, False, [], {},
           ["float16"], {"": "float16"}, None)


@pytest.mark.parametrize("model_type", _TYPES)
@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
@pytest.mark.parametrize("value", _DTYPES, ids=repr)
def test_a_dtype_counts_or_is_refused_as_transformers_builds(tmp_path, model_type, key, value):
    _agrees(tmp_path, {**_DEFAULTS[model_type], key: value})


@pytest.mark.parametrize("dtype, torch_dtype", [
    ("float16", "int8"), ("int8", "float16"), (None, "int8"), (None, "bfloat16"), (False, "float16"),
    ("", "float16"), (0, "float32")], ids=repr)
def test_dtype_wins_over_torch_dtype_as_transformers_reads_them(tmp_path, dtype, torch_dtype):
    _agrees(tmp_path, {**_DEFAULTS["llama"], "dtype": dtype, "torch_dtype": torch_dtype})


# -- I3: the other checks every config or model runs (ffnlab.sizing.hf.generic) ----------------------------

def _counted_class(model_type):
    import transformers

    from ffnlab.training.hf_count import auto_kind

    auto, _ = auto_kind(transformers, model_type)
    return auto._model_mapping[type(transformers.CONFIG_MAPPING[model_type]())]


def test_the_generic_tables_are_this_transformers():
    """Each table of ``generic`` is what the installed transformers holds, over every translated type."""
    import transformers
    from transformers.generation.configuration_utils import ALL_CACHE_IMPLEMENTATIONS
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, ALL_EXPERTS_FUNCTIONS, ALL_FP8_EXPERTS_FUNCTIONS

    from ffnlab.sizing.hf import generic

    assert {"eager", *ALL_ATTENTION_FUNCTIONS.valid_keys()} == generic.ATTN_IMPLEMENTATIONS
    assert {"eager", *ALL_EXPERTS_FUNCTIONS, *ALL_FP8_EXPERTS_FUNCTIONS} == generic.EXPERTS_IMPLEMENTATIONS
    assert {*ALL_CACHE_IMPLEMENTATIONS, "paged"} == generic.CACHE_IMPLEMENTATIONS
    flash = {f"flash_attention_{v}" for v in (2, 3, 4)}
    for model_type in HF_TRANSLATORS:
        cls = _counted_class(model_type)
        unsupported = generic.ATTN_UNSUPPORTED.get(model_type, frozenset())
        assert (not cls._supports_flash_attn) == (flash <= unsupported), model_type
        assert cls._can_set_experts_implementation() == (model_type in generic.EXPERTS_SETTABLE), model_type
        assert cls.can_generate() == (model_type not in generic.NOT_GENERATING), model_type
        defaulted = getattr(transformers.CONFIG_MAPPING[model_type](), "layer_types", None) is not None
        assert defaulted == (model_type in generic.LAYER_TYPES_DEFAULTED), model_type


@pytest.mark.parametrize("model_type", sorted(set(_DEFAULTS) & set(HF_TRANSLATORS)))
def test_the_attention_each_type_refuses_is_what_its_model_refuses(model_type):
    """``ATTN_UNSUPPORTED`` without the flash names (the machine decides those where the class
    supports them): transformers' own build of the type's default under each other implementation."""
    from hf_counts_all import reference

    from ffnlab.sizing.hf import generic

    for name in sorted(generic.ATTN_IMPLEMENTATIONS - {"flash_attention_2", "flash_attention_3", "flash_attention_4"}):
        refused = "refused" in reference({**_DEFAULTS[model_type], "attn_implementation": name})
        assert refused == (name in generic.ATTN_UNSUPPORTED.get(model_type, ())), (model_type, name)


def _layers(config):
    import transformers

    for key in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
        if isinstance(config.get(key), int):
            return config[key]
    return getattr(transformers.CONFIG_MAPPING[config["model_type"]](), "num_hidden_layers", 2)  # composite: none


_I3_TYPES = (*_TYPES, "gpt_oss", "bloom", "olmo3", "gpt_neo", "qwen2_5_vl_text")
_ALL = "per layer"  # a list entry standing for "as many as the model's layers"
_I3_EDITS: dict[str, dict] = {  # id -> the keys set on the default config
    **{f"num_labels-{v!r}": {"num_labels": v} for v in (0, 1, 2, -1, True, False, "3", 3.0, None, [])},
    **{f"problem_type-{p}-labels-{v!r}": {"problem_type": p, "num_labels": v}
       for p in ("single_label_classification", "regression", "multi_label_classification", "bogus")
       for v in (1, 2, True)},
    "single-label-one-entry-id2label": {"problem_type": "single_label_classification", "id2label": {"0": "a"}},
    "single-label-two-entry-id2label-num_labels-1": {
        "problem_type": "single_label_classification", "id2label": {"0": "a", "1": "b"}, "num_labels": 1},
    "one-entry-id2label-num_labels-1.0": {"id2label": {"0": "a"}, "num_labels": 1.0},
    "two-entry-id2label-num_labels-string": {"id2label": {"0": "a", "1": "b"}, "num_labels": "2"},
    **{f"attn-{v!r}": {"attn_implementation": v}
       for v in ("bogus", "", "EAGER", "eager", "sdpa", "flex_attention", "paged|eager", "paged|sdpa",
                 "paged|bogus", 5, True, [], {"": "bogus"}, {"": "eager"}, {"x": "bogus"}, None)},
    "_attn_implementation-bogus": {"_attn_implementation": "bogus"},
    **{f"experts-{v!r}": {"experts_implementation": v}
       for v in ("bogus", "", "grouped_mm", "batched_mm", "eager", 5, ["eager"], {"": "bogus"}, {"": "grouped_mm"})},
    **{f"output_attentions-{o!r}-{a!r}": {"output_attentions": o, "attn_implementation": a}
       for o, a in ((True, "sdpa"), (True, "eager"), (True, None), (True, "flex_attention"), ("x", "sdpa"),
                    (0, "sdpa"), (True, {"": "sdpa"}), (True, "paged|eager"), (False, "sdpa"))},
    **{f"{k}-{v!r}": {k: v}
       for k, v in (("max_new_tokens", -5), ("max_new_tokens", 0), ("max_new_tokens", 5), ("max_new_tokens", 0.5),
                    ("max_new_tokens", "5"), ("max_new_tokens", True), ("max_new_tokens", None),
                    ("assistant_ensemble_weight", 0.5), ("assistant_ensemble_weight", 1.0),
                    ("assistant_ensemble_weight", 0), ("assistant_ensemble_weight", "x"),
                    ("cache_implementation", "static"), ("cache_implementation", "paged"),
                    ("cache_implementation", "bogus"), ("cache_implementation", 5),
                    ("compile_config", {}), ("compile_config", {"fullgraph": True}), ("compile_config", None),
                    ("watermarking_config", 5), ("watermarking_config", "x"), ("streamer", 1),
                    ("logits_processor", []), ("num_beams", 0), ("temperature", -1.0), ("max_length", -1),
                    ("top_p", 2.0), ("do_sample", "x"), ("early_stopping", "x"), ("num_return_sequences", 3))},
    **{f"mlp_layer_types-{name}": {"mlp_layer_types": v}
       for name, v in (("bogus", [_ALL, "bogus"]), ("one-dense", ["dense"]), ("all-dense", [_ALL, "dense"]),
                       ("all-sparse", [_ALL, "sparse"]), ("one-too-many", [_ALL, "dense", "dense"]),
                       ("string", "dense"), ("number", 5), ("empty", []))},
    "layer_types-written-mlp_layer_types-bogus": {"layer_types": [_ALL, "full_attention"],
                                                  "mlp_layer_types": [_ALL, "bogus"]},
    "layer_types-written-mlp_layer_types-dense": {"layer_types": [_ALL, "full_attention"],
                                                  "mlp_layer_types": [_ALL, "dense"]},
}


def _edited(config: dict, changes: dict) -> dict:
    """``config`` with ``changes``; ``[_ALL, kind, *more]`` is kind once per layer, then ``more``."""
    n = _layers(config)
    return {**config, **{k: [v[1]] * n + v[2:] if isinstance(v, list) and v[:1] == [_ALL] else v
                         for k, v in changes.items()}}


@pytest.mark.parametrize("model_type", _I3_TYPES)
@pytest.mark.parametrize("edit", sorted(_I3_EDITS))
def test_a_generic_key_counts_or_is_refused_as_transformers_builds(tmp_path, model_type, edit):
    _agrees(tmp_path, _edited(_DEFAULTS[model_type], _I3_EDITS[edit]))


@pytest.mark.parametrize("model_type", ["bloom", "mpt"])
@pytest.mark.parametrize("attn", ["flash_attention_2", "flash_attention_3", "paged|flash_attention_2"])
def test_flash_attention_on_a_class_without_it_is_refused_on_any_machine(tmp_path, model_type, attn):
    """Refused before transformers looks for the package (_flash_attn_can_dispatch); elsewhere the
    verdict depends on the machine and is not mirrored."""
    _agrees(tmp_path, {**_DEFAULTS[model_type], "attn_implementation": attn})


# -- I2: per_layer_config (HeterogeneousConfigMixin) ------------------------------------------------------

_I2_TYPES = (*_TYPES, "llama4_text", "mistral")
_N = "last+1"  # a key standing for the model's layer count


def _global(model_type, key):
    """transformers' own global value of ``key`` for the type's default config (the oracle's side)."""
    import transformers

    cfg = transformers.CONFIG_MAPPING[model_type].from_dict(
        {k: v for k, v in _DEFAULTS[model_type].items() if k != "model_type"})
    return getattr(cfg, key)


def _other(value):
    """A JSON value unlike ``value``, of its kind where it has one."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 0.5
    if isinstance(value, str):
        return value + "x"
    return 1


_I2_CASES: dict[str, object] = {
    "empty": {}, "null": None, "list": [1], "string": "x", "number": 5, "key-not-a-number": {"a": {}},
    "key-float-text": {"1.0": {}}, "key-negative": {"-1": {}}, "key-past-the-layers": {_N: {}},
    "key-spaced": {" 1": {"skip": ["x"]}}, "override-a-number": {"0": 5}, "override-a-string": {"0": "x"},
    "override-empty": {"0": {}}, "skip-list": {"0": {"skip": ["mlp"]}}, "skip-string": {"0": {"skip": "mlp"}},
    "skip-numbers": {"0": {"skip": [1]}}, "skip-empty": {"0": {"skip": []}}, "skip-object": {"0": {"skip": {"mlp": 1}}},
    "ffn-width": {"0": {"intermediate_size": 8}}, "heads": {"0": {"num_attention_heads": 1}},
    "window": {"0": {"sliding_window": 8}}, "chunk": {"0": {"attention_chunk_size": 8}},
    "window-and-chunk": {"0": {"sliding_window": 8, "attention_chunk_size": 8}},
    "unknown-attribute-one-layer": {"0": {"foo": 1}}, "norm-eps": {"0": {"rms_norm_eps": 0.5}},
    "use_cache": {"0": {"use_cache": False}}, "return_dict": {"1": {"return_dict": False}},
}


@pytest.mark.parametrize("model_type", _I2_TYPES)
@pytest.mark.parametrize("case", sorted(_I2_CASES))
def test_a_per_layer_config_counts_or_is_refused_as_transformers_builds(tmp_path, model_type, case):
    plc = _I2_CASES[case]
    if isinstance(plc, dict) and _N in plc:
        plc = {str(_layers(_DEFAULTS[model_type])): plc[_N]}
    _agrees(tmp_path, {**_DEFAULTS[model_type], "per_layer_config": plc})


@pytest.mark.parametrize("model_type", _I2_TYPES)
def test_an_override_equal_to_the_global_value_is_dropped_as_transformers_drops_it(tmp_path, model_type):
    for key in ("hidden_size", "vocab_size"):
        rec = _agrees(tmp_path, {**_DEFAULTS[model_type], "per_layer_config": {"0": {key: _global(model_type, key)}}})
        assert rec["status"] == "exact", (key, rec)


@pytest.mark.parametrize("model_type", sorted(set(_DEFAULTS) & set(HF_TRANSLATORS)))
def test_the_overrides_counted_are_those_transformers_builds_alike(tmp_path, model_type):
    """Each attribute of ``PER_LAYER_UNREAD`` overridden on layer 0 (a value unlike the global one):
    transformers builds the model, with the total it builds without the override, and audit counts it."""
    from hf_counts_all import reference

    from ffnlab.sizing.hf import generic

    base = reference(_DEFAULTS[model_type])["total"]
    for key in sorted(generic.PER_LAYER_UNREAD_ALL | generic.PER_LAYER_UNREAD.get(model_type, frozenset())):
        config = {**_DEFAULTS[model_type], "per_layer_config": {"0": {key: _other(_global(model_type, key))}}}
        rec = _agrees(tmp_path, config)
        assert rec["status"] == "exact" and rec["reference"]["total"] == base, (key, rec)


@pytest.mark.parametrize("model_type", ["llama", "qwen2_moe", "gpt2"])
def test_an_override_the_translators_do_not_model_is_counted_through_transformers(tmp_path, model_type):
    """The known limit: an attribute every layer overrides that the config lacks (transformers
    builds, every layer alike). The translators refuse it in one line, as not modelled; audit then
    counts it through transformers' own build (where it is installed), which is the total without it."""
    from hf_counts_all import reference

    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.hf import translate_hf_dict

    n = _layers(_DEFAULTS[model_type])
    config = {**_DEFAULTS[model_type], "per_layer_config": {str(i): {"foo": 1} for i in range(n)}}
    assert reference(config)["total"] == reference(_DEFAULTS[model_type])["total"]
    with pytest.raises(FfnlabError, match="does not model per-layer overrides") as e:
        translate_hf_dict(copy.deepcopy(config))
    assert "\n" not in str(e.value)
    rec = _agrees(tmp_path, config)
    assert rec["status"] == "exact" and rec["audit"]["by"] == "transformers", rec


@pytest.mark.parametrize("model_type", (*_I2_TYPES, "gemma3", "qwen2_5_vl"))
@pytest.mark.parametrize("case", sorted(_I2_CASES))
def test_without_transformers_a_per_layer_config_is_never_counted_where_transformers_refuses(
        tmp_path, model_type, case):
    """audit with no transformers to fall back on (the translators alone): it counts transformers'
    total (a multimodal type: its text model) or refuses; where transformers refuses, it refuses."""
    import json

    from hf_counts_all import reference

    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.audit import audit

    plc = _I2_CASES[case]
    if isinstance(plc, dict) and _N in plc:
        plc = {str(_layers(_DEFAULTS[model_type])): plc[_N]}
    config = {**_DEFAULTS[model_type], "per_layer_config": plc}
    ref = reference(copy.deepcopy(config))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    try:
        got = audit(str(path)).params_total
    except FfnlabError as e:
        assert "\n" not in str(e)
        return
    if model_type in ("gemma3", "qwen2_5_vl"):  # counted without transformers: its text model alone, by design
        assert "total" in ref, ref
    else:
        assert got == ref.get("total"), (got, ref)
