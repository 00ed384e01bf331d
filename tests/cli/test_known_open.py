"""Known open items, each checked against an oracle outside ffnlab.

* ``fit``'s verdict line names a model file whose name is bytes that are not UTF-8 as those
  bytes (``\\xfe``), as every other line of the CLI does (oracle: the file system's own name,
  ``os.fsdecode(b"\\xfe")``, and the process's exit status and stderr).
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
