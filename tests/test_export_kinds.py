"""Export of every FFN kind and norm the Hugging Face layouts hold, and refusal of the rest.

Oracle: transformers' own model, loaded from the exported folder, must load every weight it has
(none missing, none left over) and give ffnlab's logits. Weights are redrawn with unit scale
first: at the 0.02 initialisation every activation is nearly linear and a wrong activation or
norm mapping would hide below the tolerance; ``test_the_oracle_sees_a_wrong_activation`` shows
that at this scale it does not.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from cli_inproc import run_cli
from cli_run import assert_usage_error

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.training.export import export_model
from ffnlab.training.nn import build_model

transformers = pytest.importorskip("transformers")

GATED = sorted(k for k, v in FFN_KINDS.items() if v.gated)  # the Llama layout
PLAIN = sorted(k for k, v in FFN_KINDS.items() if not v.gated)  # the GPT-2 layout
VOCAB, SEQ = 40, 12
TOL = 1e-5  # max |logit difference| / max |logit|; float32 round trips measure below 1e-6


def llama_cfg(kind: str, **kw: object) -> ModelConfig:
    attn, ffn = kw.pop("attn", AttentionSpec(n_heads=4, n_kv_heads=2)), kw.pop("ffn", FFNSpec(kind, 24))
    return validate(ModelConfig(d_model=32, n_layers=2, vocab_size=VOCAB, ffn=ffn, attn=attn, norm="rmsnorm", positions="rope", max_positions=SEQ, **kw))


def gpt2_cfg(kind: str, **kw: object) -> ModelConfig:
    return validate(ModelConfig(d_model=32, n_layers=2, vocab_size=VOCAB, ffn=kw.pop("ffn", FFNSpec(kind, 40)),
                                attn=kw.pop("attn", AttentionSpec(n_heads=4)), norm=kw.pop("norm", "layernorm"),
                                positions="learned", max_positions=SEQ, **kw))


def scrambled(cfg: ModelConfig, seed: int = 0) -> torch.nn.Module:
    """ffnlab's model with every parameter (norm gains and biases too) drawn from N(0, 0.5^2)."""
    model = build_model(cfg, seed=seed, max_seq_len=SEQ, norm_eps=1e-5)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
    return model.eval()


