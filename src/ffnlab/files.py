"""Files every layer writes the same way: atomically, so a kill leaves the old version or the new.

* :func:`write_atomic` writes a file through a uniquely named temporary beside it and renames it
  into place (one ``os.replace``), optionally after an fsync;
* :func:`publish_dir` moves a finished folder into place, replacing an older one.

Used by run folders (metrics, summaries), checkpoints, prepared corpora and sweeps.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def _sibling(path: Path, tag: str) -> Path:
    return path.with_name(f".{tag}-{path.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def write_atomic(path: Path, data: str | bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    tmp = _sibling(Path(path), "tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_files(folder: Path) -> None:
    """Make every file directly in ``folder`` durable (before a rename publishes the folder)."""
    for f in Path(folder).iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def publish_dir(tmp: Path, final: Path) -> None:
    """Move the finished folder ``tmp`` to ``final``; an existing ``final`` is replaced.

    The old folder is first renamed aside, so at every moment ``final`` is absent, old or new,
    never a mixture; the renamed-aside copy is removed afterwards.
    """
    stale = _sibling(Path(final), "old") if final.exists() else None
    if stale is not None:
        os.replace(final, stale)
    try:
        os.replace(tmp, final)
    finally:
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
