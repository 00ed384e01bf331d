"""Audit a model whose ``model_type`` has no ffnlab translator: transformers builds it, ffnlab reads it.

The model is built on PyTorch's ``meta`` device from the config.json (shapes only, nothing
downloaded) by :func:`ffnlab.training.hf_count.count_with_transformers`, which the caller passes
in (the ``audit`` command does), so this module stays pure Python. The total is transformers' own
count; the FFN view (kind, widths, experts, layer layout, active parameters, ratios) comes from
the module tree by structure (:mod:`ffnlab.sizing.hf.structure`), with the numbers the structure
cannot show (top-k, the attention's key/value heads) read from the config transformers resolved.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.audit_row import AuditRow
from ffnlab.sizing.audit_rules import (
    AUDIT_DTYPE,
    AUDIT_SEQ_LEN,
    CONVENTION,
    TOP_K_KEYS,
    FFNFacts,
    MoeParts,
    ffn_verdict,
    moe_fields,
)
from ffnlab.sizing.hf import config_name, read_hf_config
from ffnlab.sizing.hf.keys import ACT_PLAIN, GATED_FROM_ACT
from ffnlab.sizing.hf.structure import (
    ConfigFacts,
    CountedBy,
    CountedModel,
    FFNUnit,
    Structure,
    analyse,
    layer_counts,
)
from ffnlab.sizing.memory.byte_rules import states_per_param
from ffnlab.sizing.widths import Alignment, param_matched_ratio
from ffnlab.validation import show

LABEL = "counted by transformers"
# what the auto class is when a model type has none with a language-model head (as training.hf_count names it)
BASE_KIND = "base model, no language-model head"
INSTALL_HINT = "install ffnlab[hf] (transformers) to count it by building the model on the meta device"

# config keys, first present wins (transformers' names across families)
ACT_KEYS = ("hidden_act", "activation_function", "hidden_activation", "mlp_hidden_act", "ffn_act",
            "activation")
ZERO_EXPERT_KEYS = ("zero_expert_num", "n_zero_experts", "num_zero_experts")
STATE_KEYS = ("ssm_state_size", "state_size", "mamba_d_state", "mamba_state_size", "linear_key_head_dim",
              "d_state")
# activation module classes -> ffnlab plain activation
ACT_CLASSES = {
    "SiLUActivation": "silu", "SiLU": "silu", "GELUActivation": "gelu", "GELU": "gelu",
    "NewGELUActivation": "gelu_tanh", "GELUTanh": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh",
    "FastGELUActivation": "gelu_tanh", "QuickGELUActivation": "gelu", "AccurateGELUActivation": "gelu",
    "ReLU": "relu", "ReLUSquaredActivation": "relu2", "Sigmoid": "sigmoid", "BloomGelu": "gelu_tanh",
}
GATED_KIND = {"silu": "swiglu", "gelu": "geglu", "gelu_tanh": "geglu", "relu": "reglu", "sigmoid": "glu"}
# a model whose config has sub-configs other than text_config is multimodal: ffnlab counts its
# language model and head, as the translators do
MAX_LAYERS = 10_000  # more layers than any published model by far; building them would not end


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def first_int(cfg: Mapping[str, object], keys: tuple[str, ...]) -> int | None:
    """The first of ``keys`` holding a positive integer (or a per-layer list of one value)."""
    for k in keys:
        value = cfg.get(k)
        if isinstance(value, list) and value and len(set(map(repr, value))) == 1:
            value = value[0]
        v = _int(value)
        if v is not None:
            return v
    return None


def untranslated_type(data: Mapping[str, object], supported: tuple[str, ...]) -> str | None:
    """The config's ``model_type`` when it is a string ffnlab has no translator for, else None."""
    mt = data.get("model_type")
    return mt if isinstance(mt, str) and mt not in supported else None


def is_layer_count(key: str) -> bool:
    """Whether a config key may name a number of layers: its last word is layer(s) (num_hidden_layers,
    n_layer, encoder_layers); not a size per layer (Gemma-3n's vocab_size_per_layer_input). A
    candidate only: many such keys are a threshold, an interval or an index (max_window_layers,
    global_attn_every_n_layers, vision_feature_layer); which of them size the model transformers
    builds is its to say (:func:`layer_count_candidates`, judged by the counter)."""
    return key.lower().rsplit("_", 1)[-1] in ("layer", "layers")


