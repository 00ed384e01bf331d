"""Probe transformers' config classes for the rules ffnlab's translators follow (the oracle of
``ffnlab/sizing/hf/rules.py``): which keys transformers refuses as null, and whether a type
refuses heads that do not divide hidden_size.

    python tests/helpers/hf_class_rules.py            # print the table
    python tests/helpers/hf_class_rules.py --write    # rewrite src/ffnlab/data/hf_rules.json

tests/sizing/hf/test_hf_nulls.py checks that the stored table equals what this probe finds.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from hf_cases import MODEL_TYPES, case  # noqa: E402
from hf_count import hf_param_count  # noqa: E402
from paths import SRC  # noqa: E402

OUT = SRC / "ffnlab" / "data" / "hf_rules.json"
# keys probed whether or not the config class declares them: modeling code reads them with getattr
# (Qwen2's rotary embedding takes a null head_dim and fails)
PROBED_ANYWAY = ("head_dim",)
# the keys transformers' PretrainedConfig.get_text_config looks for a text sub-config under
# (configuration_utils.py, v5.25.0), and two it does not: a non-null plain value under the former
# makes a generative model's build fail (its generation config calls .to_dict() on it)
TEXT_CONFIG_CANDIDATES = ("text_config", "decoder", "generator", "text_encoder", "vision_config", "audio_config")
SKIP_FIELDS = {"transformers_version", "architectures", "model_type", "dtype", "torch_dtype", "text_config",
               "vision_config"}


def _builds(config: dict[str, Any]) -> bool:
    try:
        hf_param_count(config)
    except Exception:  # noqa: BLE001 - any refusal counts
        return False
    return True


def _fields(model_type: str) -> list[str]:
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if f.name not in SKIP_FIELDS]
    return []


def _base(model_type: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A case that builds, the dict holding the text model's keys, and the text model_type."""
    config = case(model_type, 1)
    inner = config.get("text_config")
    if isinstance(inner, dict):
        return config, inner, inner["model_type"]
    return config, config, model_type


def class_defaults(model_type: str) -> dict[str, Any]:
    """The config class's own defaults for its integer, boolean, string and null fields."""
    from transformers import CONFIG_MAPPING, PretrainedConfig

    cls = CONFIG_MAPPING[model_type]
    base = ({f.name for f in dataclasses.fields(PretrainedConfig)}
            if dataclasses.is_dataclass(PretrainedConfig) else set())
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
        if f.name in SKIP_FIELDS or (f.name in base and f.name != "tie_word_embeddings"):
            continue
        value = f.default
        if value is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        if value is None or isinstance(value, (bool, int, str)) and not isinstance(value, float):
            out[f.name] = value
    return out


_KINDS = {int: "int", float: "float", bool: "bool", str: "str", type(None): "null", list: "list"}


def field_kinds(model_type: str) -> dict[str, list[str]]:
    """The JSON kinds each field of the config class is annotated to take (int, float, bool, str,
    null, list), for the fields whose annotation is made of those alone (its validators refuse
    the others: "Field 'use_cache' expected bool, got str")."""
    from transformers import CONFIG_MAPPING

    return class_field_kinds(CONFIG_MAPPING[model_type])


def class_field_kinds(cls: Any) -> dict[str, list[str]]:
    """:func:`field_kinds` of one config class (a type's own, or a sub-config class such as DBRX's
    attn_config)."""
    import typing

    from transformers import PretrainedConfig

    base = ({f.name for f in dataclasses.fields(PretrainedConfig)}
            if dataclasses.is_dataclass(PretrainedConfig) else set())
    out: dict[str, list[str]] = {}
    for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
        if f.name in SKIP_FIELDS or f.name in base or isinstance(f.type, str):
            continue
        union = typing.get_args(f.type) and typing.get_origin(f.type) is not list
        members = typing.get_args(f.type) if union else (f.type,)
        kinds = {_KINDS.get(typing.get_origin(m) or m) for m in members}
        if None not in kinds:
            out[f.name] = sorted(k for k in kinds if k)
    return out


def sub_config_kinds(model_type: str) -> dict[str, dict[str, list[str]]]:
    """The field kinds of each sub-config a type's config nests as its own class (DBRX's attn_config
    and ffn_config), text and vision sub-configs aside: strictly validated when built."""
    from transformers import CONFIG_MAPPING

    subs = getattr(CONFIG_MAPPING[model_type], "sub_configs", {}) or {}
    return {name: class_field_kinds(cls) for name, cls in sorted(subs.items())
            if name not in TEXT_CONFIG_CANDIDATES and isinstance(cls, type)}


