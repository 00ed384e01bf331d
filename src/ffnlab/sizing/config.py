"""The architecture description every part of ffnlab reads.

One :class:`ModelConfig` feeds the parameter counter (:mod:`ffnlab.sizing.counting`), the FLOP and
memory model (:mod:`ffnlab.sizing.flops`), the Hugging Face translator (:mod:`ffnlab.sizing.hf`) and
the PyTorch modules (:mod:`ffnlab.training.nn`). It covers decoder-only models (GPT-2, LLaMA, Mixtral,
...) and, for counting, T5-style encoder-decoders.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.kinds import default_norm, default_positions, get_kind
from ffnlab.sizing.widths import check_width
from ffnlab.validation import show

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

NORMS = ("layernorm", "rmsnorm", "layernorm-nobias", "none")
POSITIONS = ("rope", "learned", "none", "alibi", "relative")
# where a block's norms sit, and how many each placement may have
NORM_PLACEMENTS: dict[str, tuple[int, ...]] = {
    "pre": (2,),  # GPT-2, LLaMA: a norm before attention and before the FFN
    "post": (2,),  # OLMo 2, EXAONE 4: a norm on the output of each sub-layer, inside the residual
    "parallel": (1, 2),  # GPT-J, Falcon, Cohere: attention and FFN read the same (one or two) norms
    "sandwich": (3, 4),  # Gemma 2/3, GLM-4: norms before and after each sub-layer
}
QK_NORM_WIDTHS = ("head", "full")
# the deepest model ffnlab sizes (decoder + encoder layers; `size --n-layers` and config.json alike):
# every per-layer pass is linear (tests/sizing/test_depth_linear.py), `size` at the bound takes seconds
MAX_LAYERS = 100_000


@dataclass(frozen=True)
class FFNSpec:
    """One FFN layer. For MoE, ``d_ff`` is the width of each routed expert."""

    kind: str = "gelu"
    d_ff: int = 3072
    bias: bool = False
    n_experts: int = 0  # 0 = dense
    top_k: int = 0
    n_shared_experts: int = 0
    d_shared: int | None = None  # width of each shared expert (default d_ff)
    shared_expert_gate: bool = False  # Qwen-MoE style scalar gate on the shared expert
    # a bias of n_experts on the router: a Linear bias (gpt-oss) or a selection-only correction
    # bias held as a parameter (Ernie 4.5); ``bias`` puts biases on every expert (gpt-oss)
    router_bias: bool = False
    # tensors of width d_ff the activation keeps beyond the single op's when it is computed from
    # elementwise ops (transformers' NewGELUActivation, "gelu_new": 3); memory only
    act_extra_keeps: int = 0
    # the width the router and experts read and write where it is not the model's (None: d_model):
    # transformers 5.25 sizes DBRX's experts from d_model as config.json declares it (or the class's
    # 2048) and the rest from a hidden_size given beside or instead of it. Counted; such a model
    # cannot run, so ffnlab neither builds nor prices it
    d_in: int | None = None

    @property
    def gated(self) -> bool:
        return get_kind(self.kind).gated

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0


@dataclass(frozen=True)
class AttentionSpec:
    n_heads: int = 12
    n_kv_heads: int | None = None  # None = n_heads (MHA); 1 = MQA; otherwise GQA
    head_dim: int | None = None  # None = d_model // n_heads
    qkv_bias: bool = False
    out_bias: bool = False
    # one q|k|v projection (ffnlab's model, GPT-2's c_attn, GPT-NeoX) or three (transformers'
    # Llama family): what attention keeps for backward differs, the parameters do not
    qkv_fused: bool = True
    qk_norm: bool = False  # a norm on queries and keys (Phi qk_layernorm, Qwen3, OLMo 2)
    qk_norm_kind: str = "layernorm"  # which norm (NORMS); "none" = weightless (Llama 4's L2 norm)
    # "head": one norm of head_dim shared by all heads (Qwen3, Gemma 3); "full": over the
    # concatenated heads, n_heads * head_dim for q and n_kv_heads * head_dim for k (OLMo 2,
    # OLMoE; Cohere's separate per-head weights hold the same count)
    qk_norm_width: str = "head"
    sinks: bool = False  # gpt-oss attention sinks: one learned logit per head in each layer
    # sliding-window attention (Mistral v0.1, Gemma 2/3, gpt-oss): the window in tokens, and which
    # layers use it (None with a window = every layer)
    sliding_window: int | None = None
    sliding_layers: tuple[int, ...] | None = None
    # multi-head latent attention (DeepSeek V2/V3): set kv_lora_rank to switch it on
    q_lora_rank: int | None = None  # None = queries projected directly from d_model
    kv_lora_rank: int | None = None  # width of the compressed KV latent that is cached
    qk_rope_head_dim: int | None = None  # rotary part of each q/k head (shared across heads for k)
    qk_nope_head_dim: int | None = None  # non-rotary part of each q/k head
    v_head_dim: int | None = None  # value head width


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 768
    n_layers: int = 12
    vocab_size: int = 50257
    ffn: FFNSpec = field(default_factory=FFNSpec)
    attn: AttentionSpec = field(default_factory=AttentionSpec)
    norm: str = "layernorm"
    norms_per_block: int = 2  # 1 for parallel blocks (GPT-J, Phi-2), 4 for Gemma-2's sandwich
    norm_placement: str = "pre"  # NORM_PLACEMENTS: pre, post, parallel or sandwich
    final_norm: bool = True
    embed_norm: bool = False  # BLOOM's LayerNorm after the embedding
    positions: str = "learned"
    max_positions: int = 1024  # rows of a learned position table
    position_offset: int = 0  # OPT keeps 2 extra rows
    tied_embeddings: bool = True
    lm_head_bias: bool = False
    embed_proj_dim: int | None = None  # OPT-350m: embeddings of another width, projected in/out
    encoder_layers: int = 0  # > 0: T5-style encoder-decoder (decoder layers = n_layers)
    relative_buckets: int = 0  # T5 relative position buckets (a table in each stack's first layer)
    # per-layer FFN layout (DeepSeek's first k dense layers, Qwen-MoE mlp_only_layers, Llama 4's
    # interleaved MoE): the decoder layers at these indices use dense_ffn instead of ffn
    dense_layers: tuple[int, ...] = ()
    dense_ffn: FFNSpec | None = None
    # multi-token-prediction modules a config.json declares (DeepSeek-V3 and GLM-4.5
    # num_nextn_predict_layers): transformers does not build them, so they are counted apart
    # (ParamCounts.mtp) and left out of the total, as transformers' own count leaves them out
    mtp_layers: int = 0
    name: str = ""

    # -- derived ---------------------------------------------------------------------------
    @property
    def n_kv_heads(self) -> int:
        return self.attn.n_kv_heads or self.attn.n_heads

    @property
    def n_heads_not_grouped(self) -> bool:
        """Key/value heads that do not divide the query heads (counted, never trained)."""
        return self.attn.n_heads % self.n_kv_heads != 0

    @property
    def head_dim(self) -> int:
        return self.attn.head_dim or self.d_model // self.attn.n_heads

    @property
    def d_attn(self) -> int:
        """Width of the concatenated query heads."""
        return self.attn.n_heads * self.head_dim

    @property
    def d_kv(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def gated(self) -> bool:
        return self.ffn.gated

    @property
    def is_mla(self) -> bool:
        return self.attn.kv_lora_rank is not None

    @property
    def qk_head_dim(self) -> int:
        """Width of each query/key head (MLA: nope + rope parts; otherwise head_dim)."""
        a = self.attn
        if self.is_mla:
            return (a.qk_nope_head_dim or 0) + (a.qk_rope_head_dim or 0)
        return self.head_dim

    @property
    def v_head_dim(self) -> int:
        """Width of each value head (MLA: v_head_dim; otherwise head_dim)."""
        if self.is_mla:
            return self.attn.v_head_dim or self.head_dim
        return self.head_dim

    @property
    def moe_layers(self) -> int:
        """How many decoder layers have a routed (MoE) FFN."""
        return sum(f.is_moe for f in self.layer_ffns())

    def layer_ffns(self) -> list[FFNSpec]:
        """The FFN of each decoder layer, in order (``dense_ffn`` at the ``dense_layers`` indices).

        O(n_layers): a loop over the layers asks :meth:`layer_ffn` for each one instead (building
        this list once per layer made ``size --n-layers 100000`` quadratic)."""
        return [self.layer_ffn(i) for i in range(self.n_layers)]

    def layer_ffn(self, i: int) -> FFNSpec:
        """The FFN of decoder layer ``i`` (0 <= i < n_layers), in O(1)."""
        if not 0 <= i < self.n_layers:
            raise IndexError(f"layer {i} of a {self.n_layers}-layer model")
        return self.dense_ffn if (self.dense_ffn is not None and i in self._dense_set) else self.ffn

    @cached_property
    def _dense_set(self) -> frozenset[int]:
        return frozenset(self.dense_layers)

    def ffn_layer_counts(self) -> dict[FFNSpec, int]:
        """Each distinct FFN of the model (decoder layout, then an encoder's ``ffn``) and how
        many layers use it."""
        n_dense = len(self._dense_set) if self.dense_ffn is not None else 0
        runs: list[tuple[FFNSpec | None, int]] = [(self.ffn, self.n_layers - n_dense), (self.dense_ffn, n_dense)]
        if n_dense and 0 in self._dense_set:  # in the order the layers first use them
            runs.reverse()
        counts: dict[FFNSpec, int] = {}
        for f, n in [*runs, (self.ffn, self.encoder_layers)]:  # O(1), not a pass over the layers
            if f is not None and n > 0:
                counts[f] = counts.get(f, 0) + n
        return counts

    def attention_layers(self) -> list[str]:
        """``"sliding"`` or ``"full"`` for each decoder layer, in order."""
        w, which = self.attn.sliding_window, self.attn.sliding_layers
        if w is None:
            return ["full"] * self.n_layers
        chosen = set(range(self.n_layers)) if which is None else set(which)
        return ["sliding" if i in chosen else "full" for i in range(self.n_layers)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``dense_ffn`` nested like ``ffn``; index tuples as lists)."""
        out = asdict(self)
        out["dense_layers"] = list(self.dense_layers)
        if self.attn.sliding_layers is not None:
            out["attn"]["sliding_layers"] = list(self.attn.sliding_layers)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        data = dict(data)
        ffn = _sub(FFNSpec, data.pop("ffn", {}), "ffn")
        attn = _sub(AttentionSpec, data.pop("attn", {}), "attn")
        if attn.sliding_layers is not None:
            layers = _indices(attn.sliding_layers, "attn.sliding_layers")
            attn = replace(attn, sliding_layers=layers)
        dense = data.pop("dense_ffn", None)
        dense_ffn = None if dense is None else _sub(FFNSpec, dense, "dense_ffn")
        if "dense_layers" in data:
            data["dense_layers"] = _indices(data["dense_layers"], "dense_layers")
        known = set(cls.__dataclass_fields__) - {"ffn", "attn", "dense_ffn"}
        unknown = sorted(set(data) - known)
        require(not unknown, f"unknown model config key(s): {', '.join(unknown)}")
        return validate(cls(ffn=ffn, attn=attn, dense_ffn=dense_ffn, **data))


def _sub(cls: type[DataclassInstance], data: Any, where: str) -> Any:
    if isinstance(data, cls):
        return data
    require(isinstance(data, dict), f"model config key {where!r} must be a mapping")
    unknown = sorted(set(data) - set(cls.__dataclass_fields__))
    require(not unknown, f"unknown {where} config key(s): {', '.join(unknown)}")
    return cls(**data)


def _indices(value: Any, where: str) -> tuple[int, ...]:
    ok = isinstance(value, (list, tuple)) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in value)
    require(ok, f"model config key {where!r} must be a list of layer indices, got {show(value)}")
    return tuple(value)


