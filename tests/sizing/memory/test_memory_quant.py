"""Quantised weight formats against published checkpoint sizes (and hand arithmetic where none is
published). Sizes in GB are 10^9 bytes, as the Hugging Face Hub and these model cards print them."""

from __future__ import annotations

import math

import pytest

from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.quant import FORMATS, weight_bytes
from ffnlab.sizing.shapes import matrices
from ffnlab.sizing.zoo import find

# (zoo model, format, group size, published size in bytes, tolerance, source)
PUBLISHED = [
    # TheBloke's READMEs, "Provided files" tables, for Llama-2-70B fine-tunes (the architecture of
    # meta-llama/Llama-2-70b-hf; the weights' values do not change the size)
    ("llama-2-70b", "awq", 128, 36.61e9, 0.001,
     "TheBloke/Synthia-70B-v1.2b-AWQ README: main, 4-bit, GS 128, 36.61 GB (TheBloke/Llama-2-70B-AWQ: the same)"),
    ("llama-2-70b", "gptq", 0, 35.33e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: main, 4-bit, GS None, act order, 35.33 GB"),
    ("llama-2-70b", "gptq", 128, 36.65e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: gptq-4bit-128g-actorder_True, 36.65 GB"),
    ("llama-2-70b", "gptq", 32, 40.66e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: gptq-4bit-32g-actorder_True, 40.66 GB"),
    ("llama-2-70b", "gptq-3bit", 0, 26.77e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: gptq-3bit--1g-actorder_True, 26.77 GB"),
    ("llama-2-70b", "gptq-3bit", 128, 28.03e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: gptq-3bit-128g-actorder_True, 28.03 GB"),
    ("llama-2-70b", "gptq-3bit", 32, 31.84e9, 0.001,
     "TheBloke/vigogne-2-70B-chat-GPTQ README: gptq-3bit-32g-actorder_True, 31.84 GB"),
    # OpenAI's gpt-oss model card (arXiv:2508.10925), checkpoint sizes 60.8 GiB and 12.8 GiB (one decimal)
    ("gpt-oss-120b", "mxfp4", None, 60.8 * 2**30, 0.001, "gpt-oss model card: gpt-oss-120b checkpoint 60.8 GiB"),
    ("gpt-oss-20b", "mxfp4", None, 12.8 * 2**30, 0.004, "gpt-oss model card: gpt-oss-20b checkpoint 12.8 GiB"),
]


@pytest.mark.parametrize("model, fmt, group, size, tol, source", PUBLISHED,
                         ids=[f"{m}-{f}-{g}" for m, f, g, *_ in PUBLISHED])
def test_published_checkpoint_sizes(model: str, fmt: str, group: int | None, size: float, tol: float,
                                    source: str) -> None:
    got = weight_bytes(find(model).config(), fmt, group_size=group).total
    err = got / size - 1
    print(f"{model} {fmt} g{group}: ffnlab {got / 1e9:.3f} GB, published {size / 1e9:.3f} GB ({source}): {err:+.3%}")
    assert abs(err) < tol


def test_deepseek_v3_fp8_block_checkpoint() -> None:
    # deepseek-ai/DeepSeek-V3 safetensors, all weight files of the repository at commit afb92e1f:
    # 688,586,727,753 bytes (a stored model-artifact record, search index id 59118868630). The
    # checkpoint holds the MTP layer too, with its own embedding and head copies.
    got = weight_bytes(find("deepseek-v3").config(), "fp8-block128", mtp=True).total
    err = got / 688_586_727_753 - 1
    print(f"DeepSeek-V3 fp8 block-128 with MTP: {got:,} B, {err:+.4%}")
    assert abs(err) < 0.001


def test_nf4_double_quant_is_4_127_bits_per_weight() -> None:
    # QLoRA (Dettmers et al. 2023) §3: double quantisation brings the constants from 32/64 = 0.5
    # bits to 8/64 + 32/(64 x 256) = 0.127 bits per parameter, on top of the 4-bit values
    cfg = make_config(4096, 1, 32, 16384, kind="swiglu", vocab_size=1000)
    w = weight_bytes(cfg, "nf4")
    n_mats = sum(m.count for m in matrices(cfg) if m.part in FORMATS["nf4"].parts)
    code_tables = n_mats * (256 + 16) * 4
    bits = 8 * (w.data + w.scales - code_tables) / w.quantised_params
    assert bits == pytest.approx(4 + 8 / 64 + 32 / (64 * 256), abs=1e-9)


def test_fp8_scales_by_granularity_hand_arithmetic() -> None:
    cfg = make_config(256, 2, 4, 1024, kind="swiglu", vocab_size=1000)  # q k v o 256x256, gate up 256x1024, down
    q = 2 * (4 * 256 * 256 + 3 * 256 * 1024)
    rest = weight_bytes(cfg, "bf16").total // 2 - q
    tensor = weight_bytes(cfg, "fp8")
    assert tensor.scales == 2 * 7 * 4 and tensor.total == q + 56 + 2 * rest
    channel = weight_bytes(cfg, "fp8-channel")  # one fp32 per output row: 4 x 256 + 2 x 1024 + 256 per layer
    assert channel.scales == 2 * (4 * 256 + 2 * 1024 + 256) * 4
    block = weight_bytes(cfg, "fp8-block128")  # 128 x 128 tiles: 4 x (2 x 2) + 2 x (8 x 2) + (2 x 8) per layer
    assert block.scales == 2 * (4 * 4 + 2 * 16 + 16) * 4
    mx = weight_bytes(cfg, "mxfp4")  # dense model: MXFP4 converts routed experts only, so nothing here
    assert mx.quantised_params == 0 and mx.total == weight_bytes(cfg, "bf16").total


def test_awq_and_gptq_layouts_hand_arithmetic() -> None:
    cfg = make_config(256, 1, 4, 1024, kind="swiglu", vocab_size=1000)
    q = 4 * 256 * 256 + 3 * 256 * 1024
    # AWQ: per group of 128 inputs and per output column, an fp16 scale and a 4-bit zero
    groups_x_out = 4 * 2 * 256 + 2 * 2 * 1024 + 8 * 256
    assert weight_bytes(cfg, "awq").scales == math.ceil(groups_x_out * 2.5)
    # GPTQ adds an int32 g_idx per input row of each matrix: 6 x 256 + 1024
    assert weight_bytes(cfg, "gptq").scales == math.ceil(groups_x_out * 2.5) + 4 * (6 * 256 + 1024)
    assert weight_bytes(cfg, "awq").data == q // 2


@pytest.mark.parametrize("raw", [
    {"model_type": "llama", "hidden_size": 128, "intermediate_size": 320, "num_hidden_layers": 2,
     "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 101, "tie_word_embeddings": False},
    {"model_type": "deepseek_v3", "hidden_size": 128, "intermediate_size": 256, "moe_intermediate_size": 64,
     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 48,
     "kv_lora_rank": 32, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 16, "n_routed_experts": 4,
     "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "vocab_size": 101,
     "tie_word_embeddings": False, "n_group": 1, "topk_group": 1},
], ids=["llama", "deepseek_v3"])
def test_matrix_shapes_match_transformers(raw: dict) -> None:
    """The matrices the formats quantise are the weights transformers builds, shape for shape."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from ffnlab.sizing.hf import from_hf_dict

    hf_cfg = AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_cfg)
    theirs: dict[tuple[int, int], int] = {}
    for name, p in model.named_parameters():
        if p.dim() == 2:
            key = (p.shape[1], p.shape[0])  # Linear [out, in] and Embedding [vocab, d]: (fan_in, fan_out)
            theirs[key] = theirs.get(key, 0) + 1
        elif p.dim() == 3:  # fused experts: [experts, out, in] (or gate_up fused as 2 x out)
            e, a, b = p.shape
            if "gate_up" in name:
                theirs[(b, a // 2)] = theirs.get((b, a // 2), 0) + 2 * e
            else:
                theirs[(b, a)] = theirs.get((b, a), 0) + e
    ours: dict[tuple[int, int], int] = {}
    for m in matrices(from_hf_dict(raw)):
        ours[(m.fan_in, m.fan_out)] = ours.get((m.fan_in, m.fan_out), 0) + m.count
    assert ours == theirs
