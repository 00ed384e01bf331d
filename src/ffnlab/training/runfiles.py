"""Reading a run folder's files (no torch): the tolerant metrics reader; atomic writes are in ffnlab.files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl``; a line torn by a kill (the last one) is dropped."""
    out = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "step" in rec and "kind" in rec:
            out.append(rec)
    return out
