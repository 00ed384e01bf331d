"""Export of every FFN kind, norm and position scheme ffnlab trains, and refusal of the rest.

Oracle: transformers' own model, loaded from the exported folder, must load every weight it has
(none missing, none left over) and give ffnlab's logits. Weights are redrawn with unit scale
first: at the 0.02 initialisation every activation is nearly linear and a wrong activation or
norm mapping would hide below the tolerance; ``test_the_oracle_sees_a_wrong_activation`` shows
that at this scale it does not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from cli_inproc import run_cli
from cli_run import assert_usage_error

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
from ffnlab.sizing.kinds import FFN_KINDS
from ffnlab.training.export import export_model, export_refusal
from ffnlab.training.nn import build_model

transformers = pytest.importorskip("transformers")

GATED = sorted(k for k, v in FFN_KINDS.items() if v.gated)
PLAIN = sorted(k for k, v in FFN_KINDS.items() if not v.gated)
VOCAB, SEQ = 40, 12
TOL = 1e-5  # max |logit difference| / max |logit|; float32 round trips measure below 1e-6


def make_cfg(kind: str, norm: str, positions: str, **kw: object) -> ModelConfig:
    attn = kw.pop("attn", AttentionSpec(n_heads=4, n_kv_heads=2))
    ffn = kw.pop("ffn", FFNSpec(kind, 24 if FFN_KINDS[kind].gated else 40))
    return validate(ModelConfig(d_model=32, n_layers=2, vocab_size=VOCAB, ffn=ffn, attn=attn, norm=norm,
                                positions=positions, max_positions=SEQ, **kw))


def llama_cfg(kind: str, **kw: object) -> ModelConfig:
    return make_cfg(kind, "rmsnorm", "rope", **kw)


def gpt2_cfg(kind: str, **kw: object) -> ModelConfig:
    return make_cfg(kind, kw.pop("norm", "layernorm"), "learned", attn=kw.pop("attn", AttentionSpec(n_heads=4)), **kw)


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


def with_biases(cfg: ModelConfig, qkv: bool = True, out: bool = True, ffn: bool = True) -> ModelConfig:
    return dataclasses.replace(cfg, attn=dataclasses.replace(cfg.attn, qkv_bias=qkv, out_bias=out),
                               ffn=dataclasses.replace(cfg.ffn, bias=ffn))


VARIANTS = {
    "gqa-tied": {},
    "mha-untied": {"attn": AttentionSpec(n_heads=4), "tied_embeddings": False},
    "mqa-head-dim-16": {"attn": AttentionSpec(n_heads=4, n_kv_heads=1, head_dim=16)},  # d_attn 64 != d_model
}


def variant_cfg(kind: str, norm: str, variant: str) -> ModelConfig:
    if variant == "biases":
        return with_biases(make_cfg(kind, norm, "rope"))
    return make_cfg(kind, norm, "rope", **dict(VARIANTS[variant]))


# (norm, kinds, architecture, variants): every kind in the first variant, every variant with one kind
ROPE_LAYOUTS = [
    ("rmsnorm", GATED, "LlamaForCausalLM", [*VARIANTS, "biases"]),
    ("rmsnorm", PLAIN, "ArceeForCausalLM", [*VARIANTS, "biases"]),
    ("layernorm", GATED, "StableLmForCausalLM", ["gqa-tied", "mha-untied"]),
    ("layernorm-nobias", GATED, "StableLmForCausalLM", ["gqa-tied"]),
    ("layernorm", PLAIN, "Starcoder2ForCausalLM", [*VARIANTS, "biases"]),
    ("layernorm-nobias", PLAIN, "Starcoder2ForCausalLM", ["gqa-tied"]),
    ("none", GATED, "OlmoForCausalLM", ["gqa-tied", "mha-untied", "biases-attn"]),
]
ROPE_CASES = [(norm, kind, arch, variants[0]) for norm, kinds, arch, variants in ROPE_LAYOUTS for kind in kinds]
ROPE_CASES += [(norm, kinds[0], arch, v) for norm, kinds, arch, variants in ROPE_LAYOUTS for v in variants[1:]]


@pytest.mark.parametrize("norm, kind, arch, variant", ROPE_CASES)
def test_rope_models_round_trip(tmp_path, norm, kind, arch, variant):
    if variant == "biases-attn":  # OLMo: attention biases, none in the FFN
        cfg = with_biases(make_cfg(kind, norm, "rope"), ffn=False)
    else:
        cfg = variant_cfg(kind, norm, variant)
    ours, theirs = round_trip(cfg, tmp_path)
    assert type(theirs).__name__ == arch
    assert max_rel_diff(ours, theirs) < TOL


def test_stablelm_takes_qkv_biases(tmp_path):
    cfg = with_biases(make_cfg("swiglu", "layernorm", "rope"), out=False, ffn=False)
    ours, theirs = round_trip(cfg, tmp_path)
    assert type(theirs).__name__ == "StableLmForCausalLM" and max_rel_diff(ours, theirs) < TOL


@pytest.mark.parametrize("top_k, d_ff", [(1, 24), (2, 24), (2, 86)])  # 86: rows not 16-byte aligned
@pytest.mark.parametrize("kind", GATED)
def test_gated_moe_round_trips_through_mixtral(tmp_path, kind, top_k, d_ff):
    cfg = llama_cfg(kind, ffn=FFNSpec(kind, d_ff, n_experts=4, top_k=top_k))
    ours, theirs = round_trip(cfg, tmp_path)
    assert type(theirs).__name__ == "MixtralForCausalLM"
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


def test_the_oracle_sees_a_wrong_norm(tmp_path):
    """A LayerNorm model read as RMSNorm (Starcoder2 rewritten as Arcee) is far off: the norm matters."""
    ours, _ = round_trip(make_cfg("gelu", "layernorm-nobias", "rope"), tmp_path)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    config.update(architectures=["ArceeForCausalLM"], model_type="arcee", rms_norm_eps=1e-5, mlp_bias=False,
                  attention_bias=False)
    (tmp_path / "hf" / "config.json").write_text(json.dumps(config))
    from safetensors.torch import load_file, save_file

    weights = load_file(str(tmp_path / "hf" / "model.safetensors"))
    renamed = {k.replace("c_fc", "up_proj").replace("c_proj", "down_proj"): v for k, v in weights.items()
               if not k.endswith("norm.bias")}
    save_file(renamed, str(tmp_path / "hf" / "model.safetensors"))
    assert max_rel_diff(ours, load_hf(tmp_path / "hf")) > 5 * TOL


def test_max_position_embeddings_is_not_the_training_context_under_rope(tmp_path):
    round_trip(llama_cfg("swiglu"), tmp_path)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    # head_dim 32/4 = 8, theta 1e4: the slowest frequency is 1e4^(-6/8) = 1/1000 rad per position,
    # one turn in 2 pi x 1000 = 6283.2 positions (by hand)
    assert config["max_position_embeddings"] == 6283 > SEQ
    shutil.rmtree(tmp_path / "hf")
    round_trip(gpt2_cfg("gelu"), tmp_path)
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["n_positions"] == SEQ  # a table of SEQ rows


def test_exported_files_are_readable_by_others(tmp_path):
    round_trip(llama_cfg("swiglu"), tmp_path)
    old = os.umask(0o022)
    os.umask(old)
    for f in (tmp_path / "hf").iterdir():
        assert f.stat().st_mode & 0o777 == 0o666 & ~old, f.name  # safetensors alone writes 0600


REFUSED = {
    "moe-plain-experts": (llama_cfg("gelu", ffn=FFNSpec("gelu", 24, n_experts=2, top_k=1)), "plain gelu experts"),
    "moe-shared-experts": (llama_cfg("swiglu", ffn=FFNSpec("swiglu", 24, n_experts=2, top_k=1, n_shared_experts=1)),
                           "no shared experts"),
    "moe-layernorm": (make_cfg("swiglu", "layernorm", "rope", ffn=FFNSpec("swiglu", 24, n_experts=2, top_k=1)),
                      "RMSNorm \\+ RoPE"),
    "lm-head-bias": (llama_cfg("swiglu", tied_embeddings=False, lm_head_bias=True), "LM-head bias"),
    "gated-with-learned": (gpt2_cfg("swiglu"), "learned positions export only as GPT-2"),
    "rmsnorm-with-learned": (gpt2_cfg("gelu", norm="rmsnorm"), "learned positions export only as GPT-2"),
    "gpt2-with-gqa": (gpt2_cfg("gelu", attn=AttentionSpec(n_heads=4, n_kv_heads=2)), "no GQA"),
    "gpt2-with-head-dim": (gpt2_cfg("gelu", attn=AttentionSpec(n_heads=4, head_dim=16)), "head_dim"),
    "stablelm-with-head-dim": (make_cfg("swiglu", "layernorm", "rope", attn=AttentionSpec(n_heads=4, head_dim=16)),
                               "head_dim"),
    "stablelm-with-out-bias": (with_biases(make_cfg("swiglu", "layernorm", "rope"), ffn=False), "q/k/v only"),
    "parameter-free-norm-plain": (make_cfg("gelu", "none", "rope"), "parameter-free norm with a plain"),
    "olmo-ffn-bias": (with_biases(make_cfg("swiglu", "none", "rope")), "OLMo's FFN has no biases"),
    "no-positions": (dataclasses.replace(llama_cfg("swiglu"), positions="none"), "positions=none"),
    "heads-do-not-divide": (llama_cfg("swiglu", attn=AttentionSpec(n_heads=3, head_dim=8)), "divide d_model"),
    "no-final-norm": (llama_cfg("swiglu", final_norm=False), "final norm"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_unsupported_configs_are_refused_with_the_reason_and_a_fix(tmp_path, name):
    cfg, fragment = REFUSED[name]
    model = build_model(cfg, seed=0, max_seq_len=SEQ)
    with pytest.raises(FfnlabError, match=f"(?i){fragment}.*to train an exportable model use"):
        export_model(model, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()  # nothing half-written


def test_olmo_needs_its_fixed_epsilon():
    cfg = make_cfg("swiglu", "none", "rope")
    assert export_refusal(cfg, 1e-5) is None
    assert "model.norm_eps=1e-05" in (export_refusal(cfg, 1e-6) or "")


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
