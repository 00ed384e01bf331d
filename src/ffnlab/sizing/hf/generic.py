"""What transformers 5.25 checks on every config class, or every model's build, whatever the
model type (beyond the widths the translators read): one rule per check, each naming its
transformers source, refused in one line where transformers refuses. No transformers import:
the tables are compared with the installed transformers by tests/sizing/hf/test_hf_generic_keys.py.

Not mirrored, because the verdict depends on the machine rather than on config.json: an
``attn_implementation`` of ``flash_attention_N`` on a model class that supports flash attention
(refused where the flash-attn package, or the ``kernels`` fallback, is missing) and a Hub kernel
(``org/repo[:name]``, fetched from the Hub by the ``kernels`` package); audit counts those. Not
mirrored either: what a ``watermarking_config`` object's own config class refuses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.hf.rules import CLASS_DEFAULTS
from ffnlab.validation import show

# modeling_utils.py, PreTrainedModel.get_correct_attn_implementation: "eager" and the keys of
# ALL_ATTENTION_FUNCTIONS (``valid_keys()``), after _check_and_adjust_attn_implementation has taken
# the deprecated "paged|" prefix off anything but "paged|eager"
ATTN_IMPLEMENTATIONS = frozenset(("eager", "flash_attention_2", "flash_attention_3", "flash_attention_4",
                                  "flex_attention", "sdpa", "paged|eager"))
# the implementations a type's model class refuses when config.json asks for them (its
# ``_supports_sdpa`` / ``_supports_flex_attn`` / ``_supports_flash_attn`` is false:
# _sdpa_can_dispatch, _flex_attn_can_dispatch, _flash_attn_can_dispatch before it looks for the
# package; asked for by default, null, sdpa falls back to eager); GPT-Neo looks its attention
# class up by the name (modeling_gpt_neo.py, GPT_NEO_ATTENTION_CLASSES), which has no "paged|eager"
_NO_FLASH = frozenset({"flash_attention_2", "flash_attention_3", "flash_attention_4"})
ATTN_UNSUPPORTED: dict[str, frozenset[str]] = {
    "gpt2": frozenset({"flex_attention"}), "bloom": frozenset({"sdpa", "flex_attention"}) | _NO_FLASH,
    "falcon": frozenset({"flex_attention"}), "gemma2": frozenset({"sdpa"}), "olmoe": frozenset({"flex_attention"}),
    "gpt_oss": frozenset({"sdpa"}), "gpt_bigcode": frozenset({"flex_attention"}),
    "stablelm": frozenset({"flex_attention"}), "mpt": frozenset({"sdpa", "flex_attention"}) | _NO_FLASH,
    "gpt_neo": frozenset({"sdpa", "flex_attention", "paged|eager"}), "qwen2_5_vl_text": frozenset({"flex_attention"}),
    "t5": _NO_FLASH, "llama4_text": _NO_FLASH,
}
# modeling_utils.py, PreTrainedModel.get_correct_experts_implementation: "eager" and the keys of
# ALL_EXPERTS_FUNCTIONS and ALL_FP8_EXPERTS_FUNCTIONS; "grouped_mm" (the default) only where the
# model class can set its experts implementation (_grouped_mm_can_dispatch: its module uses
# @use_experts_implementation), else refused when asked for (a default falls back to eager)
EXPERTS_IMPLEMENTATIONS = frozenset(("eager", "batched_mm", "deepgemm", "deepgemm_megamoe", "grouped_mm", "sonicmoe"))
EXPERTS_SETTABLE = frozenset(("mixtral", "qwen3_moe", "qwen2_moe", "olmoe", "deepseek_v2", "deepseek_v3", "gpt_oss",
                              "granitemoe", "phimoe", "glm4_moe", "ernie4_5_moe", "hunyuan_v1_moe"))
# PreTrainedModel.__init__ builds a GenerationConfig from the model config where the model can
# generate (``can_generate()``): every translated type's counted class but these
NOT_GENERATING = frozenset(("qwen2_5_vl_text",))
# generation/configuration_utils.py, GenerationConfig.validate (what it raises for, not what it
# warns about) on the keys PreTrainedConfig.__post_init__ leaves on the config (it pops those of
# GenerationConfig._get_default_generation_params, such as max_length, num_beams, temperature):
# ALL_CACHE_IMPLEMENTATIONS plus "paged". (The other keys of config.json reach it as
# ``_from_model_config``, which sets no attribute from them: its refusal of generate()'s arguments
# never fires for a model config.)
CACHE_IMPLEMENTATIONS = frozenset(("static", "offloaded_static", "sliding_window", "hybrid", "hybrid_chunked",
                                   "offloaded_hybrid", "offloaded_hybrid_chunked", "dynamic", "offloaded",
                                   "quantized", "paged"))
# configuration_utils.py, PreTrainedConfig.validate_layer_type: mlp_layer_types entries (validated
# only where the config has layer_types: written, or computed by the class when absent -- these)
MLP_LAYER_TYPE_NAMES = frozenset(("sparse", "dense"))
LAYER_TYPES_DEFAULTED = frozenset(("qwen2", "gemma2", "qwen3", "qwen2_moe", "gemma3_text", "olmo3", "gpt_oss",
                                   "llama4_text", "cohere2", "smollm3", "exaone4", "ministral", "qwen2_5_vl_text"))
# configuration_utils.py (transformers 5.25): every PreTrainedConfig takes ``per_layer_config``
# (HeterogeneousConfigMixin, integrations/heterogeneity/configuration_utils.py,
# _apply_heterogeneous_config): an object of layer index -> overrides, each index ``int()``-able and
# inside the layers, each override an object whose ``skip`` (if any) is a list of strings, no layer
# with both a sliding_window and an attention_chunk_size; an override equal to the global value is
# dropped. No translated type's model builds its layers from the per-layer configs: it builds every
# layer from the global config, and reading an attribute some layer overrides raises
# (AmbiguousGlobalPerLayerAttributeError). So an override never changes a total; transformers builds
# the model only where the model does not read the attribute while it builds -- these, probed on
# each type's default (an override of each scalar attribute of the config on layer 0), less the
# attributes whose reading depends on other settings (windows, head and FFN widths, layer patterns).
# Any other override ffnlab refuses: it does not model per-layer overrides yet.
PER_LAYER_UNREAD_ALL = frozenset(("chunk_size_feed_forward", "output_hidden_states", "problem_type", "return_dict",
                                  "use_cache"))
PER_LAYER_UNREAD: dict[str, frozenset[str]] = {
    "bloom": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pad_token_id")),
    "cohere": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "cohere2": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "dbrx": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "deepseek_v2": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits",
                              "pretraining_tp")),
    "deepseek_v3": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits",
                              "pretraining_tp")),
    "ernie4_5": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "ernie4_5_moe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "exaone4": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "falcon": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pad_token_id")),
    "gemma": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "gemma2": frozenset(("bos_token_id", "eos_token_id", "final_logit_softcapping", "initializer_range")),
    "gemma3_text": frozenset(("bos_token_id", "eos_token_id", "final_logit_softcapping", "initializer_range")),
    "glm": frozenset(("bos_token_id", "initializer_range")),
    "glm4": frozenset(("bos_token_id", "initializer_range")),
    "glm4_moe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "gpt2": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pad_token_id", "summary_first_dropout",
                       "summary_proj_to_labels", "summary_type", "summary_use_proj")),
    "gpt_bigcode": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pad_token_id")),
    "gpt_neo": frozenset(("bos_token_id", "classifier_dropout", "eos_token_id", "initializer_range", "pad_token_id")),
    "gpt_neox": frozenset(("bos_token_id", "classifier_dropout", "eos_token_id", "initializer_range", "is_decoder",
                           "pad_token_id")),
    "gpt_oss": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "gptj": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pad_token_id")),
    "granite": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "logits_scaling")),
    "granitemoe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "hunyuan_v1_dense": frozenset(("bos_token_id", "eod_token_id", "eos_token_id", "initializer_range",
                                   "pretraining_tp")),
    "hunyuan_v1_moe": frozenset(("bos_token_id", "eod_token_id", "eos_token_id", "initializer_range",
                                 "output_router_logits", "pretraining_tp", "sep_token_id")),
    "llama": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "pretraining_tp")),
    "llama4_text": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits",
                              "router_aux_loss_coef", "router_jitter_noise")),
    "ministral": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "mistral": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "mixtral": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "mpt": frozenset(("bos_token_id", "emb_pdrop", "eos_token_id", "init_device", "initializer_range",
                      "pad_token_id", "resid_pdrop")),
    "olmo": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "olmo2": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "olmo3": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "olmoe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "opt": frozenset(("bos_token_id", "eos_token_id", "init_std")),
    "phi": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "phi3": frozenset(("bos_token_id", "embd_pdrop", "eos_token_id", "initializer_range")),
    "phimoe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "qwen2": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "qwen2_5_vl_text": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "qwen2_moe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "qwen3": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "qwen3_moe": frozenset(("bos_token_id", "eos_token_id", "initializer_range", "output_router_logits")),
    "smollm3": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "stablelm": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "starcoder2": frozenset(("bos_token_id", "eos_token_id", "initializer_range")),
    "t5": frozenset(("classifier_dropout", "eos_token_id", "initializer_factor", "pad_token_id")),
}

# the global sliding_window of the types whose config replaces it when use_sliding_window is false
# (models/{qwen2,qwen3,qwen2_moe,qwen3_moe,qwen2_5_vl}/configuration_*.py, __post_init__)
SLIDING_SWITCHED_OFF: dict[str, int | None] = {"qwen2": None, "qwen3": None, "qwen2_moe": 0, "qwen3_moe": None,
                                               "qwen2_5_vl_text": None}
_HUB_KERNEL = re.compile(r"^[^/:]+/[^/:]+(?:@[^/:]+)?(?::[^/:]+)?$")  # integrations/hub_kernels.py, is_kernel


def _top(value: Any) -> Any:
    """An implementation as the config's setter keeps it: a dict gives its "" entry (the top config's)."""
    return value.get("") if isinstance(value, dict) else value


def _labels(data: Mapping[str, object]) -> None:
    """configuration_utils.py, PreTrainedConfig.__post_init__ and its num_labels setter."""
    id2label, present = data.get("id2label"), "num_labels" in data
    num = data.get("num_labels")
    if present and not isinstance(num, int):  # the setter builds range(num_labels), unless it equals the map's size
        require(isinstance(id2label, dict) and len(id2label) == num,
                f"config.json key 'num_labels' must be an integer, got {show(num)}: transformers' config refuses it")
    labels = len(id2label) if isinstance(id2label, dict) else num if present else 2
    require(not (data.get("problem_type") == "single_label_classification" and labels == 1),
            "config.json sets problem_type 'single_label_classification' with one label: transformers' config "
            "requires num_labels > 1")


def _implementations(data: Mapping[str, object], model_type: str) -> None:
    """modeling_utils.py, PreTrainedModel.__init__ (_check_and_adjust_attn_implementation,
    _check_and_adjust_experts_implementation) and configuration_utils.py, validate_output_attentions."""
    attn = _top(data.get("attn_implementation"))
    require(attn is None or isinstance(attn, str),
            f"config.json key 'attn_implementation' must be a string, got {show(attn)}: transformers refuses it")
    output_attentions = data.get("output_attentions")
    require(not output_attentions or attn in (None, "eager"),
            f"config.json sets output_attentions with attn_implementation {show(attn)}: transformers' config "
            "allows it only with eager attention")
    name = attn.removeprefix("paged|") if isinstance(attn, str) and attn != "paged|eager" else attn
    if isinstance(name, str) and not _HUB_KERNEL.search(name):  # a Hub kernel: the machine decides
        require(name in ATTN_IMPLEMENTATIONS,
                f"config.json key 'attn_implementation' is {show(attn)}: transformers knows only "
                f"{', '.join(sorted(ATTN_IMPLEMENTATIONS))}")
        require(name not in ATTN_UNSUPPORTED.get(model_type, ()),
                f"config.json key 'attn_implementation' is {show(attn)}: transformers' {model_type} model "
                "does not support it")
    experts = _top(data.get("experts_implementation"))
    if experts is not None:
        require(isinstance(experts, str) and experts in EXPERTS_IMPLEMENTATIONS,
                f"config.json key 'experts_implementation' is {show(experts)}: transformers knows only "
                f"{', '.join(sorted(EXPERTS_IMPLEMENTATIONS))}")
        require(experts != "grouped_mm" or model_type in EXPERTS_SETTABLE,
                f"config.json key 'experts_implementation' is 'grouped_mm': transformers' {model_type} model "
                "cannot set an experts implementation")


def _generation(data: Mapping[str, object], model_type: str) -> None:
    """generation/configuration_utils.py, GenerationConfig.__init__ and validate, as
    PreTrainedModel.__init__ runs them (GenerationConfig.from_model_config) for a model that generates."""
    if model_type in NOT_GENERATING:
        return

    tokens = data.get("max_new_tokens")  # compared with 0: refused when not above it, or not comparable
    require(tokens is None or isinstance(tokens, (int, float)) and not tokens <= 0,
            f"config.json key 'max_new_tokens' is {show(tokens)}: transformers' generation config requires a "
            "number above 0")
    weight = data.get("assistant_ensemble_weight")
    require(weight is None or isinstance(weight, (int, float)) and 0.0 < weight < 1.0,
            f"config.json key 'assistant_ensemble_weight' is {show(weight)}: transformers' generation config "
            "requires a number between 0 and 1")
    cache = data.get("cache_implementation")
    require(cache is None or isinstance(cache, str) and cache in CACHE_IMPLEMENTATIONS,
            f"config.json key 'cache_implementation' is {show(cache)}: transformers' generation config knows only "
            f"{', '.join(sorted(CACHE_IMPLEMENTATIONS))}")
    require(data.get("compile_config") is None,
            f"config.json key 'compile_config' is {show(data.get('compile_config'))}: transformers' generation "
            "config takes only a CompileConfig object there")
    watermark = data.get("watermarking_config")  # an object is read by a watermarking config class: not mirrored
    require(watermark is None or isinstance(watermark, dict),
            f"config.json key 'watermarking_config' must be an object, got {show(watermark)}: transformers' "
            "generation config refuses it")


def _mlp_layer_types(data: Mapping[str, object], model_type: str, n_layers: Any) -> None:
    """configuration_utils.py, PreTrainedConfig.validate_layer_type (layer_types: keys.check_common)."""
    kinds = data.get("mlp_layer_types")
    if kinds is None or (data.get("layer_types") is None and model_type not in LAYER_TYPES_DEFAULTED):
        return
    try:
        entries = list(kinds)  # type: ignore[call-overload]
    except TypeError:
        raise FfnlabError(f"config.json key 'mlp_layer_types' must list sparse or dense, got {show(kinds)}") from None
    require(all(isinstance(k, str) and k in MLP_LAYER_TYPE_NAMES for k in entries),
            f"config.json key 'mlp_layer_types' must list sparse or dense, got {show(kinds)}: transformers' config "
            "refuses it")
    require(not isinstance(n_layers, int) or len(entries) == n_layers,
            f"config.json key 'mlp_layer_types' lists {len(entries):,} layers, but the model has {n_layers}: "
            "transformers' config requires one per layer")


def _per_layer_config(data: Mapping[str, object], model_type: str, n_layers: Any) -> None:
    """integrations/heterogeneity/configuration_utils.py, _apply_heterogeneous_config, and what the
    model's build then makes of it (:data:`PER_LAYER_UNREAD`)."""
    plc = data.get("per_layer_config")
    if plc is None:
        return
    require(isinstance(plc, dict), f"config.json key 'per_layer_config' must be an object of layer number -> "
                                   f"overrides, got {show(plc)}: transformers refuses it")
    assert isinstance(plc, dict)
    overrides: dict[int, Any] = {}
    for key, layer in plc.items():
        try:
            overrides[int(key)] = layer
        except ValueError:
            raise FfnlabError(f"config.json key 'per_layer_config' has key {show(key)}, not a layer number: "
                              "transformers refuses it") from None
    defaults = CLASS_DEFAULTS.get(model_type, {})
    for index, layer in sorted(overrides.items()):
        require(isinstance(layer, dict), f"config.json key 'per_layer_config' gives layer {index} {show(layer)}, "
                                         "not an object of overrides: transformers refuses it")
        skip = layer.get("skip", [])
        require(isinstance(skip, (list, dict)) and all(isinstance(x, str) for x in skip),
                f"config.json key 'per_layer_config' gives layer {index} a skip of {show(skip)}: transformers "
                "requires a list of names")
    if isinstance(n_layers, int):
        odd = sorted(i for i in overrides if not 0 <= i < n_layers)
        require(not odd, f"config.json key 'per_layer_config' names layer {odd[0] if odd else 0}, but the model has "
                         f"layers 0 to {n_layers - 1}: transformers refuses it")
        window, chunk = data.get("sliding_window", defaults.get("sliding_window")), data.get(
            "attention_chunk_size", defaults.get("attention_chunk_size"))
        if model_type in SLIDING_SWITCHED_OFF and not data.get("use_sliding_window",
                                                               defaults.get("use_sliding_window")):
            window = SLIDING_SWITCHED_OFF[model_type]
        for index in range(min(n_layers, 1_000_000)):
            layer = overrides.get(index, {})
            both = [layer.get("sliding_window", window), layer.get("attention_chunk_size", chunk)]
            require(None in both, f"config.json key 'per_layer_config': layer {index} would have both a sliding_window "
                                  "and an attention_chunk_size: transformers refuses it")
    unread = PER_LAYER_UNREAD_ALL | PER_LAYER_UNREAD.get(model_type, frozenset())
    for index, layer in sorted(overrides.items()):
        for key, value in layer.items():
            same = key in data and data[key] == value or key not in data and key in defaults and defaults[key] == value
            require(key == "skip" or key in unread or same,
                    f"config.json key 'per_layer_config' overrides {key!r} on layer {index}: ffnlab does not model "
                    f"per-layer overrides yet (transformers' {model_type} model builds every layer from the global "
                    "config, and refuses an override of a setting it reads)")


def check_generic(data: Mapping[str, object], model_type: str, n_layers: Any) -> None:
    """Refuse what transformers 5.25 refuses for any model type: the labels, the attention and
    experts implementations, the generation parameters it validates, mlp_layer_types, and a
    per_layer_config that is malformed or overrides what ffnlab does not model."""
    _labels(data)
    _implementations(data, model_type)
    _generation(data, model_type)
    _mlp_layer_types(data, model_type, n_layers)
    _per_layer_config(data, model_type, n_layers)