def layer_count_candidates(data: Mapping[str, object]) -> list[tuple[tuple[str, ...], int]]:
    """The keys (as paths through nested dicts, up to 4 deep) named like a layer count whose
    integer value is above :data:`MAX_LAYERS`, with that value: the counter builds the model only
    once transformers shows none of them sizes its modules (each set to 1, then 2)."""
    found: list[tuple[tuple[str, ...], int]] = []

    def walk(obj: object, path: tuple[str, ...]) -> None:
        if not isinstance(obj, dict) or len(path) > 4:
            return
        for key, value in obj.items():
            n = _int(value)
            if n is not None and n > MAX_LAYERS and isinstance(key, str) and is_layer_count(key):
                found.append(((*path, key), n))
            walk(value, (*path, key))

    walk(data, ())
    return found


# keys that size a model's stack of layers wherever a config object transformers resolved holds them
# at its top level (each checked, on every type of tests/helpers/hf_cases.py that has it, by building
# transformers' model with it at 1 and 2: tests/sizing/hf/test_hf_fallback.py): refused above MAX_LAYERS
# as soon as transformers has read the config, before anything is built
DEPTH_KEYS = frozenset({"num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers",
                        "decoder_layers", "num_decoder_layers"})


class BuildLimit(FfnlabError):
    """ffnlab's own refusal of a model it will not build through transformers (more than
    :data:`MAX_LAYERS` layers): not transformers' verdict."""


def refuse_layer_count(path: tuple[str, ...], n: int) -> None:
    raise BuildLimit(f"config.json key {'.'.join(path)!r} = {n:,} layers: ffnlab builds at most "
                     f"{MAX_LAYERS:,} layers through transformers")


# a bound on the modules a build through transformers makes for a count that is not a layer count (experts
# in every layer, codebooks, quantizers), extrapolated from two trial builds: not a layer count, a bound
# on build time (transformers makes module objects even on the meta device)
MAX_MODULES = 1_000_000


def refuse_module_count(path: tuple[str, ...], n: int, modules: int) -> None:
    raise BuildLimit(f"config.json key {'.'.join(path)!r} = {n:,} would make transformers build about {modules:,} "
                     f"modules (not layers): ffnlab builds at most {MAX_MODULES:,} modules through transformers "
                     "(a bound on build time)")


def refuse_built_modules(limit: int = MAX_MODULES) -> None:
    """Refuse a config whose build through transformers was stopped at ``limit`` modules made (counted
    as they are made, whatever the estimate from small builds said)."""
    raise BuildLimit(f"config.json makes transformers build more than {limit:,} modules (stopped there): "
                     f"ffnlab builds at most {limit:,} modules through transformers (a bound on build time)")


def refuse_unprobed(path: tuple[str, ...], n: int, depth: int) -> None:
    """Refuse a key that may be a layer count when transformers refuses the trial builds that would
    show it is not one (with it at ``depth`` + 1 and + 2): the bound cannot be checked, and building
    it as written might not end."""
    raise BuildLimit(f"config.json key {'.'.join(path)!r} = {n:,}: transformers refuses this model with it at "
                     f"{depth + 1:,} or {depth + 2:,}, so ffnlab cannot tell it from a layer count (it builds at "
                     f"most {MAX_LAYERS:,} layers through transformers)")


def is_multimodal(counted: CountedModel) -> bool:
    return bool(set(counted.get("sub_configs") or ()) - {"text_config"}) or (
        counted.get("auto") == "AutoModelForImageTextToText")


# -- facts the structure cannot show ------------------------------------------------------------

def attention_facts(cfg: Mapping[str, object], d: int) -> ConfigFacts:
    """Key/value cache elements per token of one attention layer, and its rule (the attention's
    fields of :class:`ConfigFacts`)."""
    heads = first_int(cfg, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
    kv_heads = first_int(cfg, ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "kv_n_heads")) or heads
    if cfg.get("multi_query") is True:
        kv_heads = 1
    head_dim = first_int(cfg, ("head_dim", "attention_head_dim", "kv_channels"))
    if head_dim is None and heads:
        head_dim = d // heads
    rank, rope = _int(cfg.get("kv_lora_rank")), _int(cfg.get("qk_rope_head_dim"))
    if rank is not None:
        per_token = rank + (rope or 0)
        rule = f"MLA latent: kv_lora_rank {rank} + qk_rope_head_dim {rope or 0}"
        qk = (_int(cfg.get("qk_nope_head_dim")) or 0) + (rope or 0)
        v = _int(cfg.get("v_head_dim")) or qk
    elif kv_heads and head_dim:
        per_token = 2 * kv_heads * head_dim
        rule = f"2 (K, V) x kv_heads {kv_heads} x head_dim {head_dim}"
        qk = v = head_dim
    else:
        per_token, rule, qk, v = None, "no key/value heads in the config", None, None
    types = cfg.get("layer_types")
    window = _int(cfg.get("sliding_window"))
    if cfg.get("use_sliding_window") is False:
        window = None
    sliding = None
    if window and isinstance(types, list):
        sliding = [i for i, t in enumerate(types) if isinstance(t, str) and "sliding" in t]
    return ConfigFacts(n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim, qk_head_dim=qk, v_head_dim=v,
                       kv_per_token=per_token, kv_rule=rule, sliding_window=window,
                       sliding_layers=None if sliding is None else tuple(sliding))