def wrapper_text_defaults(model_type: str) -> dict[str, Any] | None:
    """What a multimodal config's text_config defaults to when config.json has none."""
    from transformers import CONFIG_MAPPING

    spec = getattr(CONFIG_MAPPING[model_type], "sub_configs_defaults", {}).get("text_config")
    if spec is None:
        return None
    return {k: v for k, v in spec.init_kwargs.items() if v is None or isinstance(v, (bool, int, str))}


SEEDS = (1, 2, 3)


def _trial(config: dict[str, Any], key: str, mode: str) -> dict[str, Any]:
    trial = json.loads(json.dumps(config))
    target = trial.get("text_config", trial)
    if mode == "null":
        target[key] = None
    else:
        target.pop(key, None)
    return trial


def probe(model_type: str) -> dict[str, Any]:
    """Null: refused when some case that builds stops building with the key null. Missing:
    refused when every case that sets the key stops building without it."""
    config, keys, text_type = _base(model_type)
    cases = [case(model_type, s) for s in SEEDS]
    cases = [c for c in cases if _builds(c)]
    inner = [c.get("text_config", c) for c in cases]
    candidates = sorted(set(_fields(text_type)) | ({k for c in inner for k in c} | set(PROBED_ANYWAY)) - SKIP_FIELDS)
    refused, missing = [], []
    defaults_build = _builds({"model_type": model_type})  # then no absence is fatal by itself
    for name in candidates:
        if any(not _builds(_trial(c, name, "null")) for c in cases):
            refused.append(name)
        having = [c for c, i in zip(cases, inner, strict=False) if name in i]
        nulled = class_defaults(text_type).get(name, 0) is None  # refused for its null default, not
        if nulled and not defaults_build and having and all(not _builds(_trial(c, name,
                                                                               "missing")) for c in having):  # a clash
            missing.append(name)
    heads_key = next((k for k in ("num_attention_heads", "n_heads", "n_head", "num_heads") if k in keys), None)
    hidden_key = next((k for k in ("hidden_size", "d_model", "n_embd") if k in keys), None)
    divides = None
    if heads_key and hidden_key:
        trial = json.loads(json.dumps(config))
        target = trial.get("text_config", trial)
        heads = max(2, target[heads_key])
        target[heads_key] = heads
        target[hidden_key] = heads * 8 + 1
        target.pop("num_key_value_heads", None)
        target.pop("kv_n_heads", None)
        target["head_dim"] = 8
        divides = not _builds(trial)
    text_refused = [] if text_type != model_type else [
        name for name in TEXT_CONFIG_CANDIDATES if _builds(config) and not _builds({**config,
                                                                                    name: {"hidden_size": 16}})]
    # a head_dim written as a string (its value): refused by types whose validators read it even
    # where the model does not (GPT-NeoX's rope check), built by those that never look (OPT)
    trial = json.loads(json.dumps(config))
    target = trial.get("text_config", trial)
    width = target.get("head_dim") or (target[hidden_key] // target[heads_key] if heads_key and hidden_key else 8)
    target["head_dim"] = str(width)
    head_dim_typed = _builds(config) and not _builds(trial)
    rope_theta = rope_theta_refusals(config)
    return {"rope_theta": rope_theta, "rope_scaling": rope_scaling_rules(config),
            "pad_in_embedding": pad_in_embedding(config), "odd_head_refused": odd_head_refused(config),
            "unit_interval": unit_interval(config, text_type),
            "head_dim_null_kept": head_dim_null_kept(config, text_type),
            "partial_rotary_refused": partial_rotary_refused(config),
            "partial_rotary_top_ignored": partial_rotary_top_ignored(config),
            "rope_nested_refused": rope_nested_refused(config),
            "rope_default": rope_default(text_type),
            "layer_type_values": layer_type_values(config, text_type),
            "sub_config_kinds": sub_config_kinds(text_type),
            "negative_refused": negative_refused(config, text_type),
            "zero_power_refused": zero_power_refused(config, text_type),
            "text_type": text_type, "null_refused": refused, "missing_refused": missing,
            "head_dim_typed": head_dim_typed, "field_kinds": field_kinds(text_type),
            "text_config_refused": text_refused,
            "heads_divide_hidden": divides, "defaults": class_defaults(text_type),
            "wrapper": wrapper_text_defaults(model_type) if text_type != model_type else None}


def _with(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    trial = json.loads(json.dumps({**config, "ffnlab-value": value}))  # copies: transformers fills dicts in place
    value = trial.pop("ffnlab-value")
    trial.get("text_config", trial)[key] = value
    return trial


def rope_theta_refusals(config: dict[str, Any]) -> list[str]:
    """How a type's model refuses a ``rope_theta`` that is not a number (5.25 has no such config
    field: its RoPE standardisation moves it into ``rope_parameters`` unchecked, and the rotary
    embedding computes ``rope_theta ** arange(...)``): "number" when it refuses one written as a
    string at the top level, in a flat ``rope_parameters`` or in one dict per layer type (GPT-NeoX
    never reads the top-level key, Gemma 3 and OLMo 3 take the sliding layers' theta elsewhere),
    "log" when it also refuses a top-level -5 and 1 (YaRN divides by log(rope_theta))."""
    if not _builds(config):
        return []
    out = []
    flat = {"rope_type": "default", "rope_theta": "10000"}
    written = [("rope_theta", "10000"), ("rope_parameters", flat),
               ("rope_parameters", {t: dict(flat) for t in ("full_attention", "sliding_attention")})]
    if any(not _builds(_with(config, key, value)) for key, value in written):
        out.append("number")
        if not _builds(_with(config, "rope_theta", -5.0)) and not _builds(_with(config, "rope_theta", 1.0)):
            out.append("log")
    return out


# the keys each RoPE scaling type's validator requires besides rope_type (transformers 5.25.0,
# src/transformers/modeling_rope_utils.py, RotaryEmbeddingConfigMixin._validate_<type>_rope_parameters);
# tests/sizing/hf/test_rope_scaling.py builds a Llama without each one and sees it refused
ROPE_REQUIRED_KEYS = {
    "default": [], "linear": ["factor"], "dynamic": ["factor"],
    "yarn": ["factor", "original_max_position_embeddings"],
    "longrope": ["short_factor", "long_factor", "original_max_position_embeddings"],
    "llama3": ["factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor", "rope_theta"],
    "proportional": ["rope_theta"],
}
# complete RoPE parameters of each RoPE type transformers 5.25 computes (ROPE_INIT_FUNCTIONS, and
# default) but longrope (its factor lists are as long as half the rotary width, and PhiMoE requires
# its own mscales besides: no complete dict fits every type): a type that refuses one of these
# refuses that RoPE type whatever it holds (Phi-3 and PhiMoE validate their own list of kinds).
# rope_kinds() takes the kinds from transformers itself, so a kind it adds fails the probe here
COMPLETE_SCALING = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 16},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16, "rope_theta": 10000.0},
    "proportional": {"rope_type": "proportional", "rope_theta": 10000.0},
}
UNPROBED_KINDS = frozenset({"longrope"})


