"""Known open items, each checked against an oracle outside ffnlab.

* ``fit``'s verdict line names a model file whose name is bytes that are not UTF-8 as those
  bytes (``\\xfe``), as every other line of the CLI does (oracle: the file system's own name,
  ``os.fsdecode(b"\\xfe")``, and the process's exit status and stderr).
* A Ctrl-C while the command line is still importing its modules (typer, ffnlab.cli.app, the
  command's group) ends it as a Ctrl-C inside a command does: ``interrupted``, exit 130, no
  traceback (oracle: the exit status and stderr of a process that receives a real SIGINT at each
  of those moments, sent by a sitecustomize in a temporary folder when the module is looked up).
* ``--engine-config FILE`` reads LoRA's dropout and targets where TRL's, axolotl's and torchtune's
  configs state them, says which keys it used, lets an explicit flag override them, and says in
  one line a set of targets ffnlab cannot price (oracle: peft's own count of the adapters for the
  file's target_modules, on the same config.json; the file's own values).
* GPT-J with ``max_position_embeddings`` 10**30 is refused in one line naming the key, as
  transformers refuses to build it (oracle: ``from_config`` on the meta device raising).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC

# a Llama no single H100 holds for training (a 405B-like shape): fit answers "does not fit"
BIG = {"model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
       "num_attention_heads": 128, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192}


def _ffnlab(args: list[str], where: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ffnlab", *args], cwd=where, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": SRC, "PYTHONIOENCODING": "utf-8", **env})


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_fit_s_verdict_shows_a_name_that_is_not_utf8_as_its_bytes(tmp_path, fmt):
    name = os.fsdecode(b"\xfe.json")  # what Python makes of a shell's $'\xfe.json'
    (tmp_path / name).write_text(json.dumps(BIG))
    p = _ffnlab(["fit", name, "--gpu", "H100-80GB", "--gpus", "1", "--format", fmt], tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-1500:]  # was: UnicodeEncodeError: surrogates not allowed
    assert p.returncode == 1, (p.returncode, p.stderr[-500:])  # the "does not fit" answer
    said = p.stderr if fmt == "csv" else p.stdout  # beside CSV the verdict is a note on stderr
    verdict = next(line for line in said.splitlines() if "does not fit on 1 GPU" in line)
    assert verdict.removeprefix("note: ").startswith("\\xfe does not fit"), verdict
    assert "\\udcfe" not in said  # the byte, not the surrogate Python holds it as


# -- a Ctrl-C while the command line is being imported ------------------------------------------------

# sent when the interpreter looks a module up (a finder first on sys.meta_path), so the signal lands
# at that moment of the start every time; SIGINT's handler as a terminal gives it
SIGINT_AT = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
AT = os.environ["FFNLAB_TEST_SIGINT_AT"]


class SigintWhenLookedUp:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None


sys.meta_path.insert(0, SigintWhenLookedUp())
"""
# what the installed ``ffnlab`` script runs (pip's console-script wrapper)
CONSOLE_SCRIPT = "import re, sys\nfrom ffnlab.cli import main\nsys.exit(main())\n"


@pytest.mark.parametrize("entry", ["-m", "script"])
@pytest.mark.parametrize("module", ["typer", "typer.main", "ffnlab.interrupt", "ffnlab.cli.app", "ffnlab.validation",
                                    "ffnlab.cli.sizing", "ffnlab.cli.memory_flags"])
def test_a_ctrl_c_while_the_cli_imports_says_interrupted(tmp_path, entry, module):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SIGINT_AT)
    start = ["-m", "ffnlab"] if entry == "-m" else ["-c", CONSOLE_SCRIPT]
    p = subprocess.run([sys.executable, *start, "size", "--d-model", "256", "--ratio", "4", "--n-layers", "2"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), SRC]),
                            "FFNLAB_TEST_SIGINT_AT": module})
    # was: a KeyboardInterrupt traceback and death by the signal (-2)
    assert (p.returncode, p.stderr, p.stdout) == (130, "interrupted\n", ""), (p.returncode, p.stderr[-1500:])


