"""Which ffnlab code produced a result."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_commit() -> str:
    """HEAD of the checkout ffnlab runs from (with -dirty for local edits), or "unknown"."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("-dirty" if dirty else "")) if sha else "unknown"


def short_commit(commit: str) -> str:
    """A commit as people quote it (12 hex digits), keeping :func:`git_commit`'s -dirty mark."""
    return commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")
