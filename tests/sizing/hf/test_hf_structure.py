"""The FFN view of models counted through transformers, read from the meta-device module tree.

Oracles: ffnlab's translators (themselves checked against transformers' totals in
test_hf_parity.py) for every translated type; transformers' own parameter count and the FFN
parameter formula for every other causal-LM type; hand readings of the config keys for the
hybrid and linear-attention families.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from hf_cases import MODEL_TYPES, case  # noqa: E402
from hf_cases_all import SKIP, causal_lm_types, small_case, with_token_ids  # noqa: E402

from ffnlab.sizing.audit import audit_config  # noqa: E402
from ffnlab.sizing.counting import count_params, dense_ffn_params  # noqa: E402
from ffnlab.sizing.hf import from_hf_dict  # noqa: E402
from ffnlab.sizing.hf.fallback import counted_structure, row_of  # noqa: E402
from ffnlab.sizing.hf.structure import Structure  # noqa: E402
from ffnlab.training.hf_count import count_with_transformers  # noqa: E402

ROW_KEYS = ("params_total", "params_ffn", "params_ffn_active", "params_active", "d_ff", "n_experts", "top_k",
            "gated", "ffn_kind", "n_shared_experts", "d_shared", "moe_layers", "params_ffn_routed",
            "params_ffn_shared", "params_ffn_router", "params_ffn_dense_layers", "ratio_param_matched",
            "ratio_raw", "n_layers", "ratio_active_param_matched")


def structure_of(config: dict) -> tuple[Structure, dict]:
    """The structure transformers' module tree gives, and its audit row as the JSON shows it."""
    s = counted_structure(count_with_transformers(with_token_ids(config), ()))
    return s, row_of(s, name="m", model_type=config["model_type"], source=None).as_dict()


def transformers_total(config: dict) -> int:
    """transformers' own count of the whole model, built here independently of ffnlab."""
    import torch
    from transformers import AutoConfig
    from transformers.models.auto import modeling_auto as m

    d = with_token_ids(config)
    mt = d.pop("model_type")
    cfg = AutoConfig.for_model(mt, **d)
    names = m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    auto = "AutoModelForCausalLM" if mt in names else "AutoModelForImageTextToText"
    import transformers

    with torch.device("meta"):
        model = getattr(transformers, auto).from_config(cfg)
    return sum(p.numel() for p in model.parameters())


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) < 1e-9
    return a == b


TRANSLATED = [t for t in MODEL_TYPES if t != "t5"]  # T5 is an encoder-decoder


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("model_type", TRANSLATED)
def test_structure_reads_what_the_translator_computes(model_type, seed):
    """For every type ffnlab translates, the FFN view read from transformers' module tree equals
    the translator's: widths, kind, experts, top-k, shared experts, the FFN / attention /
    embedding / norm split, active parameters and the ratios."""
    config = case(model_type, seed)
    cfg = from_hf_dict(config)
    want = audit_config(cfg, name="m", model_type=model_type).as_dict()
    s, got = structure_of(config)
    # a multimodal wrapper: the translator counts its text_config, the structure the whole model
    got = {**got, "params_total": got["params_total"] - s.outside, "params_active": got["params_active"] - s.outside}
    diff = {k: (want[k], got[k]) for k in ROW_KEYS if not _close(want[k], got[k])}
    assert not diff, (config, diff)
    c = count_params(cfg)
    parts = {"attention": c.attention, "embedding": c.embedding_like, "norms": c.norms, "ffn": c.ffn}
    if model_type != "opt":  # OPT-350m's project_in/out: ffnlab counts them as embedding, so does the tree
        assert {k: s.parts[k] for k in parts} == parts
    assert s.parts["other"] == s.outside


def _ffn_extra_bound(d: int, f: int) -> int:
    """What a dense FFN unit may hold beyond its matrices and biases: an output gate d x d
    (RWKV's receptance), mixing vectors and learned activation parameters."""
    return d * d + 4 * d + 2 * f


ALL = [t for t in causal_lm_types() if t not in SKIP]