def rope_kinds() -> list[str]:
    """Every RoPE type the installed transformers computes (``ROPE_INIT_FUNCTIONS``, and default),
    less :data:`UNPROBED_KINDS`; a kind without complete parameters here is an error, not a gap."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    kinds = sorted({"default", *ROPE_INIT_FUNCTIONS} - UNPROBED_KINDS)
    unknown = [k for k in kinds if k not in COMPLETE_SCALING]
    if unknown:
        raise RuntimeError(f"transformers computes RoPE types without complete parameters here: {unknown}")
    return kinds


def rope_scaling_rules(config: dict[str, Any]) -> list[str]:
    """How a type treats a ``rope_scaling`` dict, each a tag: "computes" when its model computes
    RoPE from it (an unknown rope_type is refused), "factor-number" when a factor written as a
    string is refused, "fills-theta" / "fills-original" when its RoPE standardisation fills a
    missing rope_theta / original_max_position_embeddings (else a scaling type that requires
    them is refused without them), and "refuses-<type>" for a scaling type refused with
    complete parameters."""
    if not _builds(config):
        return []
    if config.get("text_config", config).get("max_position_embeddings", 0) is None:  # dynamic and yarn scale it
        config = _with(config, "max_position_embeddings", 64)

    def builds(scaling: dict[str, Any]) -> bool:  # a copy: transformers fills the dict it is given
        return _builds(_with(config, "rope_scaling", json.loads(json.dumps(scaling))))
    tags = []
    if not builds({"rope_type": "ffnlab-unknown", "factor": 2.0}):
        tags.append("computes")
    if not builds({"rope_type": "linear", "factor": "2"}) and builds(COMPLETE_SCALING["linear"]):
        tags.append("factor-number")
    if builds({k: v for k, v in COMPLETE_SCALING["llama3"].items() if k != "rope_theta"}):
        tags.append("fills-theta")
    if builds({k: v for k, v in COMPLETE_SCALING["yarn"].items() if k != "original_max_position_embeddings"}):
        tags.append("fills-original")
    tags += rope_kind_refusals(config)
    return tags


def rope_kind_refusals(config: dict[str, Any]) -> list[str]:
    """The tags "refuses-<kind>" for each RoPE type (:func:`rope_kinds`) a type refuses with complete
    parameters (its config class validates a list of its own, or its model cannot compute it)."""
    if config.get("text_config", config).get("max_position_embeddings", 0) is None:  # dynamic and yarn scale it
        config = _with(config, "max_position_embeddings", 64)
    return [f"refuses-{kind}" for kind in rope_kinds()
            if not _builds(_with(config, "rope_scaling", json.loads(json.dumps(COMPLETE_SCALING[kind]))))]


def rope_default(model_type: str) -> dict[str, Any] | None:
    """The RoPE dict a type's config class sets itself when config.json gives none, where it is a
    scaled one (GPT-OSS's yarn): as the class builds it bare, less the values its standardisation
    fills from elsewhere (rope_theta, partial_rotary_factor)."""
    from transformers import CONFIG_MAPPING

    try:
        params = getattr(CONFIG_MAPPING[model_type](), "rope_parameters", None)
    except Exception:  # noqa: BLE001 - a class that does not build bare has none to give
        return None
    if not isinstance(params, dict) or params.get("rope_type", "default") == "default" or \
            any(isinstance(v, dict) for v in params.values()):
        return None
    return {k: v for k, v in sorted(params.items()) if k not in ("rope_theta", "partial_rotary_factor")}


def pad_in_embedding(config: dict[str, Any]) -> bool:
    """Whether the type's model refuses a pad_token_id equal to the vocabulary size (its token
    embedding takes the pad id as ``padding_idx``, which torch requires inside the table)."""
    target = config.get("text_config", config)
    vocab = target.get("vocab_size")
    return isinstance(vocab, int) and _builds(config) and not _builds(_with(config, "pad_token_id", vocab))


def odd_head_refused(config: dict[str, Any]) -> list[str]:
    """How a type treats a head width it computes from hidden_size // heads when that is odd (7):
    "absent" when refused with head_dim left out, "null" when refused with head_dim null (5.25's
    RoPE validation reads the config's head_dim, which some classes fill from hidden_size in
    their own checks and others leave None, then build). Each against the same config with an
    even width (6), which must build."""
    target = config.get("text_config", config)
    heads_key = next((k for k in ("num_attention_heads", "n_heads", "n_head", "num_heads") if k in target), None)
    hidden_key = next((k for k in ("hidden_size", "d_model", "n_embd") if k in target), None)
    if heads_key is None or hidden_key is None:
        return []
    heads = target[heads_key]
    tags = []
    def trial(width: int, mode: str) -> dict[str, Any]:
        c = _with(config, hidden_key, heads * width)
        inner = c.get("text_config", c)
        inner.pop("head_dim", None)
        if mode == "null":
            inner["head_dim"] = None
        return c

    for mode in ("absent", "null"):
        if _builds(trial(6, mode)) and not _builds(trial(7, mode)):
            tags.append(mode)
    return tags


def partial_rotary_refused(config: dict[str, Any]) -> list[str]:
    """How a type's rotary embedding treats partial_rotary_factor, each a tag against the same
    config with 0.5 (which must build): "negative" when -0.5 is refused (torch.arange of a negative
    width), "null" when null is refused, "odd-width" when a rotary width int(head_dim x factor)
    that is odd is refused at build (head_dim 10 at 0.5, where head_dim 12 at 0.5 builds)."""
    if not _builds(_with(config, "partial_rotary_factor", 0.5)):
        return []
    tags = [tag for tag, value in (("negative", -0.5), ("null", None))
            if not _builds(_with(config, "partial_rotary_factor", value))]
    wide = {**_with(config, "partial_rotary_factor", 0.5)}
    if _builds(_with(wide, "head_dim", 12)) and not _builds(_with(wide, "head_dim", 10)):
        tags.append("odd-width")
    return tags


def partial_rotary_top_ignored(config: dict[str, Any]) -> bool:
    """Whether a type's config fills its RoPE dict's partial_rotary_factor from a key of its own and
    never from a top-level partial_rotary_factor (GPT-NeoX: from rotary_pct): with 0.5 written at
    the top level, the built config's RoPE dicts hold another factor."""
    from transformers import AutoConfig

    trial = _with(config, "partial_rotary_factor", 0.5)
    if not _builds(trial):
        return False
    built = AutoConfig.for_model(**trial)
    rope = getattr(built.get_text_config(), "rope_parameters", None)
    if not isinstance(rope, dict) or not rope:
        return False
    groups = [g for g in rope.values() if isinstance(g, dict)] or [rope]
    return all("partial_rotary_factor" in g and g["partial_rotary_factor"] != 0.5 for g in groups)


