"""The CUDA paths: bf16 autocast, fused AdamW, torch.compile, resume and export from a GPU run.

Marked ``cuda`` and skipped without a CUDA device; ``make gpu-check`` runs them (``pytest -m cuda``)
on a GPU machine. The data is a small text file each test writes, so nothing is needed beyond
torch, transformers and ffnlab.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from ffnlab.training import runconfig
from ffnlab.training.runfiles import read_records

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

DEVICE = "cuda:0"
WORDS = ("the", "king", "doth", "speak", "of", "war", "and", "love", "my", "lord", "thou", "art", "a", "fool",
         "good", "night", "sweet", "prince", "to", "be", "or", "not")


def corpus(tmp: Path) -> Path:
    """About 60 kB of pseudo-sentences from a fixed generator (its last 10% is validation)."""
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, len(WORDS), (12000,), generator=g).tolist()
    lines = [" ".join(WORDS[i] for i in idx[k:k + 12]) + "." for k in range(0, len(idx), 12)]
    path = tmp / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tmp: Path, **train: object) -> runconfig.RunConfig:
    return runconfig.from_dict({
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 2},
        "data": {"corpus": str(corpus(tmp)), "tokenizer": "byte", "cache_dir": str(tmp / "cache")},
        "train": {"seq_len": 64, "batch_size": 16, "max_steps": 40, "warmup_steps": 5, "lr": 0.003,
                  "eval_every": 20, "eval_tokens": 2048, "log_every": 1, "checkpoint_every": 20,
                  "device": DEVICE, "dtype": "auto", "tensorboard": False, "progress": "off",
                  "peak_flops": 1e15, **train},
    })


def losses(run: Path, kind: str = "train", key: str = "loss") -> list[float]:
    return [r[key] for r in read_records(run / "metrics.jsonl") if r["kind"] == kind]


def test_bf16_steps_train_on_cuda(tmp_path):
    from ffnlab.training.trainer import _autocast, train

    with _autocast(DEVICE, "auto"):
        y = torch.nn.Linear(8, 8).to(DEVICE)(torch.randn(4, 8, device=DEVICE))
    assert y.dtype == torch.bfloat16  # "auto" on CUDA means bf16 autocast
    summary = train(config(tmp_path), tmp_path / "run")
    assert summary["device"].startswith("cuda") and summary["steps"] == 40
    train_losses = losses(tmp_path / "run")
    assert all(math.isfinite(x) for x in train_losses) and len(train_losses) == 40
    # bytes of a 22-word vocabulary: far below the uniform 256-way entropy after 40 steps
    assert train_losses[-1] < 0.6 * math.log(256) and summary["final_val_loss"] < 0.6 * math.log(256)


def test_fused_adamw_matches_the_plain_implementation():
    from ffnlab.training.nn import build_model
    from ffnlab.training.trainer import make_optimizer

    cfg = runconfig.from_dict({"model": {"d_model": 64, "n_layers": 2, "n_heads": 2}})
    mcfg = runconfig.model_config(cfg, 256)
    fused_model = build_model(mcfg, seed=0).to(DEVICE)
    plain_model = build_model(mcfg, seed=0).to(DEVICE)
    fused = make_optimizer(fused_model, cfg, DEVICE)
    assert fused.defaults["fused"] is True
    plain = torch.optim.AdamW([{"params": [p for p in plain_model.parameters() if p.dim() >= 2],
                                "weight_decay": cfg.train.weight_decay},
                               {"params": [p for p in plain_model.parameters() if p.dim() < 2], "weight_decay": 0.0}],
                              lr=cfg.train.lr, betas=(cfg.train.beta1, cfg.train.beta2), foreach=False)
    idx = torch.randint(0, 256, (4, 32), device=DEVICE)
    for _ in range(3):
        for model, opt in ((fused_model, fused), (plain_model, plain)):
            model(idx, idx)[1].backward()
            opt.step()
            opt.zero_grad()
    for a, b in zip(fused_model.parameters(), plain_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


class AllKinds(torch.nn.Module):
    """Every FFN kind applied to the same input, in one module: one torch.compile covers them all."""

    def __init__(self, ffns: torch.nn.ModuleDict):
        super().__init__()
        self.ffns = ffns

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        outs = {k: m(x) for k, m in self.ffns.items()}
        return {k: (o[0] if isinstance(o, tuple) else o) for k, o in outs.items()}  # MoE: (y, aux)


def test_compile_every_ffn_kind_matches_eager():
    from ffnlab.sizing.config import FFNSpec
    from ffnlab.sizing.kinds import FFN_KINDS
    from ffnlab.training.nn import DenseFFN, build_ffn

    torch.manual_seed(0)
    ffns = torch.nn.ModuleDict({k: DenseFFN(64, 96, k) for k in FFN_KINDS})
    ffns["moe"] = build_ffn(64, FFNSpec("swiglu", 96, n_experts=4, top_k=2))
    eager = AllKinds(ffns).to(DEVICE)
    compiled = torch.compile(eager)
    x = torch.randn(8, 16, 64, device=DEVICE)
    comp_out, eager_out = compiled(x), eager(x)
    assert set(comp_out) == set(FFN_KINDS) | {"moe"}
    for k in eager_out:
        torch.testing.assert_close(comp_out[k], eager_out[k], rtol=1e-4, atol=1e-4, msg=k)
    sum(o.square().mean() for o in comp_out.values()).backward()
    grads = {n: p.grad.clone() for n, p in eager.named_parameters()}
    eager.zero_grad()
    sum(o.square().mean() for o in eager(x).values()).backward()
    for n, p in eager.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, rtol=1e-3, atol=1e-5, msg=n)


def test_compiled_lm_trains_like_eager(tmp_path):
    from ffnlab.training.trainer import train

    common = {"max_steps": 8, "eval_every": 8, "checkpoint_every": 8}
    train(config(tmp_path, **common), tmp_path / "eager")
    train(config(tmp_path, compile=True, **common), tmp_path / "compiled")
    a, b = losses(tmp_path / "eager"), losses(tmp_path / "compiled")
    assert len(a) == len(b) == 8
    for x, y in zip(a, b, strict=True):  # bf16 autocast: fused kernels round differently
        assert y == pytest.approx(x, rel=2e-2)


def test_resume_on_cuda_matches_the_uninterrupted_run(tmp_path):
    from ffnlab.training.trainer import train

    run = tmp_path / "run"
    cfg = config(tmp_path)
    train(cfg, run)
    first = {k: losses(run, k, key) for k, key in (("train", "loss"), ("eval", "val_loss"))}
    shutil.rmtree(run / "checkpoints" / "step-0000040")  # as if killed between step 20 and 40
    (run / "summary.json").unlink()
    train(cfg, run, resume=True)
    again = {k: losses(run, k, key) for k, key in (("train", "loss"), ("eval", "val_loss"))}
    assert len(again["train"]) == 40 and again["train"][:20] == first["train"][:20]  # kept as written
    for k in first:  # GPU kernels need not be bit-reproducible; the curve must agree closely
        assert again[k] == pytest.approx(first[k], rel=1e-2), k


def test_export_from_a_cuda_run(tmp_path):
    transformers = pytest.importorskip("transformers")
    from ffnlab.training.export import export_model, load_run_model
    from ffnlab.training.trainer import train

    run = tmp_path / "run"
    train(config(tmp_path, max_steps=10, eval_every=10, checkpoint_every=10), run)
    ours = load_run_model(run)  # rebuilt on the CPU from the checkpoint the GPU wrote
    hf = export_model(ours, tmp_path / "hf")
    assert json.loads((hf / "config.json").read_text())["model_type"] == "llama"
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(hf)).eval()
    idx = torch.randint(0, 256, (2, 32))
    with torch.no_grad():
        assert (ours(idx)[0] - theirs(idx).logits).abs().max().item() < 1e-4
        on_gpu = ours.to(DEVICE)(idx.to(DEVICE))[0].cpu()  # fp32 on the GPU: the same function
        assert (on_gpu - theirs(idx).logits).abs().max().item() < 1e-3


def test_no_host_sync_between_log_steps(tmp_path, monkeypatch):
    from ffnlab.training import trainer

    def sync_free(fn, skip_first: bool):  # noqa: ANN001, ANN202 - CUDA raises on any synchronising call
        def wrapped(*args):  # noqa: ANN002, ANN202
            if skip_first and args[1] == 0:  # the first step initialises optimizer state and pinned memory
                return fn(*args)
            torch.cuda.set_sync_debug_mode("error")
            try:
                return fn(*args)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        return wrapped

    monkeypatch.setattr(trainer, "_train_step", sync_free(trainer._train_step, True))
    monkeypatch.setattr(trainer.LossWatch, "observe", sync_free(trainer.LossWatch.observe, False))
    every = {"max_steps": 8, "log_every": 8, "eval_every": 8, "checkpoint_every": 8}
    trainer.train(config(tmp_path, **every), tmp_path / "run")  # sampling, copies, steps 2-7: no sync
    assert [r["step"] for r in read_records(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "train"] == [1, 8]