@pytest.mark.parametrize("model_type", ALL)
def test_every_causal_lm_type_small_config(model_type):
    """Every causal-LM type transformers ships: the total is transformers' own; every FFN unit
    found holds exactly (MoE) or at least (dense) what its width, gating and expert count say;
    the row has the FFN fields and a layout of the whole stack."""
    config = small_case(model_type, 0)
    s, row = structure_of(config)
    assert s.total == transformers_total(config)
    assert sum(s.parts.values()) == s.total == row["params_total"]
    d = s.d_model
    for u in s.ffns:
        if u.reused:
            continue
        per_expert = dense_ffn_params(d, u.d_ff, u.gated, u.bias)
        if u.moe:
            assert u.routed - u.zero_params == u.n_experts * per_expert, (u, per_expert)
            assert u.params == u.routed + u.router + u.shared
        elif model_type != "zamba2":  # Zamba2's shared MLP holds its per-layer LoRA adapters
            assert 0 <= u.params - per_expert <= _ffn_extra_bound(d, u.d_ff), u
    assert len(s.layers) == s.n_layers == (row["n_layers"] or 0) > 0
    assert all(kinds for kinds in s.layers), s.layers  # every layer of the stack holds a unit found
    if s.ffns:
        for key in ("d_ff", "ffn_kind", "gated", "ratio_raw", "ratio_param_matched", "ffn_share", "alignment"):
            assert row[key] is not None, key
        assert row["params_ffn"] == sum(u.params for u in s.ffns) > 0
    if any(u.moe for u in s.ffns):
        assert row["n_experts"] >= 2 and row["moe_layers"] >= 1
        assert row["top_k"] is not None and row["params_active"] <= row["params_total"]


# -- the hybrid and linear-attention families, at their real (class-default) sizes ---------------

def _defaults(model_type: str) -> dict:
    return {"model_type": model_type}


def test_nemotron_h_blocks_are_read_by_what_they_hold():
    """Nemotron-H names every block 'mixer': the Mamba, attention, MLP and MoE blocks are told
    apart by their structure (pattern M E * - in the class default)."""
    s, row = structure_of(_defaults("nemotron_h"))
    from transformers import NemotronHConfig

    cfg = NemotronHConfig()
    assert s.layers == [["ssm"], ["moe"], ["attention"], ["dense"]]
    assert row["n_layers"] == 4 and row["d_ff_dense"] == cfg.intermediate_size
    assert row["d_ff"] == cfg.moe_intermediate_size and row["n_experts"] == cfg.n_routed_experts
    assert row["top_k"] == cfg.num_experts_per_tok and row["ffn_kind"] == "relu2"
    assert row["params_other"] == 0 and row["params_ffn"] > row["params_attention"] + row["params_ssm"]


def test_qwen3_next_reports_its_experts_not_intermediate_size():
    from transformers import Qwen3NextConfig

    cfg = Qwen3NextConfig()
    s, row = structure_of(_defaults("qwen3_next"))
    assert row["d_ff"] == cfg.moe_intermediate_size != cfg.intermediate_size
    assert (row["n_experts"], row["top_k"], row["n_shared_experts"], row["d_shared"]) == (
        cfg.num_experts, cfg.num_experts_per_tok, 1, cfg.shared_expert_intermediate_size)
    full = cfg.layer_types.count("full_attention")
    assert row["layer_counts"] == {"moe": 48, "attention": full, "linear_attention": 48 - full}
    assert row["expert_design"] == "fine-grained" and row["d_ff_dense"] is None


def test_kimi_linear_dense_and_moe_layers():
    from transformers import KimiLinearConfig

    cfg = KimiLinearConfig()
    s, row = structure_of(_defaults("kimi_linear"))
    dense = cfg.mlp_layer_types.count("dense")
    assert row["layer_counts"]["dense"] == dense and row["layer_counts"]["moe"] == cfg.num_hidden_layers - dense
    assert [k[1] for k in s.layers] == ["dense" if t == "dense" else "moe" for t in cfg.mlp_layer_types]
    assert row["d_ff"] == cfg.moe_intermediate_size and row["d_ff_dense"] == cfg.intermediate_size
    kinds = [k[0] for k in s.layers]
    assert kinds == ["attention" if t == "full_attention" else "linear_attention" for t in cfg.layer_types]


