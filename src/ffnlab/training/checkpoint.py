"""Checkpoints: safetensors for every tensor, JSON for the rest; nothing is ever unpickled.

A checkpoint is a folder ``checkpoints/step-NNNNNNN/`` holding ``model.safetensors``,
``optim.safetensors`` (optimizer moments and RNG states) and ``state.json``. It is written into
a temporary folder and renamed into place, so a killed process leaves either the previous
checkpoint or the new one, never half of one. Only the newest ``keep_last`` are kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch

from ffnlab.errors import FfnlabError
from ffnlab.files import fsync_files, publish_dir

FORMAT = 1
_STEP_DIR = re.compile(r"^step-(\d{7})$")


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name))


def latest_checkpoint(run_dir: Path) -> Path | None:
    dirs = checkpoint_dirs(run_dir)
    return dirs[-1] if dirs else None


def _optimizer_tensors(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {}
    for idx, state in sd["state"].items():
        for name, value in state.items():
            key = f"state.{idx}.{name}"
            if isinstance(value, torch.Tensor):
                tensors[key] = value.detach().cpu().contiguous()
            else:
                scalars[key] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _rng_tensors() -> dict[str, torch.Tensor]:
    out = {"rng.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"rng.cuda.{i}"] = s
    return out


def save_checkpoint(run_dir: Path, model: torch.nn.Module, opt: torch.optim.Optimizer,
                    state: dict[str, Any], keep_last: int) -> Path:
    from safetensors.torch import save_file, save_model

    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{state['step']:07d}"
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    save_model(model, str(tmp / "model.safetensors"))
    tensors, opt_json = _optimizer_tensors(opt)
    save_file({**tensors, **_rng_tensors()}, str(tmp / "optim.safetensors"))
    (tmp / "state.json").write_text(json.dumps({"format": FORMAT, **state, "optimizer": opt_json}, indent=1))
    fsync_files(tmp)  # durable before the rename publishes them
    publish_dir(tmp, final)
    for old in checkpoint_dirs(run_dir)[:-keep_last]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _corrupt(path: Path, why: object) -> FfnlabError:
    return FfnlabError(f"checkpoint {path} is corrupt or not a safetensors file ({why}); "
                       "ffnlab never unpickles checkpoints")


def load_checkpoint(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer | None) -> dict[str, Any]:
    """Restore model (and optimizer, RNG) from ``path``; return the saved state."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, load_model

    path = Path(path)
    for name in ("model.safetensors", "optim.safetensors", "state.json"):
        if not (path / name).is_file():
            raise FfnlabError(f"checkpoint {path} is incomplete: {name} is missing")
    try:
        state = json.loads((path / "state.json").read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _corrupt(path / "state.json", e) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise _corrupt(path / "state.json", "unknown format")
    try:
        missing, unexpected = load_model(model, str(path / "model.safetensors"), strict=False)
        tensors = load_file(str(path / "optim.safetensors"))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise _corrupt(path, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    if missing or unexpected:
        raise FfnlabError(f"checkpoint {path} does not fit this model (missing {sorted(missing)[:3]}, "
                          f"unexpected {sorted(unexpected)[:3]}); was the config changed?")
    try:
        if not isinstance(state.get("step"), int):
            raise ValueError("state.json has no integer step")
        if opt is not None:
            sd: dict[str, Any] = {"state": {}, "param_groups": state["optimizer"]["param_groups"]}
            for key, value in list(tensors.items()) + list(state["optimizer"]["scalars"].items()):
                if key.startswith("state."):
                    _, idx, name = key.split(".", 2)
                    sd["state"].setdefault(int(idx), {})[name] = value
            opt.load_state_dict(sd)
        torch.set_rng_state(tensors["rng.cpu"])
        if torch.cuda.is_available():
            cuda = [tensors[k] for k in sorted(t for t in tensors if t.startswith("rng.cuda."))]
            if len(cuda) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda)
    except (ValueError, KeyError, TypeError, RuntimeError, AttributeError) as e:
        raise _corrupt(path, f"{type(e).__name__}: {e}") from None
    return state