def flat_config(cfg: Mapping[str, object]) -> dict[str, object]:
    """The config with the keys of its nested blocks (DBRX's ``ffn_config``) where the top level
    lacks them; vision and audio blocks left out."""
    nested = {k: v for name, sub in cfg.items() if isinstance(sub, dict)
              and not any(w in name for w in ("vision", "audio", "image", "speech", "video"))
              for k, v in sub.items()}
    return {**nested, **cfg}


def facts(cfg: Mapping[str, object], s: Structure) -> ConfigFacts:
    """Numbers read from the config transformers resolved: top-k, the activation, the
    attention's cache shape, the recurrent state width, zero-computation experts."""
    cfg = flat_config(cfg)
    act = next((v for v in (cfg.get(k) for k in ACT_KEYS) if isinstance(v, str)), None)
    if act is None and any(v is True for k, v in cfg.items() if isinstance(k, str) and "swiglu" in k):
        act = "silu"  # LFM2's block_use_swiglu: SiLU-gated, applied as a function
    return replace(attention_facts(cfg, s.d_model), top_k=first_int(cfg, TOP_K_KEYS), activation=act,
                   zero_experts=first_int(cfg, ZERO_EXPERT_KEYS),
                   state_size=first_int(cfg, STATE_KEYS) or _nested_state(cfg),
                   vocab_size=first_int(cfg, ("vocab_size",)))


def _nested_state(cfg: Mapping[str, object]) -> int | None:
    for key in ("linear_attn_config", "ssm_cfg", "mamba_config"):
        inner = cfg.get(key)
        if isinstance(inner, dict):
            found = first_int(inner, ("head_dim", "d_state", "state_size"))
            if found:
                return found
    return None


def fold_shared(s: Structure, cfg: Mapping[str, object]) -> Structure:
    """A dense FFN beside a MoE without shared experts in the same layer, as wide as a config
    key naming a shared width (GraniteMoeShared's ``shared_intermediate_size``), is that MoE's
    shared expert."""
    widths = {v for k, v in cfg.items() if isinstance(k, str) and "shared" in k and ("size" in k or "dim" in k)
              and _int(v)}
    if not widths:
        return s
    merged: dict[int, FFNUnit] = {}  # id of the MoE unit -> the unit with its shared expert
    dropped: set[int] = set()
    for layer in {f.layer for f in s.ffns if f.layer is not None}:
        units = [f for f in s.ffns if f.layer == layer]
        moes = [f for f in units if f.moe and not f.n_shared]
        dense = [f for f in units if not f.moe and f.d_ff in widths]
        if len(moes) == 1 and len(dense) == 1:
            m, x = moes[0], dense[0]
            merged[id(m)] = replace(m, shared=m.shared + x.params, params=m.params + x.params, n_shared=1,
                                    d_shared=x.d_ff)
            dropped.add(id(x))
    if not merged:
        return s
    ffns = [merged.get(id(f), f) for f in s.ffns if id(f) not in dropped]
    folded = {f.layer for f in merged.values()}
    layers = [[k for k in kinds if k != "dense"] if i in folded else kinds for i, kinds in enumerate(s.layers)]
    return replace(s, ffns=ffns, layers=layers)


# -- the FFN view -----------------------------------------------------------------------------

def ffn_kind(unit: FFNUnit, activation: str | None) -> str:
    """ffnlab's kind name (swiglu, gelu, ...) from the activation module or the config's key."""
    plain = ACT_CLASSES.get(unit.activation or "") or ACT_PLAIN.get(activation or "")
    if unit.gated:
        if plain in GATED_KIND:
            return GATED_KIND[plain]
        gated = GATED_FROM_ACT.get(activation or "")
        return gated or f"gated ({plain or unit.activation or activation or 'activation not a module'})"
    return plain or f"plain ({unit.activation or activation or 'activation not a module'})"


