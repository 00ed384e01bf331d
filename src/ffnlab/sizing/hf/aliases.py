"""The other names transformers reads some config.json keys under (its config classes'
``attribute_map``), for the types ffnlab translates: GPT-2's ``n_layer`` may be written
``num_hidden_layers``, T5's ``d_model`` ``hidden_size``, GPT-OSS's ``num_local_experts``
``num_experts``. transformers builds the model with such a key as if it had its own name, so the
translators read it so too (:func:`real_keys`). Copied from transformers 5.25;
``tests/cli/test_adversarial_pass.py`` checks the table against the installed transformers.
No ``transformers`` import here.
"""

from __future__ import annotations

from typing import Any

ALIASES: dict[str, dict[str, str]] = {  # model_type -> {other name: own name}
    'bloom': {'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    'dbrx': {'hidden_size': 'd_model', 'max_position_embeddings': 'max_seq_len', 'num_attention_heads': 'n_heads',
             'num_hidden_layers': 'n_layers'},
    'deepseek_v2': {'num_experts': 'n_routed_experts'},
    'deepseek_v3': {'num_local_experts': 'n_routed_experts', 'num_mtp_layers': 'num_nextn_predict_layers'},
    'ernie4_5_moe': {'num_experts': 'moe_num_experts', 'num_experts_per_tok': 'moe_k',
                     'num_mtp_layers': 'num_nextn_predict_layers'},
    'glm4_moe': {'num_local_experts': 'n_routed_experts', 'num_mtp_layers': 'num_nextn_predict_layers'},
    'gpt2': {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions', 'num_attention_heads': 'n_head',
             'num_hidden_layers': 'n_layer'},
    'gpt_bigcode': {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions',
                    'num_attention_heads': 'n_head', 'num_hidden_layers': 'n_layer'},
    'gpt_neo': {'num_attention_heads': 'num_heads', 'num_hidden_layers': 'num_layers'},
    'gpt_oss': {'num_experts': 'num_local_experts'},
    'gptj': {'hidden_size': 'n_embd', 'max_position_embeddings': 'n_positions', 'num_attention_heads': 'n_head',
             'num_hidden_layers': 'n_layer'},
    'hunyuan_v1_moe': {'num_experts_per_tok': 'moe_topk', 'num_local_experts': 'num_experts'},
    'mixtral': {'num_experts': 'num_local_experts'},
    'mpt': {'hidden_size': 'd_model', 'num_attention_heads': 'n_heads', 'num_hidden_layers': 'n_layers'},
    'olmoe': {'num_local_experts': 'num_experts'},
    'qwen3_moe': {'num_experts': 'num_local_experts'},
    't5': {'head_dim': 'd_kv', 'hidden_size': 'd_model', 'num_attention_heads': 'num_heads',
           'num_hidden_layers': 'num_layers'},
}


# the pairs whose other name is the field the config class declares (Qwen3-MoE declares
# num_experts and maps it to num_local_experts): there the own name, set after the declared fields,
# wins when config.json gives both
DECLARED_UNDER_OTHER_NAME: frozenset[tuple[str, str]] = frozenset({
    ("deepseek_v3", "num_mtp_layers"), ("ernie4_5_moe", "num_mtp_layers"), ("glm4_moe", "num_mtp_layers"),
    ("qwen3_moe", "num_experts"),
})


def real_keys(data: dict[str, Any], model_type: str) -> dict[str, Any]:
    """``data`` with each key given under only one of its two names (:data:`ALIASES`) given under
    both, as transformers reads them as one: a translator reads whichever name it reads (Qwen3-MoE's
    reads the other name, num_experts). A key given under both names takes the other name's value
    under both: transformers sets its own fields first, then the keys it does not declare, each
    through ``attribute_map`` and unvalidated (``PreTrainedConfig.__post_init__``, 5.25), so GPT-2's
    ``max_position_embeddings`` sizes its position table whatever ``n_positions`` says. Where the
    class declares the other name (:data:`DECLARED_UNDER_OTHER_NAME`), the own name wins instead."""
    aliases = ALIASES.get(model_type)
    if not aliases:
        return data
    out = dict(data)
    for alias, real in aliases.items():
        if alias in out and (real not in out or (model_type, alias) not in DECLARED_UNDER_OTHER_NAME):
            out[real] = out[alias]
        elif real in out:
            out[alias] = out[real]
    return out