def test_mamba_has_no_ffn_and_no_ffn_ratio():
    s, row = structure_of(_defaults("mamba"))
    assert s.ffns == [] and row["d_ff"] is None and row["ratio_raw"] is None
    assert row["layer_counts"] == {"ssm": row["n_layers"]} and row["params_ssm"] > 0


@pytest.mark.parametrize("model_type", ["bert", "xlnet"])
def test_encoder_style_ffns_are_found(model_type):
    """BERT's intermediate.dense / output.dense and XLNet's ff.layer_1 / layer_2."""
    from transformers import CONFIG_MAPPING

    cfg = CONFIG_MAPPING[model_type]()
    d, layers = cfg.hidden_size, cfg.num_hidden_layers
    f = cfg.intermediate_size if model_type == "bert" else cfg.d_inner
    s, row = structure_of(_defaults(model_type))
    assert row["params_ffn"] == layers * (2 * d * f + f + d) and row["d_ff"] == f
    assert row["ffn_kind"] == "gelu" and row["layer_counts"] == {"attention": layers, "dense": layers}


def test_longcat_zero_computation_experts_are_counted_apart():
    import torch
    from transformers import AutoModelForCausalLM, LongcatFlashConfig

    cfg = LongcatFlashConfig()
    s, row = structure_of(_defaults("longcat_flash"))
    assert row["n_experts"] == cfg.n_routed_experts and row["zero_expert_slots"] == cfg.zero_expert_num
    with torch.device("meta"):  # what transformers allocates past the routed experts (5.24: the slots'
        model = AutoModelForCausalLM.from_config(cfg)  # gate|up rows; 5.25: nothing)
    beyond = sum((p.shape[0] - cfg.n_routed_experts) * p[0].numel() for n, p in model.named_parameters()
                 if ".experts." in n and p.dim() == 3 and p.shape[0] > cfg.n_routed_experts)
    assert row["params_zero_experts"] == beyond
    assert "zero-computation" in row["note"] and row["params_total"] == transformers_total(_defaults("longcat_flash"))


def test_vision_language_config_counts_the_whole_model():
    """Qwen3-VL has no causal-LM class: the image-text-to-text class is built and counted whole,
    the vision tower reported apart (params_outside_lm, in params_other); the FFN figures are the
    language model's."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    cfg = AutoConfig.for_model("qwen3_vl")
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(cfg)
    lm = sum(p.numel() for p in model.model.language_model.parameters())
    head = 0 if cfg.tie_word_embeddings else model.lm_head.weight.numel()
    s, row = structure_of(_defaults("qwen3_vl"))
    visual = sum(p.numel() for p in model.model.visual.parameters())
    assert row["params_total"] == lm + head + visual == sum(p.numel() for p in model.parameters())
    assert row["params_outside_lm"] == visual == row["params_other"]
    assert "multimodal" in row["note"]


def test_layer_counts_keep_the_stacks_order_whatever_the_hash_seed():
    # the kinds were counted from a set, whose order follows string hashing (PYTHONHASHSEED): the
    # JSON of a counted hybrid changed key order from run to run
    import subprocess
    import sys

    code = ("from ffnlab.sizing.hf.structure import Structure, layer_counts\n"
            "s = Structure(d_model=8, n_layers=3, stack='m', layers=[['ssm', 'moe'], ['attention', 'ffn', 'ffn'],"
            " ['mamba2', 'attention']], ffns=[], mixers=[], parts={}, total=0)\n"
            "print(list(layer_counts(s).items()))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(6)}
    assert seen == {"[('ssm', 1), ('moe', 1), ('attention', 2), ('ffn', 1), ('mamba2', 1)]\n"}
