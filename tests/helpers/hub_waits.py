"""What the fake-Hub wait tests share: a tiny Llama config, ffnlab run against a fake Hub, and
the checks that it failed with one error line and asked for each address once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from fake_hub import FakeHub

LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}



def ffnlab(url: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "FFNLAB_TIMEOUT"))}
    env |= {"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
            "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-m", "ffnlab", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def error_line(p: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line (after at most the progress line), exit 2, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], p.stderr
    assert all(x.startswith("waiting for ") for x in lines[:-1]), p.stderr
    return errors[0]


def each_url_once(fake: FakeHub) -> None:
    counts = Counter((method, path) for method, path, _ in fake.requests)
    assert counts and max(counts.values()) == 1, counts  # no retry of anything