NESTED_ROPE = {name: {"rope_type": "default", "rope_theta": 10000.0} for name in ("full_attention",
                                                                                  "sliding_attention")}


def rope_nested_refused(config: dict[str, Any]) -> bool:
    """Whether the type refuses rope_parameters nested by layer type (one dict under
    full_attention and one under sliding_attention) where it builds the same RoPE flat: 5.25's
    standardisation nests it by the config's layer types, and a single rotary embedding then finds
    no rope_type."""
    flat = {"rope_type": "default", "rope_theta": 10000.0}
    nested = _with(config, "rope_parameters", NESTED_ROPE)
    return _builds(_with(config, "rope_parameters", flat)) and not _builds(nested)


LAYER_TYPE_NAMES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


def layer_type_values(config: dict[str, Any], text_type: str) -> list[str] | None:
    """The layer type names a type with a layer_types field builds (each written for every
    layer), or None when it has no such field or builds none of them."""
    if "layer_types" not in field_kinds(text_type):
        return None
    target = config.get("text_config", config)
    n = target.get("num_hidden_layers", target.get("n_layer", 1))
    n = n if isinstance(n, int) and n > 0 else 1
    found = [name for name in LAYER_TYPE_NAMES if _builds(_with(config, "layer_types", [name] * n))]
    return found or None