def load_hf(folder: Path) -> torch.nn.Module:
    model, info = transformers.AutoModelForCausalLM.from_pretrained(str(folder), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info  # every weight came from us
    return model.eval()


def max_rel_diff(ours: torch.nn.Module, theirs: torch.nn.Module) -> float:
    idx = torch.randint(0, VOCAB, (3, SEQ), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        a, b = ours(idx)[0], theirs(idx).logits
    return ((a - b).abs().max() / a.abs().max()).item()


def round_trip(cfg: ModelConfig, tmp_path: Path) -> tuple[torch.nn.Module, torch.nn.Module]:
    ours = scrambled(cfg)
    export_model(ours, tmp_path / "hf")
    return ours, load_hf(tmp_path / "hf")


LLAMA_VARIANTS = {
    "gqa-tied": {},
    "mha-untied": {"attn": AttentionSpec(n_heads=4), "tied_embeddings": False},
    "mqa-head-dim-16": {"attn": AttentionSpec(n_heads=4, n_kv_heads=1, head_dim=16)},  # d_attn 64 != d_model
    "biases": {"attn": AttentionSpec(n_heads=4, n_kv_heads=2, qkv_bias=True), "ffn_bias": True},
}


@pytest.mark.parametrize("variant", LLAMA_VARIANTS)
@pytest.mark.parametrize("kind", GATED)
def test_gated_kinds_round_trip_through_llama(tmp_path, kind, variant):
    kw = dict(LLAMA_VARIANTS[variant])
    cfg = llama_cfg(kind, **{k: v for k, v in kw.items() if k != "ffn_bias"})
    if kw.get("ffn_bias"):
        cfg = dataclasses.replace(cfg, ffn=dataclasses.replace(cfg.ffn, bias=True))
    ours, theirs = round_trip(cfg, tmp_path)
    assert type(theirs).__name__ == "LlamaForCausalLM"
    assert max_rel_diff(ours, theirs) < TOL


@pytest.mark.parametrize("norm", ["layernorm", "layernorm-nobias"])
@pytest.mark.parametrize("kind", PLAIN)
def test_plain_kinds_round_trip_through_gpt2(tmp_path, kind, norm):
    cfg = gpt2_cfg(kind, norm=norm, tied_embeddings=norm == "layernorm",
                   ffn=FFNSpec(kind, 40, bias=norm == "layernorm"),
                   attn=AttentionSpec(n_heads=4, qkv_bias=norm == "layernorm", out_bias=norm == "layernorm"))
    ours, theirs = round_trip(cfg, tmp_path)
    assert type(theirs).__name__ == "GPT2LMHeadModel"
    assert max_rel_diff(ours, theirs) < TOL
    # transformers holds exactly ffnlab's parameters (missing biases written as zeros add only those)
    n_hf = sum(p.numel() for p in theirs.parameters())
    n_ours = sum(p.numel() for p in ours.parameters())
    zero_biases = 0 if norm == "layernorm" else cfg.n_layers * (2 * 32 + 3 * 32 + 32 + 40 + 32) + 32
    assert n_hf == n_ours + zero_biases


def test_the_oracle_sees_a_wrong_activation(tmp_path):
    """The closest pair of activations (exact GELU vs its tanh form) lands well above TOL."""
    ours, _ = round_trip(gpt2_cfg("gelu"), tmp_path)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["activation_function"] == "gelu"
    config["activation_function"] = "gelu_new"
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    assert max_rel_diff(ours, load_hf(tmp_path / "hf")) > 5 * TOL


REFUSED = {
    "moe": (llama_cfg("swiglu", ffn=FFNSpec("swiglu", 24, n_experts=2, top_k=1)), "MoE"),
    "lm-head-bias": (llama_cfg("swiglu", tied_embeddings=False, lm_head_bias=True), "LM-head bias"),
    "plain-with-rmsnorm-rope": (llama_cfg("gelu"), "needs a gated FFN"),
    "gated-with-layernorm": (gpt2_cfg("swiglu"), "gpt-2 layout needs a plain MLP"),
    "gpt2-with-gqa": (gpt2_cfg("gelu", attn=AttentionSpec(n_heads=4, n_kv_heads=2)), "no GQA"),
    "gpt2-with-head-dim": (gpt2_cfg("gelu", attn=AttentionSpec(n_heads=4, head_dim=16)), "head_dim"),
    "parameter-free-norm": (gpt2_cfg("gelu", norm="none"), "norm=none"),
    "rope-with-layernorm": (dataclasses.replace(gpt2_cfg("gelu"), positions="rope"), "positions=rope"),
    "no-positions": (dataclasses.replace(llama_cfg("swiglu"), positions="none"), "positions=none"),
    "heads-do-not-divide": (llama_cfg("swiglu", attn=AttentionSpec(n_heads=3, head_dim=8)), "divide d_model"),
    "no-final-norm": (llama_cfg("swiglu", final_norm=False), "final norm"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_unsupported_configs_are_refused_with_the_reason(tmp_path, name):
    cfg, fragment = REFUSED[name]
    model = build_model(cfg, seed=0, max_seq_len=SEQ)
    with pytest.raises(FfnlabError, match=f"(?i){fragment}"):
        export_model(model, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()  # nothing half-written


TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=16", "train.batch_size=4",
        "train.max_steps=4", "train.checkpoint_every=2", "train.keep_last=5", "train.eval_tokens=256",
        "train.progress=off", "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11",
        "train.lr=0.05", "train.warmup_steps=0"]


def test_export_checkpoint_by_name(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"  # a small local corpus: nothing to download, little to tokenise
    corpus.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(400)))
    data = [f"data.corpus={corpus}", f"data.cache_dir={tmp_path / 'cache'}"]
    out = tmp_path / "run"
    p = run_cli(capsys, "train", "--out", str(out), *[a for s in [*TINY, *data] for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    assert sorted(c.name for c in (out / "checkpoints").iterdir()) == ["step-0000002", "step-0000004"]
    from safetensors.torch import load_model

    cfg = ModelConfig.from_dict(json.loads((out / "model.json").read_text())["model"])

    def weights_of(step: str) -> torch.nn.Module:  # read the checkpoint file directly, not via export
        model = build_model(cfg, max_seq_len=16)
        load_model(model, str(out / "checkpoints" / step / "model.safetensors"))
        return model.eval()

    early, late = weights_of("step-0000002"), weights_of("step-0000004")
    p = run_cli(capsys, "export", str(out), "--hf", str(tmp_path / "hf2"), "--checkpoint", "step-0000002")
    assert p.returncode == 0, p.stderr
    p = run_cli(capsys, "export", str(out), "--hf", str(tmp_path / "hf-latest"))
    assert p.returncode == 0, p.stderr
    hf2, latest = load_hf(tmp_path / "hf2"), load_hf(tmp_path / "hf-latest")
    idx = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want2, want4 = early(idx)[0], late(idx)[0]
        got2, got4 = hf2(idx).logits, latest(idx).logits
    assert (want2 - want4).abs().max() > 1e-3  # two steps at lr 0.05 moved the weights
    assert torch.allclose(got2, want2, atol=1e-5) and torch.allclose(got4, want4, atol=1e-5)
    missing = run_cli(capsys, "export", str(out), "--hf", str(tmp_path / "hf9"), "--checkpoint", "step-0000009")
    assert_usage_error(missing, "step-0000009")
    assert "step-0000002" in missing.stderr  # the error lists the checkpoints there are
    assert not (tmp_path / "hf9").exists()
