"""The config.json names each translator reads are names transformers 5.25 reads for that type.

A translator that reads a legacy name (Falcon's RW-era ``n_head`` / ``n_layer``, GPT-2's
``n_ctx``) counts a model transformers does not build when the pinned config class ignores that
name: FalconConfig 5.25 has no ``attribute_map`` and pops only ``n_embed``, so a config.json with
``n_head`` 32 builds its default 71 heads (ninth pass, J1). Oracle: the installed transformers'
config class of each translated type, read from the class itself: its declared fields (those of
its sub-configs too), both names of each ``attribute_map`` pair, and the names its ``__init__`` /
``__post_init__`` take out of ``kwargs`` (``kwargs.pop("n_embed", ...)``), then, for keys the
class only keeps as attributes, the modeling code's own reads (``config.head_dim``,
``getattr(config, "attention_layers", ...)``). The translators' reads are taken from their source
(the string keys given to ``k.get`` / ``first`` / ``present`` / ``count`` / ``window`` / ``act``, to a
dict's ``get``, ``in`` and ``[...]``), in the module that defines the type's translate function and
the shared llama decoder it may call.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import re
import sys

import pytest

pytest.importorskip("transformers")

from ffnlab.sizing.hf import HF_TRANSLATORS  # noqa: E402

READERS = {"get", "first", "present", "count", "window", "act"}
# keys read that the config class neither declares, maps nor pops, nor its modeling code reads:
# each with why reading it is still right for the parameter count
NOT_READ_BY_TRANSFORMERS = {
    "layer_types": "the shared llama decoder's sliding-window reads: a window sizes no parameter",
    "sliding_window": "the shared llama decoder's sliding-window reads: a window sizes no parameter",
    "sliding_window_pattern": "read only for the layouts whose class reads it (DecoderLayout.pattern_key)",
    "num_nextn_predict_layers": "DeepSeek-V2's multi-token-prediction layers, counted apart from the total "
                                "(params_mtp), which transformers does not build",
    "mtp": "a key of ffnlab's own defaults table, not of config.json",
    "tie_word_embeddings": "Qwen2.5-VL's text config is tied by the outer config (sizing.hf.text_config)",
    "name": "DBRX's sub-config label in an error message, not a config.json key",
}


def _reads(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(every string key the source reads, the names given to ``first``: the alternatives)."""
    keys, alternatives = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS:
            args = node.args if node.func.attr == "first" else node.args[:1]
            named = {a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
            keys |= named
            if node.func.attr == "first":
                alternatives |= named
        elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                keys.add(node.left.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            keys.add(node.slice.value)
    return keys, alternatives


@functools.cache
def translator_reads(model_type: str) -> tuple[set[str], set[str]]:
    fn = HF_TRANSLATORS[model_type]
    modules = {sys.modules[fn.__module__]}
    source = inspect.getsource(sys.modules[fn.__module__])
    if "ffnlab.sizing.hf.llama import" in source:  # the shared decoder it calls
        modules.add(sys.modules["ffnlab.sizing.hf.llama"])
    keys, alternatives = set(), set()
    for m in modules:
        k, a = _reads(ast.parse(inspect.getsource(m)))
        keys, alternatives = keys | k, alternatives | a
    return keys, alternatives


@functools.cache
def class_reads(model_type: str) -> set[str]:
    """The names the 5.25 config class reads from config.json: fields, attribute_map, popped kwargs."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    names = {f.name for f in dataclasses.fields(cls)}
    amap = getattr(cls, "attribute_map", {}) or {}
    names |= set(amap) | set(amap.values())
    for sub in (getattr(cls, "sub_configs", None) or {}).values():
        if dataclasses.is_dataclass(sub):
            names |= {f.name for f in dataclasses.fields(sub)}
    for c in cls.__mro__:
        if c is object:
            break
        names |= set(re.findall(r'kwargs\.(?:pop|get)\(\s*"(\w+)"', inspect.getsource(c)))
    return names


@functools.cache
def modeling_reads(model_type: str) -> set[str]:
    """The config attributes the type's modeling code reads (``config.x``, ``getattr(config, "x"``)."""
    from transformers import CONFIG_MAPPING

    module = importlib.import_module(CONFIG_MAPPING[model_type].__module__.replace(".configuration_", ".modeling_"))
    src = inspect.getsource(module)
    return set(re.findall(r'\bconfig\.(\w+)', src)) | set(re.findall(r'getattr\(\s*(?:self\.)?config,\s*"(\w+)"', src))


@pytest.mark.parametrize("model_type", sorted(HF_TRANSLATORS))
def test_each_other_name_a_translator_reads_is_one_its_config_class_reads(model_type):
    """The names a translator reads as alternatives (``k.first``) are each a field, an attribute_map
    name or a popped kwarg of the 5.25 class: a legacy name it ignores is not read."""
    _, alternatives = translator_reads(model_type)
    ignored = sorted(alternatives - class_reads(model_type))
    assert not ignored, f"{model_type}: transformers 5.25 ignores {ignored}, the translator reads them"


@pytest.mark.parametrize("model_type", sorted(HF_TRANSLATORS))
def test_each_key_a_translator_reads_is_one_transformers_reads(model_type):
    keys, _ = translator_reads(model_type)
    unknown = keys - class_reads(model_type) - modeling_reads(model_type)
    unexplained = sorted(unknown - set(NOT_READ_BY_TRANSFORMERS))
    assert not unexplained, f"{model_type}: the translator reads {unexplained}, which transformers 5.25 does not"


def test_the_list_of_keys_transformers_does_not_read_is_all_still_needed():
    needed = set()
    for model_type in HF_TRANSLATORS:
        keys, _ = translator_reads(model_type)
        needed |= keys - class_reads(model_type) - modeling_reads(model_type)
    assert set(NOT_READ_BY_TRANSFORMERS) <= needed, sorted(set(NOT_READ_BY_TRANSFORMERS) - needed)


def test_the_probe_sees_a_legacy_name_the_class_ignores():
    """The oracle can fail: FalconConfig 5.25 ignores n_head (its default 71 heads build), pops
    n_embed, and BLOOM maps num_attention_heads to n_head."""
    import transformers

    assert "n_head" not in class_reads("falcon") and "n_embed" in class_reads("falcon")
    assert {"n_head", "num_attention_heads"} <= class_reads("bloom")
    assert transformers.FalconConfig(n_head=32).num_attention_heads == 71


FALCON = {"model_type": "falcon", "hidden_size": 142, "vocab_size": 100, "num_hidden_layers": 1}
FALCON_LEGACY = {  # name -> a falcon config.json with RW-era names, judged by transformers' build
    "n_head-divides-hidden": {**FALCON, "hidden_size": 284, "n_head": 2},
    "n_head-beside-num_attention_heads": {**FALCON, "hidden_size": 64, "num_attention_heads": 4, "n_head": 8},
    "n_layer-beside-num_hidden_layers": {**FALCON, "n_layer": 3},
    "n_layer-alone": {k: v for k, v in {**FALCON, "n_layer": 2}.items() if k != "num_hidden_layers"},
    "n_head_kv-new-architecture": {**FALCON, "hidden_size": 128, "num_attention_heads": 8,
                                   "new_decoder_architecture": True, "n_head_kv": 2},
    "n_embed-and-n_head": {**FALCON, "n_embed": 568, "n_head": 4},
    "rw-7b-shape": {**FALCON, "hidden_size": 4544, "n_head": 71, "n_layer": 1, "multi_query": True},
}


@pytest.mark.parametrize("name", sorted(FALCON_LEGACY))
def test_falcon_legacy_names_count_as_transformers_builds(tmp_path, name):
    from hf_counts_all import check

    rec = check(dict(FALCON_LEGACY[name]), tmp_path)
    assert rec["status"] in ("exact", "refused"), (rec["reason"], rec["audit"], rec["reference"])