def _dominant(units: list[FFNUnit]) -> FFNUnit | None:
    """The FFN that describes the model: the routed experts if any, else the widest-spread dense."""
    if not units:
        return None
    pool = [f for f in units if f.moe] or units
    count = Tally((f.d_ff, f.gated, f.moe) for f in pool)
    key = max(count, key=lambda k: (count[k], k[0]))
    return next(f for f in pool if (f.d_ff, f.gated, f.moe) == key)


def layout_text(s: Structure) -> str:
    """The layer stack in runs: "0-2 linear_attention+moe, 3 attention+moe, ..." (at most 12 runs),
    then the counts."""
    names = ["+".join(k) if k else "none" for k in s.layers]
    runs: list[tuple[int, int, str]] = []
    for i, n in enumerate(names):
        if runs and runs[-1][2] == n:
            runs[-1] = (runs[-1][0], i, n)
        else:
            runs.append((i, i, n))
    counts = layer_counts(s)
    summary = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in
                        ("attention", "linear_attention", "ssm", "short_conv", "dense", "moe") if counts.get(k))
    if len(runs) > 12:
        return f"{s.n_layers} layers: {summary}"
    spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b, _ in runs)
    text = "; ".join(f"{a if a == b else f'{a}-{b}'} {n}" for a, b, n in runs)
    return f"{s.n_layers} layers: {summary} ({text})" if spans else f"{s.n_layers} layers"