def head_dim_null_kept(config: dict[str, Any], text_type: str) -> bool:
    """Whether the type's config keeps a null head_dim as None (its RoPE functions that read
    ``getattr(config, "head_dim", hidden // heads)`` then multiply None), rather than filling it."""
    from transformers import CONFIG_MAPPING

    target = {k: v for k, v in config.get("text_config", config).items() if k != "model_type"}
    try:
        built = CONFIG_MAPPING[text_type].from_dict({**target, "head_dim": None})
    except Exception:  # noqa: BLE001 - a class that refuses the null keeps nothing
        return False
    return getattr(built, "head_dim", "absent") is None


def unit_interval(config: dict[str, Any], text_type: str) -> list[str]:
    """The float fields whose -1.0 and 1.5 the type refuses while 0.5 builds: dropouts (nn.Dropout
    refuses a probability outside [0, 1] at build, read by ffnlab or not) and Llama's validated
    initializer_range."""
    if not _builds(config):
        return []
    return [key for key, kinds in field_kinds(text_type).items()
            if "float" in kinds and _builds(_with(config, key, 0.5))
            and not _builds(_with(config, key, -1.0)) and not _builds(_with(config, key, 1.5))]


def negative_refused(config: dict[str, Any], text_type: str) -> list[str]:
    """The integer fields (annotated int alone) whose value -5 the type's model refuses, read by
    ffnlab or not (GPT-J's n_positions sizes a buffer of sinusoids: torch.arange refuses it)."""
    if not _builds(config):
        return []
    return [key for key, kinds in field_kinds(text_type).items()
            if kinds == ["int"] and not _builds(_with(config, key, -5))]


def _refusal(config: dict[str, Any]) -> str | None:
    """transformers' refusal of ``config`` (its message), or None where it builds."""
    try:
        hf_param_count(config)
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return str(e)
    return None


