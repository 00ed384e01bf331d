"""ffnlab: choose, check and test the feed-forward width of Transformers.

The sizing API never imports torch::

    from ffnlab import make_config, count_params, make_rule, resolve_d_ff
    cfg = make_config(768, 12, 12, 3072)
    count_params(cfg).total

Names are imported lazily, so ``import ffnlab`` costs almost nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "AttentionSpec": "config", "FFNSpec": "config", "ModelConfig": "config", "make_config": "config",
    "ParamCounts": "counting", "count_params": "counting",
    "FfnlabError": "errors",
    "explain_width": "explain:explain",
    "flops_per_token": "flops", "training_memory": "flops",
    "from_hf_dict": "hf_config", "load_hf_config": "hf_config",
    "FFN_KINDS": "kinds",
    "parse_count": "plan", "plan_model": "plan:plan",
    "WidthRule": "widths", "make_rule": "widths", "parse_ratio": "widths", "resolve_d_ff": "widths",
    "load_zoo": "zoo", "find_model": "zoo:find",
    "audit_model": "audit:audit", "audit_config": "audit",
    "evaluate_claims": "claims:evaluate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ffnlab' has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    return getattr(import_module(f".{module}", __name__), attr or name)
