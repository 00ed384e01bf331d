"""Translate Hugging Face ``config.json`` files into :class:`~ffnlab.sizing.config.ModelConfig`.

One module per model family (a new family is one new file and one line in ``HF_TRANSLATORS``);
its ``translate`` function reads the keys that decide the architecture, with the
defaults of the corresponding ``transformers`` config class where a key may be absent. The
translation is tested against ``transformers``' own models built from the same configs: the
parameter totals agree exactly (``tests/sizing/hf/test_hf_parity.py``). Multimodal configs (``MULTIMODAL``)
are translated through their ``text_config``: the language model and its head (``audit``
counts them whole through transformers where it is installed: ``sizing.audit.WHOLE_MODEL_TYPES``).
No ``transformers`` import here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_data
from ffnlab.sizing.config import ModelConfig, validate
from ffnlab.sizing.hf import (
    bloom,
    cohere,
    cohere2,
    dbrx,
    deepseek_v2,
    deepseek_v3,
    ernie4_5,
    ernie4_5_moe,
    exaone4,
    falcon,
    gemma,
    gemma2,
    gemma3,
    glm,
    glm4,
    glm4_moe,
    gpt2,
    gpt_bigcode,
    gpt_neo,
    gpt_neox,
    gpt_oss,
    gptj,
    granite,
    granitemoe,
    hunyuan_v1_dense,
    hunyuan_v1_moe,
    llama,
    llama4,
    ministral,
    mistral,
    mixtral,
    mpt,
    olmo,
    olmo2,
    olmo3,
    olmoe,
    opt,
    phi,
    phi3,
    phimoe,
    qwen2,
    qwen2_moe,
    qwen3,
    qwen3_moe,
    smollm3,
    stablelm,
    starcoder2,
    t5,
)
from ffnlab.sizing.hf.aliases import real_keys
from ffnlab.sizing.hf.impl import implementation
from ffnlab.sizing.hf.keys import (
    ConfigKeys,
    check_even_rotary,
    check_partial_rotary,
    check_rope_not_nested,
    check_rope_values,
    check_scaled_rope_widths,
    check_settable,
    computed_layer_types,
    rope_head_dim,
)
from ffnlab.sizing.hf.rules import (
    FIELD_KINDS,
    HEADS_DIVIDE_HIDDEN,
    ODD_HEAD_REFUSED,
    TEXT_CONFIG_REFUSED,
    WRAPPER_TEXT_DEFAULTS,
)
from ffnlab.validation import show

HF_TRANSLATORS: dict[str, Callable[[ConfigKeys], ModelConfig]] = {  # model_type -> translator (one module each)
    "gpt2": gpt2.translate,
    "gptj": gptj.translate,
    "gpt_neox": gpt_neox.translate,
    "opt": opt.translate,
    "bloom": bloom.translate,
    "falcon": falcon.translate,
    "llama": llama.translate,
    "mistral": mistral.translate,
    "mixtral": mixtral.translate,
    "qwen2": qwen2.translate,
    "gemma": gemma.translate,
    "gemma2": gemma2.translate,
    "phi": phi.translate,
    "phi3": phi3.translate,
    "olmo": olmo.translate,
    "t5": t5.translate,
    "qwen3": qwen3.translate,
    "qwen3_moe": qwen3_moe.translate,
    "qwen2_moe": qwen2_moe.translate,
    "gemma3_text": gemma3.translate,
    "olmo2": olmo2.translate,
    "olmo3": olmo3.translate,
    "olmoe": olmoe.translate,
    "deepseek_v2": deepseek_v2.translate,
    "deepseek_v3": deepseek_v3.translate,
    "gpt_oss": gpt_oss.translate,
    "llama4_text": llama4.translate,
    "granite": granite.translate,
    "granitemoe": granitemoe.translate,
    "starcoder2": starcoder2.translate,
    "gpt_bigcode": gpt_bigcode.translate,
    "cohere": cohere.translate,
    "cohere2": cohere2.translate,
    "stablelm": stablelm.translate,
    "mpt": mpt.translate,
    "dbrx": dbrx.translate,
    "phimoe": phimoe.translate,
    "smollm3": smollm3.translate,
    "glm": glm.translate,
    "glm4": glm4.translate,
    "glm4_moe": glm4_moe.translate,
    "ernie4_5": ernie4_5.translate,
    "ernie4_5_moe": ernie4_5_moe.translate,
    "hunyuan_v1_dense": hunyuan_v1_dense.translate,
    "hunyuan_v1_moe": hunyuan_v1_moe.translate,
    "exaone4": exaone4.translate,
    "ministral": ministral.translate,
    "gpt_neo": gpt_neo.translate,
    "qwen2_5_vl_text": qwen2.translate,
}
# multimodal model types: ffnlab counts the language model of their text_config (the vision
# encoder and projector are left out), translated as the text model type named here
MULTIMODAL: dict[str, str] = {
    "gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral",
    "qwen2_5_vl": "qwen2_5_vl_text",
}
# transformers ties the LM head by the outer config's tie_word_embeddings, whose class defaults
# are these (Gemma3Config, Llama4Config, Mistral3Config, Qwen2_5_VLConfig)
MULTIMODAL_TIE = {"gemma3": True, "llama4": False, "mistral3": True, "qwen2_5_vl": False}
SUPPORTED_MODEL_TYPES = tuple(HF_TRANSLATORS) + tuple(MULTIMODAL)
MULTIMODAL_NOTE = ("multimodal config: counted its text_config (the language model and its LM "
                   "head); the vision encoder and projector are not counted (with transformers "
                   "installed, audit counts the whole model)")


def text_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a multimodal config.json (with its model_type), or ``data``.

    Older Qwen2.5-VL configs keep the text keys at the top level. The head is tied as the outer
    config says (its class default when it is silent), as transformers does; Qwen2.5-VL also
    honours a tie set inside the text_config by older saves."""
    model_type = data.get("model_type")
    if model_type not in MULTIMODAL:
        return data
    inner = data.get("text_config")
    if inner is None and model_type == "qwen2_5_vl":  # saved flat: the text keys at the top level
        inner = {k: v for k, v in data.items() if k not in ("vision_config", "model_type")}
    elif inner is None:  # the class's own default text config
        inner = dict(WRAPPER_TEXT_DEFAULTS.get(model_type, {}))
    require(isinstance(inner, dict), f"config.json ({model_type}): 'text_config' must be an object")
    text = dict(inner)
    tie = data.get("tie_word_embeddings", MULTIMODAL_TIE[model_type])
    if model_type == "qwen2_5_vl" and text.get("tie_word_embeddings") is True:
        tie = True
    text["tie_word_embeddings"] = tie
    # Mistral 3's text_config names its own model_type (mistral by default)
    default = MULTIMODAL[model_type]
    text["model_type"] = text.get("model_type", default) if model_type == "mistral3" else default
    return text


