"""The memory tables' text and the arithmetic it shows, for one small model written out by hand
(every byte count below is the product its rule states), the KV cache's rule for each attention
form, the error messages, and encoder-decoder cross-attention caches. The byte counts of real
models are checked against measured tensors in test_memory_saved_tensors / test_memory_measured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import NORMS, AttentionSpec, ModelConfig, make_config
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.sizing.memory.activations import (
    FFN_KEEPS,
    NORM_KEEPS,
    Term,
    activation_memory,
    head_activation_terms,
    kv_cache,
    kv_elements_per_token,
    layer_activation_terms,
    routed_expert_params,
)

# d_model 8, 2 heads, GELU d_ff 32, LayerNorm, learned positions, vocab 10; 3 sequences of 4 tokens
# (12 tokens) in fp32 (4 B), eager attention with dropout (1-byte masks).
LAYER = [
    ("attention norm input", 12 * 1 * 8 * 4, "12 tokens x 1 x d 8 x 4 B", "sp"),
    ("attention norm statistics", 12 * 2 * 4, "12 tokens x 2 x 4 B (fp32)", "sp"),
    ("attention input (norm output)", 12 * 8 * 4, "12 tokens x d 8 x 4 B", "sp"),
    ("q, k, v copies at query width", 12 * 3 * 8 * 4, "12 tokens x 3 x dq 8 x 4 B", "tp"),
    ("softmax probabilities (s x s)", 12 * 2 * 4 * 4, "12 tokens x heads 2 x s 4 x 4 B", "tp"),
    ("attention output", 12 * 8 * 4, "12 tokens x 8 x 4 B", "tp"),
    ("FFN norm input", 12 * 1 * 8 * 4, "12 tokens x 1 x d 8 x 4 B", "sp"),
    ("FFN norm statistics", 12 * 2 * 4, "12 tokens x 2 x 4 B (fp32)", "sp"),
    ("dropout masks of the two residual branches", 12 * 2 * 8 * 1, "12 tokens x 2 x d 8 x 1 B", "sp"),
    ("attention dropout mask (s x s)", 12 * 2 * 4 * 1, "12 tokens x heads 2 x s 4 x 1 B", "tp"),
    ("dropped-out probabilities (s x s)", 12 * 2 * 4 * 4, "12 tokens x heads 2 x s 4 x 4 B", "tp"),
    ("FFN input (norm output)", 12 * 8 * 4, "12 tokens x d 8 x 4 B", "sp"),
    ("FFN hidden (gelu)", 12 * 2 * 32 * 4, "12 tokens x 2 x d_ff 32 x 4 B", "tp"),
]
HEAD = [
    ("token indices", 12 * 8, "12 tokens x 8 B (int64)", ""),
    ("embedding dropout mask", 12 * 8 * 1, "12 tokens x d 8 x 1 B", "sp"),
    ("position indices", 4 * 8, "s 4 x 8 B (shared by the batch)", ""),
    ("final norm input", 12 * 1 * 8 * 4, "12 tokens x 1 x d 8 x 4 B", "sp"),
    ("final norm statistics", 12 * 2 * 4, "12 tokens x 2 x 4 B (fp32)", "sp"),
    ("LM head input", 12 * 8 * 4, "12 tokens x d x 4 B", "sp"),
    ("log-softmax of the logits (fp32)", 12 * 10 * 4, "12 tokens x vocab 10 x 4 B", "tp"),
    ("targets", 12 * 8, "12 tokens x 8 B (int64)", ""),
]


def small() -> ModelConfig:
    return make_config(8, 1, 2, 32, kind="gelu", vocab_size=10, max_positions=16)


def rows(terms: list[Term]) -> list[tuple[str, int, str, str]]:
    return [(t.name, t.bytes, t.rule, t.split) for t in terms]


def test_every_line_of_a_small_models_table():
    kw = dict(seq_len=4, batch=3, dtype="fp32", dropout=True)
    assert rows(layer_activation_terms(small(), 0, attention="eager", **kw)) == LAYER
    assert rows(head_activation_terms(small(), **kw)) == HEAD
    assert Term("x", 5, "5 x 1 B", "tp", part="ffn").as_dict() == {"term": "x", "bytes": 5, "rule": "5 x 1 B",
                                                                   "split": "tp"}
    assert Term("x", 5, "r", part="loss").split == ""  # a term no parallelism divides


def test_selective_recompute_drops_exactly_the_s_by_s_terms():
    kw = dict(seq_len=4, batch=3, dtype="fp32", dropout=True, attention="eager")
    every = activation_memory(small(), **kw)
    selective = activation_memory(small(), recompute="selective", **kw)
    s_by_s = sum(b for name, b, _, _ in LAYER if "(s x s)" in name)
    assert s_by_s == 384 + 96 + 384
    assert every.per_layer == [sum(b for _, b, _, _ in LAYER)]
    assert selective.per_layer == [every.per_layer[0] - s_by_s]
    assert every.head == selective.head == sum(b for _, b, _, _ in HEAD)


def test_the_keep_tables_name_every_kind_and_norm():
    """No FFN kind or norm falls back on a guess: each has its measured entry."""
    assert set(FFN_KEEPS) == set(FFN_KINDS)
    assert set(NORM_KEEPS) == set(NORMS)


@pytest.mark.parametrize("cfg, rule", [
    (make_config(768, 12, 12, 3072), "MHA: 2 (K, V) x kv_heads 12 x head_dim 64 x 2 B"),
    (make_config(1024, 4, 16, 4096, kind="swiglu", n_kv_heads=1), "MQA: 2 (K, V) x kv_heads 1 x head_dim 64 x 2 B"),
    (make_config(1024, 4, 16, 4096, kind="swiglu", n_kv_heads=2), "GQA: 2 (K, V) x kv_heads 2 x head_dim 64 x 2 B"),
])
def test_kv_rule_names_the_attention_form(cfg, rule):
    kv = kv_cache(cfg, batch=1, context=1)
    assert kv.rule == rule and kv.bytes_per_element == 2
    assert kv_cache(cfg, batch=1, context=1, tp=1).rule == rule  # one GPU: nothing split
    assert kv_cache(cfg, batch=1, context=1, tp=2).rule == rule.replace(" x 2 B", ", split over tp 2 x 2 B")
    assert kv_cache(cfg, batch=1, context=1, kv_dtype="int4").bytes_per_element == 0.5


def test_kv_rule_of_mla_and_missing_mla_sizes_read_as_zero():
    attn = AttentionSpec(n_heads=4, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)
    cfg = replace(make_config(64, 2, 4, 128, kind="swiglu"), attn=attn)
    assert kv_elements_per_token(cfg) == (40, "MLA latent: kv_lora_rank 32 + qk_rope 8")
    assert kv_elements_per_token(cfg, "expanded") == (4 * (16 + 8 + 16),
                                                      "MLA expanded: heads 4 x (qk_nope 16 + qk_rope 8 + v 16)")
    no_rope = replace(cfg, attn=replace(attn, qk_rope_head_dim=None))
    assert kv_elements_per_token(no_rope) == (32, "MLA latent: kv_lora_rank 32 + qk_rope 0")
    assert kv_elements_per_token(no_rope, "expanded")[0] == 4 * (16 + 0 + 16)
    no_nope = replace(cfg, attn=replace(attn, qk_nope_head_dim=None))
    assert kv_elements_per_token(no_nope, "expanded")[0] == 4 * (0 + 8 + 16)


def test_kv_of_an_encoder_decoder_caches_cross_attention_too():
    """Each decoder layer caches its own keys and values and the encoder's (full length, no window)."""
    dec = make_config(64, 3, 4, 256)
    enc_dec = replace(dec, encoder_layers=2)
    per_token_layer = 2 * 64 * 2  # K and V, 64 wide, bf16
    assert kv_cache(dec, batch=2, context=10).total == 3 * per_token_layer * 10 * 2
    assert kv_cache(enc_dec, batch=2, context=10).total == (3 + 3) * per_token_layer * 10 * 2
    assert kv_cache(enc_dec, batch=1, context=10).cached_tokens == [10] * 6


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch=0, context=1), "batch and context must be >= 1"),
    (dict(batch=1, context=0), "batch and context must be >= 1"),
    (dict(batch=1, context=1, kv_dtype="fp64"),
     "kv dtype must be one of fp32, bf16, fp16, fp8, int8, int4, got 'fp64'"),
    (dict(batch=1, context=1, mla="compressed"), "MLA cache form must be one of latent, expanded, got 'compressed'"),
])
def test_kv_errors_name_what_is_wrong(kwargs, message):
    with pytest.raises(FfnlabError) as err:
        kv_cache(make_config(64, 2, 4, 256), **kwargs)
    assert str(err.value) == message


