"""Reading and writing a run folder's files (no torch): metrics records and atomic writes."""

from __future__ import annotations

import json
import os
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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
