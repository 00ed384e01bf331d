"""Known open items, each checked against an oracle outside ffnlab.

* ``fit``'s verdict line names a model file whose name is bytes that are not UTF-8 as those
  bytes (``\\xfe``), as every other line of the CLI does (oracle: the file system's own name,
  ``os.fsdecode(b"\\xfe")``, and the process's exit status and stderr).
* A Ctrl-C while the command line is still importing its modules (typer, ffnlab.cli.app, the
  command's group) ends it as a Ctrl-C inside a command does: ``interrupted``, exit 130, no
  traceback (oracle: the exit status and stderr of a process that receives a real SIGINT at each
  of those moments, sent by a sitecustomize in a temporary folder when the module is looked up).
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