def test_routed_expert_params_count_biases_by_hand():
    moe = make_config(16, 2, 2, 24, kind="gelu", n_experts=4, top_k=2, bias=True)
    # per expert: up 16x24 + 24 bias, down 24x16 + 16 bias = 808; 4 experts x 2 layers
    assert routed_expert_params(moe) == 2 * 4 * (16 * 24 + 24 + 24 * 16 + 16) == 6464
    gated = make_config(16, 2, 2, 24, kind="swiglu", n_experts=4, top_k=2)
    assert routed_expert_params(gated) == 2 * 4 * 3 * 16 * 24
    assert routed_expert_params(make_config(16, 2, 2, 24)) == 0  # dense: no routed experts


def test_mla_terms_with_a_missing_nope_size():
    """MLA: q latent 6, kv latent 4 + rope 2, 2 heads of (nope 0 + rope 2) for q/k and v 3; fp16, 4 tokens."""
    attn = AttentionSpec(n_heads=2, q_lora_rank=6, kv_lora_rank=4, qk_rope_head_dim=2, qk_nope_head_dim=None,
                         v_head_dim=3)
    cfg = replace(make_config(8, 1, 2, 16, kind="swiglu", vocab_size=10), attn=attn)
    assert rows(layer_activation_terms(cfg, 0, seq_len=4, batch=1, dtype="fp16")[3:7]) == [
        ("MLA q latent and its norm", 4 * 2 * 6 * 2, "4 tokens x 2 x q_lora_rank 6 x 2 B", "sp"),
        ("MLA kv latent and its norm", 4 * 2 * 6 * 2, "4 tokens x 2 x (kv_lora_rank + rope) 6 x 2 B", "sp"),
        ("MLA expanded q, k, v", 4 * (2 * 4 + 6) * 2, "4 tokens x (2 x 4 + 6) x 2 B", "tp"),
        ("softmax log-sum-exp", 4 * 2 * 4, "4 tokens x heads 2 x 4 B", "tp"),
    ]


