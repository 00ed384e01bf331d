"""Launch configs read as ffnlab settings (data/engine_configs.json, sizing/memory/engine_config.py).

Oracles: small config files written here after the projects' own example configs (torchtitan's
``llama3_8b.toml``, torchtune's ``llama3_2/3B_qlora_single_device.yaml``, axolotl's
``examples/llama-3/qlora.yml``, a TRL ``trl sft --config`` YAML), whose values say what ffnlab
must price, and a ``TrainingArguments`` JSON written by transformers itself. Every rule of the
data names its source file; a key the rules do not know is reported as ignored, never dropped
silently; an explicit flag overrides a key; a bad file is one error line. LoRA targets read from a
file adapt what peft adapts for the same module names (peft's own count of the model it builds).
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
                                  "batch": 2, "optimizer": "adamw", "dtype": "bf16", "recompute": "full",
                                  "lora_targets": "all-linear"}  # lora_target_linear: every linear layer
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


# -- LoRA dropout and targets (the keys of torchtune's, axolotl's and TRL's own configs) ---------------

# the real 3B recipe's targets (q, v and the output projection, with the MLP): no set ffnlab prices
TUNE_TARGETS = TUNE.replace("  lora_rank: 64\n",
                            "  apply_lora_to_output: False\n  lora_rank: 64\n  lora_dropout: 0.0\n")
PEFT_LLAMA = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def _peft_trainable(names: list[str] | str, rank: int = 8) -> int:
    """peft's count of a small Llama's adapters for ``target_modules=names``."""
    pytest.importorskip("peft")
    from finetune_oracle import peft_count
    from hf_cases import case

    return peft_count(case("llama", 1), rank, names)[0]


def _ours(targets: str, rank: int = 8) -> int:
    from hf_cases import case

    from ffnlab.sizing.finetune import lora_params, parse_targets
    from ffnlab.sizing.hf import from_hf_dict

    return lora_params(from_hf_dict(case("llama", 1)), rank, parse_targets(targets)).trainable


@pytest.mark.parametrize("names", [["q_proj", "v_proj"], ["q_proj", "k_proj", "v_proj", "o_proj"],
                                   ["gate_proj", "up_proj", "down_proj"], ["q_proj", "v_proj", "gate_proj", "up_proj",
                                                                           "down_proj"], sorted(PEFT_LLAMA),
                                   "all-linear"])
@pytest.mark.parametrize("fmt", ["trl", "axolotl"])
def test_peft_target_modules_are_priced_as_peft_adapts_them(tmp_path: Path, fmt: str, names) -> None:
    base = TRL if fmt == "trl" else AXOLOTL.replace("lora_target_linear: true\n", "")
    text = base + f"lora_dropout: 0.05\nlora_target_modules: {json.dumps(names)}\n"
    got = _read(tmp_path, "c.yaml", text)
    assert got.setting("lora_dropout") == 0.05
    targets = got.setting("lora_targets")
    assert isinstance(targets, str), dict(got.ignored)
    assert _ours(targets) == _peft_trainable(names)
    assert ("lora_target_modules", _text(names), f"lora_targets {targets}") in got.used


def test_trl_passes_a_one_name_list_on_as_that_name(tmp_path: Path) -> None:
    got = _read(tmp_path, "c.yaml", TRL + "lora_target_modules: [all-linear]\n")
    assert got.setting("lora_targets") == "all-linear"
    assert _ours("all-linear") == _peft_trainable("all-linear")  # what TRL hands peft
    listed = _read(tmp_path, "c.yml", AXOLOTL.replace("lora_target_linear: true\n", "")
                   + "lora_target_modules: [all-linear]\n")
    assert listed.setting("lora_targets") is None  # in a list, a module name peft finds nowhere
    with pytest.raises(ValueError, match="all-linear"):
        _peft_trainable(["all-linear"])


def _text(names) -> str:  # noqa: ANN001 - a list or a string, as the YAML wrote it
    return str(names)


@pytest.mark.parametrize("names", [["k_proj"], ["q_proj", "k_proj", "v_proj"], ["gate_proj"], ["up_proj", "down_proj"],
                                   ["q_proj", "v_proj", "o_proj"], [*sorted(PEFT_LLAMA), "lm_head"],
                                   ["c_attn"], "q_proj|v_proj", "model.layers.*.self_attn.(q|v)_proj"])
def test_peft_targets_ffnlab_cannot_price_are_said_in_one_entry_not_approximated(tmp_path: Path, names) -> None:
    got = _read(tmp_path, "c.yaml", TRL + f"lora_target_modules: {json.dumps(names)}\n")
    assert got.setting("lora_targets") is None  # no other set priced in their place
    why = dict(got.ignored)["lora_target_modules"]
    assert "not a set ffnlab prices" in why or "does not map" in why or "regular expression" in why, why
    if isinstance(names, list) and set(names) <= PEFT_LLAMA | {"lm_head"}:  # peft adapts a set of its own
        priced = {_ours(t) for t in ("attention", "qv", "ffn", "all-linear", "qv,ffn")}
        assert _peft_trainable(names) not in priced  # the oracle: no set ffnlab has adapts what peft does


def test_axolotl_s_lora_target_linear_adds_every_linear_layer(tmp_path: Path) -> None:
    got = _read(tmp_path, "c.yml", AXOLOTL + "lora_target_modules: [q_proj]\n")
    assert got.setting("lora_targets") == "all-linear"  # axolotl unions the names with every linear one
    off = _read(tmp_path, "off.yml", AXOLOTL.replace("lora_target_linear: true", "lora_target_linear: false")
                + "lora_target_modules: [q_proj, v_proj]\n")
    assert off.setting("lora_targets") == "qv"
    assert ("lora_target_linear", "false", "lora_targets qv") in off.used


def test_torchtune_s_attention_list_and_mlp_switch(tmp_path: Path) -> None:
    real = _read(tmp_path, "3B_qlora_single_device.yaml", TUNE_TARGETS)
    assert real.setting("lora_targets") is None and real.setting("lora_dropout") == 0.0
    keys = "model.lora_attn_modules + model.apply_lora_to_mlp + model.apply_lora_to_output"
    assert "LoRA on q, v, o, gate, up, down: not a set ffnlab prices" in dict(real.ignored)[keys]
    qv_mlp = _read(tmp_path, "qv.yaml", TUNE_TARGETS.replace("'q_proj', 'v_proj', 'output_proj'", "'q_proj', 'v_proj'"))
    assert qv_mlp.setting("lora_targets") == "qv,ffn"
    every = _read(tmp_path, "all.yaml", TUNE_TARGETS.replace("'output_proj'", "'k_proj', 'output_proj'"))
    assert every.setting("lora_targets") == "all-linear"
    attn = _read(tmp_path, "attn.yaml", TUNE_TARGETS.replace("'output_proj'", "'k_proj', 'output_proj'")
                 .replace("apply_lora_to_mlp: True", "apply_lora_to_mlp: False"))
    assert attn.setting("lora_targets") == "attention"
    head = _read(tmp_path, "head.yaml", TUNE_TARGETS.replace("apply_lora_to_output: False",
                                                             "apply_lora_to_output: True"))
    assert head.setting("lora_targets") is None and "head" in dict(head.ignored)[keys]


@pytest.mark.parametrize("value", ["1.5", "-0.1", "1", "true", "lots"])
def test_a_dropout_outside_0_to_1_is_ignored_and_said(tmp_path: Path, value: str) -> None:
    got = _read(tmp_path, "c.yaml", TRL + f"lora_dropout: {value}\n")
    assert got.setting("lora_dropout") is None
    assert dict(got.ignored)["lora_dropout"].endswith("is not one ffnlab models")  # read, and refused as a value


@pytest.mark.parametrize(
    "text, key",
    [
        ('gradient_accumulation_steps: "\u00b2"\n', "gradient_accumulation_steps"),
        ('gradient_accumulation_steps: "\u0661\u0662"\n', "gradient_accumulation_steps"),  # int() reads 12
        (f'gradient_accumulation_steps: "{"7" * 4400}"\n', "gradient_accumulation_steps"),  # past int()'s limit
        ('lora_dropout: "\u0660.\u0665"\n', "lora_dropout"),  # float() reads 0.5
        ('lora_dropout: "0.0_5"\n', "lora_dropout"),  # float() reads 0.05
    ],
)
def test_a_number_string_outside_bounded_ascii_is_refused_naming_the_file_and_key(
        tmp_path: Path, text: str, key: str) -> None:
    from ffnlab.errors import FfnlabError
    from ffnlab.files import read_mapping

    path = tmp_path / "c.yaml"
    path.write_text(TRL + text, encoding="utf-8")
    with pytest.raises(FfnlabError) as e:
        read_engine_config(read_mapping(path, "engine config"), path.suffix, "c.yaml")
    message = str(e.value)
    assert message.startswith(f"c.yaml: {key} must be") and "\n" not in message and len(message) < 300, message


@pytest.mark.parametrize("value", ['" 4 "', '"4"', "4"])
def test_a_whole_number_string_in_ascii_digits_is_the_number(tmp_path: Path, value: str) -> None:
    got = _read(tmp_path, "c.yaml", TRL + f"gradient_accumulation_steps: {value}\n")
    assert got.setting("grad_accum") == 4  # oracle: YAML's own integer 4 (the unquoted case)