def _positive(value: Any, what: str) -> None:
    check_width(value, what)


WIDTH_FIELDS = {  # the sizes a whole float (768.0) may arrive in, from a caller or a JSON file
    "config": ("d_model", "n_layers", "vocab_size", "max_positions", "embed_proj_dim"),
    "attn": ("n_heads", "n_kv_heads", "head_dim"),
    "ffn": ("d_ff", "d_shared"),
}


def _whole(value: Any) -> Any:
    """A whole float as the int it stands for; anything else as it is (validation judges it)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _with_int_widths(cfg: ModelConfig) -> ModelConfig:
    """``cfg`` with every size given as a whole float turned into an int, so counts are ints."""
    def fix(obj: Any, fields: tuple[str, ...]) -> Any:
        return replace(obj, **{f: _whole(getattr(obj, f)) for f in fields})

    fixed: ModelConfig = fix(replace(cfg, attn=fix(cfg.attn, WIDTH_FIELDS["attn"]),
                                     ffn=fix(cfg.ffn, WIDTH_FIELDS["ffn"]),
                                     dense_ffn=fix(cfg.dense_ffn, WIDTH_FIELDS["ffn"]) if cfg.dense_ffn is not None
                                     else None), WIDTH_FIELDS["config"])
    return fixed


def validate(cfg: ModelConfig, *, grouped: bool = True) -> ModelConfig:
    """Check a config for consistency; return it with whole-float sizes as ints, or raise
    :class:`ffnlab.errors.FfnlabError` with the first problem.

    ``grouped=False`` accepts key/value heads that do not divide the query heads: transformers
    builds such a config.json (and ffnlab counts it), though no attention can run it."""
    cfg = _with_int_widths(cfg)
    for what in ("d_model", "n_layers", "vocab_size"):
        _positive(getattr(cfg, what), what)
    a = cfg.attn
    _positive(a.n_heads, "n_heads")
    if a.head_dim is None:
        require(cfg.d_model % a.n_heads == 0,
                f"n_heads={a.n_heads} does not divide d_model={cfg.d_model}; "
                "choose heads that divide it or set head_dim explicitly")
    else:
        _positive(a.head_dim, "head_dim")
    if a.n_kv_heads is not None:
        _positive(a.n_kv_heads, "n_kv_heads")
        require(not grouped or a.n_heads % a.n_kv_heads == 0,
                f"n_kv_heads={a.n_kv_heads} must divide n_heads={a.n_heads}")
    require(cfg.norm in NORMS, f"norm must be one of {NORMS}, got {show(cfg.norm)}")
    require(cfg.positions in POSITIONS, f"positions must be one of {POSITIONS}, got {show(cfg.positions)}")
    placements = NORM_PLACEMENTS.get(cfg.norm_placement)
    require(placements is not None,
            f"norm_placement must be one of {tuple(NORM_PLACEMENTS)}, got {show(cfg.norm_placement)}")
    assert placements is not None  # the require above
    require(cfg.norms_per_block in placements,
            f"a {cfg.norm_placement} block has {' or '.join(map(str, placements))} norms, "
            f"got norms_per_block={cfg.norms_per_block}")
    if cfg.positions == "learned":
        _positive(cfg.max_positions, "max_positions")
    _validate_ffn(cfg.ffn, "ffn")
    _validate_layout(cfg)
    _validate_attention_extras(cfg)
    if cfg.embed_proj_dim is not None:
        _positive(cfg.embed_proj_dim, "embed_proj_dim")
    require(cfg.encoder_layers >= 0, "encoder_layers must be >= 0")
    check_layer_bound(cfg.n_layers + cfg.encoder_layers)
    require(isinstance(cfg.mtp_layers, int) and cfg.mtp_layers >= 0, "mtp_layers must be >= 0")
    return cfg


def check_layer_bound(n: int) -> None:
    """Refuse more than :data:`MAX_LAYERS` layers (decoder and encoder together): checked before
    anything is made per layer, so the work stays linear in a bounded depth."""
    require(n <= MAX_LAYERS, f"{n:,} layers: ffnlab sizes at most {MAX_LAYERS:,} (decoder and encoder layers "
                             "together), hundreds of times the deepest published model")


def _validate_ffn(f: FFNSpec, where: str) -> None:
    _positive(f.d_ff, f"{where}.d_ff" if where != "ffn" else "d_ff")
    get_kind(f.kind)
    if f.is_moe:
        require(f.n_experts >= 1, "n_experts must be >= 1")
        require(1 <= f.top_k <= f.n_experts,
                f"top_k must be between 1 and n_experts={f.n_experts}, got {f.top_k}")
    else:
        require(f.top_k == 0 and f.n_shared_experts == 0 and not f.router_bias
                and not f.shared_expert_gate,
                f"{where}: top_k, shared experts and router settings need n_experts > 0")
    require(f.n_shared_experts >= 0, "n_shared_experts must be >= 0")
    if f.d_shared is not None:
        _positive(f.d_shared, "d_shared")


def _validate_layout(cfg: ModelConfig) -> None:
    """The per-layer FFN layout: valid, distinct layer indices and a dense_ffn to put there."""
    idx = cfg.dense_layers
    if not idx and cfg.dense_ffn is None:
        return
    require(cfg.dense_ffn is not None, "dense_layers needs a dense_ffn for those layers")
    assert cfg.dense_ffn is not None
    _validate_ffn(cfg.dense_ffn, "dense_ffn")
    require(len(set(idx)) == len(idx), f"dense_layers repeats an index: {show(list(idx))}")
    bad = [i for i in idx if not 0 <= i < cfg.n_layers]
    require(not bad, f"dense_layers {show(bad)} outside the {cfg.n_layers} decoder layers")


def _validate_attention_extras(cfg: ModelConfig) -> None:
    """q/k norms, sliding windows and multi-head latent attention."""
    a = cfg.attn
    require(a.qk_norm_kind in NORMS, f"qk_norm_kind must be one of {NORMS}, got {show(a.qk_norm_kind)}")
    require(a.qk_norm_width in QK_NORM_WIDTHS,
            f"qk_norm_width must be one of {QK_NORM_WIDTHS}, got {show(a.qk_norm_width)}")
    if a.sliding_window is not None:
        _positive(a.sliding_window, "sliding_window")
    if a.sliding_layers is not None:
        require(a.sliding_window is not None, "sliding_layers needs a sliding_window")
        bad = [i for i in a.sliding_layers if not 0 <= i < cfg.n_layers]
        require(not bad, f"sliding_layers {show(bad)} outside the {cfg.n_layers} decoder layers")
    mla = (a.q_lora_rank, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim)
    if a.kv_lora_rank is None:
        require(all(v is None for v in mla),
                "q_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim need kv_lora_rank "
                "(multi-head latent attention)")
        return
    _positive(a.kv_lora_rank, "kv_lora_rank")
    for what in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        require(getattr(a, what) is not None, f"multi-head latent attention needs {what}")
        _positive(getattr(a, what), what)
    if a.q_lora_rank is not None:
        _positive(a.q_lora_rank, "q_lora_rank")
    require(a.n_kv_heads in (None, a.n_heads),
            "multi-head latent attention has one key/value head per query head (n_kv_heads unset)")


TRAINABLE_POSITIONS = ("rope", "learned", "none")


def check_trainable(cfg: ModelConfig) -> None:
    """Raise if ``cfg`` uses a feature the counter knows but these modules do not build."""
    a = cfg.attn
    problems = [what for bad, what in (
        (cfg.encoder_layers > 0, "encoder-decoder stacks"),
        (cfg.n_heads_not_grouped, f"n_kv_heads={cfg.n_kv_heads} not dividing n_heads={a.n_heads}"),
        (cfg.norm_placement != "pre" or cfg.norms_per_block != 2,
         f"{cfg.norm_placement} norm placement with {cfg.norms_per_block} norms per block "
         "(only pre-norm with 2)"),
        (cfg.embed_norm, "an embedding norm"),
        (cfg.embed_proj_dim not in (None, cfg.d_model), "embedding projections"),
        (cfg.positions not in TRAINABLE_POSITIONS, f"{cfg.positions} positions"),
        (cfg.position_offset != 0, "position offsets"),
        (cfg.positions == "rope" and cfg.head_dim % 2,
         f"RoPE with an odd head_dim ({cfg.head_dim}; needs an even head_dim)"),
        (cfg.is_mla, "multi-head latent attention (its latent projections are not built)"),
        (a.sliding_window is not None, "sliding-window attention (every layer attends causally "
                                       "over the whole sequence)"),
        (a.sinks, "attention sinks (SDPA has no per-head sink logit)"),
        (a.qk_norm and a.qk_norm_kind == "none", "weightless q/k norms (Llama 4's L2 norm)"),
        (cfg.mtp_layers > 0, "multi-token-prediction layers (one next-token head only)"),
        (any(f.d_in not in (None, cfg.d_model) for f in cfg.ffn_layer_counts()),
         "experts of another width than the model (DBRX with hidden_size and d_model apart)"),
    ) if bad]
    if problems:
        raise FfnlabError(f"ffnlab.nn cannot build {', '.join(problems)}; these configs are for counting only")


def make_config(
    d_model: int,
    n_layers: int,
    n_heads: int,
    d_ff: int,
    *,
    kind: str = "gelu",
    vocab_size: int = 50257,
    n_kv_heads: int | None = None,
    head_dim: int | None = None,
    norm: str | None = None,
    positions: str | None = None,
    max_positions: int = 1024,
    tied_embeddings: bool = True,
    bias: bool = False,
    n_experts: int = 0,
    top_k: int = 0,
    n_shared_experts: int = 0,
    name: str = "",
) -> ModelConfig:
    """A decoder-only config with ffnlab's defaults (:data:`ffnlab.sizing.kinds.DEFAULT_LAYOUT`):
    RMSNorm + RoPE for gated kinds, LayerNorm + learned positions for plain MLPs (GPT-2 style)."""
    cfg = ModelConfig(
        d_model=d_model,
        n_layers=n_layers,
        vocab_size=vocab_size,
        ffn=FFNSpec(kind=kind, d_ff=d_ff, bias=bias, n_experts=n_experts, top_k=top_k,
                    n_shared_experts=n_shared_experts),
        attn=AttentionSpec(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim,
                           qkv_bias=bias, out_bias=bias),
        norm=norm or default_norm(kind),
        positions=positions or default_positions(kind),
        max_positions=max_positions,
        tied_embeddings=tied_embeddings,
        name=name,
    )
    return validate(cfg)


__all__ = ["FFNSpec", "AttentionSpec", "ModelConfig", "check_trainable", "make_config", "validate", "FfnlabError"]
