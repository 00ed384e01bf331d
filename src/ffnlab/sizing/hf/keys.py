"""Typed access to a Hugging Face config.json dict, and the activation names it may use."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.config import check_layer_bound
from ffnlab.sizing.hf.aliases import ALIASES
from ffnlab.sizing.hf.generic import check_generic
from ffnlab.sizing.hf.rules import (
    CLASS_DEFAULTS,
    FIELD_KINDS,
    HEAD_DIM_NULL_KEPT,
    HEAD_DIM_TYPED,
    LAYER_TYPE_VALUES,
    MISSING_REFUSED,
    NEGATIVE_REFUSED,
    NULL_REFUSED,
    PAD_IN_EMBEDDING,
    PARTIAL_ROTARY_REFUSED,
    PARTIAL_ROTARY_TOP_IGNORED,
    READ_ONLY_KEYS,
    ROPE_DEFAULTS,
    ROPE_NESTED_REFUSED,
    ROPE_REQUIRED_KEYS,
    ROPE_SCALING,
    ROPE_THETA_LOG,
    ROPE_THETA_NUMBER,
    SUB_CONFIG_KINDS,
    UNIT_INTERVAL,
    ZERO_POWER_REFUSED,
)
from ffnlab.validation import integer, show

MISSING = object()
MAX_INT = 2**53  # larger than any width, count or length in a real config.json
# the keys holding a model's number of decoder layers (transformers' num_hidden_layers and the
# names its configs read it under); transformers 5.25 builds a model whose count is 0 or negative
# with no layers (``range(n)`` is empty; probed over every translated type: all build it
# but those that refuse a negative count, NEGATIVE_REFUSED, and GPT-Neo, whose attention_layers
# must be as many as its layers), which ffnlab's sizing does not model
LAYER_COUNT_KEYS = frozenset({"num_hidden_layers", "n_layer", "n_layers", "num_layers"})
LAYER_COUNT_MATCHED = frozenset({"gpt_neo"})  # the count checked against another key first (its translator)

# activation name in a config.json -> ffnlab plain kind (gated kinds derive from it)
ACT_PLAIN = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
    "quick_gelu": "gelu", "relu": "relu", "silu": "silu", "swish": "silu", "relu2": "relu2",
}
GATED_FROM_ACT = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_new": "geglu",
                   "gelu_pytorch_tanh": "geglu", "gelu_fast": "geglu", "relu": "reglu",
                   "sigmoid": "glu", "linear": "bilinear"}


def json_kind(value: Any) -> str:
    """A JSON value's kind, as transformers' strict config validators tell them apart: an int
    field refuses 2048.0 and true, a float field refuses 1 ("expected float, got int")."""
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "object"}.get(type(value),
                                                                                                    "other")


# where a type's RoPE standardisation (its own ``convert_rope_params_to_dict``, transformers 5.25:
# src/transformers/models/{gpt_neox,gemma3,olmo3}/configuration_*.py) takes a theta from when
# ``rope_parameters`` has none, for the types that do not take the top-level ``rope_theta``: GPT-NeoX
# (flat, "") takes ``rotary_emb_base``; Gemma 3 and OLMo 3 keep one dict per layer type, filled from
# the key named (None: the class default, as OLMo 3's second ``kwargs.pop("rope_theta")`` finds it
# popped), and build only the layer types their ``layer_types`` use (by default every n-th layer
# full, the others sliding: ``LAYER_PATTERN``). tests/sizing/hf/test_rope_sources.py probes it.
ROPE_THETA_SOURCES: dict[str, dict[str, str | None]] = {
    "gpt_neox": {"": "rotary_emb_base"},
    "gemma3_text": {"full_attention": "rope_theta", "sliding_attention": "rope_local_base_freq"},
    "olmo3": {"full_attention": "rope_theta", "sliding_attention": None},
}
# type -> (the key holding n, its default or None when the class has no key): every n-th layer full
LAYER_PATTERN: dict[str, tuple[str | None, int]] = {"gemma3_text": ("sliding_window_pattern", 6), "olmo3": (None, 4)}


def _theta_from(data: Mapping[str, object], key: str | None, popped: set[str]) -> list[tuple[str, Any]]:
    """The theta a missing ``rope_theta`` is filled with from top-level ``key`` (each key popped once)."""
    if key is None or key not in data or key in popped:
        return []
    popped.add(key)
    return [(key, data[key])]


def _used_layer_types(data: Mapping[str, object], model_type: str) -> set[str]:
    """The layer types a per-layer-type rotary embedding builds (``set(config.layer_types)``)."""
    types = data.get("layer_types")
    if isinstance(types, list):
        return {str(t) for t in types}
    key, default = LAYER_PATTERN[model_type]
    every = data.get(key, default) if key else default
    layers = data.get("num_hidden_layers", CLASS_DEFAULTS.get(model_type, {}).get("num_hidden_layers", 0))
    n = layers if isinstance(layers, int) and not isinstance(layers, bool) and layers > 0 else 0
    if isinstance(every, int) and every:  # every |every|-th layer full (Python's %, as transformers')
        return {*(["sliding_attention"] if n and abs(every) > 1 else []),
                *(["full_attention"] if n >= abs(every) else [])}
    used: set[str] = set()
    for i in range(min(n, 10_000)):  # a float pattern: as its __post_init__ computes it
        if not isinstance(every, (int, float)) or not every:  # its % fails (TypeError, ZeroDivisionError)
            raise FfnlabError(f"config.json key {key!r} must be a number other than 0, got {show(every)}: "
                              f"transformers' {model_type} config computes its layer types with it")
        used.add("sliding_attention" if (i + 1) % every else "full_attention")
    return used


def _per_layer_type_thetas(data: Mapping[str, object], model_type: str) -> list[tuple[str, Any]]:
    sources = ROPE_THETA_SOURCES[model_type]
    params = data.get("rope_parameters")
    if params is None:
        params = {name: {} for name in sources}
    require(isinstance(params, dict), f"config.json key 'rope_parameters' must be an object, got {show(params)}")
    assert isinstance(params, dict)
    scaling = data.get("rope_scaling")
    if scaling is not None:  # merged into the full-attention dict, which must be there
        require(isinstance(scaling, dict) and isinstance(params.get("full_attention"), dict),
                f"config.json key 'rope_scaling' is set, but transformers' {model_type} config merges it into "
                "rope_parameters.full_attention, which must be an object")
        assert isinstance(scaling, dict)
    used = _used_layer_types(data, model_type)
    out, popped = [], set[str]()
    for name, key in sources.items():
        group = params.get(name)
        require(group is None or isinstance(group, dict),
                f"config.json key 'rope_parameters.{name}' must be an object, got {show(group)}")
        if name == "full_attention" and scaling is not None and "rope_theta" in scaling:
            found = [("rope_scaling.rope_theta", scaling["rope_theta"])]
        elif group is not None and "rope_theta" in group:
            found = [(f"rope_parameters.{name}.rope_theta", group["rope_theta"])]
        else:
            found = _theta_from(data, key, popped)
        out += found if name in used else []
    return out


def rope_groups(data: Mapping[str, object], model_type: str) -> list[tuple[str, dict[str, Any]]]:
    """The RoPE parameter dicts transformers' standardisation (5.25) takes from a flat-RoPE type's
    config.json, each with its key: ``rope_scaling`` when set, else ``rope_parameters`` (one dict,
    or one per layer type where the type has layer types)."""
    label = "rope_scaling" if data.get("rope_scaling") else "rope_parameters"
    params = data.get(label)
    require(params is None or isinstance(params, dict),
            f"config.json key {label!r} must be an object, got {show(params)}: transformers' {model_type} "
            "RoPE standardisation refuses it")
    assert params is None or isinstance(params, dict)
    params = params or {}
    layered = "layer_types" in FIELD_KINDS.get(model_type, {})  # nested only by layer type (5.25)
    if layered and params and all(isinstance(v, dict) or v is None for v in params.values()):
        return [(f"{label}.{name}", v) for name, v in params.items() if isinstance(v, dict)]
    return [(label, params)]


def rope_kind(group: Mapping[str, object]) -> object:
    """A RoPE parameter dict's scaling type, as transformers reads it (``rope_type``, else the older
    ``type``, else default)."""
    return group.get("rope_type", group.get("type", "default"))


def _check_layer_type_groups(data: Mapping[str, object], model_type: str) -> None:
    """The RoPE dicts of a type with one rotary embedding per layer type (Gemma 3, OLMo 3): each
    dict a used layer type has is validated by its rope_type's own rules (5.25: the keys it
    requires, rope_theta and original_max_position_embeddings filled by the standardisation) and
    computed with (a rope_type it knows, a numeric factor)."""
    params = data.get("rope_parameters")
    if not isinstance(params, dict):
        return
    used = _used_layer_types(data, model_type)
    for name, group in params.items():
        if name not in used or not isinstance(group, dict):
            continue
        label, kind = f"rope_parameters.{name}", rope_kind(group)
        required = ROPE_REQUIRED_KEYS.get(kind) if isinstance(kind, str) else None
        require(required is not None, f"config.json key '{label}.rope_type' is {show(kind)}: transformers' "
                                      f"{model_type} model computes no such RoPE (it knows "
                                      f"{', '.join(sorted(ROPE_REQUIRED_KEYS))})")
        assert required is not None  # the require above
        missing = [key for key in required
                   if key not in group and key not in ("rope_theta", "original_max_position_embeddings")]
        require(not missing, f"config.json key {label!r} ({kind} RoPE scaling) lacks {', '.join(missing)}: "
                             f"transformers requires {'it' if len(missing) == 1 else 'them'}")
        factor = group.get("factor")
        require(kind == "default" or factor is None or json_kind(factor) in ("int", "float"),
                f"config.json key '{label}.factor' must be a number, got {show(factor)}: transformers' "
                f"{model_type} rotary embedding computes with it")


def check_rope_scaling(data: Mapping[str, object], model_type: str) -> None:
    """Refuse the RoPE scaling transformers refuses (:data:`ROPE_SCALING`): a scaling type the
    type refuses outright, a required key (:data:`ROPE_REQUIRED_KEYS`) the standardisation does
    not fill, a rope_type the model cannot compute, a factor that is not a number."""
    if model_type in LAYER_PATTERN:  # one dict per layer type, each its layers' own rotary embedding
        _check_layer_type_groups(data, model_type)
        return
    tags = ROPE_SCALING.get(model_type, frozenset())
    both = data.get("rope_scaling") and isinstance(data.get("rope_parameters"), dict) and data["rope_parameters"]
    params = data.get("rope_parameters")
    if both and "computes" not in tags and isinstance(params, dict):  # a type without RoPE still validates them
        kind = rope_kind(params)
        missing = [k for k in ROPE_REQUIRED_KEYS.get(kind, ()) if k not in params] if isinstance(kind, str) else []
        require(not missing, f"config.json key 'rope_parameters' ({kind} RoPE scaling) lacks {', '.join(missing)}: "
                             f"transformers' {model_type} config validates it beside rope_scaling")
    filled = {key for tag, key in (("fills-theta", "rope_theta"), ("fills-original",
                                                                   "original_max_position_embeddings"))
              if tag in tags}
    for label, group in rope_groups(data, model_type):
        if not group:
            continue
        kind = rope_kind(group)
        require(f"refuses-{kind}" not in tags,
                f"config.json key {label!r} asks for {kind!r} RoPE scaling: transformers' {model_type} config refuses "
                f"it")
        required = ROPE_REQUIRED_KEYS.get(kind) if isinstance(kind, str) else None
        if required is None:
            require("computes" not in tags, f"config.json key '{label}.rope_type' is {show(kind)}: transformers' "
                                            f"{model_type} model computes no such RoPE (it knows "
                                            f"{', '.join(sorted(ROPE_REQUIRED_KEYS))})")
            continue
        missing = [key for key in required if key not in group and key not in filled]
        require(not missing, f"config.json key {label!r} ({kind} RoPE scaling) lacks {', '.join(missing)}: "
                             f"transformers requires {'it' if len(missing) == 1 else 'them'}")
        factor = group.get("factor")
        require("factor-number" not in tags or kind == "default" or factor is None
                or json_kind(factor) in ("int", "float"),
                f"config.json key '{label}.factor' must be a number, got {show(factor)}: transformers' "
                f"{model_type} rotary embedding computes with it")


# the partial_rotary_factor a type's config sets when config.json gives none (transformers 5.25,
# models/<type>/configuration_<type>.py: kwargs.setdefault("partial_rotary_factor", ...), GPT-NeoX's
# rotary_pct default)
PARTIAL_ROTARY_DEFAULT = {"glm": 0.5, "glm4": 0.5, "glm4_moe": 0.5, "persimmon": 0.5, "phi": 0.5, "stablelm": 0.25,
                          "gpt_neox": 0.25}


def partial_rotary_default(data: Mapping[str, object], model_type: str) -> Any:
    """The partial_rotary_factor a type's config uses when config.json and its RoPE dict give none:
    the class's (:data:`PARTIAL_ROTARY_DEFAULT`), GPT-NeoX's from its rotary_pct key."""
    default = PARTIAL_ROTARY_DEFAULT.get(model_type, 1.0)
    return data.get("rotary_pct", default) if model_type == "gpt_neox" else default


def top_partial_rotary(data: Mapping[str, object], model_type: str) -> Any:
    """The partial_rotary_factor a type's RoPE dicts take when they give none themselves: the
    top-level key as written, else :func:`partial_rotary_default`; the default alone for the types
    whose config never reads the top-level key (:data:`PARTIAL_ROTARY_TOP_IGNORED`, probed:
    GPT-NeoX fills its RoPE dict from rotary_pct)."""
    default = partial_rotary_default(data, model_type)
    return default if model_type in PARTIAL_ROTARY_TOP_IGNORED else data.get("partial_rotary_factor", default)


def rotary_width(head_dim: int, partial: Any, where: str, model_type: str) -> int:
    """int(head_dim x partial_rotary_factor), the rotary width transformers 5.25 computes (its RoPE
    validators and inits, Phi-3's ``validate_rope``, GPT-OSS's split); a factor that makes the
    product infinite (1e308 x 128, a JSON 1e309) is refused in one line, as transformers' int()
    raises OverflowError on it. ``where`` names the key the factor came from."""
    product = head_dim * partial
    require(math.isfinite(product), f"config.json key {where!r} is {show(partial)}: {head_dim} x {show(partial)} is "
                                    f"not a finite rotary width: transformers' {model_type} RoPE refuses it "
                                    "(OverflowError)")
    return int(product)


def check_even_rotary(data: Mapping[str, object], model_type: str, head_dim: int) -> None:
    """Refuse an odd head width that RoPE rotates whole (transformers 5.25,
    ``RotaryEmbeddingConfigMixin.validate_rope``: a head_dim above 4, odd, with
    int(head_dim x partial_rotary_factor) == head_dim), for the types whose model computes RoPE, and
    for the others when config.json gives them RoPE parameters anyway (validated all the same)."""
    computes = "computes" in ROPE_SCALING.get(model_type, frozenset()) or model_type in ROPE_THETA_NUMBER
    if not computes and not any(isinstance(data.get(k), dict) and data[k] for k in ("rope_parameters",
                                                                                     "rope_scaling")):
        return
    groups: list[tuple[str, dict[str, Any]]] = [("", {})] if model_type in LAYER_PATTERN else \
        [(label, g) for label, g in rope_groups(data, model_type) if g] or [("", {})]
    default = top_partial_rotary(data, model_type)
    for label, group in groups:
        partial = group.get("partial_rotary_factor", default)
        if json_kind(partial) not in ("int", "float"):
            continue
        where = f"{label}.partial_rotary_factor" if "partial_rotary_factor" in group else "partial_rotary_factor"
        require(not (head_dim > 4 and head_dim % 2 and rotary_width(head_dim, partial, where, model_type) == head_dim),
                f"config.json: the attention heads are {head_dim:,} wide, odd, and RoPE rotates them whole: "
                f"transformers' {model_type} config refuses an odd rotary dimension")


def rope_head_dim(data: Mapping[str, object], model_type: str, width: int, *, mla: bool = False) -> int:
    """The head width transformers 5.25's RoPE functions compute with (``modeling_rope_utils.py``:
    the dynamic, yarn and longrope inits and longrope's validator read ``getattr(config, "head_dim",
    hidden_size // num_attention_heads)``, the linear and llama3 inits ``getattr(config, "head_dim",
    None) or hidden_size // num_attention_heads``): an integer ``head_dim`` written in config.json is
    kept on every translated config as written (probed: tests/sizing/hf/test_counts_tenth_pass.py),
    whether or not the attention reads it (GPT-NeoX and StableLM split hidden_size by the heads;
    DeepSeek-V3's MLA rotates qk_rope_head_dim), except where an MLA config declares head_dim and
    overwrites it with qk_rope_head_dim (DeepSeek-V2); else the config's own, ``width`` (the
    attention's rotary head width, which the class's head_dim or hidden_size // heads equals). A
    written 0 is kept too: only the linear and llama3 inits fall back from it, and a width of 0
    raises in none of them."""
    written = data.get("head_dim")
    if json_kind(written) != "int" or (mla and "head_dim" in FIELD_KINDS.get(model_type, {})):
        return width
    assert isinstance(written, int)
    return written


def check_scaled_rope_widths(data: Mapping[str, object], model_type: str, head_dim: int) -> None:
    """Refuse a scaled RoPE (``rope_type`` other than default) whose rotary width transformers'
    RoPE functions cannot compute with (5.25 ``modeling_rope_utils.py``: each takes the width
    int(head_dim x partial_rotary_factor), ``head_dim`` as :func:`rope_head_dim` finds it, the factor
    from the dict, then config.json, then the class): a negative width (``torch.arange(0, width, 2)``
    refuses it), ``dynamic`` at width 2 (its exponent divides by width - 2), ``yarn`` at an odd width
    above 1 (its ramp has width // 2 entries, its frequencies one more), ``longrope`` factor lists that
    do not broadcast against the width's ceil(width / 2) frequencies. For the types whose model
    computes RoPE, each dict it computes with: the flat one, or on the types with one rotary
    embedding per layer type (:data:`LAYER_PATTERN`), each used layer type's (its factor from its own
    dict, else 1). For every type, a null head_dim its config keeps (:data:`HEAD_DIM_NULL_KEPT`) under
    the RoPE types that multiply it (dynamic, yarn, longrope; longrope's validator does so even where no
    RoPE is computed)."""
    computes = "computes" in ROPE_SCALING.get(model_type, frozenset()) or model_type in LAYER_PATTERN
    if "head_dim" in data and data["head_dim"] is None and model_type in HEAD_DIM_NULL_KEPT:
        for label, group in rope_groups(data, model_type):
            kind = rope_kind(group) if group else "default"
            require(kind != "longrope" and not (computes and kind in ("dynamic", "yarn")),
                    f"config.json key 'head_dim' is null and {label!r} asks for {kind} RoPE, which transformers "
                    f"computes from head_dim: its {model_type} config keeps the null and refuses it")
    if not computes:
        return
    if model_type in LAYER_PATTERN:  # each used layer type's own dict, as its rotary embedding computes with it
        groups: list[tuple[str, dict[str, Any]]] = [(label, p) for label, p, *_ in rope_value_dicts(data, model_type)]
        default: Any = 1.0
    else:
        groups, default = rope_groups(data, model_type), top_partial_rotary(data, model_type)
    for label, group in groups:
        kind = rope_kind(group) if group else "default"
        partial: Any = group.get("partial_rotary_factor", default)
        if kind == "default" or json_kind(partial) not in ("int", "float"):
            continue
        written = f"{label}.partial_rotary_factor" if "partial_rotary_factor" in group else "partial_rotary_factor"
        width = rotary_width(head_dim, partial, written, model_type)
        where = f"config.json key {label!r} ({kind} RoPE over {head_dim} x {show(partial)} = {width} rotary dimensions)"
        require(width >= 0, f"{where}: transformers' RoPE refuses a negative rotary width")
        require(kind != "dynamic" or width != 2, f"{where}: transformers' dynamic RoPE divides by the width - 2")
        require(kind != "yarn" or width <= 1 or width % 2 == 0,
                f"{where}: transformers' yarn RoPE cannot ramp an odd rotary width")
        if kind == "longrope":
            pairs = (width + 1) // 2
            values = group.get("short_factor")  # the build uses the short list (seq_len unset)
            if isinstance(values, list):
                require(len(values) in (pairs, 1) or pairs == 1,
                        f"{where}: short_factor has {len(values)} entries, which do not match its {pairs} frequencies")


def check_partial_rotary(data: Mapping[str, object], model_type: str, head_dim: int) -> None:
    """Refuse a partial_rotary_factor the type's rotary embedding refuses
    (:data:`PARTIAL_ROTARY_REFUSED`): a negative one (a negative rotary width), a null one, one that
    makes int(head_dim x factor) odd where the rotation splits that width in halves (gpt-oss). A
    factor written inside a RoPE dict is the rotary embedding's own, so there anything but a number
    of 0 or more is refused by every type that reads the factor (those tags, and those with a
    class default: :data:`PARTIAL_ROTARY_DEFAULT`, GPT-NeoX's rotary_pct)."""
    tags = PARTIAL_ROTARY_REFUSED.get(model_type, frozenset())
    if model_type in PARTIAL_ROTARY_DEFAULT or tags:
        for label, group in rope_groups(data, model_type):
            factor: Any = group.get("partial_rotary_factor", 0)
            require(json_kind(factor) in ("int", "float") and factor >= 0,
                    f"config.json key '{label}.partial_rotary_factor' is {show(factor)}: transformers' "
                    f"{model_type} rotary embedding computes a width with it (a number of 0 or more)")
    if not tags:
        return
    require("null" not in tags or "partial_rotary_factor" not in data or data["partial_rotary_factor"] is not None,
            f"config.json key 'partial_rotary_factor' is null: transformers' {model_type} rotary embedding "
            "computes with it")
    for label, group in rope_groups(data, model_type):
        key = "partial_rotary_factor"
        factor = group[key] if key in group else data.get(key)
        where = f"{label}.{key}" if key in group else key
        if json_kind(factor) not in ("int", "float"):
            continue
        require("negative" not in tags or factor >= 0,
                f"config.json key {where!r} is {show(factor)}: transformers' {model_type} rotary embedding "
                "refuses a negative rotary width")
        require("odd-width" not in tags or rotary_width(head_dim, factor, where, model_type) % 2 == 0,
                f"config.json key {where!r} is {show(factor)}: {head_dim} x {show(factor)} gives an odd rotary "
                f"width, which transformers' {model_type} rotary embedding cannot split in halves")


# ---- the values of a RoPE dict, as transformers 5.25 validates and computes with them ----------
#
# ``modeling_rope_utils.py``'s ``_validate_<type>_rope_parameters`` mostly log a warning for a bad
# value, but some of their comparisons and divisions raise on one; the RoPE init functions
# (``_compute_<type>_parameters``, and each model's ``compute_default_rope_parameters``) compute
# with every value they read. :data:`ROPE_VALUE_RULES` keeps those expressions, one per step, each
# with the keys it reads: :func:`check_rope_values` evaluates them in pure Python on the dict as
# 5.25's standardisation leaves it (values filled from the top level included), a torch tensor
# stood in for by :class:`_Tensor`, and refuses the config where one raises, as transformers does.


class _Tensor:
    """A float tensor of transformers' RoPE init, as far as it raises: arithmetic and comparison
    with a number (a bool is one) or a tensor gives a tensor, anything else (None, a string, a
    list, an object) is a TypeError, as torch's operators give one."""

    def _op(self, other: object) -> _Tensor:
        if isinstance(other, (_Tensor, int, float)):
            return self
        raise TypeError(f"unsupported operand type for a tensor: {type(other).__name__}")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _op
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __gt__ = __lt__ = __ge__ = __le__ = _op


class _Context(dict[str, Any]):
    """What a RoPE step reads besides the dict: max_position_embeddings (absent where the config
    has none: an AttributeError, as transformers'), truncate, and ``dim``, int(head_dim x
    partial_rotary_factor), computed only by the steps that read it."""

    def __init__(self, head_dim: int | None, partial: Any, **values: Any):
        super().__init__(values)
        self.head_dim, self.partial = head_dim, partial

    def __missing__(self, key: str) -> Any:
        if key == "dim":
            return int(self.head_dim * self.partial)
        raise AttributeError(f"the config has no {key}")


def _arange(stop: Any) -> _Tensor:
    """``torch.arange(0, stop, 2)``: refuses a stop that is not a number, or below 0."""
    if not isinstance(stop, (int, float)):
        raise TypeError(f"arange() received an invalid stop {type(stop).__name__}")
    if stop < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if stop > MAX_INT:  # past int64, or more frequencies than memory holds
        raise OverflowError("int too big to convert")
    return _Tensor()


def _tensor_of(values: Any) -> _Tensor:
    """``torch.tensor(values, dtype=float32)``: a number, or a (nested) list of numbers."""
    if isinstance(values, list):
        for v in values:
            _tensor_of(v)
    elif not isinstance(values, (int, float)):
        raise TypeError(f"could not convert {type(values).__name__} to a float tensor")
    return _Tensor()


def _mscale(scale: Any, mscale: Any = 1) -> Any:
    """``yarn_get_mscale``."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _inv_freq(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    """The inverse frequencies every RoPE init computes first: 1 / theta ** (arange(0, dim, 2) / dim)."""
    dim = c["dim"]
    return 1.0 / (p["rope_theta"] ** (_arange(dim) / dim))


def _yarn_range(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    """yarn's correction range (``find_correction_range``), from its betas, theta and original length."""
    dim, base, original = c["dim"], p["rope_theta"], p["original_max_position_embeddings"]
    bounds = [(dim * math.log(original / ((p.get(k) or d) * 2 * math.pi))) / (2 * math.log(base))
              for k, d in (("beta_fast", 32), ("beta_slow", 1))]
    if c["truncate"]:
        bounds = [math.floor(bounds[0]), math.ceil(bounds[1])]
    return max(bounds[0], 0), min(bounds[1], dim - 1)


def _yarn_factor(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    factor = p["factor"]
    return c["max_position_embeddings"] / p["original_max_position_embeddings"] if factor is None else factor


def _yarn_attention(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    factor, mscale, mscale_all_dim = _yarn_factor(p, c), p.get("mscale"), p.get("mscale_all_dim")
    if p.get("attention_factor") is not None:
        return None
    if mscale and mscale_all_dim:
        return float(_mscale(factor, mscale) / _mscale(factor, mscale_all_dim))
    return _mscale(factor)


def _longrope_attention(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    factor, original = p.get("factor"), p["original_max_position_embeddings"]
    factor = c["max_position_embeddings"] / original if factor is None else factor
    if p.get("attention_factor") is None and not factor <= 1.0:
        return math.sqrt(1 + math.log(factor) / math.log(original))
    return None


def _llama3(p: Mapping[str, Any], c: Mapping[str, Any]) -> Any:
    inv_freq, factor = _inv_freq(p, c), p["factor"]
    low, high, old = p["low_freq_factor"], p["high_freq_factor"], p["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv_freq
    scaled = inv_freq / factor, wavelen > low_wavelen, wavelen < high_wavelen
    smooth = (old / wavelen - low) / (high - low)
    return scaled, (1 - smooth) * inv_freq / factor + smooth * inv_freq


Rule = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]

# (phase, RoPE types, keys read, expression): "validate" steps run wherever transformers validates
# the dict (every type, RoPE computed or not), "init" steps where the model computes RoPE; "dim"
# names int(head_dim x partial_rotary_factor), "default" the types' own default RoPE (which reads
# the factor only where :func:`_reads_partial`). transformers 5.25, modeling_rope_utils.py.
ROPE_VALUE_RULES: tuple[tuple[str, frozenset[str], tuple[str, ...], Rule], ...] = (
    ("validate", frozenset({"yarn"}), ("beta_fast", "beta_slow"),
     lambda p, c: (p.get("beta_fast") or 32) < (p.get("beta_slow") or 1)),
    ("validate", frozenset({"yarn"}), ("original_max_position_embeddings",),
     lambda p, c: c["max_position_embeddings"] / p["original_max_position_embeddings"]),
    ("validate", frozenset({"longrope"}), ("partial_rotary_factor",), lambda p, c: c["dim"]),
    ("validate", frozenset({"longrope"}), ("short_factor",), lambda p, c: len(p["short_factor"])),
    ("validate", frozenset({"longrope"}), ("long_factor",), lambda p, c: len(p["long_factor"])),
    ("validate", frozenset({"llama3"}), ("high_freq_factor", "low_freq_factor"),
     lambda p, c: p["high_freq_factor"] <= p["low_freq_factor"]),
    ("validate", frozenset({"llama3"}), ("original_max_position_embeddings",),
     lambda p, c: p["original_max_position_embeddings"] >= c["max_position_embeddings"]),
    ("init", frozenset({"default", "linear", "dynamic", "yarn", "longrope", "llama3"}), ("partial_rotary_factor",),
     lambda p, c: c["dim"]),
    ("init", frozenset({"default", "linear", "dynamic", "yarn", "longrope", "llama3"}),
     ("rope_theta", "partial_rotary_factor"), _inv_freq),
    ("init", frozenset({"linear"}), ("factor",), lambda p, c: _Tensor() / p["factor"]),
    ("init", frozenset({"dynamic"}), ("factor",),
     lambda p, c: p["rope_theta"] * ((p["factor"] * c["max_position_embeddings"] / c["max_position_embeddings"])
                                     - (p["factor"] - 1)) ** (c["dim"] / (c["dim"] - 2))),
    ("init", frozenset({"yarn"}), ("factor", "original_max_position_embeddings"), lambda p, c: _Tensor() * (
        _yarn_factor(p, c))),
    ("init", frozenset({"yarn"}), ("factor", "mscale", "mscale_all_dim"), _yarn_attention),
    ("init", frozenset({"yarn"}), ("beta_fast", "beta_slow", "rope_theta", "original_max_position_embeddings"),
     _yarn_range),
    ("init", frozenset({"longrope"}), ("factor", "original_max_position_embeddings"), _longrope_attention),
    ("init", frozenset({"longrope"}), ("short_factor",), lambda p, c: _tensor_of(p["short_factor"])),
    ("init", frozenset({"llama3"}), ("factor", "low_freq_factor", "high_freq_factor",
                                     "original_max_position_embeddings"), _llama3),
    # DeepSeek V2 / V3 attention scale their softmax by yarn's mscale (yarn_apply_mscale)
    ("mscale", frozenset({"linear", "dynamic", "yarn", "longrope", "llama3"}), ("factor", "mscale_all_dim"),
     lambda p, c: p.get("mscale_all_dim", 0) and _mscale(p["factor"], p["mscale_all_dim"])),
)
ROPE_ATTENTION_MSCALE = frozenset({"deepseek_v2", "deepseek_v3"})  # models/deepseek_v*/modeling_*.py
# the RoPE inits that read getattr(config, "head_dim", hidden // heads) with no fallback for a None
# (linear's and llama3's have one: ``or``), as longrope's validator does
HEAD_DIM_UNGUARDED = frozenset({"dynamic", "yarn", "longrope"})


def _reads_partial(model_type: str) -> bool:
    """Whether a type's own default RoPE computes its width with partial_rotary_factor (those whose
    config has a factor of its own: :data:`PARTIAL_ROTARY_DEFAULT`, :data:`PARTIAL_ROTARY_REFUSED`)."""
    return model_type in PARTIAL_ROTARY_DEFAULT or model_type in PARTIAL_ROTARY_REFUSED


def _standardised(data: Mapping[str, object], model_type: str, label: str,
                  group: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, str]]:
    """A flat RoPE dict as transformers validates it and as its model computes with it, and where
    each value came from: rope_theta and partial_rotary_factor filled from the top level (or the
    class), original_max_position_embeddings from max_position_embeddings, or, where the config
    has an original_max_position_embeddings of its own (a field, or a key written in config.json by
    the time the rotary embedding standardises again), from it."""
    tags = ROPE_SCALING.get(model_type, frozenset())
    standardises = bool(tags & {"computes", "fills-theta"})
    p = dict(group)
    where = {k: f"{label}.{k}" for k in p}
    if standardises and "rope_theta" not in p:
        for key, value in rope_thetas(data, model_type)[:1]:
            p["rope_theta"], where["rope_theta"] = value, key
        if "rope_theta" not in p:
            p["rope_theta"], where["rope_theta"] = 10_000.0, "rope_theta (the class default)"
    if standardises and "partial_rotary_factor" not in p:
        value = top_partial_rotary(data, model_type)
        source = "rotary_pct" if model_type in PARTIAL_ROTARY_TOP_IGNORED else "partial_rotary_factor"
        if value is not None or model_type in PARTIAL_ROTARY_TOP_IGNORED:
            p["partial_rotary_factor"] = value
            where["partial_rotary_factor"] = source if source in data else f"{source} (the class default)"
    key, defaults = "original_max_position_embeddings", CLASS_DEFAULTS.get(model_type, {})
    fills = "fills-original" in tags or (standardises and key in defaults)  # Phi-3's field
    if fills and rope_kind(p) in ("llama3", "yarn", "longrope"):
        if key in defaults:
            p[key] = data.get(key, defaults[key])
            where[key] = key if key in data else f"{key} (the class default)"
        elif key not in p:
            p[key] = data.get("max_position_embeddings", defaults.get("max_position_embeddings"))
            where[key] = "max_position_embeddings"
    init, where_init = dict(p), dict(where)
    if fills and rope_kind(p) in ("llama3", "yarn", "longrope") and key in data:
        init[key], where_init[key] = data[key], key  # the rotary embedding standardises again, the key set
    return p, init, where, where_init


RopeDict = tuple[str, dict[str, Any], dict[str, Any], dict[str, str], dict[str, str]]


def rope_value_dicts(data: Mapping[str, object], model_type: str) -> list[RopeDict]:
    """Each RoPE dict transformers validates and computes with: (label, as validated, as computed
    with, where each value came from); where config.json gives none, the class's own dict
    (:data:`ROPE_DEFAULTS`, GPT-OSS's yarn), else the default RoPE the standardisation fills."""
    if model_type in LAYER_PATTERN:
        params = data.get("rope_parameters")
        used = _used_layer_types(data, model_type)
        out = []
        for name, group in (params.items() if isinstance(params, dict) else ()):
            if name in used and isinstance(group, dict):
                label = f"rope_parameters.{name}"
                p, where = dict(group), {k: f"{label}.{k}" for k in group}
                if "rope_theta" not in p:  # the layer type's own theta key (ROPE_THETA_SOURCES), else the class's
                    source = ROPE_THETA_SOURCES[model_type].get(name)
                    p["rope_theta"], where["rope_theta"] = (data[source], source) if source and source in data \
                        else (10_000.0, "rope_theta (the class default)")
                if rope_kind(p) in ("llama3", "yarn", "longrope") and "original_max_position_embeddings" not in p:
                    p["original_max_position_embeddings"] = data.get(
                        "max_position_embeddings", CLASS_DEFAULTS.get(model_type, {}).get("max_position_embeddings"))
                    where["original_max_position_embeddings"] = "max_position_embeddings"
                out.append((label, p, dict(p), where, dict(where)))
        return out
    groups = [(label, group) for label, group in rope_groups(data, model_type) if group]
    if not groups and model_type in ROPE_DEFAULTS:
        groups = [(f"the {model_type} class's own rope_parameters", dict(ROPE_DEFAULTS[model_type]))]
    elif not groups and ROPE_SCALING.get(model_type, frozenset()) & {"computes", "fills-theta"}:
        groups = [("rope_parameters", {})]  # standardised all the same: theta and factor filled
    return [(label, *_standardised(data, model_type, label, group)) for label, group in groups]


def check_rope_values(data: Mapping[str, object], model_type: str, head_dim: int) -> None:
    """Refuse a RoPE dict whose values transformers' validator or RoPE init raises on
    (:data:`ROPE_VALUE_RULES`): each step evaluated on the dict as validated (every type) and as
    computed with (the types whose model computes RoPE), its error named by the keys it reads."""
    computes = "computes" in ROPE_SCALING.get(model_type, frozenset()) or model_type in LAYER_PATTERN
    defaults = CLASS_DEFAULTS.get(model_type, {})
    mpe = data.get("max_position_embeddings", defaults.get("max_position_embeddings", MISSING))
    # the config's own head_dim: None where its class keeps a null one (written, or its default),
    # which the steps reading getattr(config, "head_dim", ...) without a fallback multiply
    kept_null = model_type in HEAD_DIM_NULL_KEPT and data.get("head_dim", defaults.get("head_dim", 0)) is None
    for _label, validated, init, where, where_init in rope_value_dicts(data, model_type):
        kind = rope_kind(validated)
        for phase, kinds, keys, rule in ROPE_VALUE_RULES:
            if kind not in kinds or (phase == "init" and not computes) or \
                    (phase == "mscale" and model_type not in ROPE_ATTENTION_MSCALE):
                continue
            p, source = (validated, where) if phase == "validate" else (init, where_init)
            partial = p.get("partial_rotary_factor", 1.0) if kind != "default" or _reads_partial(model_type) else 1.0
            head = None if kept_null and (phase == "validate" or kind in HEAD_DIM_UNGUARDED) else head_dim
            context = _Context(head, partial, truncate=validated.get("truncate", True))
            if mpe is not MISSING:
                context["max_position_embeddings"] = mpe
            try:
                rule(p, context)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError, RuntimeError, AttributeError,
                    KeyError) as e:
                read = [k for k in keys if k in p]
                odd = [k for k in read if json_kind(p[k]) not in ("int", "float")
                       or not (p[k] > 0 and (k != "rope_theta" or p[k] != 1))]
                read = odd or read  # the values that are not plain numbers above 0 (a theta not 1), where any
                shown = ", ".join(f"{source.get(k, k)} = {show(p[k])}" for k in read) or "its values"
                if head is None and not odd:  # the width it multiplies is the null head_dim
                    shown, read = "head_dim = null (its class keeps a null or absent one null)", ["head_dim"]
                role = "config validates" if phase == "validate" else "rotary embedding computes with"
                them = "it" if len(read) == 1 else "them"
                raise FfnlabError(f"config.json: {shown}: transformers' {model_type} {role} {them} ({kind} RoPE) "
                                  f"and refuses {them} ({type(e).__name__})") from None


# how a type's config computes its layer_types when config.json gives none (transformers 5.25,
# models/<type>/configuration_<type>.py, __post_init__): the rule and, for "every", the period or
# the key holding it; read by :func:`computed_layer_types`
LAYER_TYPE_RULES: dict[str, tuple[str, int | str]] = {
    "gemma2": ("every", 2), "gpt_oss": ("every", 2), "cohere2": ("every", "sliding_window_pattern"),
    "exaone4": ("every", "sliding_window_pattern"), "ministral": ("window", 0), "qwen2": ("window-after", 0),
    "qwen3": ("window-after", 0), "qwen2_5_vl_text": ("window-after", 0), "qwen2_moe": ("alternate-before", 0),
    "smollm3": ("rope-less", 0),
}


def computed_layer_types(data: Mapping[str, object], model_type: str, n_layers: int) -> set[str] | None:
    """The layer types a type's config computes when config.json gives no layer_types
    (:data:`LAYER_TYPE_RULES`), or None where no rule is kept or the keys make it fail."""
    rule = LAYER_TYPE_RULES.get(model_type)
    if rule is None:
        return None
    defaults = CLASS_DEFAULTS.get(model_type, {})

    def key(name: str) -> Any:
        return data.get(name, defaults.get(name))

    kind, period = rule
    n = min(n_layers, 10_000)
    window = key("sliding_window")
    try:
        if kind == "every":
            every: Any = period if isinstance(period, int) else data.get(period, 4)
            if model_type == "exaone4":
                every = 0 if window is None else key(str(period))
            sliding = [bool((i + 1) % every) for i in range(n)]
        elif kind == "window":
            sliding = [window is not None] * n
        elif kind == "window-after":
            window = window if key("use_sliding_window") else None
            sliding = [window is not None and i >= key("max_window_layers") for i in range(n)]
        elif kind == "alternate-before":
            sliding = [bool((i + 1) % 2) and i < key("max_window_layers") and bool(key("use_sliding_window"))
                       for i in range(n)]
        else:  # rope-less: SmolLM3's sliding layers are those without RoPE
            flags = key("no_rope_layers")
            if flags is None:
                flags = [int((i + 1) % key("no_rope_layer_interval") != 0) for i in range(n)]
            sliding = [bool(key("use_sliding_window")) and window is not None and not flags[i] for i in range(n)]
    except (TypeError, ZeroDivisionError, IndexError):
        return None
    return {*(["sliding_attention"] if any(sliding) else []), *(["full_attention"] if not all(sliding) else [])}


def check_rope_not_nested(data: Mapping[str, object], model_type: str, used: set[str]) -> None:
    """Refuse RoPE parameters nested by layer type where the type's one rotary embedding reads a
    flat dict (:data:`ROPE_NESTED_REFUSED`): 5.25's standardisation takes the dict as nested when a
    key names a layer type the config uses (``used``), and the rotary embedding then finds no
    rope_type. A key naming a type no layer uses is a plain key of a flat dict."""
    if model_type not in ROPE_NESTED_REFUSED:
        return
    label = "rope_scaling" if data.get("rope_scaling") else "rope_parameters"
    params = data.get(label)
    nested = sorted(k for k in params if k in used) if isinstance(params, dict) else []
    require(not nested, f"config.json key {label!r} is nested by layer type ({', '.join(nested)}): transformers' "
                        f"{model_type} rotary embedding reads one flat dict and refuses it")


def check_no_rope_layers(data: Mapping[str, object], model_type: str, n_layers: int, *, empty_is_default: bool) -> None:
    """Refuse a ``no_rope_layers`` list the model indexes past its end (one flag per layer, read by
    each layer: SmolLM3, Llama 4); Llama 4 takes an empty list for its default and, without
    layer_types, builds one layer type per flag, which its validator requires to match the layers."""
    flags = data.get("no_rope_layers")
    if not isinstance(flags, list) or (empty_is_default and not flags):  # the default: one per interval
        interval = data.get("no_rope_layer_interval", 4)
        require(n_layers == 0 or json_kind(interval) not in ("int", "float") or interval != 0,
                f"config.json key 'no_rope_layer_interval' is 0: transformers' {model_type} config computes "
                "its no_rope_layers as (layer + 1) % it")
        return
    require(not empty_is_default or all(json_kind(f) == "int" for f in flags),
            f"config.json key 'no_rope_layers' must list integers, got {show(flags)}: transformers' "
            f"{model_type} config refuses it")
    require(len(flags) >= n_layers, f"config.json key 'no_rope_layers' has {len(flags)} flags for {n_layers} "
                                     f"layers: transformers' {model_type} model reads one per layer")
    require(not empty_is_default or isinstance(data.get("layer_types"), list) or len(flags) == n_layers,
            f"config.json key 'no_rope_layers' has {len(flags)} flags for {n_layers} layers: transformers' "
            f"{model_type} config makes a layer type of each and requires one per layer")


def check_pad_token(data: Mapping[str, object], model_type: str, vocab: Any) -> None:
    """Refuse a ``pad_token_id`` outside the vocabulary where the token embedding takes it as its
    padding index (:data:`PAD_IN_EMBEDDING`: torch allows -vocab <= id < vocab); an absent key is
    the config class's default (OLMo's 1 refuses a one-token vocabulary), a null one none."""
    pad = data.get("pad_token_id", CLASS_DEFAULTS.get(model_type, {}).get("pad_token_id"))
    if model_type in PAD_IN_EMBEDDING and json_kind(pad) == "int" and json_kind(vocab) == "int":
        where = "config.json key 'pad_token_id'" if "pad_token_id" in data else \
            f"pad_token_id (absent from config.json: the {model_type} class default)"
        require(-vocab <= pad < vocab, f"{where} is {pad:,}, outside the vocabulary of "
                                       f"{vocab:,}: transformers' {model_type} embedding refuses it as padding index")


def rope_thetas(data: Mapping[str, object], model_type: str = "") -> list[tuple[str, Any]]:
    """The rope_theta values transformers' RoPE standardisation (``convert_rope_params_to_dict``,
    5.25) hands the rotary embedding, each with the key it came from: ``rope_scaling`` or else
    ``rope_parameters`` (flat, or one dict per layer type where the type has layer types) wins,
    else the top-level ``rope_theta`` (or the key :data:`ROPE_THETA_SOURCES` names) fills it;
    nothing when neither is given (the class default)."""
    if model_type in LAYER_PATTERN:
        return _per_layer_type_thetas(data, model_type)
    groups = rope_groups(data, model_type)
    fallback = ROPE_THETA_SOURCES.get(model_type, {}).get("", "rope_theta")
    out = []
    for name, group in groups:
        if "rope_theta" in group:
            out.append((f"{name}.rope_theta", group["rope_theta"]))
        elif fallback is not None and fallback in data:
            out.append((fallback, data[fallback]))
    return out


# What every config class of transformers 5.25 checks whatever the type (configuration_utils.py,
# v5.25.0): the names a ``layer_types`` entry may take (ALLOWED_ATTN_LAYER_TYPES, and the older
# names of _LEGACY_LAYER_TYPE_REMAP; its validator also wants one per layer).
# tests/sizing/hf/test_counts_third_pass.py compares them with the installed transformers.
LAYER_TYPE_NAMES = frozenset((
    "full_attention", "sliding_attention", "chunked_attention", "window_attention", "indexed_attention",
    "compressed_sparse_attention", "heavily_compressed_attention", "minimax_m3_sparse", "conv", "moe", "hybrid",
    "hybrid_sliding", "reference_sliding_attention", "linear_attention",
    "mamba", "attention", "deepseek_sparse_attention", "qwen_sparse_attention"))  # older names, renamed on reading
# The ``dtype`` (or, when dtype is null or absent, ``torch_dtype``) a model builds under, transformers
# 5.25: PreTrainedConfig.__post_init__ (configuration_utils.py) turns a string into
# ``getattr(torch, name)``, then PreTrainedModel._from_config (modeling_utils.py) builds the model
# inside ``local_torch_dtype(config.dtype)``, which refuses a dtype that is not floating-point and
# calls ``torch.set_default_dtype``, which takes only these (float8 / float4 fail there: "couldn't
# find storage object"). Anything else that is not null -- another torch dtype name (int8, bool,
# complex64, qint8, float8_e4m3fn), a name torch lacks, a number, a boolean, a list, an object -- is
# refused. tests/sizing/hf/test_hf_generic_keys.py compares the table with local_torch_dtype over
# every dtype name of the installed torch.
BUILD_DTYPES = frozenset(("bfloat16", "double", "float", "float16", "float32", "float64", "half"))


def check_common(data: Mapping[str, object], model_type: str, n_layers: Any) -> None:
    """Refuse what every transformers config class refuses, read by ffnlab or not: ``layer_types``
    naming an unknown kind of layer or not one per layer (``n_layers``: the layer count it holds),
    an ``id2label`` that is not an object of integer keys, a dtype no model builds under
    (:data:`BUILD_DTYPES`), and the other generic checks of :mod:`ffnlab.sizing.hf.generic`."""
    types = data.get("layer_types")
    if types is not None:
        require(isinstance(types, list) and all(isinstance(t, str) and t in LAYER_TYPE_NAMES for t in types),
                f"config.json key 'layer_types' must list layer kinds transformers knows (such as full_attention, "
                f"sliding_attention), got {show(types)}")
        assert isinstance(types, list)
        require(json_kind(n_layers) != "int" or len(types) == n_layers,
                f"config.json key 'layer_types' lists {len(types):,} layers, but the model has {n_layers:,}: "
                f"transformers' {model_type} config requires one per layer")
    labels = data.get("id2label")
    if labels is not None:
        require(isinstance(labels, dict) and all(_int_text(k) for k in labels),
                f"config.json key 'id2label' must be an object whose keys are label numbers, got {show(labels)}")
    dtype = data.get("dtype") if data.get("dtype") is not None else data.get("torch_dtype")
    key = "dtype" if data.get("dtype") is not None else "torch_dtype"
    require(dtype is None or isinstance(dtype, str) and dtype in BUILD_DTYPES,
            f"config.json key {key!r} must name a floating-point torch dtype transformers builds a model "
            f"under ({', '.join(sorted(BUILD_DTYPES))}), got {show(dtype)}")
    check_settable(data, model_type)
    check_generic(data, model_type, n_layers)


def check_settable(data: Mapping[str, object], model_type: str) -> None:
    """Refuse the keys any config class of transformers 5.25 refuses whatever the type reads: one
    named after a read-only property of its config (:data:`READ_ONLY_KEYS`: PreTrainedConfig's
    use_return_dict, is_heterogeneous, ...; Falcon's head_dim), any value, null included, which its
    constructor cannot set; a ``quantization_config`` that is neither an object nor null, on which
    the build calls ``to_dict``. For a multimodal config, its outer keys as well as its text_config's."""
    read_only = READ_ONLY_KEYS.get("*", frozenset()) | READ_ONLY_KEYS.get(model_type, frozenset())
    named = sorted(k for k in data if k in read_only)
    require(not named, f"config.json key {named[0]!r} names a read-only property of transformers' {model_type} "
                       "config: its constructor cannot set it (it has no setter) and refuses it" if named else "")
    quant = data.get("quantization_config")
    require(quant is None or isinstance(quant, dict),
            f"config.json key 'quantization_config' must be an object or null, got {show(quant)}: transformers' "
            f"{model_type} build calls its to_dict() and refuses it")


def _int_text(key: str) -> bool:
    try:
        int(key)
    except ValueError:
        return False
    return True


def floor_head_dim(d: int, n_heads: int) -> int:
    """hidden_size // heads, as the modeling code of MPT, DBRX and StarCoder2 computes it (heads
    need not divide the width)."""
    require(d >= n_heads, f"config.json: {n_heads} attention heads exceed the width {d}")
    return d // n_heads


class ConfigKeys:
    """Typed access to a config.json dict, read as transformers reads it, with errors that name
    the key: an absent key takes the type's config-class default (:data:`CLASS_DEFAULTS`, else
    ``default``); a null one is refused where transformers refuses it (:data:`NULL_REFUSED`),
    else means ``null`` when the caller says what null means (``num_key_value_heads: null`` is
    the head count), else ``default``."""

    def __init__(self, data: dict[str, Any], model_type: str, written: dict[str, Any] | None = None):
        self.data, self.model_type = data, model_type
        self.written = data if written is None else written  # as config.json has it, before aliases
        self.class_defaults = CLASS_DEFAULTS.get(model_type, {})
        self.null_refused = NULL_REFUSED.get(model_type, frozenset())
        # the size keys (widths, counts) absent from config.json whose value is the config class's
        # default, in the order read: the audit names them, since
        # transformers fills the same defaults silently; a value derived from other keys (a null
        # class default, as GPT-2's n_inner) is not one
        self.defaulted: dict[str, Any] = {}

    def check(self) -> None:
        """Refuse what transformers refuses whether or not ffnlab reads the key: a null it does not
        accept, the absence of a key its class defaults to an unusable null. First, a layer count past
        ffnlab's bound, before a translator makes anything per layer (a list of 10**9 layer indices)."""
        for key in sorted(LAYER_COUNT_KEYS & set(self.data)):
            if json_kind(self.data[key]) == "int":
                check_layer_bound(self.data[key])
        for key in sorted(self.null_refused):  # as written too: a declared field null, set later
            # under its other name, is validated (and refused) before the other name sets it
            require(self.data.get(key, 0) is not None and self.written.get(key, 0) is not None,
                    f"config.json key {key!r} is null: transformers builds no {self.model_type} model "
                    f"with a null {key}")
        for key, kinds in FIELD_KINDS.get(self.model_type, {}).items():  # validated, read or not
            value = self.written.get(key)  # a value given under another name is set unvalidated
            kind = json_kind(value)
            require(kind in ("null", *kinds), f"config.json key {key!r} must be {' or '.join(sorted(kinds))}, "
                                              f"got {show(value)}: transformers' {self.model_type} config refuses it")
        if self.model_type in HEAD_DIM_TYPED and self.data.get("head_dim") is not None:  # validated, read or not
            integer(self.data["head_dim"], "config.json key 'head_dim' (an integer)", 0, MAX_INT)
        for name, fields in SUB_CONFIG_KINDS.get(self.model_type, {}).items():  # its own class, validated
            sub = self.data.get(name)
            require(sub is None or isinstance(sub, dict),
                    f"config.json key {name!r} must be an object, got {show(sub)}: transformers' "
                    f"{self.model_type} config refuses it")
            for key, kinds in fields.items():
                value = (sub or {}).get(key, ...)
                require(value is ... or json_kind(value) in kinds,
                        f"config.json key '{name}.{key}' must be {' or '.join(sorted(kinds))}, got {show(value)}: "
                        f"transformers' {self.model_type} config refuses it")
        names, layer_types = LAYER_TYPE_VALUES.get(self.model_type), self.data.get("layer_types")
        if names is not None and isinstance(layer_types, list):
            odd = sorted({show(t) for t in layer_types if t not in names})
            require(not odd, f"config.json key 'layer_types' names {', '.join(odd)}: transformers' {self.model_type} "
                             f"model builds only {' and '.join(sorted(names))} layers")
        for key in UNIT_INTERVAL.get(self.model_type, ()):  # a probability, read or not
            prob: Any = self.data.get(key)
            require(json_kind(prob) not in ("int", "float") or 0 <= prob <= 1,
                    f"config.json key {self.written_name(key)!r} is {show(prob)}, outside [0, 1]: transformers' "
                    f"{self.model_type} model refuses it")
        layers = self.data.get("num_hidden_layers", self.class_defaults.get("num_hidden_layers"))
        layered = json_kind(layers) != "int" or layers > 0  # with no layers, no attention raises it
        for key in ZERO_POWER_REFUSED.get(self.model_type, ()) if layered else ():  # raised to a negative power
            value = self.data.get(key)  # by each layer's attention while it is built, read or not
            require(json_kind(value) not in ("int", "float") or value != 0,
                    f"config.json key {self.written_name(key)!r} is {show(value)}: transformers' {self.model_type} "
                    "model raises it to a negative power while it is built and refuses 0")
        for key in NEGATIVE_REFUSED.get(self.model_type, ()):  # a tensor's size, read or not
            value, name = self.data.get(key), self.written_name(key)
            require(value is None or json_kind(value) in ("int", "float") and value >= 0,
                    f"config.json key {name!r} must be a number of 0 or more, got {show(value)}: transformers "
                    f"sizes a {self.model_type} tensor with it")
        if self.model_type in ROPE_THETA_NUMBER:  # raised to a power by the rotary embedding, read or not
            for key, value in rope_thetas(self.data, self.model_type):
                number = isinstance(value, (int, float))
                require(number, f"config.json key {key!r} must be a number, got {show(value)}: "
                                f"transformers' {self.model_type} rotary embedding refuses it")
                require(self.model_type not in ROPE_THETA_LOG or (value > 0 and value != 1),
                        f"config.json key {key!r} is {show(value)}: transformers' {self.model_type} rotary "
                        f"embedding divides by its logarithm (it must be above 0 and not 1)")
        check_rope_scaling(self.data, self.model_type)
        check_pad_token(self.data, self.model_type, self.data.get("vocab_size", self.class_defaults.get("vocab_size")))
        n_layers = self.data.get("num_hidden_layers", self.class_defaults.get("num_hidden_layers"))
        check_common(self.data, self.model_type, n_layers)
        for key in sorted(MISSING_REFUSED.get(self.model_type, ())):
            require(key in self.data, f"config.json (model_type {self.model_type!r}) is missing key {key!r}: "
                                      f"transformers cannot build this model without it")

    def written_name(self, key: str) -> str:
        """The name config.json gives ``key`` (its own, or the other name transformers reads it under)."""
        if key in self.written:
            return key
        return next((alias for alias, real in ALIASES.get(self.model_type, {}).items()
                     if real == key and alias in self.written), key)

    def present(self, key: str) -> bool:
        """Whether config.json sets ``key`` to a value (not null)."""
        return self.data.get(key) is not None

    def get(self, key: str, default: Any = MISSING, *, kind: type = int, null: Any = MISSING) -> Any:
        if key in self.data:
            value = self.data[key]
            if value is None:
                require(key not in self.null_refused,
                        f"config.json key {key!r} is null: transformers builds no {self.model_type} "
                        f"model with a null {key}")
                # a null switch tests false in transformers; other nulls mean what the caller says
                value = null if null is not MISSING else (False if kind is bool else default)
        else:
            value = self.class_defaults.get(key, default)
            if value is None:  # a null class default: a value derived from other keys
                value = default if null is MISSING else null
            elif kind is int and key in self.class_defaults:
                self.defaulted.setdefault(key, value)
        if value is MISSING:
            raise FfnlabError(f"config.json (model_type {self.model_type!r}) is missing key {key!r}")
        if value is None:
            return None
        if kind is int and key in LAYER_COUNT_KEYS and self.model_type not in LAYER_COUNT_MATCHED \
                and isinstance(value, int) and not isinstance(value, bool) and -MAX_INT <= value <= 0:
            raise FfnlabError(f"config.json key {self.written_name(key)!r} is {value}: transformers builds this "
                              f"{self.model_type} model with no layers, which ffnlab's sizing does not "
                              "model (it sizes 1 layer or more); 'ffnlab audit' counts it through transformers")
        if kind is int:  # the shared number check: an integer, bounded (no 4,000-digit widths)
            integer(value, f"config.json key {key!r} (a positive integer)", 1, MAX_INT)
        elif kind is bool:
            require(isinstance(value, bool), f"config.json key {key!r} must be true or false, got {show(value)}")
        elif kind is str:
            require(isinstance(value, str), f"config.json key {key!r} must be a string, got {show(value)}")
        return value

    def count(self, key: str, default: int, *, lo: int | None = 0, hi: int | None = MAX_INT) -> int:
        """An integer that may be 0 (or down to ``lo``, up to ``hi``; None: unbounded): layer
        indices, shared-expert and MTP counts; absent or null gives the class default, else ``default``."""
        value = self.get(key, default, kind=object)
        if value is None:
            return default
        return integer(value, f"config.json key {key!r} (an integer)", lo, hi)

    def window(self, key: str = "sliding_window", default: int | None = None) -> int | None:
        """A sliding window in tokens; null or 0 means none (transformers builds both)."""
        value = self.get(key, default, kind=object, null=None)
        if value is None:
            return None
        return integer(value, f"config.json key {key!r} (a window in tokens)", 0, MAX_INT) or None

    def first(self, *keys: str, default: Any = MISSING) -> Any:
        for k in keys:
            if self.data.get(k) is not None:
                return self.get(k)
        for k in keys:  # a null transformers refuses is refused whichever key holds it
            if k in self.data:
                self.get(k, None)
        if default is not MISSING:
            return default
        raise FfnlabError(f"config.json (model_type {self.model_type!r}) is missing key {keys[0]!r}")

    def act(self, key: str, default: str, *, gated: bool) -> str:
        name = self.get(key, default, kind=str)
        table = GATED_FROM_ACT if gated else ACT_PLAIN
        require(name in table, f"config.json key {key!r}: activation {show(name)} is not supported "
                               f"(known: {', '.join(sorted(table))})")
        return table[name]
