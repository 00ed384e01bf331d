"""Typed access to a Hugging Face config.json dict, and the activation names it may use."""

from __future__ import annotations

from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.hf.aliases import ALIASES
from ffnlab.sizing.hf.rules import (
    CLASS_DEFAULTS,
    FIELD_KINDS,
    HEAD_DIM_TYPED,
    MISSING_REFUSED,
    NEGATIVE_REFUSED,
    NULL_REFUSED,
    ROPE_THETA_LOG,
    ROPE_THETA_NUMBER,
)
from ffnlab.validation import integer, show

MISSING = object()
MAX_INT = 2**53  # larger than any width, count or length in a real config.json

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
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "object"}.get(type(value), "other")


def rope_thetas(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """The rope_theta values transformers' RoPE standardisation (``convert_rope_params_to_dict``,
    5.25) hands the rotary embedding, each with the key it came from: ``rope_scaling`` or else
    ``rope_parameters`` (flat, or one dict per layer type) wins, else the top-level ``rope_theta``
    fills it; nothing when neither is given (the class default)."""
    label = "rope_scaling" if data.get("rope_scaling") else "rope_parameters"
    params = data.get(label)
    if isinstance(params, dict) and params and all(isinstance(v, dict) or v is None for v in params.values()):
        groups = [(f"{label}.{name}", v) for name, v in params.items() if isinstance(v, dict)]
    else:
        groups = [(label, params if isinstance(params, dict) else {})]
    out = []
    for name, group in groups:
        if "rope_theta" in group:
            out.append((f"{name}.rope_theta", group["rope_theta"]))
        elif "rope_theta" in data:
            out.append(("rope_theta", data["rope_theta"]))
    return out


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
        accept, the absence of a key its class defaults to an unusable null."""
        for key in sorted(self.null_refused):
            require(key not in self.data or self.data[key] is not None,
                    f"config.json key {key!r} is null: transformers builds no {self.model_type} model "
                    f"with a null {key}")
        for key, kinds in FIELD_KINDS.get(self.model_type, {}).items():  # validated, read or not
            value = self.written.get(key)  # a value given under another name is set unvalidated
            kind = json_kind(value)
            require(kind in ("null", *kinds), f"config.json key {key!r} must be {' or '.join(sorted(kinds))}, "
                                              f"got {show(value)}: transformers' {self.model_type} config refuses it")
        if self.model_type in HEAD_DIM_TYPED and self.data.get("head_dim") is not None:  # validated, read or not
            integer(self.data["head_dim"], "config.json key 'head_dim' (an integer)", 0, MAX_INT)
        for key in NEGATIVE_REFUSED.get(self.model_type, ()):  # a tensor's size, read or not
            value, name = self.data.get(key), self.written_name(key)
            require(value is None or json_kind(value) in ("int", "float") and value >= 0,
                    f"config.json key {name!r} must be a number of 0 or more, got {show(value)}: transformers "
                    f"sizes a {self.model_type} tensor with it")
        if self.model_type in ROPE_THETA_NUMBER:  # raised to a power by the rotary embedding, read or not
            for key, value in rope_thetas(self.data):
                number = isinstance(value, (int, float))
                require(number, f"config.json key {key!r} must be a number, got {show(value)}: "
                                f"transformers' {self.model_type} rotary embedding refuses it")
                require(self.model_type not in ROPE_THETA_LOG or (value > 0 and value != 1),
                        f"config.json key {key!r} is {show(value)}: transformers' {self.model_type} rotary "
                        f"embedding divides by its logarithm (it must be above 0 and not 1)")
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
        if kind is int:  # the shared number check: an integer, bounded (no 4,000-digit widths)
            integer(value, f"config.json key {key!r} (a positive integer)", 1, MAX_INT)
        elif kind is bool:
            require(isinstance(value, bool), f"config.json key {key!r} must be true or false, got {show(value)}")
        elif kind is str:
            require(isinstance(value, str), f"config.json key {key!r} must be a string, got {show(value)}")
        return value

    def count(self, key: str, default: int, *, lo: int = 0) -> int:
        """An integer that may be 0 (or down to ``lo``): layer indices, shared-expert and MTP
        counts; absent or null gives the class default, else ``default``."""
        value = self.get(key, default, kind=object)
        if value is None:
            return default
        return integer(value, f"config.json key {key!r} (an integer)", lo, MAX_INT)

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
