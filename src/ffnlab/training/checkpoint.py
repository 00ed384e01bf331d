"""Checkpoints: safetensors for every tensor, JSON for the rest; nothing is ever unpickled.

A checkpoint is a folder ``checkpoints/step-NNNNNNN/`` holding ``model.safetensors``,
``optim.safetensors`` (optimizer moments and RNG states) and ``state.json`` (with the build
settings the model was trained with, ``build``, which the weights' shapes cannot tell). It is written into
a temporary folder (marked as ffnlab's) and renamed into place, so a killed process leaves either
the previous checkpoint or the new one, never half of one. Only the newest ``keep_last`` are
kept: older ones are deleted only if they carry ffnlab's marker (:data:`ffnlab.files.MARK`),
never because of their name. ``checkpoints/`` must not lead outside the run folder through a
symlink; a full disk is one error line, with the previous checkpoint kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, Union, cast

import torch

from ffnlab import files
from ffnlab.errors import FfnlabError
from ffnlab.files import (
    cannot_write,
    check_inside,
    fsync_files,
    make_dir,
    marked,
    new_temp_dir,
    publish_dir,
    read_text,
)
from ffnlab.training.runfiles import build_record
from ffnlab.validation import integer, number, show

FORMAT = 1
_STEP_DIR = re.compile(r"^step-(\d{7})$")

# one optimizer parameter group as state.json holds it: hyper-parameters (numbers, flags, None),
# betas as a pair, and ``params`` as the indices of the parameters in the group
ParamGroup = dict[str, Union[float, None, Sequence[float]]]


class _StepBuild(TypedDict, total=False):
    # the settings the model was built with (runconfig.build_settings); a resume compares them
    build: dict[str, float]


class StepState(_StepBuild):
    """Where the run stands when a checkpoint is written (the trainer's part of state.json)."""

    step: int
    tokens: int
    elapsed_s: float


class OptimizerState(TypedDict):
    """The optimizer's JSON part of state.json; its tensors are in optim.safetensors."""

    param_groups: list[ParamGroup]
    scalars: dict[str, float]  # non-tensor per-parameter state, by ``state.INDEX.NAME``


class _SavedProgress(TypedDict, total=False):
    tokens: int | None  # absent or null in a checkpoint whose reader knows no tokens per step
    elapsed_s: float  # absent: 0.0
    build: dict[str, float] | None  # absent or null in a checkpoint written before it was kept


class CheckpointState(_SavedProgress):
    """``state.json`` of a checkpoint, as :func:`load_checkpoint` returns it once checked."""

    format: int
    step: int
    optimizer: OptimizerState


def checkpoints_folder(run_dir: Path) -> Path:
    """``RUN/checkpoints``, refused with one error line if it leads outside the run folder."""
    return check_inside(Path(run_dir) / "checkpoints", run_dir, "the checkpoint folder")


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (folders, never symlinks, named step-NNNNNNN)."""
    root = checkpoints_folder(run_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if _STEP_DIR.match(p.name) and p.is_dir() and not p.is_symlink())


def latest_checkpoint(run_dir: Path) -> Path | None:
    dirs = checkpoint_dirs(run_dir)
    return dirs[-1] if dirs else None


def _optimizer_tensors(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], OptimizerState]:
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, float] = {}
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
                    state: StepState, keep_last: int) -> Path:
    """Write checkpoint ``step-N`` of the run atomically, then delete the ffnlab-made ones beyond ``keep_last``."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file, save_model

    root = make_dir(checkpoints_folder(run_dir), run_dir)
    final = root / f"step-{state['step']:07d}"
    if os.path.lexists(final) and not marked(final):
        raise FfnlabError(f"{final} exists and was not written by ffnlab; move it out of {root} to continue")
    tmp = new_temp_dir(root, final.name)
    try:
        save_model(model, str(tmp / "model.safetensors"))
        tensors, opt_json = _optimizer_tensors(opt)
        save_file({**tensors, **_rng_tensors()}, str(tmp / "optim.safetensors"))
        with open(tmp / "state.json", "x", encoding="utf-8") as fh:  # a new file in a folder just made
            fh.write(json.dumps({"format": FORMAT, **state, "optimizer": opt_json}, indent=1))
        fsync_files(tmp)  # durable before the rename publishes them
        publish_dir(tmp, final)
    except FfnlabError:
        raise
    except (SafetensorError, OSError) as e:  # a full disk, a quota (not an OSError in safetensors)
        kept = latest_checkpoint(run_dir)
        raise cannot_write(final, e, "checkpoint",
                           f"{'the last checkpoint ' + str(kept) + ' is kept' if kept else 'no checkpoint yet'}: "
                           "free space and rerun with --resume") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already once published
    for old in checkpoint_dirs(run_dir)[:-keep_last]:
        if marked(old):  # an ffnlab checkpoint, never a folder that merely has the name
            shutil.rmtree(old, ignore_errors=True)
    return final


def _corrupt(path: Path, why: object) -> FfnlabError:
    return FfnlabError(f"checkpoint {path} is corrupt or not a safetensors file ({why}); "
                       "ffnlab never unpickles checkpoints")


def _bad(path: Path, why: str) -> FfnlabError:
    return FfnlabError(f"checkpoint {path} is invalid: {why}; nothing in the run folder was changed")


def remove_stale(run_dir: Path) -> list[Path]:
    """Remove what a kill during a write leaves in the run folder and ``checkpoints/``: ffnlab's
    marked temporary and renamed-aside folders (:func:`ffnlab.files.remove_stale`); nothing
    without the marker. Call only while holding the run's lock."""
    run_dir = Path(run_dir)
    return files.remove_stale(run_dir, run_dir) + files.remove_stale(checkpoints_folder(run_dir), run_dir)


def _read_state(path: Path, max_steps: int | None, tokens_per_step: int | None) -> CheckpointState:
    try:
        state = json.loads(read_text(path / "state.json", "state"), parse_constant=_no_constant,
                           object_pairs_hook=files.unique_pairs)  # a key twice: refused, not its last value
    except FfnlabError as e:  # binary, not UTF-8, too large
        raise _bad(path, str(e).replace(str(path / "state.json"), "state.json")) from None
    except (ValueError, RecursionError) as e:
        raise _bad(path, f"state.json is not valid JSON ({str(e).splitlines()[0][:200]})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise _bad(path, f"state.json is not a format-{FORMAT} checkpoint state")
    step, tokens, elapsed = state.get("step"), state.get("tokens"), state.get("elapsed_s", 0.0)
    hi = max_steps if max_steps is not None else 10**9
    try:
        integer(step, "state.json step", 0, hi)
        if tokens is not None or tokens_per_step is not None:
            integer(tokens, "state.json tokens", 0, 2**62)
        number(elapsed, "state.json elapsed_s", 0, text_ok=False)
    except FfnlabError as e:
        raise _bad(path, str(e)) from None
    assert step is not None  # integer() accepted it
    if tokens_per_step is not None and tokens != step * tokens_per_step:
        raise _bad(path, f"state.json tokens={tokens} disagrees with step {step} x {tokens_per_step} tokens "
                         "per step of this config")
    if "build" in state:
        try:
            state["build"] = build_record(state["build"], "state.json")
        except FfnlabError as e:
            raise _bad(path, str(e)) from None
    opt = state.get("optimizer")
    if not (isinstance(opt, dict) and isinstance(opt.get("param_groups"), list)
            and isinstance(opt.get("scalars"), dict)):
        raise _bad(path, "state.json has no optimizer param_groups and scalars")
    # the shape checked; the groups and scalars themselves are checked against the model
    return cast(CheckpointState, state)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _check_groups(path: Path, saved: Sequence[object], fresh: Sequence[ParamGroup]) -> None:
    """Saved optimizer param groups must have the fresh optimizer's shape and sane hyper-parameters."""
    if len(saved) != len(fresh):
        raise _bad(path, f"{len(saved)} optimizer parameter groups, this model has {len(fresh)}")
    for i, (g, f) in enumerate(zip(saved, fresh, strict=True)):
        where = f"optimizer param_groups[{i}]"
        if not isinstance(g, dict) or g.get("params") != f["params"]:
            raise _bad(path, f"{where} does not list this model's parameters")
        try:
            for key, value in g.items():
                if key == "params":
                    continue
                if key == "betas":
                    ok = isinstance(value, (list, tuple)) and len(value) == 2
                    if not ok:
                        raise FfnlabError(f"{where}.betas must be a pair of numbers, got {show(value)}")
                    for b in value:
                        number(b, f"{where}.betas", 0, 1, hi_open=True, text_ok=False)
                elif key in ("lr", "eps", "weight_decay"):
                    number(value, f"{where}.{key}", 0, text_ok=False)
                elif value is not None and not isinstance(value, (bool, int, float)):
                    raise FfnlabError(f"{where}.{key} must be a number, true/false or null, got {show(value)}")
        except FfnlabError as e:
            raise _bad(path, str(e)) from None


def _check_weights(path: Path, model: torch.nn.Module, saved: dict[str, tuple[tuple[int, ...], torch.dtype | None]],
                   who: str) -> None:
    """Every weight ``model`` needs is in ``saved`` (name: shape, dtype or None when not read) under
    its name or a tied one's, with its shape (and dtype), and nothing else is; ``model`` may be on
    the meta device, so nothing of its size is allocated to compare."""
    expected = model.state_dict(keep_vars=True)  # the tensors themselves: tied weights are one object
    aliases: dict[int, list[str]] = {}  # tied weights are saved once, under one of their names
    for k, v in expected.items():
        aliases.setdefault(id(v), []).append(k)
    missing = sorted(k for k in expected if k not in saved
                     and not any(a in saved for a in aliases[id(expected[k])]))
    unexpected = sorted(set(saved) - set(expected))
    if missing or unexpected:
        raise FfnlabError(f"checkpoint {path} does not fit {who} (missing {missing[:3]}, "
                          f"unexpected {unexpected[:3]}); was the config changed?")
    for k, v in expected.items():
        if k not in saved:
            continue
        shape, dtype = saved[k]
        if shape != tuple(v.shape) or (dtype is not None and dtype != v.dtype):
            has, needs = (f"{shape} ({dtype})", f"{tuple(v.shape)} ({v.dtype})") if dtype else (shape, tuple(v.shape))
            raise _bad(path, f"weight {k} has shape {has}, {who} needs {needs}; was the config changed?")


def _present(path: Path) -> None:
    for name in ("model.safetensors", "optim.safetensors", "state.json"):
        if not (path / name).is_file():
            raise FfnlabError(f"checkpoint {path} is incomplete: {name} is missing")


def check_shapes(path: Path, model: torch.nn.Module, who: str) -> None:
    """The weights of the checkpoint at ``path`` have the names and shapes ``model`` needs, read
    from ``model.safetensors``'s header alone: build ``model`` on the meta device (``with
    torch.device("meta")``) to know before building it for real that the checkpoint holds it, so
    a model bigger than the checkpoint is one line, never an allocation. ``who`` names the model
    in that line; :func:`load_checkpoint` checks the rest."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    _present(path)
    try:
        with safe_open(str(path / "model.safetensors"), framework="pt") as fh:
            saved: dict[str, tuple[tuple[int, ...], torch.dtype | None]] = {
                k: (tuple(fh.get_slice(k).get_shape()), None) for k in fh.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise _corrupt(path, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    _check_weights(path, model, saved, who)


def _check_tensors(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer | None,
                   weights: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor],
                   scalars: dict[str, float]) -> None:
    _check_weights(path, model, {k: (tuple(w.shape), w.dtype) for k, w in weights.items()}, "this model")
    rng = tensors.get("rng.cpu")
    if rng is None or rng.dtype != torch.uint8 or rng.shape != torch.get_rng_state().shape:
        raise _bad(path, "optim.safetensors has no valid CPU random state (rng.cpu)")
    if opt is None:
        return
    params = [p for g in opt.param_groups for p in g["params"]]
    for key in list(tensors) + list(scalars):
        if key.startswith("rng."):
            continue
        parts = key.split(".", 2)
        if len(parts) != 3 or parts[0] != "state" or not parts[1].isdigit() or int(parts[1]) >= len(params):
            raise _bad(path, f"unexpected optimizer entry {show(key)}")
        p, name = params[int(parts[1])], parts[2]
        value = tensors[key] if key in tensors else scalars[key]
        if name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            ok = isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(p.shape) \
                and value.dtype == torch.float32 and bool(torch.isfinite(value).all())
            if not ok:
                raise _bad(path, f"optimizer {key} must be a finite float32 tensor of shape {tuple(p.shape)}")
        elif name == "step":
            x = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value
            try:
                number(x, f"optimizer {key}", 0, text_ok=False)
            except FfnlabError as e:
                raise _bad(path, str(e)) from None
        else:
            raise _bad(path, f"unexpected optimizer entry {show(key)}")


def load_checkpoint(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer | None, *,
                    max_steps: int | None = None, tokens_per_step: int | None = None) -> CheckpointState:
    """Validate the whole checkpoint at ``path``, then restore model (and optimizer, RNG) from it.

    Checked before anything is restored: files present; ``state.json`` types, step in
    [0, ``max_steps``] and tokens = step x ``tokens_per_step`` (when given), ``build`` (when
    present: :func:`ffnlab.training.runfiles.build_record`; the caller compares it with its
    config); every weight's name, shape and dtype against ``model``; optimizer groups, moments
    (shape, finite) and steps;
    the RNG state. Any failure is one :class:`ffnlab.errors.FfnlabError`; the run folder is never written.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file, load_model

    path = Path(path)
    _present(path)
    state = _read_state(path, max_steps, tokens_per_step)
    try:
        weights = load_file(str(path / "model.safetensors"))
        tensors = load_file(str(path / "optim.safetensors"))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise _corrupt(path, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    scalars = state["optimizer"]["scalars"]
    _check_tensors(path, model, opt, weights, tensors, scalars)
    if opt is not None:
        _check_groups(path, state["optimizer"]["param_groups"], opt.state_dict()["param_groups"])
    try:
        load_model(model, str(path / "model.safetensors"), strict=False)  # restores tied weights too
        if opt is not None:
            per_param: dict[int, dict[str, torch.Tensor | float]] = {}
            values: list[tuple[str, torch.Tensor | float]] = [*tensors.items(), *scalars.items()]
            for key, value in values:
                if key.startswith("state."):
                    _, idx, name = key.split(".", 2)
                    per_param.setdefault(int(idx), {})[name] = value
            opt.load_state_dict({"state": per_param, "param_groups": state["optimizer"]["param_groups"]})
        torch.set_rng_state(tensors["rng.cpu"])
        if torch.cuda.is_available():
            cuda = [tensors[k] for k in sorted(t for t in tensors if t.startswith("rng.cuda."))]
            if len(cuda) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda)
    except (ValueError, KeyError, TypeError, RuntimeError, AttributeError) as e:
        raise _corrupt(path, f"{type(e).__name__}: {e}") from None
    return state