def test_moe_terms_with_a_capacity_factor_and_a_shared_expert():
    """4 experts, top-2, capacity 1.5 (3 copies of each token), one shared expert; SwiGLU d_ff 16, fp16."""
    moe = make_config(8, 1, 2, 16, kind="swiglu", vocab_size=10, n_experts=4, top_k=2, n_shared_experts=1)
    terms = layer_activation_terms(moe, 0, seq_len=4, batch=1, dtype="fp16", capacity_factor=1.5)
    assert rows(terms)[:2] == [
        ("attention norm input and normalised input", 4 * 2 * 8 * 2, "4 tokens x 2 x d 8 x 2 B", "sp"),
        ("attention norm statistics", 4 * 1 * 4, "4 tokens x 1 x 4 B (fp32)", "sp")]
    assert rows(terms)[4] == ("rotated q and k", 4 * (8 + 8) * 2, "4 tokens x (dq 8 + dkv 8) x 2 B", "tp")
    assert rows(terms)[-6:] == [
        ("router probabilities", 4 * 4 * 4, "4 tokens x experts 4 x 4 B", ""),
        ("router top-k indices and weights", 4 * (2 * 8 + 3 * 4), "4 tokens x (top_k 2 x 8 B + (top_k + 1) x 4 B)", ""),
        ("dispatched tokens and index", 4 * 3 * (8 * 2 + 8), "4 tokens x capacity 1.5 x top_k 2 x (d 8 x 2 B + 8 B)",
         ""),
        ("expert hidden (swiglu)", 4 * 3 * 4 * 16 * 2, "4 tokens x capacity 1.5 x top_k 2 x 4 x d_ff 16 x 2 B", "tp"),
        ("expert outputs, weighted copy, weights, index", 4 * 3 * (2 * 8 * 2 + 4 + 8),
         "4 tokens x capacity 1.5 x top_k 2 x (2 x d 8 x 2 B + 4 B + 8 B)", ""),
        ("shared experts hidden (swiglu)", 4 * 1 * 4 * 16 * 2, "4 tokens x 1 x 4 x d_shared 16 x 2 B", "tp"),
    ]
    plain = layer_activation_terms(moe, 0, seq_len=4, batch=1, dtype="fp16")  # no capacity: top_k copies
    assert rows(plain)[-3][1:3] == (4 * 2 * 4 * 16 * 2, "4 tokens x top_k 2 x 4 x d_ff 16 x 2 B")


