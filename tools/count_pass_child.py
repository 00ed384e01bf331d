"""What the count-pass tools (``tools/count_pass_*.py``) share: both sides' verdicts on a list of configs,
transformers' (``hf_counts_all.reference``) and audit's (``hf_counts_all.audited``), each taken in a child
process under a time limit (transformers itself may not end), and the small editors of stored defaults."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# the child: both sides' verdicts on each config of a list, one json line per config; each side time-boxed
# by an alarm (a build of transformers is Python code: the alarm stops it)
_CHILD = """
import json, signal, sys, tempfile, time
from pathlib import Path
from hf_counts_all import audited, reference
limit = int(sys.argv[2])

class Late(BaseException):
    pass

def late(*_):
    raise Late()

signal.signal(signal.SIGALRM, late)
for cid, config in json.loads(Path(sys.argv[1]).read_text()):
    row = {"id": cid}
    for mode in ("ref", "audit"):
        t = time.time()
        signal.alarm(limit)
        try:
            if mode == "ref":
                out = reference(json.loads(json.dumps(config)))
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    out = audited(json.loads(json.dumps(config)), Path(tmp))
                out.pop("ref", None)
        except Late:
            out = {"timeout": limit}
        finally:
            signal.alarm(0)
        out["s"] = round(time.time() - t, 2)
        row[mode] = out
    print(json.dumps(row), flush=True)
"""


def _child(batch: list[tuple[str, dict[str, Any]]], timeout_s: int) -> dict[str, dict[str, Any]]:
    """Each config's two verdicts, from one child process, up to the first it dies on."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.json"
        path.write_text(json.dumps(batch))
        env = {
            "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests' / 'helpers'}",
            "PATH": "/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_VERBOSITY": "error",
        }
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), str(timeout_s)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=ROOT,
        )
        rows: dict[str, dict[str, Any]] = {}
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                row = json.loads(line)
                rows[row.pop("id")] = row
        proc.wait()
    return rows


def verdicts(batch: list[tuple[str, dict[str, Any]]], timeout_s: int) -> dict[str, dict[str, Any]]:
    """Each config's two verdicts; where the child dies (a build past its time box that the alarm did not
    stop), that config is given no verdict and a new child takes the rest."""
    rows: dict[str, dict[str, Any]] = {}
    while batch:
        rows.update(_child(batch, timeout_s))
        left = [case for case in batch if case[0] not in rows]
        if left:
            rows[left[0][0]] = {"ref": {"timeout": timeout_s, "died": True}, "audit": {"timeout": timeout_s}}
            left = left[1:]
        batch = left
    return rows


def defaults() -> dict[str, dict[str, Any]]:
    from hf_counts_all import exact_defaults

    return exact_defaults()


def edit(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if "__" in key:  # text_config__hidden_size: a nested key
            outer, inner = key.split("__", 1)
            out[outer] = {**out.get(outer, {}), inner: value}
        else:
            out[key] = value
    return out


def drop(base: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in base.items() if k not in keys}


def records_of(chosen: dict[str, tuple[str, dict[str, Any]]], rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each chosen case (id -> (class of the pass, config)) with both verdicts and its status: exact,
    refused (by both), off, or no-verdict; printed a line each as it goes."""
    import transformers

    records: list[dict[str, Any]] = []
    for cid, (cls, config) in chosen.items():
        row = rows.get(cid, {"ref": {"traceback": "the child died"}, "audit": {"traceback": "the child died"}})
        ref, got = row["ref"], row["audit"]
        if "total" in ref:
            status = "exact" if got.get("total") == ref["total"] else "off"
        elif "refused" in ref:
            status = "refused" if "refused" in got else "off"
        else:
            status = "no-verdict"
        if "traceback" in got or "timeout" in got:
            status = "off"
        records.append(
            {
                "id": cid,
                "class_of_pass": cls,
                "config": config,
                "status": status,
                "total": ref.get("total"),
                "auto": ref.get("auto"),
                "class": ref.get("class"),
                "ref": ref,
                "audit": got,
                "transformers": transformers.__version__,
            }
        )
        print(f"{status:10} {cid:70} ref={json.dumps(ref)[:110]} audit={json.dumps(got)[:150]}", flush=True)
    return records
