"""The class transformers builds for each model type ffnlab translates: its reference model.

Data, read from transformers 5.25's auto mappings in the order ffnlab's fallback tries them (causal
LM, sequence-to-sequence LM, image-text-to-text, base model: ``ffnlab.training.hf_count.AUTO_KINDS``),
so that a translated row names the class whose parameters it counts, as a row counted through
transformers does. Checked against the installed transformers by
tests/sizing/hf/test_counts_fourteenth_pass.py. The types whose reference holds more than the
translator counts (``ffnlab.sizing.audit.WHOLE_MODEL_TYPES``) are left out.
"""

from __future__ import annotations

CAUSAL_LM = ("AutoModelForCausalLM", "causal LM")
SEQ2SEQ_LM = ("AutoModelForSeq2SeqLM", "sequence-to-sequence LM")

# model_type -> (class, (auto class, what it is)); source: transformers 5.25.0,
# transformers/models/auto/modeling_auto.py, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and
# MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES
REFERENCE_CLASSES: dict[str, tuple[str, tuple[str, str]]] = {
    "gpt2": ("GPT2LMHeadModel", CAUSAL_LM),
    "gptj": ("GPTJForCausalLM", CAUSAL_LM),
    "gpt_neox": ("GPTNeoXForCausalLM", CAUSAL_LM),
    "opt": ("OPTForCausalLM", CAUSAL_LM),
    "bloom": ("BloomForCausalLM", CAUSAL_LM),
    "falcon": ("FalconForCausalLM", CAUSAL_LM),
    "llama": ("LlamaForCausalLM", CAUSAL_LM),
    "mistral": ("MistralForCausalLM", CAUSAL_LM),
    "mixtral": ("MixtralForCausalLM", CAUSAL_LM),
    "qwen2": ("Qwen2ForCausalLM", CAUSAL_LM),
    "gemma": ("GemmaForCausalLM", CAUSAL_LM),
    "gemma2": ("Gemma2ForCausalLM", CAUSAL_LM),
    "phi": ("PhiForCausalLM", CAUSAL_LM),
    "phi3": ("Phi3ForCausalLM", CAUSAL_LM),
    "olmo": ("OlmoForCausalLM", CAUSAL_LM),
    "t5": ("T5ForConditionalGeneration", SEQ2SEQ_LM),
    "qwen3": ("Qwen3ForCausalLM", CAUSAL_LM),
    "qwen3_moe": ("Qwen3MoeForCausalLM", CAUSAL_LM),
    "qwen2_moe": ("Qwen2MoeForCausalLM", CAUSAL_LM),
    "gemma3_text": ("Gemma3ForCausalLM", CAUSAL_LM),
    "olmo2": ("Olmo2ForCausalLM", CAUSAL_LM),
    "olmo3": ("Olmo3ForCausalLM", CAUSAL_LM),
    "olmoe": ("OlmoeForCausalLM", CAUSAL_LM),
    "deepseek_v2": ("DeepseekV2ForCausalLM", CAUSAL_LM),
    "deepseek_v3": ("DeepseekV3ForCausalLM", CAUSAL_LM),
    "gpt_oss": ("GptOssForCausalLM", CAUSAL_LM),
    "llama4_text": ("Llama4ForCausalLM", CAUSAL_LM),
    "granite": ("GraniteForCausalLM", CAUSAL_LM),
    "granitemoe": ("GraniteMoeForCausalLM", CAUSAL_LM),
    "starcoder2": ("Starcoder2ForCausalLM", CAUSAL_LM),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", CAUSAL_LM),
    "cohere": ("CohereForCausalLM", CAUSAL_LM),
    "cohere2": ("Cohere2ForCausalLM", CAUSAL_LM),
    "stablelm": ("StableLmForCausalLM", CAUSAL_LM),
    "mpt": ("MptForCausalLM", CAUSAL_LM),
    "dbrx": ("DbrxForCausalLM", CAUSAL_LM),
    "phimoe": ("PhimoeForCausalLM", CAUSAL_LM),
    "smollm3": ("SmolLM3ForCausalLM", CAUSAL_LM),
    "glm": ("GlmForCausalLM", CAUSAL_LM),
    "glm4": ("Glm4ForCausalLM", CAUSAL_LM),
    "glm4_moe": ("Glm4MoeForCausalLM", CAUSAL_LM),
    "ernie4_5": ("Ernie4_5ForCausalLM", CAUSAL_LM),
    "ernie4_5_moe": ("Ernie4_5_MoeForCausalLM", CAUSAL_LM),
    "hunyuan_v1_dense": ("HunYuanDenseV1ForCausalLM", CAUSAL_LM),
    "hunyuan_v1_moe": ("HunYuanMoEV1ForCausalLM", CAUSAL_LM),
    "exaone4": ("Exaone4ForCausalLM", CAUSAL_LM),
    "ministral": ("MinistralForCausalLM", CAUSAL_LM),
    "gpt_neo": ("GPTNeoForCausalLM", CAUSAL_LM),
}


def reference_note(model_type: object, version: str = "5.25") -> str | None:
    """The translated row's word on the class it counts, or None for a type not in the table."""
    if not isinstance(model_type, str) or model_type not in REFERENCE_CLASSES:
        return None
    cls, (auto, kind) = REFERENCE_CLASSES[model_type]
    return f"counted by ffnlab's {model_type} translator as transformers {version} builds it ({cls}, {auto}: {kind})"
