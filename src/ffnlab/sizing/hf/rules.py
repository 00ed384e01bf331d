"""What transformers refuses in a config.json, per model type (probed, not read from its code).

The table is data, ``data/hf_rules.json``, written by ``python tests/helpers/hf_class_rules.py --write``
from the installed transformers (a key set to null in a config that builds; hidden_size not a
multiple of the heads with an explicit head_dim); tests/sizing/hf/test_hf_nulls.py checks it against the
installed transformers. Read here once, into the names the translators use:

* ``NULL_REFUSED``: the keys whose null value transformers refuses (its config class or its model);
* ``MISSING_REFUSED``: the keys it cannot do without (its class default does not build);
* ``TEXT_CONFIG_REFUSED``: the keys (``text_config``, ``decoder``, ...) under which a type's
  model refuses a plain value: transformers looks a text sub-config up under them;
* ``FIELD_KINDS``: the JSON kinds (int, float, bool, str, null, list) each config-class field
  is annotated to take, where its annotation is made of those alone;
* ``HEAD_DIM_TYPED``: the types that refuse a head_dim that is not an integer, read or not;
* ``ROPE_THETA_NUMBER``: the types whose model refuses a ``rope_theta`` that is not a number
  (5.25 has no such config field: its RoPE standardisation moves the key into ``rope_parameters``
  unchecked, and the rotary embedding raises it to a power); ``ROPE_THETA_LOG`` those that also
  refuse one not above 0 or equal to 1 (YaRN divides by its logarithm);
* ``ROPE_SCALING``: how each type treats a ``rope_scaling`` dict (tags: ``computes``, its model
  computes RoPE from it and refuses an unknown rope_type; ``factor-number``, a string factor is
  refused; ``fills-theta`` / ``fills-original``, its standardisation fills a missing rope_theta /
  original_max_position_embeddings; ``refuses-TYPE``, that scaling type is refused outright), and
  ``ROPE_REQUIRED_KEYS`` the keys each scaling type's validator requires (transformers 5.25,
  ``modeling_rope_utils.py``, ``_validate_*_rope_parameters``);
* ``PAD_IN_EMBEDDING``: the types whose token embedding takes ``pad_token_id`` as its padding
  index, which torch refuses outside the vocabulary;
* ``PARTIAL_ROTARY_REFUSED``: how a type's rotary embedding refuses a ``partial_rotary_factor``
  (``negative``; ``null``; ``odd-width``, an odd int(head_dim x factor));
  ``PARTIAL_ROTARY_TOP_IGNORED`` the types whose config fills its RoPE dict's factor from a key of
  its own (GPT-NeoX's ``rotary_pct``), never from a top-level ``partial_rotary_factor``;
  ``ROPE_NESTED_REFUSED`` the types whose single rotary embedding refuses ``rope_parameters``
  nested by layer type; ``ROPE_DEFAULTS`` the scaled RoPE dict a type's config class sets when
  config.json gives none (GPT-OSS's yarn); ``LAYER_TYPE_VALUES`` the ``layer_types`` names a type builds;
  ``HEAD_DIM_NULL_KEPT`` the types whose config keeps a null ``head_dim`` as None;
* ``SUB_CONFIG_KINDS``: the field kinds of each sub-config a type nests as its own, strictly
  validated class (DBRX's and MPT's attn_config, DBRX's ffn_config): null only where listed;
* ``UNIT_INTERVAL``: the float fields a type refuses outside [0, 1] (dropouts, which nn.Dropout
  refuses at build, and Llama's validated initializer_range);
* ``ODD_HEAD_REFUSED``: the types that refuse an odd head width they compute from hidden_size //
  heads (``absent``: head_dim left out; ``null``: head_dim null), where RoPE rotates it whole;
* ``NEGATIVE_REFUSED``: the integer fields whose negative value a type's model refuses, read by
  ffnlab or not (GPT-J's ``n_positions`` sizes a buffer);
* ``ZERO_POWER_REFUSED``: the number fields whose value 0 a type's model raises to a negative
  power while it is built, and so refuses (Gemma 2 and 3's ``query_pre_attn_scalar ** -0.5``);
* ``READ_ONLY_KEYS``: the names of PreTrainedConfig's properties without a setter (``"*"``) and of
  each type's config class's further ones, which its constructor refuses as keys, any value;
* ``HEADS_DIVIDE_HIDDEN``: the types whose config requires hidden_size % heads == 0;
* ``CLASS_DEFAULTS``: each type's config-class defaults (integer, boolean, string and null fields);
* ``WRAPPER_TEXT_DEFAULTS``: a multimodal type's text_config when config.json has none.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

_TABLE: dict[str,
             Any] = json.loads(resources.files("ffnlab").joinpath("data/hf_rules.json").read_text(encoding="utf-8"))

PROBED_WITH: str = _TABLE["probed_with"]
NULL_REFUSED: dict[str, frozenset[str]] = {mt: frozenset(keys) for mt, keys in _TABLE["null_refused"].items()}
MISSING_REFUSED: dict[str, frozenset[str]] = {mt: frozenset(keys) for mt, keys in _TABLE["missing_refused"].items()}
TEXT_CONFIG_REFUSED: dict[str, tuple[str, ...]] = {
    mt: tuple(keys) for mt, keys in _TABLE.get("text_config_refused", {}).items()}
FIELD_KINDS: dict[str, dict[str, frozenset[str]]] = {
    mt: {key: frozenset(kinds) for key, kinds in fields.items()} for mt, fields in _TABLE.get("field_kinds",
                                                                                              {}).items()}
HEAD_DIM_TYPED: frozenset[str] = frozenset(_TABLE.get("head_dim_typed", ()))
ROPE_THETA_NUMBER: frozenset[str] = frozenset(_TABLE.get("rope_theta_number", ()))
ROPE_THETA_LOG: frozenset[str] = frozenset(_TABLE.get("rope_theta_log", ()))
ROPE_SCALING: dict[str, frozenset[str]] = {mt: frozenset(tags) for mt, tags in _TABLE.get("rope_scaling", {}).items()}
ROPE_REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    kind: tuple(keys) for kind, keys in _TABLE.get("rope_required_keys", {}).items()}
PAD_IN_EMBEDDING: frozenset[str] = frozenset(_TABLE.get("pad_in_embedding", ()))
ODD_HEAD_REFUSED: dict[str, frozenset[str]] = {mt: frozenset(tags) for mt, tags in _TABLE["odd_head_refused"].items()}
UNIT_INTERVAL: dict[str, tuple[str, ...]] = {mt: tuple(keys) for mt, keys in _TABLE["unit_interval"].items()}
PARTIAL_ROTARY_REFUSED: dict[str, frozenset[str]] = {mt: frozenset(tags) for mt, tags
                                                     in _TABLE["partial_rotary_refused"].items()}
PARTIAL_ROTARY_TOP_IGNORED: frozenset[str] = frozenset(_TABLE["partial_rotary_top_ignored"])
ROPE_NESTED_REFUSED: frozenset[str] = frozenset(_TABLE["rope_nested_refused"])
ROPE_DEFAULTS: dict[str, dict[str, object]] = _TABLE.get("rope_defaults", {})
HEAD_DIM_NULL_KEPT: frozenset[str] = frozenset(_TABLE["head_dim_null_kept"])
SUB_CONFIG_KINDS: dict[str, dict[str, dict[str, frozenset[str]]]] = {
    mt: {name: {key: frozenset(kinds) for key, kinds in fields.items()} for name, fields in subs.items()}
    for mt, subs in _TABLE["sub_config_kinds"].items()}
LAYER_TYPE_VALUES: dict[str, frozenset[str]] = {mt: frozenset(v) for mt, v in _TABLE["layer_type_values"].items()}
NEGATIVE_REFUSED: dict[str, tuple[str, ...]] = {mt: tuple(keys) for mt, keys in _TABLE.get("negative_refused",
                                                                                           {}).items()}
ZERO_POWER_REFUSED: dict[str, tuple[str, ...]] = {mt: tuple(keys) for mt, keys in _TABLE["zero_power_refused"].items()}
READ_ONLY_KEYS: dict[str, frozenset[str]] = {mt: frozenset(keys) for mt, keys in _TABLE["read_only_keys"].items()}
HEADS_DIVIDE_HIDDEN: frozenset[str] = frozenset(_TABLE["heads_divide_hidden"])
CLASS_DEFAULTS: dict[str, dict[str, object]] = _TABLE["class_defaults"]
WRAPPER_TEXT_DEFAULTS: dict[str, dict[str, object]] = _TABLE["wrapper_text_defaults"]