def zero_power_refused(config: dict[str, Any], text_type: str) -> list[str]:
    """The number fields (annotated int or float) that size no weight (1 and 2 build the same
    count) and whose value 0 the type's model refuses because it raises the value to a negative
    power while it is built (Python's "0.0 cannot be raised to a negative power": Gemma 2 and 3's
    query_pre_attn_scalar ** -0.5), read by ffnlab or not. A width whose 0 makes a head width 0
    (hidden_size, head_dim) is a size, refused by the translators on their own terms."""
    if not _builds(config):
        return []
    out = []
    for key, kinds in field_kinds(text_type).items():
        if {"int", "float"} & set(kinds) and not {"bool", "str", "list"} & set(kinds):
            why = _refusal(_with(config, key, 0 if "int" in kinds else 0.0))
            if why is None or "negative power" not in why:
                continue
            try:
                sizes = hf_param_count(_with(config, key, 1)) != hf_param_count(_with(config, key, 2))
            except Exception:  # noqa: BLE001 - 1 or 2 refused: a size or a constrained value
                sizes = True
            if not sizes:
                out.append(key)
    return out


def read_only_keys() -> dict[str, list[str]]:
    """The names of PreTrainedConfig's properties without a setter (``"*"``), and each model type's
    further ones (its config class's, beyond those): transformers' config constructor refuses a
    key of that name, whatever its value ("property ... has no setter"). Read from the classes
    themselves (no build)."""
    from transformers import CONFIG_MAPPING, PreTrainedConfig

    def names(cls: Any) -> set[str]:
        seen: dict[str, Any] = {}
        for klass in cls.__mro__:
            for key, value in vars(klass).items():
                seen.setdefault(key, value)
        return {k for k, v in seen.items() if isinstance(v, property) and v.fset is None}

    base = names(PreTrainedConfig)
    out = {"*": sorted(base)}
    for mt in sorted(set(MODEL_TYPES) | {t for m in MODEL_TYPES for t in _text_types(m)}):
        extra = names(CONFIG_MAPPING[mt]) - base
        if extra:
            out[mt] = sorted(extra)
    return out


def _text_types(model_type: str) -> list[str]:
    """The model type of a multimodal type's text_config (none for a text type)."""
    return [t for t in (_base(model_type)[2],) if t != model_type]


def table() -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    import transformers

    transformers.logging.set_verbosity_error()
    out: dict[str, Any] = {}
    wrappers: dict[str, Any] = {}
    for mt in MODEL_TYPES:
        p = probe(mt)
        if p["wrapper"] is not None:
            wrappers[mt] = p["wrapper"]
        out.setdefault(p.pop("text_type"), p)
    return {"transformers": transformers.__version__, "types": out, "wrappers": wrappers}


NOTE = ("What transformers refuses in a config.json, per model type, probed (not read from its code) by "
        "tests/helpers/hf_class_rules.py --write (a key set to null in a config that builds; hidden_size not a "
        "multiple "
        "of the heads with an explicit head_dim): null_refused lists the keys whose null value transformers "
        "refuses (its config class or its model), missing_refused those it cannot do without (its class default "
        "does not build), field_kinds the JSON kinds each config-class field is annotated to take (those made of int, "
        "float, bool, str, null and list alone), head_dim_typed the types that refuse a head_dim written as a string, "
        "rope_theta_number the types whose model refuses a rope_theta (top level, in a flat rope_parameters or in one "
        "dict per layer type) that is not a number, rope_theta_log those that also refuse one not above 0 or equal to "
        "1, negative_refused the integer fields whose value -5 a type's model refuses, zero_power_refused the number "
        "fields whose value 0 a type's model raises to a negative power while it is built (and so refuses), "
        "read_only_keys the names of PreTrainedConfig's properties without a setter (*) and of each type's config "
        "class's further ones, which transformers refuses as keys whatever their value, rope_scaling how a type treats "
        "a rope_scaling dict (computes: its model computes RoPE from it and refuses an unknown rope_type; "
        "factor-number: a string factor is refused; fills-theta / fills-original: its standardisation fills a missing "
        "rope_theta / original_max_position_embeddings; refuses-TYPE: that scaling type is refused with complete "
        "parameters), rope_required_keys the keys each scaling type's validator requires besides rope_type "
        "(transformers 5.25 modeling_rope_utils.py, _validate_<type>_rope_parameters), pad_in_embedding the types "
        "whose model refuses a pad_token_id outside the vocabulary, odd_head_refused the types that refuse an odd head "
        "width they compute from hidden_size // heads (absent: with head_dim left out; null: with head_dim null), "
        "partial_rotary_refused how a type's rotary embedding refuses a partial_rotary_factor (negative: -0.5; "
        "null; odd-width: an odd int(head_dim x factor)), partial_rotary_top_ignored the types whose config fills its "
        "RoPE dict's partial_rotary_factor from a key of its own, never from a top-level one, "
        "rope_nested_refused the types that refuse rope_parameters "
        "nested by layer type, rope_defaults the scaled RoPE dict a type's config class sets when config.json gives "
        "none (less rope_theta and partial_rotary_factor, which its standardisation fills), "
        "layer_type_values the layer_types names a type builds, sub_config_kinds the field kinds "
        "of a sub-config a type nests as its own class (DBRX's attn_config and ffn_config; null only where listed), "
        "head_dim_null_kept the types whose config keeps a null head_dim as None, "
        "unit_interval the float fields a type refuses outside [0, 1] (-1.0 and 1.5 refused, 0.5 built: dropouts, "
        "Llama's initializer_range), "
        "text_config_refused the keys a type's model refuses a plain object under (names "
        "get_text_config looks up, not the class's own sub-configs), heads_divide_hidden the types whose config "
        "requires hidden_size % heads == 0, "
        "class_defaults each type's config-class defaults (integer, boolean, string and null fields), "
        "wrapper_text_defaults a multimodal type's text_config when config.json has none (its class's sub-config "
        "defaults). tests/sizing/hf/test_hf_nulls.py checks it against the installed transformers.")


