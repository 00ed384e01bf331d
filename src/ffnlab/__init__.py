"""ffnlab: choose, check and test the feed-forward width of Transformers.

Three layers, each importing only downward: ``ffnlab.sizing`` (pure Python: widths, configs,
counts, FLOPs, config.json translators, zoo, audit, claims), ``ffnlab.training`` (PyTorch
modules, corpora, the trainer) and ``ffnlab.experiments`` (sweeps, statistics, reports); the
``ffnlab`` command line in ``ffnlab.cli`` sits on top. The sizing API never imports torch::

    from ffnlab import make_config, count_params, make_rule, resolve_d_ff
    cfg = make_config(768, 12, 12, 3072)
    count_params(cfg).total

Names are imported lazily, so ``import ffnlab`` costs almost nothing.
"""

TYPE_CHECKING = False  # nothing imported at run time: the command line's Ctrl-C guard starts after this package
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "AttentionSpec": "sizing.config", "FFNSpec": "sizing.config", "ModelConfig": "sizing.config",
    "make_config": "sizing.config",
    "ParamCounts": "sizing.counting", "count_params": "sizing.counting",
    "FfnlabError": "errors",
    "explain_width": "sizing.explain:explain",
    "flops_per_token": "sizing.flops", "training_memory": "sizing.memory.optimizers",
    "memory_summary": "sizing.memory.parallel", "Layout": "sizing.memory.parallel",
    "Workload": "sizing.memory.workload",
    "from_hf_dict": "sizing.hf", "load_hf_config": "sizing.hf",
    "FFN_KINDS": "sizing.kinds",
    "parse_count": "sizing.plan", "plan_model": "sizing.plan:plan",
    "WidthRule": "sizing.widths", "make_rule": "sizing.widths", "parse_ratio": "sizing.widths",
    "resolve_d_ff": "sizing.widths",
    "load_zoo": "sizing.zoo", "find_model": "sizing.zoo:find",
    "audit_model": "sizing.audit:audit", "audit_config": "sizing.audit",
    "evaluate_claims": "sizing.claims:check_claims",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> "Any":
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ffnlab' has no attribute {name!r}")
    from importlib import import_module

    module, _, attr = _EXPORTS[name].partition(":")
    return getattr(import_module(f".{module}", __name__), attr or name)
