"""Launch configs read as ffnlab settings (data/engine_configs.json, sizing/memory/engine_config.py).

Oracles: small config files written here after the projects' own example configs (torchtitan's
``llama3_8b.toml``, torchtune's ``llama3_2/3B_qlora_single_device.yaml``, axolotl's
``examples/llama-3/qlora.yml``, a TRL ``trl sft --config`` YAML), whose values say what ffnlab
must price, and a ``TrainingArguments`` JSON written by transformers itself. Every rule of the
data names its source file; a key the rules do not know is reported as ignored, never dropped
silently; an explicit flag overrides a key; a bad file is one error line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ffnlab.sizing.memory.engine_config import (
    SETTINGS,
    config_rules,
    detect_format,
    read_engine_config,
)
from ffnlab.sizing.memory.engines import engine_names

TITAN = """\
[job]
dump_folder = "./outputs"
description = "Llama 3 8B training"

[model]
name = "llama3"
flavor = "8B"

[optimizer]
name = "AdamW"
lr = 3e-4
eps = 1e-8
implementation = "foreach"

[training]
local_batch_size = 2
seq_len = 8192
max_norm = 1.0
steps = 1000
mixed_precision_param = "bfloat16"

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = 8
tensor_parallel_degree = 1
pipeline_parallel_degree = 1

[activation_checkpoint]
mode = "selective"
selective_ac_option = "2"
"""

TUNE = """\
model:
  _component_: torchtune.models.llama3_2.qlora_llama3_2_3b
  lora_attn_modules: ['q_proj', 'v_proj', 'output_proj']
  apply_lora_to_mlp: True
  lora_rank: 64
  lora_alpha: 128
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Llama-3.2-3B-Instruct/original/tokenizer.model
  max_seq_len: 2048
batch_size: 4
optimizer:
  _component_: torch.optim.AdamW
  fused: True
  lr: 3e-4
gradient_accumulation_steps: 4
compile: False
device: cuda
dtype: bf16
enable_activation_checkpointing: True
"""

AXOLOTL = """\
base_model: NousResearch/Meta-Llama-3-8B
load_in_4bit: true
adapter: qlora
sequence_len: 4096
sample_packing: true
lora_r: 32
lora_alpha: 16
lora_target_linear: true
gradient_accumulation_steps: 4
micro_batch_size: 2
optimizer: paged_adamw_32bit
learning_rate: 0.0002
bf16: auto
gradient_checkpointing: true
flash_attention: true
"""

TRL = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
dataset_name: stanfordnlp/imdb
per_device_train_batch_size: 8
max_length: 1024
gradient_checkpointing: false
bf16: true
optim: adamw_torch_fused
use_peft: true
lora_r: 16
learning_rate: 0.0001
"""


def _read(tmp_path: Path, name: str, text: str) -> object:
    from ffnlab.files import read_mapping

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_engine_config(read_mapping(path, "engine config"), path.suffix)


def test_every_rule_names_its_source_and_sets_known_settings() -> None:
    rules = config_rules()
    for fmt, spec in rules["formats"].items():
        assert spec["engine"] in engine_names(), fmt
        for rule in spec["keys"]:
            src = rule["source"]
            assert src["repo"] and src["path"] and src["ref"], rule["key"]
            named = [rule["sets"]] if "sets" in rule else []
            named += [k for v in rule.get("values", {}).values() for k in v]
            named += list(rule.get("also", {})) + list(rule.get("also_above_one", {}))
            assert named and set(named) <= set(SETTINGS), rule["key"]


