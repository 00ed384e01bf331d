"""Run the ffnlab CLI in a subprocess (exit codes and stderr exactly as a user sees them)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run(*args: str, cwd: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ffnlab", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def run_json(*args: str) -> Any:
    p = run(*args, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def assert_usage_error(p: subprocess.CompletedProcess, fragment: str = "") -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "Traceback" not in p.stderr
    assert fragment.lower() in lines[0].lower(), lines[0]
