"""Training engines as data: which tensors each trainer keeps alive, read from its own source.

``data/engines.json`` holds, per engine (``hf-trainer``, ``trl``, ``torchtune``, ``torchtitan``,
``megatron``, ``nanogpt``, ``ffnlab``, ``unsloth``) and per version (newest first), the
implementation facts the step timeline models, each with its source (repository, path, tag):
whether the caller keeps the logits (``keeps_logits``), the loss path (``loss``), the optimizer and
its implementation, pure bf16 or mixed precision (``pure_bf16``), the default recompute policy
(``recompute``, ``recompute_every``), the fine-tuning one (``finetune_recompute``), whether a QLoRA
base's unquantised parameters are upcast to fp32 (``kbit_upcast``: peft's
``prepare_model_for_kbit_training``), the adapters' dtype and LoRA dropout (``adapter_dtype``,
``lora_dropout``), whether the layers' inputs go to host memory (``offload_activations``, with the
engine's forward stash from ``data/offload.json``), whose fused kernels run in place of the eager
modules (``fused_kernels``: ``data/fused_kernels.json``), the gradients' dtype where it is not the
training dtype (``grad_dtype``: Megatron's fp32 ``main_grad``) and facts of the layout it ships
with, stated but not applied (``distributed_optimizer``: ``--zero 1`` prices it).

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
from typing import TYPE_CHECKING, Any, TypedDict, Union

from ffnlab.errors import FfnlabError
from ffnlab.validation import clip, show

if TYPE_CHECKING:
    from ffnlab.sizing.memory.workload import Workload

DATA = "engines.json"
# fact -> the Workload field it sets ("step." : a StepOptions field)
FACT_FIELDS: dict[str, str] = {
    "keeps_logits": "step.logits_held", "loss": "step.loss", "optimizer": "optimizer",
    "optimizer_impl": "step.optimizer_impl", "pure_bf16": "pure_bf16", "recompute": "recompute",
    "recompute_every": "step.recompute_every", "grad_dtype": "grad_dtype",
    "offload_activations": "step.offload_activations", "fused_kernels": "step.fused_kernels",
}
# facts of the adapters (a FinetuneOptions field each), applied to a LoRA or QLoRA workload only
FINETUNE_FACTS: dict[str, str] = {"kbit_upcast": "finetune.upcast_fp32", "adapter_dtype": "finetune.adapter_dtype",
                                  "lora_dropout": "finetune.lora_dropout"}
# facts a profile states without setting a Workload field (a layout fact: --zero 1 prices it)
INFO_FACTS = ("distributed_optimizer",)
FACTS = (*FACT_FIELDS, "finetune_recompute", *FINETUNE_FACTS, *INFO_FACTS)
KBIT_UPCAST = FINETUNE_FACTS["kbit_upcast"]
# facts only some engines have (the others leave the field as given)
OPTIONAL_FACTS = ("recompute_every", "grad_dtype", "offload_activations", "fused_kernels", *FINETUNE_FACTS,
                  *INFO_FACTS)


FactValue = Union[bool, int, str]  # a fact's value: a flag, a count (recompute_every) or a name


class FactSource(TypedDict):
    """Where an engine's fact is read: the file of a repository at a tag or commit."""

    repo: str
    path: str
    ref: str


class Fact(TypedDict):
    """One implementation fact of an engine version, with its source and what the source says."""

    value: FactValue
    source: FactSource
    note: str


class EngineVersion(TypedDict):
    version: str
    facts: dict[str, Fact]  # keyed by FACTS


class EngineProfile(TypedDict):
    """One engine: its title and its versions, newest first."""

    title: str
    versions: list[EngineVersion]


class EnginesFile(TypedDict):
    """data/engines.json."""

    about: str
    default: str  # the engine the commands price without --engine
    engines: dict[str, EngineProfile]