def test_importing_ffnlab_imports_nothing_else():
    """The package runs before the command line's guard: it imports no module, so no Ctrl-C can land
    in an import there."""
    code = "import sys; before = set(sys.modules); import ffnlab; print(sorted(set(sys.modules) - before))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": SRC})
    assert p.stdout.split() == ["['ffnlab']"], p.stdout + p.stderr


# -- LoRA dropout and targets from a launch config -------------------------------------------------

def _size_json(tmp_path: Path, *args: str) -> tuple[dict, str]:
    from hf_cases import case

    (tmp_path / "config.json").write_text(json.dumps(case("llama", 1)))
    p = _ffnlab(["size", "--from", "config.json", *args, "--json"], tmp_path)
    assert p.returncode == 0, p.stderr[-1500:]
    return json.loads(p.stdout), p.stderr


def test_engine_config_reads_lora_dropout_and_targets(tmp_path):
    pytest.importorskip("peft")
    from finetune_oracle import peft_count
    from hf_cases import case

    (tmp_path / "sft.yaml").write_text("per_device_train_batch_size: 2\nuse_peft: true\nlora_r: 8\n"
                                       "lora_dropout: 0.1\nlora_target_modules: [q_proj, v_proj]\n")
    out, err = _size_json(tmp_path, "--engine-config", "sft.yaml")
    assert out["finetune"]["lora"]["targets"] == ["qv"] and out["finetune"]["options"]["lora_dropout"] == 0.1
    assert out["finetune"]["lora"]["trainable"] == peft_count(case("llama", 1), 8, ["q_proj", "v_proj"])[0]
    assert "lora_dropout = 0.1 (lora_dropout 0.1); lora_target_modules = ['q_proj', 'v_proj'] (lora_targets qv)" in err
    assert "not a memory setting" not in err  # was: "ignored, not a memory setting (2): lora_dropout, ..."
    over, err = _size_json(tmp_path, "--engine-config", "sft.yaml", "--lora-targets", "attention",
                           "--lora-dropout", "0")
    assert over["finetune"]["lora"]["targets"] == ["attention"]
    assert over["finetune"]["options"].get("lora_dropout", 0) == 0
    assert "the command line's --lora-dropout, --lora-targets over the file's" in err
    assert over["finetune"]["lora"]["trainable"] == peft_count(case("llama", 1), 8,
                                                               ["q_proj", "k_proj", "v_proj", "o_proj"])[0]


def test_engine_config_says_in_one_line_targets_it_cannot_price(tmp_path):
    (tmp_path / "sft.yaml").write_text("use_peft: true\nlora_target_modules: [k_proj]\n")
    out, err = _size_json(tmp_path, "--engine-config", "sft.yaml")
    said = [line for line in err.splitlines() if "lora_target_modules" in line]
    assert len(said) == 1 and "LoRA on k: not a set ffnlab prices" in said[0], err
    assert said[0].startswith("  ignored, a value ffnlab does not model:"), said[0]


def test_lora_keys_beside_a_full_run_are_left_out_not_refused(tmp_path):
    (tmp_path / "sft.yaml").write_text("use_peft: false\nlora_r: 32\nlora_dropout: 0.05\n"
                                       "lora_target_modules: [q_proj, v_proj]\n")
    out, err = _size_json(tmp_path, "--engine-config", "sft.yaml")  # was: exit 2, "--lora-rank applies with ..."
    assert out.get("finetune") is None  # every weight trains
    assert "left out: lora_rank, lora_dropout, lora_targets (the run trains every weight" in err


# -- a GPT-J whose rotary table transformers cannot build ------------------------------------------

def test_gptj_with_10_to_the_30_positions_is_one_error_line(tmp_path):
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = {"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 1, "vocab_size": 50,
              "max_position_embeddings": 10**30}
    d = dict(config)
    with pytest.raises(OverflowError), torch.device("meta"):  # transformers 5.25: "int too big to convert"
        AutoModelForCausalLM.from_config(AutoConfig.for_model(d.pop("model_type"), **d))
    (tmp_path / "config.json").write_text(json.dumps(config))
    p = _ffnlab(["size", "--from", "config.json"], tmp_path)  # was: exit 0 and a count
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout[-300:])
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: config.json key 'max_position_embeddings'")