def from_hf_dict(data: Any, name: str = "") -> ModelConfig:
    """Translate a parsed config.json; raise :class:`ffnlab.errors.FfnlabError` naming the offending key."""
    return translate_hf_dict(data, name)[0]


def translate_hf_dict(data: Any, name: str = "") -> tuple[ModelConfig, dict[str, Any]]:
    """:func:`from_hf_dict`'s config and the size keys config.json lacks whose value is the config
    class's default (the ``defaulted`` of :class:`ConfigKeys`: key -> value, in the order read)."""
    require(isinstance(data, dict), "config.json must contain a JSON object")
    model_type = data.get("model_type")
    require(model_type is not None, "config.json has no 'model_type' key")
    require(isinstance(model_type, str), f"config.json key 'model_type' must be a string, got {show(model_type)}")
    require(model_type in HF_TRANSLATORS or model_type in MULTIMODAL,
            f"config.json model_type {show(model_type)} is not supported; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    # transformers' composite config has no num_hidden_layers to apply a per_layer_config to
    require(model_type not in MULTIMODAL or data.get("per_layer_config") is None,
            f"config.json ({model_type}): per_layer_config is set at the top level, but transformers' {model_type} "
            "config has no layers of its own to apply it to")
    if model_type in MULTIMODAL:  # the outer config class is built too: its own keys refused as its class does
        check_settable(data, model_type)
    raw_inner = data.get("text_config") if model_type in MULTIMODAL else None
    text = text_config(data)
    text_type = text["model_type"]
    written, text = text, real_keys(text, text_type)  # num_hidden_layers for GPT-2's n_layer, as transformers reads it
    if isinstance(raw_inner, dict) and text_type in HF_TRANSLATORS:  # before the outer tie overrides it
        ConfigKeys(raw_inner, text_type).check()
    require(text_type in HF_TRANSLATORS,
            f"config.json ({model_type}): text model_type {show(text_type)} is not supported")
    keys = ConfigKeys(text, text_type, written)
    keys.check()
    for key in TEXT_CONFIG_REFUSED.get(model_type, ()):  # transformers takes it for a text sub-config
        require(data.get(key) is None, f"config.json ({model_type}): key {key!r} is set, but transformers builds "
                                       f"no {model_type} model with a {key} its class does not have")
    # transformers adds a cross-attention block to each layer of the types that have one (GPT-2):
    # no translator models it, so such a config is refused (audit counts it through transformers)
    require(text.get("add_cross_attention") is not True,
            f"config.json ({text_type}): add_cross_attention is true: ffnlab's translators do not model "
            "cross-attention layers")
    cfg = implementation(clamp_top_k(HF_TRANSLATORS[text_type](keys)), text_type, text)
    # the types whose config class validates hidden_size % heads == 0, whatever the translator reads
    require(text_type not in HEADS_DIVIDE_HIDDEN or cfg.d_model % cfg.attn.n_heads == 0,
            f"config.json: num_attention_heads={cfg.attn.n_heads} does not divide hidden_size={cfg.d_model} "
            f"(transformers' {text_type} config requires it)")
    # an odd head width written in config.json, or one computed from hidden_size where the type's
    # config checks it (ODD_HEAD_REFUSED: Mistral's fills head_dim first, ERNIE 4.5's only for null)
    written_width = "qk_rope_head_dim" if cfg.attn.qk_rope_head_dim is not None else "head_dim"
    if isinstance(text.get(written_width), int):
        check_even_rotary(text, text_type, text[written_width])
    elif written_width == "head_dim" and text.get("head_dim") is None and \
            ("null" if "head_dim" in text else "absent") in ODD_HEAD_REFUSED.get(text_type, ()):
        check_even_rotary(text, text_type, cfg.head_dim)
    if not cfg.is_mla:
        check_partial_rotary(text, text_type, cfg.head_dim)
    elif "head_dim" not in FIELD_KINDS.get(text_type, {}) and isinstance(text.get("head_dim"), int):
        # DeepSeek-V3 does not declare head_dim: its config sets it to qk_rope_head_dim, then a written
        # head_dim over it, and RoPE validation reads that (V2 declares it, so it is overwritten)
        check_even_rotary(text, text_type, text["head_dim"])
    # the head width transformers' RoPE functions compute with (config.head_dim where written, even
    # on a type whose attention does not read it), not necessarily the attention's own
    rope_dim = rope_head_dim(text, text_type, (cfg.attn.qk_rope_head_dim or 0) if cfg.is_mla else cfg.head_dim,
                             mla=cfg.is_mla)
    check_rope_values(text, text_type, rope_dim)
    check_scaled_rope_widths(text, text_type, rope_dim)
    check_rope_not_nested(text, text_type, _layer_types(text, text_type, cfg))
    named = replace(cfg, name=name or data.get("_name_or_path") or model_type)
    return validate(named, grouped=False), dict(keys.defaulted)


def _layer_types(text: Mapping[str, object], text_type: str, cfg: ModelConfig) -> set[str]:
    """The layer types a config uses: its layer_types list as written, else those its config class
    computes (:func:`computed_layer_types`), else its sliding and full layers as translated."""
    written = text.get("layer_types")
    if isinstance(written, list):
        return {str(t) for t in written}
    computed = computed_layer_types(text, text_type, cfg.n_layers)
    if computed is not None:
        return computed
    a = cfg.attn
    sliding = set() if a.sliding_window is None else set(range(cfg.n_layers) if a.sliding_layers is None
                                                          else a.sliding_layers)
    return {*(["sliding_attention"] if sliding else []), *(["full_attention"] if len(sliding) < cfg.n_layers else [])}


# how the note on defaulted keys begins (the audit table shows it below the verdict)
DEFAULTS_NOTE = "keys missing from config.json, taken from transformers'"


def defaults_note(data: dict[str, Any], defaulted: Mapping[str, object]) -> str | None:
    """The audit note naming the size keys config.json ``data`` lacks and transformers fills from
    its config class, as :func:`translate_hf_dict` found them (None when it lacks none)."""
    if not defaulted:
        return None
    shown = ", ".join(f"{k} {v:,}" for k, v in defaulted.items())
    return f"{DEFAULTS_NOTE} {text_config(data)['model_type']} config defaults: {shown}"


# how the note on keys config.json gives twice begins (shown below the verdict, as the defaults' note)
DUPLICATES_NOTE = "config.json gives a key twice in one object"


def duplicates_note(duplicates: Sequence[str]) -> str | None:
    """The audit note naming the keys config.json gives more than once in one object: read, as
    transformers' ``json.loads`` reads them, with the last value (None when there are none)."""
    if not duplicates:
        return None
    shown = ", ".join(show(k) for k in duplicates[:10]) + (f" and {len(duplicates) - 10} more"
                                                           if len(duplicates) > 10 else "")
    return f"{DUPLICATES_NOTE} ({shown}): each read with its last value, as transformers reads it"


def clamp_top_k(cfg: ModelConfig) -> ModelConfig:
    """A top-k above the expert count routes each token to every expert (transformers builds such
    a config; its router would fail only when run)."""
    f = cfg.ffn
    if f.is_moe and f.top_k > f.n_experts:
        return replace(cfg, ffn=replace(f, top_k=f.n_experts))
    return cfg


# the key holding top-k, for the types whose config class has no default for it
TOP_K_UNSET = {"deepseek_v2": "num_experts_per_tok"}


def unknowns(data: dict[str, Any]) -> tuple[str, ...]:
    """What the config.json leaves undetermined although it counts: ``top_k`` when a DeepSeek-V2
    config has no num_experts_per_tok (active parameters and FLOPs need it)."""
    text = text_config(data) if data.get("model_type") in MULTIMODAL else data
    key = TOP_K_UNSET.get(str(text.get("model_type")))
    return ("top_k",) if key is not None and text.get(key) is None else ()


def read_hf_config(path: str | Path, duplicates: list[str] | None = None) -> tuple[Path, dict[str, Any]]:
    """The config.json at ``path`` (a file or a folder holding one) and its parsed object, read as
    transformers reads it (``json.loads``): a key given twice in one object keeps its last value,
    and is added to ``duplicates`` where the caller passes a list (:func:`duplicates_note`)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    require(p.is_file(), f"no such file: {p}")
    with open(p, "rb") as f:  # transformers' json.loads of the text refuses a leading byte-order mark
        require(f.read(3) != b"\xef\xbb\xbf", f"{p} starts with a UTF-8 byte-order mark: transformers cannot read "
                                                "it as JSON (save it without the mark)")
    # the one reader (size, UTF-8, JSON), with Python's NaN/Infinity as transformers reads them
    data = read_data(p, "config.json", fmt="JSON", json_constants=True,
                     duplicates=[] if duplicates is None else duplicates)
    try:
        data = decode_special_floats(data)
    except RecursionError:  # as deep as json.loads follows, deeper than the decoding does
        raise FfnlabError(f"{p}: cannot parse: not valid JSON (nested too deeply)") from None
    require(isinstance(data, dict), f"{p}: config.json must contain a JSON object")
    return p, data


# the tagged special floats of transformers 5.25 (configuration_utils._FLOAT_TAG_KEY / _VALUES):
# save_pretrained writes an infinite or NaN float as {"__float__": "Infinity"}, and its reader
# decodes the tag back before the config class sees it
FLOAT_TAG = "__float__"
FLOAT_TAG_VALUES = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def decode_special_floats(obj: Any) -> Any:
    """``obj`` with each tagged special float decoded, as transformers 5.25's
    ``PreTrainedConfig._decode_special_floats`` decodes a parsed config.json: an object whose only
    key is ``"__float__"``, holding ``"Infinity"``, ``"-Infinity"`` or ``"NaN"``, becomes that
    float, at any depth in objects and lists; any other tag (``"Banana"``, a number, a second key)
    stays an object as written."""
    if isinstance(obj, dict):
        if set(obj) == {FLOAT_TAG} and isinstance(obj[FLOAT_TAG], str):
            return FLOAT_TAG_VALUES.get(obj[FLOAT_TAG], obj)
        return {k: decode_special_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_special_floats(v) for v in obj]
    return obj


def config_name(p: Path) -> str:
    """A config's display name: its folder for ``.../NAME/config.json``, else the file stem; a
    Hugging Face cache snapshot (``models--ORG--NAME/snapshots/REVISION/config.json``) is named
    ``ORG/NAME@REV`` (the revision's first 7 characters), not by its revision hash alone."""
    parts = p.parts
    if p.name == "config.json" and len(parts) >= 4 and parts[-3] == "snapshots" and parts[-4].startswith("models--"):
        repo = parts[-4][len("models--"):].replace("--", "/")
        return f"{repo}@{parts[-2][:7]}"
    return p.parent.name if p.name == "config.json" and p.parent.name else p.stem


def load_hf_config(path: str | Path) -> tuple[ModelConfig, dict[str, Any]]:
    """Read and translate a config.json file (or a folder holding one)."""
    p, data = read_hf_config(path)
    return from_hf_dict(data, name=config_name(p)), data
