"""Which layers slide, and by how much, as transformers 5.25 builds each LLaMA-family type.

Oracle: the built model itself. A small model of each translated type is built on CPU with eager
attention from a config.json that states a 3-token ``sliding_window`` (alone, with ``layer_types``
naming layers 0 and 2 sliding, and with Qwen's ``use_sliding_window``), run on 12 tokens with
``output_attentions``; a layer slides where its last query gives weight to fewer than all 12 keys,
and the window is how many it weighs. ffnlab's ``sliding_window`` and ``sliding_layers`` must say
the same. Many of these families' models read neither key (LLaMA, Gemma, OLMo, GLM, Granite, ...:
full attention whatever the config says); Mistral, Mixtral, Phi-3, PhiMoE and StarCoder2 slide every
layer by ``sliding_window`` and read no ``layer_types``; Qwen's windows need ``use_sliding_window``.
"""

from __future__ import annotations

import pytest
from hf_cases import case

from ffnlab.sizing.hf import from_hf_dict

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

# every type translated by the LLaMA-family decoder (ffnlab.sizing.hf.llama.decoder)
TYPES = ("llama", "cohere", "cohere2", "ernie4_5", "ernie4_5_moe", "exaone4", "gemma", "gemma2", "gemma3_text", "glm",
         "glm4", "glm4_moe", "gpt_oss", "granite", "granitemoe", "hunyuan_v1_dense", "hunyuan_v1_moe", "llama4_text",
         "ministral", "mistral", "mixtral", "olmo", "olmo2", "olmo3", "olmoe", "phi3", "phimoe", "qwen2", "qwen2_moe",
         "qwen3", "qwen3_moe", "smollm3", "starcoder2")
WINDOW, LAYERS, TOKENS = 3, 3, 12
MIXED = ["sliding_attention", "full_attention", "sliding_attention"]
VARIANTS = {
    "window": {"sliding_window": WINDOW},
    "layer_types": {"sliding_window": WINDOW, "layer_types": MIXED},
    "use_sliding_window": {"sliding_window": WINDOW, "use_sliding_window": True, "max_window_layers": 1},
    "use_sliding_window+layer_types": {"sliding_window": WINDOW, "use_sliding_window": True, "max_window_layers": 1,
                                       "layer_types": MIXED},
}
# configs whose model transformers builds but cannot run: their config class drops the window
# (Qwen without use_sliding_window) or knows no "sliding_attention" layers (Llama 4), yet
# layer_types names sliding layers; ffnlab prices no window for them
CANNOT_RUN = {("qwen2", "layer_types"), ("qwen2_moe", "layer_types"), ("qwen3", "layer_types"),
              ("qwen3_moe", "layer_types"), ("llama4_text", "layer_types"),
              ("llama4_text", "use_sliding_window+layer_types")}


def _config(model_type: str, variant: str) -> dict:
    config = case(model_type, 1)
    config["num_hidden_layers"] = LAYERS
    config.update(VARIANTS[variant])
    return config


def _built_sliding(config: dict) -> tuple[int | None, tuple[int, ...]]:
    """(window, sliding layers) of the model transformers builds from ``config``, read from the
    attention weights of its last query over a 12-token input."""
    from transformers import AutoConfig, AutoModelForCausalLM

    d = dict(config)
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    ids = torch.randint(1, 40, (1, TOKENS))
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    weighed = [int((a[0, :, -1, :] > 0).any(0).sum()) for a in out.attentions]
    layers = tuple(i for i, n in enumerate(weighed) if n < TOKENS)
    windows = {weighed[i] for i in layers}
    assert len(windows) <= 1, weighed
    return (windows.pop() if windows else None), layers


def _ours(config: dict) -> tuple[int | None, tuple[int, ...]]:
    attn = from_hf_dict(dict(config)).attn
    layers = tuple(attn.sliding_layers or ())
    return (attn.sliding_window if layers else None), layers


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("model_type", TYPES)
def test_the_layers_that_slide_are_the_built_model_s(model_type: str, variant: str) -> None:
    config = _config(model_type, variant)
    if (model_type, variant) in CANNOT_RUN:
        with pytest.raises((TypeError, KeyError, RuntimeError)):
            _built_sliding(config)
        assert _ours(config) == (None, ())
        return
    assert _ours(config) == _built_sliding(config), config


def test_qwen2_5_vl_s_text_model_slides_from_its_own_max_window_layers() -> None:
    """Qwen2.5-VL's text config defaults max_window_layers to 80 (Qwen2's: 28); oracle: the
    layer_types its config class computes."""
    from transformers import AutoConfig

    keys = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
            "num_hidden_layers": 84, "vocab_size": 300, "use_sliding_window": True, "sliding_window": 32}
    theirs = AutoConfig.for_model("qwen2_5_vl_text", **keys)
    expected = tuple(i for i, t in enumerate(theirs.layer_types) if t == "sliding_attention")
    assert expected == (80, 81, 82, 83)  # the class default, not Qwen2's 28
    assert _ours({"model_type": "qwen2_5_vl_text", **keys}) == (32, expected)


# SmolLM3 without layer_types: its config makes the layers without RoPE (no_rope_layers 0, or every
# no_rope_layer_interval-th layer) sliding when use_sliding_window and a window are set
SMOLLM3_NOPE = {
    "default-interval": {"use_sliding_window": True},
    "interval=3": {"use_sliding_window": True, "no_rope_layer_interval": 3},
    "interval=1": {"use_sliding_window": True, "no_rope_layer_interval": 1},
    "interval=-3": {"use_sliding_window": True, "no_rope_layer_interval": -3},
    "interval=9": {"use_sliding_window": True, "no_rope_layer_interval": 9},
    "no_rope_layers": {"use_sliding_window": True, "no_rope_layers": [1, 0, 0, 1, 1, 1, 1, 0]},
    "no_rope_layers-longer": {"use_sliding_window": True, "no_rope_layers": [0, 1, 1, 1, 1, 1, 1, 0, 0, 0]},
    "use_sliding_window-false": {"use_sliding_window": False},
    "use_sliding_window-false+layer_types": {"use_sliding_window": False, "layer_types": ["sliding_attention"] * 8},
    "layer_types": {"use_sliding_window": True, "layer_types": ["full_attention", "sliding_attention"] * 4},
}


@pytest.mark.parametrize("name", SMOLLM3_NOPE)
def test_smollm3_slides_its_rope_less_layers_as_its_config_computes(name: str) -> None:
    config = case("smollm3", 1)
    config.update(num_hidden_layers=8, sliding_window=WINDOW, **SMOLLM3_NOPE[name])
    assert _ours(config) == _built_sliding(config)
