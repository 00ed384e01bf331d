"""Training engines as data: which tensors each trainer keeps alive, read from its own source.

``data/engines.json`` holds, per engine (``hf-trainer``, ``trl``, ``torchtune``, ``torchtitan``,
``megatron``, ``nanogpt``, ``ffnlab``) and per version (newest first), the implementation facts the step
timeline models, each with its source (repository, path, tag): whether the caller keeps the logits
(``keeps_logits``), the loss path (``loss``), the optimizer and its implementation, pure bf16 or
mixed precision (``pure_bf16``), the default recompute policy (``recompute``, ``recompute_every``), the
fine-tuning one (``finetune_recompute``), the gradients' dtype where it is not the training dtype
(``grad_dtype``: Megatron's fp32 ``main_grad``) and facts of the layout it ships with, stated but
not applied (``distributed_optimizer``: ``--zero 1`` prices it).

:func:`resolve` reads ``NAME[@VERSION]`` (an unknown version is priced as the newest known, and
says so); :func:`apply_engine` sets a :class:`ffnlab.sizing.memory.workload.Workload`'s fields from
the profile, except those given explicitly, which override it and are listed in
:attr:`Engine.overridden`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from importlib import resources
from typing import TYPE_CHECKING, Any

from ffnlab.errors import FfnlabError

if TYPE_CHECKING:
    from ffnlab.sizing.memory.workload import Workload

DATA = "engines.json"
# fact -> the Workload field it sets ("step." : a StepOptions field)
FACT_FIELDS: dict[str, str] = {
    "keeps_logits": "step.logits_held", "loss": "step.loss", "optimizer": "optimizer",
    "optimizer_impl": "step.optimizer_impl", "pure_bf16": "pure_bf16", "recompute": "recompute",
    "recompute_every": "step.recompute_every", "grad_dtype": "grad_dtype",
}
# facts a profile states without setting a Workload field (a layout fact: --zero 1 prices it)
INFO_FACTS = ("distributed_optimizer",)
FACTS = (*FACT_FIELDS, "finetune_recompute", *INFO_FACTS)
# facts only some engines have (the others leave the field as given)
OPTIONAL_FACTS = ("recompute_every", "grad_dtype", *INFO_FACTS)


@functools.cache
def engines_data() -> dict[str, Any]:
    """The parsed ``data/engines.json``."""
    data: dict[str, Any] = json.loads(resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class Engine:
    """One engine at one version: its facts, what was asked for, and the facts flags overrode."""

    name: str
    version: str
    facts: tuple[tuple[str, object], ...]
    requested: str | None = None  # the version asked for, when it is not the one priced
    overridden: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def note(self) -> str | None:
        """Said when the version asked for is unknown."""
        if self.requested is None:
            return None
        return f"{self.name}@{self.requested} is not known: priced as {self.label}, the newest known"

    def fact(self, name: str) -> object:
        return dict(self.facts).get(name)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "version": self.version, "facts": dict(self.facts),
                                  "overridden": list(self.overridden)}
        if self.note:
            out["note"] = self.note
        return out


def engine_names() -> tuple[str, ...]:
    return tuple(engines_data()["engines"])


def resolve(spec: str) -> Engine:
    """``NAME[@VERSION]`` as an :class:`Engine`; a bad name raises one line naming the known ones."""
    name, _, version = spec.partition("@")
    engines = engines_data()["engines"]
    if name not in engines:
        raise FfnlabError(f"--engine must be one of {', '.join(engines)} (NAME[@VERSION]), got {spec!r}")
    versions = engines[name]["versions"]
    chosen = next((v for v in versions if v["version"] == version), None)
    requested = version if version and chosen is None else None
    chosen = chosen or versions[0]
    facts = tuple((k, f["value"]) for k, f in chosen["facts"].items())
    return Engine(name, chosen["version"], facts, requested)


def default_engine() -> Engine:
    return resolve(str(engines_data()["default"]))


def _get(work: Workload, field: str) -> object:
    obj: object = work.step if field.startswith("step.") else work
    return getattr(obj, field.removeprefix("step."))


def apply_engine(work: Workload, engine: Engine | str, *, explicit: frozenset[str] = frozenset()) -> Workload:
    """``work`` with ``engine``'s facts, but for the Workload fields named in ``explicit`` (as
    ``FACT_FIELDS``' values: ``"recompute"``, ``"step.loss"``), which keep ``work``'s value and are
    listed as overridden where they differ from the profile. Pure bf16 applies to full bf16 training
    only; with adapters the recompute policy is the profile's ``finetune_recompute``. The Python
    API's ``engine=``::

        work = apply_engine(Workload(seq_len=8192, recompute="none"), "torchtitan", explicit=frozenset({"recompute"}))
        memory_summary(cfg, work, Layout(dp=8, zero=3)).trainer  # torchtitan@0.2.2, overridden ('recompute',)
    """
    eng = resolve(engine) if isinstance(engine, str) else engine
    top: dict[str, Any] = {}
    step: dict[str, Any] = {}
    overridden = []
    for fact, field in FACT_FIELDS.items():
        value = eng.fact("finetune_recompute" if fact == "recompute" and work.adapters else fact)
        if value is None:
            continue
        if fact in ("pure_bf16", "grad_dtype") and (work.dtype != "bf16" or work.adapters):
            continue
        if fact == "recompute_every" and (work.adapters or (top.get("recompute", work.recompute) != "full")):
            continue
        if field in explicit:
            if _get(work, field) != value:
                overridden.append(fact)
            continue
        (step if field.startswith("step.") else top)[field.removeprefix("step.")] = value
    return replace(work, **top, step=replace(work.step, **step),
                   engine=replace(eng, overridden=tuple(overridden)))


__all__ = ["FACTS", "FACT_FIELDS", "INFO_FACTS", "OPTIONAL_FACTS", "Engine", "apply_engine", "default_engine", "engine_names", "engines_data",
           "resolve"]