def test_a_torchtitan_toml(tmp_path: Path) -> None:
    got = _read(tmp_path, "llama3_8b.toml", TITAN)
    assert (got.fmt, got.engine) == ("torchtitan", "torchtitan")
    assert dict(got.settings) == {"optimizer": "adamw", "optimizer_impl": "foreach", "batch": 2, "seq_len": 8192,
                                  "dtype": "bf16", "dp": 8, "zero": 3, "tp": 1, "pp": 1, "recompute": "full",
                                  "recompute_every": 2}  # selective_ac_option 2: every second layer, full
    ignored = dict(got.ignored)
    assert {"job.dump_folder", "optimizer.lr", "training.steps", "parallelism.data_parallel_replicate_degree"} <= set(
        ignored)
    op = _read(tmp_path, "op.toml", TITAN.replace('selective_ac_option = "2"', 'selective_ac_option = "op"'))
    assert op.setting("recompute") == "selective" and op.setting("recompute_every") is None
    all_gpus = _read(tmp_path, "all.toml", TITAN.replace("data_parallel_shard_degree = 8",
                                                         "data_parallel_shard_degree = -1"))
    assert all_gpus.setting("dp") is None and "parallelism.data_parallel_shard_degree" in dict(all_gpus.ignored)


def test_a_torchtune_recipe(tmp_path: Path) -> None:
    got = _read(tmp_path, "3B_qlora_single_device.yaml", TUNE)
    assert (got.fmt, got.engine) == ("torchtune", "torchtune")
    assert dict(got.settings) == {"finetune": "qlora", "lora_rank": 64, "seq_len": 2048, "batch": 4,
                                  "optimizer": "adamw", "optimizer_impl": "fused", "grad_accum": 4, "dtype": "bf16",
                                  "recompute": "full", "compile_loss": False}
    lora = _read(tmp_path, "lora.yaml", TUNE.replace("qlora_llama3_2_3b", "lora_llama3_2_3b"))
    assert lora.setting("finetune") == "lora"
    full = _read(tmp_path, "full.yaml", TUNE.replace("qlora_llama3_2_3b", "llama3_2_3b"))
    assert full.setting("finetune") is None


def test_an_axolotl_yaml(tmp_path: Path) -> None:
    got = _read(tmp_path, "qlora.yml", AXOLOTL)
    assert (got.fmt, got.engine) == ("axolotl", "hf-trainer")
    assert dict(got.settings) == {"finetune": "qlora", "seq_len": 4096, "lora_rank": 32, "grad_accum": 4,
                                  "batch": 2, "optimizer": "adamw", "dtype": "bf16", "recompute": "full"}
    assert "flash_attention" in dict(got.ignored) and "load_in_4bit" in dict(got.ignored)


def test_a_trl_yaml(tmp_path: Path) -> None:
    got = _read(tmp_path, "sft.yaml", TRL)
    assert (got.fmt, got.engine) == ("trl", "trl")
    assert dict(got.settings) == {"batch": 8, "seq_len": 1024, "recompute": "none", "dtype": "bf16",
                                  "optimizer": "adamw", "optimizer_impl": "fused", "finetune": "lora", "lora_rank": 16}
    odd = _read(tmp_path, "odd.yaml", TRL.replace("adamw_torch_fused", "lomo"))
    assert "value 'lomo' is not one ffnlab models" in dict(odd.ignored)["optim"]


def test_a_training_arguments_json_written_by_transformers(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4,
                                          gradient_accumulation_steps=2, gradient_checkpointing=True,
                                          optim="adamw_torch", use_cpu=True)
    got = _read(tmp_path, "args.json", args.to_json_string())
    assert (got.fmt, got.engine) == ("transformers", "hf-trainer")
    assert dict(got.settings) == {"batch": args.per_device_train_batch_size, "grad_accum": 2, "recompute": "full",
                                  "optimizer": "adamw", "optimizer_impl": "foreach"}
    seen = {k.split(".")[0] for k, *_ in (*got.used, *got.ignored)}
    assert seen == set(json.loads(args.to_json_string()))  # every key accounted for: used or ignored


def test_the_format_comes_from_the_suffix_and_the_keys() -> None:
    assert detect_format({}, ".toml") == "torchtitan"
    assert detect_format({"model": {"_component_": "x"}}, ".yaml") == "torchtune"
    assert detect_format({"base_model": "x"}, ".yml") == "axolotl"
    assert detect_format({"per_device_train_batch_size": 1}, ".yaml") == "trl"
    from ffnlab.errors import FfnlabError

    with pytest.raises(FfnlabError, match="--engine-config must be a .toml"):
        detect_format({}, ".ini")
