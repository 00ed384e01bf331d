"""Typed access to a Hugging Face config.json dict, and the activation names it may use."""

from __future__ import annotations

from typing import Any

from ffnlab.errors import FfnlabError, require
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


class ConfigKeys:
    """Typed access to a config.json dict, with errors that name the key."""

    def __init__(self, data: dict[str, Any], model_type: str):
        self.data, self.model_type = data, model_type

    def get(self, key: str, default: Any = MISSING, *, kind: type = int) -> Any:
        value = self.data.get(key, default)
        if value is None and default is not MISSING:
            value = default
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

    def first(self, *keys: str, default: Any = MISSING) -> int:
        for k in keys:
            if self.data.get(k) is not None:
                return self.get(k)
        if default is not MISSING:
            return default
        raise FfnlabError(f"config.json (model_type {self.model_type!r}) is missing key {keys[0]!r}")

    def act(self, key: str, default: str, *, gated: bool) -> str:
        name = self.get(key, default, kind=str)
        table = GATED_FROM_ACT if gated else ACT_PLAIN
        require(name in table, f"config.json key {key!r}: activation {name!r} is not supported "
                               f"(known: {', '.join(sorted(table))})")
        return table[name]
