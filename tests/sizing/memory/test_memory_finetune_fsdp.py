"""LoRA with the frozen base sharded by FSDP2, against what each rank really holds.

Two CPU processes (gloo, ``torch.multiprocessing`` spawn) build a small transformers Llama, add
peft LoRA adapters, ``fully_shard`` each decoder layer and the whole model (FSDP2, ZeRO-3-like),
and take one AdamW step. Each rank then sums the bytes of its local shards: the frozen base's
parameters, the adapters' parameters, their gradients and AdamW's ``exp_avg`` / ``exp_avg_sq``
(the scalar ``step`` counters left out). ffnlab's per-GPU states for the same model on ``--dp 2
--zero 3`` (:func:`ffnlab.sizing.finetune.finetune_states`, pure arithmetic) must agree with
both ranks; without sharding (one process) every figure is the whole.

The model's dimensions are even, so FSDP's padding of each first dimension to a multiple of the
world size adds nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from ffnlab.sizing.config import make_config
from ffnlab.sizing.finetune import finetune_states, lora_params

D, LAYERS, HEADS, KV, FF, VOCAB, RANK = 64, 2, 4, 2, 160, 128, 8
TARGETS = {"attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
           "all-linear": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}


def ffnlab_config():
    from dataclasses import replace

    cfg = make_config(D, LAYERS, HEADS, FF, kind="swiglu", n_kv_heads=KV, vocab_size=VOCAB, tied_embeddings=False)
    return replace(cfg, attn=replace(cfg.attn, qkv_fused=False))  # transformers' separate q, k, v


def _local(t: torch.Tensor | None) -> int:
    if t is None:
        return 0
    t = t.to_local() if hasattr(t, "to_local") else t
    return t.numel() * t.element_size()


def _measure(targets: list[str], shard: bool) -> dict[str, int]:
    from peft import LoraConfig, get_peft_model
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    hf = LlamaConfig(hidden_size=D, intermediate_size=FF, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                     num_key_value_heads=KV, vocab_size=VOCAB, tie_word_embeddings=False, max_position_embeddings=64)
    model = get_peft_model(LlamaForCausalLM(hf), LoraConfig(r=RANK, lora_alpha=16, target_modules=targets,
                                                            lora_dropout=0.0))
    if shard:
        layers = [m for m in model.modules() if type(m).__name__ == "LlamaDecoderLayer"]
        assert len(layers) == LAYERS
        for layer in layers:
            fully_shard(layer)
        fully_shard(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    ids = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(0))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    frozen = sum(_local(p) for p in model.parameters() if not p.requires_grad)
    adapters = sum(_local(p) for p in model.parameters() if p.requires_grad)
    grads = sum(_local(p.grad) for p in model.parameters() if p.requires_grad)
    state = sum(_local(v) for s in opt.state.values() for k, v in s.items() if k != "step")
    return {"base": frozen, "adapters": adapters, "grads": grads, "optimizer": state}


def _rank(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        found = {name: _measure(t, shard=True) for name, t in TARGETS.items()}
    finally:
        dist.destroy_process_group()
    Path(f"{out}.{rank}").write_text(json.dumps(found))


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> list[dict[str, dict[str, int]]]:
    import torch.multiprocessing as mp

    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    d = tmp_path_factory.mktemp("lora-fsdp")
    out = d / "states"
    old = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        mp.start_processes(_rank, args=(2, str(d / "store"), str(out)), nprocs=2, start_method="spawn")
    finally:
        if old is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = old
    return [json.loads(Path(f"{out}.{r}").read_text()) for r in range(2)]


def _ffnlab(name: str, dp: int, zero: int) -> dict[str, Any]:
    targets = ("attention",) if name == "attention" else ("attention", "ffn")
    lora = lora_params(ffnlab_config(), RANK, targets)
    st = finetune_states(ffnlab_config(), lora, mode="lora", dtype="fp32", optimizer="adamw", dp=dp, zero=zero)
    return {"base": st.base_weights, "adapters": st.adapter_weights, "grads": st.adapter_gradients,
            "optimizer": st.adapter_optimizer}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_lora_states_per_rank_under_fsdp2(measured: list[dict[str, dict[str, int]]], name: str) -> None:
    est = _ffnlab(name, dp=2, zero=3)
    for rank, got in enumerate(measured):
        print(f"{name}, rank {rank}: measured {got[name]}, ffnlab {est}")
        assert got[name] == est


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_lora_states_unsharded(name: str) -> None:
    assert _measure(TARGETS[name], shard=False) == _ffnlab(name, dp=1, zero=0)


@pytest.mark.parametrize(("zero", "sharded"), [(0, set()), (1, {"optimizer"}), (2, {"optimizer", "grads"}),
                                               (3, {"optimizer", "grads", "base", "adapters"})])
def test_each_zero_stage_shards_its_states(zero: int, sharded: set[str]) -> None:
    """ZeRO's stages (Rajbhandari et al. 2020): 1 the optimizer states, 2 also the gradients,
    3 also the parameters, frozen or not."""
    whole, split = _ffnlab("all-linear", dp=1, zero=0), _ffnlab("all-linear", dp=4, zero=zero)
    for key, value in whole.items():
        assert split[key] == (-(-value // 4) if key in sharded else value), key