def render(t: dict[str, Any]) -> str:
    """The probed table as ffnlab's data file (one JSON document, keys sorted)."""
    types = sorted(t["types"].items())
    doc = {"note": NOTE, "probed_with": t["transformers"],
           "null_refused": {mt: sorted(p["null_refused"]) for mt, p in types},
           "missing_refused": {mt: sorted(p["missing_refused"]) for mt, p in types if p["missing_refused"]},
           "heads_divide_hidden": sorted(mt for mt, p in types if p["heads_divide_hidden"]),
           "head_dim_typed": sorted(mt for mt, p in types if p["head_dim_typed"]),
           "rope_theta_number": sorted(mt for mt, p in types if "number" in p["rope_theta"]),
           "rope_theta_log": sorted(mt for mt, p in types if "log" in p["rope_theta"]),
           "negative_refused": {mt: p["negative_refused"] for mt, p in types if p["negative_refused"]},
           "zero_power_refused": {mt: p["zero_power_refused"] for mt, p in types if p["zero_power_refused"]},
           "read_only_keys": read_only_keys(),
           "rope_scaling": {mt: p["rope_scaling"] for mt, p in types if p["rope_scaling"]},
           "rope_required_keys": ROPE_REQUIRED_KEYS,
           "pad_in_embedding": sorted(mt for mt, p in types if p["pad_in_embedding"]),
           "odd_head_refused": {mt: p["odd_head_refused"] for mt, p in types
                                if p["odd_head_refused"]},
           "unit_interval": {mt: p["unit_interval"] for mt, p in types if p["unit_interval"]},
           "head_dim_null_kept": sorted(mt for mt, p in types if p["head_dim_null_kept"]),
           "partial_rotary_refused": {mt: p["partial_rotary_refused"] for mt, p in types
                                      if p["partial_rotary_refused"]},
           "partial_rotary_top_ignored": sorted(mt for mt, p in types if p["partial_rotary_top_ignored"]),
           "rope_nested_refused": sorted(mt for mt, p in types if p["rope_nested_refused"]),
           "rope_defaults": {mt: p["rope_default"] for mt, p in types if p["rope_default"]},
           "layer_type_values": {mt: p["layer_type_values"] for mt, p in types if p["layer_type_values"]},
           "sub_config_kinds": {mt: p["sub_config_kinds"] for mt, p in types if p["sub_config_kinds"]},
           "field_kinds": {mt: dict(sorted(p["field_kinds"].items())) for mt, p in types},
           "text_config_refused": {mt: p["text_config_refused"] for mt, p in types if p["text_config_refused"]},
           "class_defaults": {mt: dict(sorted(p["defaults"].items())) for mt, p in types},
           "wrapper_text_defaults": {mt: w for mt, w in sorted(t["wrappers"].items())}}
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    found = table()
    text = render(found)
    if "--write" in sys.argv:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT}")
    else:
        print(text)
