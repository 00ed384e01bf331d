"""A config.json that lacks size keys is counted with transformers' class defaults, as transformers
counts it, and the audit names the keys it took from them (table, Markdown, CSV's stderr and JSON); a complete config,
and every zoo config, names none.

Oracle: LlamaConfig's defaults (hidden_size 4096 given: 32 layers of 32 heads, intermediate_size
11008, vocab 32000: LLaMA-7B's 6,738,415,616 parameters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inproc import run_cli

from ffnlab.sizing.audit import audit
from ffnlab.sizing.hf import translate_hf_dict
from ffnlab.sizing.zoo import load_zoo

PARTIAL = {"model_type": "llama", "hidden_size": 4096}
TAKEN = ("keys missing from config.json, taken from transformers' llama config defaults: "
         "num_attention_heads 32, num_hidden_layers 32, intermediate_size 11,008, vocab_size 32,000")
# a translated row names the class it counts (transformers' reference for llama) before the defaults
COUNTED = ("counted by ffnlab's llama translator as transformers 5.25 builds it "
           "(LlamaForCausalLM, AutoModelForCausalLM: causal LM)")


def write(tmp_path: Path, data: dict) -> str:
    p = tmp_path / "partial" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(data))
    return str(p)


def test_the_reader_knows_which_size_keys_it_took_from_the_class_defaults():
    cfg, defaulted = translate_hf_dict(PARTIAL)
    assert defaulted == {"num_attention_heads": 32, "num_hidden_layers": 32, "intermediate_size": 11008,
                         "vocab_size": 32000}
    assert (cfg.n_layers, cfg.ffn.d_ff, cfg.vocab_size) == (32, 11008, 32000)


def test_a_key_derived_from_others_is_not_a_default():
    # num_key_value_heads (null class default: the head count) and GPT-2's n_inner (4 x n_embd)
    full = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 1000}
    assert translate_hf_dict(full)[1] == {}
    gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64}
    assert translate_hf_dict(gpt2)[1] == {}


def test_the_audit_keeps_the_count_and_names_the_defaults(tmp_path, capsys):
    path = write(tmp_path, PARTIAL)
    row = audit(path)
    assert row.params_total == 6_738_415_616
    assert row.note == f"{COUNTED}; {TAKEN}"
    table = run_cli(capsys, "audit", path)
    assert table.returncode == 0, table.stderr
    assert f"partial: {TAKEN}" in " ".join(table.stdout.split())
    shown = run_cli(capsys, "audit", path, "--json")
    assert json.loads(shown.stdout)[0]["note"] == f"{COUNTED}; {TAKEN}"


def test_markdown_and_csv_name_the_defaults_too(tmp_path, capsys):
    # Markdown after its table; CSV on stderr, so the CSV stream stays one table
    path = write(tmp_path, PARTIAL)
    md = run_cli(capsys, "audit", path, "--format", "markdown")
    assert md.returncode == 0, md.stderr
    assert f"partial: {TAKEN}" in md.stdout
    csv = run_cli(capsys, "audit", path, "--format", "csv")
    assert csv.returncode == 0, csv.stderr
    assert f"partial: {TAKEN}" in csv.stderr and TAKEN not in csv.stdout
    assert len(csv.stdout.strip().splitlines()) == 2  # header and the one row


@pytest.mark.parametrize("entry", [e for e in load_zoo() if isinstance(e.hf_config, dict)], ids=lambda e: e.name)
def test_no_zoo_config_lacks_a_size_key(entry):
    try:
        _, defaulted = translate_hf_dict(entry.hf_config)
    except Exception:  # counted through transformers, not translated
        pytest.skip("not translated")
    assert defaulted == {}