def test_sandwich_post_norms_and_two_byte_dropout_masks():
    g = replace(make_config(8, 1, 2, 16, kind="geglu", vocab_size=10), norm_placement="sandwich", norms_per_block=4)
    names = [t.name for t in layer_activation_terms(g, 0, seq_len=4, batch=1, dropout=True, dropout_mask_bytes=2)]
    assert names[9:13] == ["post-norm 1 norm input and normalised input", "post-norm 1 norm statistics",
                           "post-norm 2 norm input and normalised input", "post-norm 2 norm statistics"]
    masks = layer_activation_terms(g, 0, seq_len=4, batch=1, dropout=True, dropout_mask_bytes=2)[13]
    assert (masks.bytes, masks.rule) == (4 * 2 * 8 * 2, "4 tokens x 2 x d 8 x 2 B")


def test_tensor_and_sequence_parallel_division_by_hand():
    """tp 2 divides the 'tp' terms, sp the 'sp' ones too; full recompute keeps one layer input
    (divided by tp under sp) and holds one layer's set while recomputing."""
    kw = dict(seq_len=4, batch=3, dtype="fp32", dropout=True, attention="eager")
    layer, head = sum(b for _, b, _, _ in LAYER), sum(b for _, b, _, _ in HEAD)
    tp_only = sum(b // 2 if split == "tp" else b for _, b, _, split in LAYER)
    head_tp = sum(b // 2 if split == "tp" else b for _, b, _, split in HEAD)
    head_tp_sp = sum(b // 2 if split else b for _, b, _, split in HEAD)
    assert activation_memory(small(), tp=2, **kw).per_layer == [tp_only]
    assert activation_memory(small(), tp=2, **kw).head == head_tp
    both = activation_memory(small(), tp=2, sp=True, **kw)
    assert both.per_layer == [layer // 2] and both.head == head_tp_sp
    s_by_s = sum(b for name, b, _, _ in LAYER if "(s x s)" in name)
    assert activation_memory(small(), tp=2, sp=True, recompute="selective", **kw).per_layer == [(layer - s_by_s) // 2]
    full = activation_memory(small(), tp=2, sp=True, recompute="full", **kw)
    assert full.per_layer == [12 * 8 * 4 // 2] and full.recompute_peak == layer // 2
    full_tp = activation_memory(small(), tp=2, recompute="full", **kw)
    assert full_tp.per_layer == [12 * 8 * 4] and full_tp.recompute_peak == tp_only
    assert head == 96 + 96 + 32 + 384 + 96 + 384 + 480 + 96


def test_activation_defaults_and_errors():
    bf16 = head_activation_terms(small(), seq_len=4, batch=1)  # bf16 unless told
    assert bf16[-3].rule == "4 tokens x d x 2 B"
    for kwargs, message in [
        (dict(seq_len=0, batch=1), "seq_len and batch must be >= 1"),
        (dict(seq_len=1, batch=0), "seq_len and batch must be >= 1"),
        (dict(seq_len=1, dtype="int8"), "activation dtype must be one of fp32, bf16, fp16, fp8, got 'int8'"),
    ]:
        with pytest.raises(FfnlabError) as err:
            activation_memory(small(), **kwargs)
        assert str(err.value) == message
    with pytest.raises(FfnlabError) as err:
        layer_activation_terms(small(), 0, seq_len=1, batch=1, dtype="int8")
    assert str(err.value) == "activation dtype must be one of fp32, bf16, fp16, fp8, got 'int8'"