@functools.cache
def engines_data() -> EnginesFile:
    """The parsed ``data/engines.json``."""
    data: EnginesFile = json.loads(resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8"))
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
        return f"{clip(f'{self.name}@{self.requested}')} is not known: priced as {self.label}, the newest known"

    @property
    def published(self) -> str:
        """The error measured for this engine on the published-peak suite
        (:func:`ffnlab.sizing.memory.published_ranges.range_text`)."""
        from ffnlab.sizing.memory.published_ranges import range_text

        return range_text(self.name)

    @property
    def priced(self) -> str:
        """``hf-trainer@5.25.0 (published peaks: 2 cases within -6.2%..-4.5%)``: what every answer names."""
        return f"{self.label} ({self.published})"

    def fact(self, name: str) -> object:
        return dict(self.facts).get(name)

    def as_dict(self) -> dict[str, object]:
        from ffnlab.sizing.memory.published_ranges import range_of

        out: dict[str, object] = {"name": self.name, "version": self.version, "facts": dict(self.facts),
                                  "overridden": list(self.overridden),
                                  "published_peaks": {**range_of(self.name), "text": self.published}}
        if self.note:
            out["note"] = self.note
        return out


def engine_names() -> tuple[str, ...]:
    return tuple(engines_data()["engines"])


def resolve(spec: str) -> Engine:
    """``NAME[@VERSION]`` as an :class:`Engine`; a bad name raises one line naming the known ones."""
    from ffnlab.sizing.engine_spec import split_engine

    name, version = split_engine(spec)  # NAME@ with no version: refused
    engines = engines_data()["engines"]
    if name not in engines:
        raise FfnlabError(f"--engine must be one of {', '.join(engines)} (NAME[@VERSION]), got {show(spec)}")
    versions = engines[name]["versions"]
    chosen = next((v for v in versions if v["version"] == version), None)
    requested = version if version and chosen is None else None
    chosen = chosen or versions[0]
    facts = tuple((k, f["value"]) for k, f in chosen["facts"].items())
    return Engine(name, chosen["version"], facts, requested)


def default_engine() -> Engine:
    return resolve(str(engines_data()["default"]))


def default_workload() -> Workload:
    """:class:`Workload`'s defaults priced as the default engine runs them (``hf-trainer``): what
    the API's ``memory_summary(cfg)`` and ``fit(cfg, ...)`` price when given no workload, as the
    commands do without ``--engine``."""
    from ffnlab.sizing.memory.workload import Workload

    return apply_engine(Workload(), default_engine())


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
    # the Workload and StepOptions fields to replace, named by FACT_FIELDS at run time: which field
    # a fact's FactValue sets is data, so mypy cannot match it to the field's type (Workload's
    # __post_init__ validates what it is given; tests/sizing/memory/test_engines.py applies every profile)
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
    if step.get("offload_activations"):  # the engine's own offload: its forward stash (data/offload.json)
        from ffnlab.sizing.memory.parallel import activation_offload

        own = activation_offload(eng.name)
        step["offload_stash"] = own["forward_stash"] if own is not None else work.step.offload_stash
    ft = work.finetune
    changes: dict[str, Any] = {}
    for fact, field in FINETUNE_FACTS.items():
        value = eng.fact(fact)
        if value is None or ft is None or not ft.adapters or (fact == "kbit_upcast" and ft.mode != "qlora"):
            continue
        name = field.removeprefix("finetune.")
        if field in explicit:
            if getattr(ft, name) != value:
                overridden.append(fact)
            continue
        changes[name] = (bool(value) if fact == "kbit_upcast" else float(str(value)) if fact == "lora_dropout"
                         else str(value))
    if changes:
        assert ft is not None
        top["finetune"] = replace(ft, **changes)
    return replace(work, **top, step=replace(work.step, **step),
                   engine=replace(eng, overridden=tuple(overridden)))


__all__ = ["FACTS", "FACT_FIELDS", "FINETUNE_FACTS", "INFO_FACTS", "KBIT_UPCAST", "OPTIONAL_FACTS", "Engine",
           "EngineProfile", "EngineVersion", "EnginesFile", "Fact", "FactSource", "FactValue", "apply_engine",
           "default_engine",
           "default_workload", "engine_names", "engines_data",
           "resolve"]
