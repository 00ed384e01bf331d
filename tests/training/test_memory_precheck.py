"""The trainer's memory pre-check (``ffnlab.training.memory``) is the sizing model, and a run whose
tensors fit is never refused.

The oracle is the run itself: one optimizer step of the model ``train`` builds, on CPU in fp32,
with ``torch.optim.AdamW`` as the trainer makes it; the bytes held are the parameters, their
gradients, the optimizer's state tensors and every tensor autograd saves for backward (counted
with ``saved_tensors_hooks``, each storage once). The ReLU case at 1,024 tokens is the one the
old, second activation formula overstated 4.9 times.
"""

from __future__ import annotations

import pytest
import torch
from saved_tensors import saved_storages

from ffnlab.training import runconfig
from ffnlab.training.memory import check_fits, estimate
from ffnlab.training.nn import build_model
from ffnlab.training.trainer import make_optimizer

CASES = {
    "relu at 1024 tokens": ["model.ffn.kind=relu", "train.seq_len=1024", "train.batch_size=2"],
    "swiglu default": ["train.seq_len=128", "train.batch_size=8"],
    "gelu moe": ["model.ffn.kind=gelu", "model.ffn.n_experts=4", "model.ffn.top_k=2", "train.seq_len=64",
                 "train.batch_size=4"],
}


def measured_bytes(cfg: runconfig.RunConfig, vocab: int) -> int:
    mc = runconfig.model_config(cfg, vocab)
    model = build_model(mc, seed=0, max_seq_len=cfg.train.seq_len)
    opt = make_optimizer(model, cfg, "cpu")
    t = cfg.train
    idx, targets = torch.randint(0, vocab, (2, t.batch_size, t.seq_len), generator=torch.Generator().manual_seed(0))
    with saved_storages(model) as saved:
        _, loss, aux = model(idx, targets)
    (loss if aux is None else loss + aux).backward()
    opt.step()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    state = sum(v.numel() * v.element_size() for s in opt.state.values() for k, v in s.items()
                if torch.is_tensor(v) and k != "step")
    return params + grads + state + sum(saved.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_run_that_fits_is_not_refused(name: str) -> None:
    cfg = runconfig.load(None, ["model.d_model=64", "model.n_layers=2", "model.n_heads=4", *CASES[name]])
    need = estimate(cfg, 256)
    measured = measured_bytes(cfg, 256)
    print(f"{name}: estimated {need.device:,} B, measured {measured:,} B ({need.device / measured - 1:+.3%})")
    assert abs(need.device / measured - 1) < 0.001  # the remainder: a few scalars (loss weights)
    # a machine with exactly what the run holds (and the batch offsets) is not refused ...
    assert check_fits(cfg, "cpu", vocab_size=256, ram=measured + need.batch_index + 64) == need
    # ... and one short of the estimate is, with the numbers
    with pytest.raises(Exception, match="needs about"):
        check_fits(cfg, "cpu", vocab_size=256, ram=need.total - 1)


def test_gpu_budget_uses_the_bf16_activations_of_autocast() -> None:
    cfg = runconfig.load(None, ["model.d_model=64", "model.n_layers=2", "model.n_heads=4", "train.seq_len=128"])
    on_cuda, on_cpu = estimate(cfg, 256, device="cuda:0"), estimate(cfg, 256, device="cpu")
    assert on_cuda.state == on_cpu.state and on_cuda.activations < on_cpu.activations
    assert estimate(cfg, 256, world_size=2).buckets == on_cpu.state // 4  # DDP: an fp32 copy of the gradients