def moe_parts(s: Structure, top_k: int | None, unit: FFNUnit | None) -> MoeParts | None:
    """The structure's FFN parameters by role (None without routed experts): a zero-computation
    slot's allocated parameters count with the router, not as routed experts."""
    moes = [f for f in s.ffns if f.moe]
    if not moes or unit is None:
        return None
    active = None if top_k is None else sum(
        (f.routed - f.zero_params) * min(top_k, f.n_experts) // f.n_experts for f in moes if not f.reused)
    return MoeParts(moe_layers=len({f.layer for f in moes}), n_shared=unit.n_shared, d_shared=unit.d_shared,
                    routed=sum(f.routed - f.zero_params for f in moes), shared=sum(f.shared for f in moes),
                    router=sum(f.router + f.zero_params for f in moes),
                    dense=sum(f.params for f in s.ffns if not f.moe), routed_active=active)


def active_ffn(s: Structure, top_k: int | None) -> int | None:
    """FFN parameters one token uses: dense FFNs, routers, shared experts, top-k routed experts
    (a zero-computation expert slot is counted as a real one: an upper bound)."""
    if any(f.moe for f in s.ffns) and top_k is None:
        return None
    n = 0
    for f in s.ffns:
        if not f.moe:
            n += f.params
            continue
        real = f.routed - f.zero_params
        n += f.params - f.routed + real * min(top_k or 0, f.n_experts) // f.n_experts
    return n


def flops_forward(s: Structure, f: ConfigFacts, active: int | None, seq_len: int) -> int | None:
    """Forward FLOPs per token: 2 x the active matrix parameters outside the embedding tables
    (the LM head's matrix included, tied or not) plus attention scores and values over the
    context (the window for sliding layers); recurrent state updates are not counted."""
    if active is None:
        return None
    vocab = f.vocab_size or 0
    matmul = active - s.parts["embedding"] - s.parts["norms"] + vocab * s.d_model
    scores = 0
    heads, qk, v = f.n_heads, f.qk_head_dim, f.v_head_dim
    sliding = set(f.sliding_layers or ())
    window = f.sliding_window
    for m in s.mixers:
        if m.kind != "attention" or not heads or not qk:
            continue
        ctx = min(seq_len, window) if window and (m.layer in sliding or f.sliding_layers is None) else seq_len
        scores += 2 * ctx * heads * (qk + (v or qk))
    return 2 * matmul + scores


def structure_row(s: Structure, f: ConfigFacts, *, name: str, model_type: str | None, source: str | None,
                  label: str, family: str = "", note: str | None = None) -> AuditRow:
    """The audit row of a model read from its structure: the fields of
    :func:`ffnlab.sizing.audit.audit_config` and the counted ones
    (:data:`ffnlab.sizing.audit_row.COUNTED_FIELDS`)."""
    parts, total = s.parts, s.total
    non_embedding = total - parts["embedding"]
    unit = _dominant(s.ffns)
    top_k = f.top_k
    d = s.d_model
    moe = bool(unit and unit.moe)
    ffn_active = active_ffn(s, top_k)
    active = None if ffn_active is None else total - parts["ffn"] + ffn_active
    kind = ffn_kind(unit, f.activation) if unit else None
    dense = _dominant([x for x in s.ffns if not x.moe])
    raw = unit.d_ff / d if unit and d else None
    pm = float(param_matched_ratio(d, unit.d_ff, unit.gated)) if unit and d else None
    n_layers = s.n_layers or 1
    active_pm = ffn_active / n_layers / (2 * d * d) if moe and ffn_active is not None and d else None
    # a model of hidden size 0 (transformers builds one) has an FFN but no width ratio
    facts = (FFNFacts(d, unit.d_ff, kind or "?", unit.gated, moe=moe, n_experts=unit.n_experts,
                      n_shared=unit.n_shared, top_k=top_k, zero_slots=unit.zero_slots, active_pm=active_pm)
             if unit and d else None)
    mf = moe_fields(facts, moe_parts(s, top_k, unit))
    notes = [x for x in (note, _zero_note(s), None if top_k is not None or not moe else
                         "no top-k in config.json: parameters counted; active parameters and FLOPs unknown") if x]
    if s.outside:
        notes.append(f"multimodal: the whole model is counted, {s.outside:,} parameters of it outside the "
                     "language model and its LM head (encoders, projector: in params_other); the FFN, "
                     "attention and layer figures are the language model's")
    mixers = {k: parts[k] for k in ("linear_attention", "ssm", "short_conv") if parts[k]}
    verdict = ffn_verdict(facts) if facts else (
        "hidden size 0: the FFN has no width ratio" if unit else "no FFN found (no up/down projection pair in any "
                                                                 "layer)")
    verdict += f"; {layout_text(s)}" if s.n_layers else ""
    if mixers:
        verdict += "; non-embedding share: " + ", ".join(
            f"{k.replace('_', ' ')} {v / non_embedding:.0%}" for k, v in {"ffn": parts["ffn"], "attention":
                                                                            parts["attention"], **mixers}.items()
            if v and non_embedding)
    verdict += f"; {label}"
    return AuditRow(
        name=name, family=family, model_type=model_type, d_model=d,
        d_ff=unit.d_ff if unit else None, d_ff_dense=dense.d_ff if dense else None,
        ffn_kind=kind, gated=unit.gated if unit else None, n_layers=s.n_layers or None,
        n_heads=f.n_heads, n_kv_heads=f.n_kv_heads, vocab_size=f.vocab_size,
        n_experts=unit.n_experts if moe and unit else 0, top_k=top_k if moe else 0,
        params_total=total, params_non_embedding=non_embedding, params_ffn=parts["ffn"],
        params_attention=parts["attention"], params_embedding=parts["embedding"],
        params_norms=parts["norms"], params_other=parts["other"],
        params_linear_attention=parts["linear_attention"], params_ssm=parts["ssm"],
        params_short_conv=parts["short_conv"], params_outside_lm=s.outside,
        params_active=active, ffn_share=parts["ffn"] / non_embedding if non_embedding else None,
        ratio_raw=raw, ratio_param_matched=pm,
        deviation_raw=raw / CONVENTION - 1 if raw else None,
        deviation_param_matched=pm / CONVENTION - 1 if pm else None,
        alignment=Alignment.of(unit.d_ff) if unit else None, verdict=verdict, source=source,
        note="; ".join(notes) or None, params_ffn_active=ffn_active, params_mtp=None, **mf,
        layer_layout=tuple("+".join(k) for k in s.layers), layer_counts=layer_counts(s),
        zero_expert_slots=unit.zero_slots if moe and unit else None,
        params_zero_experts=sum(x.zero_params for x in s.ffns) if moe else None,
        flops_per_token=flops_forward(s, f, active, AUDIT_SEQ_LEN), flops_seq_len=AUDIT_SEQ_LEN,
        training_memory_bytes=int(states_per_param(AUDIT_DTYPE) * total),
        training_memory_dtype=f"{AUDIT_DTYPE} + AdamW, no activations",
        counted_by="transformers",
    )


def _zero_note(s: Structure) -> str | None:
    zero = sum(x.zero_params for x in s.ffns)
    slots = max((x.zero_slots for x in s.ffns), default=0)
    if not slots:
        return None
    upper = "active parameters assume the top-k all land on real experts (an upper bound)"
    if not zero:  # transformers >= 5.25 scores the slots in the router and allocates nothing for them
        return (f"{slots} zero-computation experts (identity: no FFN compute, no parameters) are scored by "
                f"the router beside the {max(x.n_experts for x in s.ffns)} routed experts; {upper}")
    return (f"{slots} zero-computation experts (identity: no FFN compute): transformers allocates "
            f"{zero:,} expert parameters for their slots, which ffnlab counts in the total (as "
            "transformers does) and in params_zero_experts, not as routed experts; a published total "
            f"leaves them out; {upper}")


# -- entry points -------------------------------------------------------------------------------

# counts a config.json through transformers: (config, what it leaves open) -> the counted structure
TransformersCounter = Callable[[dict[str, Any], tuple[str, ...]], CountedModel]


def announced(counter: TransformersCounter, note: Callable[[str], None]) -> TransformersCounter:
    """``counter`` that first says, through ``note``, that it is falling back to transformers (the
    first build imports torch and transformers, seconds), and erases the note when done."""

    def count(data: dict[str, Any], supported: tuple[str, ...]) -> CountedModel:
        note(f"model_type {show(data.get('model_type'))} has no ffnlab translator: building it with "
             "transformers on the meta device ...")
        try:
            return counter(data, supported)
        finally:
            note("")

    return count


def counted_structure(counted: CountedModel) -> Structure:
    """The structure of a counted model, with the config's facts and transformers' label in its
    :class:`~ffnlab.sizing.hf.structure.CountedBy`."""
    s = fold_shared(analyse(counted, multimodal=is_multimodal(counted)), counted["config"])
    version, cls = counted["transformers_version"], counted["class"]
    auto, kind = counted.get("auto"), counted.get("auto_kind")
    of = f"{cls}, {auto}: {kind}" if auto and kind else cls
    label = f"{LABEL} {version} ({of}; on the meta device)"
    # the resolved config, with config.json's own keys it dropped (LFM2's block_use_swiglu)
    cfg = {**(counted.get("config_json") or {}), **counted["config"]}
    note = None
    if kind == BASE_KIND:
        note = (f"model_type {show(counted['config_json'].get('model_type'))} has no language-model head in "
                f"transformers {version}: counted its base model {cls} ({auto}), every parameter")
    return replace(s, counted_by=CountedBy(facts(cfg, s), label, counted["total"], note))


def row_of(s: Structure, *, name: str, model_type: str | None, source: str | None, family: str = "",
           note: str | None = None) -> AuditRow:
    """The audit row of a structure from :func:`counted_structure` (or a stored one)."""
    by = s.counted_by
    require(by is not None, "this structure was not counted through transformers: no config facts to report")
    assert by is not None
    note = "; ".join(x for x in (by.note, note) if x) or None
    return structure_row(s, by.facts, name=name, model_type=model_type, source=source, label=by.label,
                         family=family, note=note)


def audit_untranslated(path: str | Path, supported: tuple[str, ...], counter: TransformersCounter | None,
                       refused: str | None = None) -> tuple[AuditRow, Structure] | None:
    """The audit row and structure of a config.json whose model_type has no translator, or None
    if it has one.

    ``counter`` builds the model and counts it (see the module docstring); without one the row
    cannot be counted and the error names the supported types and the fallback. ``refused``: why
    the translator of a type ffnlab translates refused this config; transformers then judges it
    (with a ``counter``): it counts what it builds, and its own refusal is the error.
    """
    p, data = read_hf_config(path)
    model_type = untranslated_type(data, supported)
    note = None
    if model_type is None:
        mt = data.get("model_type")
        if refused is None or counter is None or not isinstance(mt, str):
            return None
        model_type = mt
        note = f"ffnlab's {mt} translator does not model this config ({refused}): counted by transformers"
        if not refused.startswith("config.json"):  # a reason, not the translator's refusal
            note = f"counted by transformers, not by ffnlab's {mt} translator: {refused}"
    require(counter is not None, f"config.json model_type {show(model_type)} is not supported; supported: "
                                 f"{', '.join(supported)}; `ffnlab audit` counts it with transformers "
                                 f"({INSTALL_HINT})")
    assert counter is not None
    try:
        counted = counter(data, supported)
    except FfnlabError as e:  # both refuse: the translator's reason comes first, transformers' follows
        if note is None or refused is None:
            raise
        raise FfnlabError(f"{refused} (and {e})") from None
    s = counted_structure(counted)
    return row_of(s, name=config_name(p), model_type=model_type, source=str(p), note=note), s
