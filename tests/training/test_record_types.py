"""The TypedDicts that describe the files a run writes name exactly the keys of those files.

The oracle is the files themselves (and the dataclasses a config dict is made from): a key the
code writes that its type does not name, or one the type promises that no file holds, fails here.
"""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from ffnlab.training import runconfig

FACTS = "facts:subjects=40,relations=3,values=8,value_len=1,seed=3"
TINY = {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "ffn": {"n_experts": 2, "top_k": 1}},
        "train": {"seq_len": 16, "batch_size": 4, "max_steps": 2, "eval_every": 2, "log_every": 1,
                  "checkpoint_every": 2, "eval_tokens": 1024, "warmup_steps": 1, "progress": "off",
                  "tensorboard": False, "threads": 1, "peak_flops": 1e11, "device": "cpu"}}


def keys(td: typing.Any) -> tuple[set[str], set[str]]:
    """(required, optional) keys of a TypedDict."""
    return set(td.__required_keys__), set(td.__optional_keys__)


def assert_fits(record: dict, td: typing.Any, where: str) -> None:
    required, optional = keys(td)
    assert required <= set(record), (where, sorted(required - set(record)))
    assert set(record) <= required | optional, (where, sorted(set(record) - required - optional))


def test_run_config_dict_names_every_field_of_every_section():
    sections = {"model": (runconfig.ModelSection, runconfig.ModelSectionDict),
                "data": (runconfig.DataSection, runconfig.DataSectionDict),
                "train": (runconfig.TrainSection, runconfig.TrainSectionDict),
                "model.ffn": (runconfig.FFNSection, runconfig.FFNSectionDict)}
    assert keys(runconfig.RunConfigDict) == ({f.name for f in dataclasses.fields(runconfig.RunConfig)}, set())
    for name, (cls, td) in sections.items():
        assert keys(td) == ({f.name for f in dataclasses.fields(cls)}, set()), name
    saved = runconfig.RunConfig().to_dict()
    assert_fits(saved, runconfig.RunConfigDict, "config")
    assert_fits(saved["model"]["ffn"], runconfig.FFNSectionDict, "model.ffn")


@pytest.fixture(scope="module")
def moe_run(tmp_path_factory):
    """A two-step mixture-of-experts run on a facts corpus (its train records carry aux_loss), with
    its summary."""
    from ffnlab.training.trainer import train

    root = tmp_path_factory.mktemp("typed")
    tree = json.loads(json.dumps(TINY))
    tree["data"] = {"cache_dir": str(root / "cache"), "corpus": FACTS}  # capacity measures facts runs only
    summary = train(runconfig.from_dict(tree), root / "run")
    return root / "run", summary


def test_metrics_summary_and_checkpoint_state_have_the_keys_their_types_name(moe_run):
    from ffnlab.training.checkpoint import CheckpointState, OptimizerState
    from ffnlab.training.runfiles import EvalRecord, TrainRecord
    from ffnlab.training.trainer import Summary

    run, summary = moe_run
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {r["kind"] for r in lines} == {"train", "eval"}
    for r in lines:
        assert_fits(r, TrainRecord if r["kind"] == "train" else EvalRecord, f"{r['kind']} record")
    assert all("aux_loss" in r for r in lines if r["kind"] == "train")
    on_disk = json.loads((run / "summary.json").read_text())
    assert_fits(on_disk, Summary, "summary.json")
    assert summary == on_disk
    state = json.loads((run / "checkpoints" / "step-0000002" / "state.json").read_text())
    assert_fits(state, CheckpointState, "state.json")
    assert keys(CheckpointState)[1] <= set(state)  # this trainer writes the optional keys too
    assert_fits(state["optimizer"], OptimizerState, "state.json optimizer")


def test_export_files_have_the_keys_their_types_name(moe_run, tmp_path):
    from ffnlab.training.export import HFConfig, RopeParameters, export_run
    from ffnlab.training.export_tokenizer import GenerationConfig, TokenizerConfig

    run, _ = moe_run
    done = export_run(run, tmp_path / "hf")
    assert (done.layout, done.step, done.max_steps, done.finished) == ("mixtral", 2, 2, True)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert_fits(config, HFConfig, "config.json")
    assert_fits(config["rope_parameters"], RopeParameters, "rope_parameters")
    assert_fits(json.loads((tmp_path / "hf" / "generation_config.json").read_text()), GenerationConfig,
                "generation_config.json")
    assert_fits(json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text()), TokenizerConfig,
                "tokenizer_config.json")


@pytest.mark.parametrize("layout", ["llama", "arcee", "stablelm", "starcoder2", "olmo", "gpt2"])
def test_every_layout_writes_only_keys_hf_config_names(layout):
    from ffnlab.sizing.config import AttentionSpec, FFNSpec, ModelConfig, validate
    from ffnlab.training.export import LAYOUTS, HFConfig, model_files
    from ffnlab.training.nn import build_model

    kind, norm, positions = {"llama": ("swiglu", "rmsnorm", "rope"), "arcee": ("gelu", "rmsnorm", "rope"),
                             "stablelm": ("swiglu", "layernorm", "rope"),
                             "starcoder2": ("gelu", "layernorm", "rope"),
                             "olmo": ("swiglu", "none", "rope"),
                             "gpt2": ("gelu", "layernorm", "learned")}[layout]
    cfg = validate(ModelConfig(d_model=32, n_layers=1, vocab_size=64, ffn=FFNSpec(kind=kind, d_ff=64),
                               attn=AttentionSpec(n_heads=2), norm=norm, positions=positions, max_positions=16))
    model = build_model(cfg, seed=0, max_seq_len=16, norm_eps=1e-5)
    name, _, config = model_files(model)
    assert name == layout and config["architectures"] == [LAYOUTS[layout].architecture]
    assert_fits(json.loads(json.dumps(config)), HFConfig, f"{layout} config.json")


def test_corpus_manifest_has_the_keys_its_type_names(moe_run):
    from ffnlab.training.corpus.prepare import CorpusCounts, CorpusSettings, Manifest

    run, _ = moe_run
    folder = json.loads((run / "model.json").read_text())["prepared_data"]
    manifest = json.loads((run.parent / "cache" / folder.rsplit("/", 1)[-1] / "manifest.json").read_text())
    assert_fits(manifest, Manifest, "manifest.json")
    assert_fits(manifest["settings"], CorpusSettings, "manifest settings")
    assert_fits(manifest["counts"], CorpusCounts, "manifest counts")


def test_capacity_json_has_the_keys_its_type_names(moe_run):
    from ffnlab.training.capacity import CapacityMeasure, FactSetBits, RelationBits, measure_run

    run, _ = moe_run
    returned = measure_run(run)
    on_disk = json.loads((run / "capacity.json").read_text())
    assert returned == on_disk
    assert_fits(on_disk, CapacityMeasure, "capacity.json")
    assert keys(CapacityMeasure)[1] <= set(on_disk)  # the optional summary_sha256 is written now
    for name in ("trained", "heldout"):
        assert_fits(on_disk[name], FactSetBits, name)
        for row in on_disk[name]["relations"]:
            assert_fits(row, RelationBits, f"{name} relation")


def test_perplexity_row_names_every_field_of_the_record():
    from ffnlab.training.perplexity import PerplexityRecord, PerplexityRow

    assert keys(PerplexityRow) == ({f.name for f in dataclasses.fields(PerplexityRecord)}, set())
