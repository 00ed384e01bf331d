"""The model zoo: published architectures kept as data (``data/zoo.json``), with sources.

Each entry stores the architecture fields of the model's Hugging Face ``config.json`` (or, for
models without one, the paper's numbers in the same layout) and names where they come from. A
model type ffnlab has no translator for (hybrids, linear attention) also stores ``counted``: the
structure transformers built from that config on the meta device (:mod:`ffnlab.sizing.hf.structure`),
so the zoo, claims and ``audit --all`` read it without torch; tests/sizing/hf/test_hf_zoo.py rebuilds every
one and checks it equals what transformers builds now (``python tests/helpers/hf_zoo_counts.py --write``
refreshes them).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf import HF_TRANSLATORS, MULTIMODAL, from_hf_dict
from ffnlab.sizing.hf.structure import Structure
from ffnlab.validation import CLIP, show


@dataclass(frozen=True)
class ZooEntry:
    name: str
    display: str
    family: str
    source: str | None
    verified_against: str | None
    note: str | None
    hf_config: dict[str, Any] | None
    estimate: dict[str, int] | None
    aliases: tuple[str, ...] = ()
    native_config: dict[str, Any] | None = None  # ffnlab's own format, for paper-only shapes
    counted: dict[str, Any] | None = None  # the structure transformers built (untranslated types)

    @property
    def model_type(self) -> str | None:
        if self.hf_config:
            return self.hf_config.get("model_type")
        return "paper" if self.native_config else None

    @property
    def translated(self) -> bool:
        mt = self.model_type
        return bool(self.hf_config) and (mt in HF_TRANSLATORS or mt in MULTIMODAL)

    @property
    def has_config(self) -> bool:
        """Whether ffnlab's own model describes it (a translated config.json or a paper shape)."""
        return self.translated or bool(self.native_config)

    def structure(self) -> Structure | None:
        """The stored transformers structure of an untranslated model type (None otherwise)."""
        return Structure.from_dict(self.counted) if self.counted else None

    def config(self) -> ModelConfig | None:
        if self.hf_config and self.translated:
            return from_hf_dict(self.hf_config, name=self.name)
        if self.native_config:
            return replace(ModelConfig.from_dict(self.native_config), name=self.name)
        return None


@lru_cache(maxsize=1)
def load_zoo() -> tuple[ZooEntry, ...]:
    raw = json.loads(resources.files("ffnlab").joinpath("data/zoo.json").read_text(encoding="utf-8"))
    return tuple(
        ZooEntry(
            name=m["name"], display=m.get("display") or m["name"], family=m.get("family", ""),
            source=m.get("source"), verified_against=m.get("verified_against"), note=m.get("note"),
            hf_config=m.get("config"), estimate=m.get("estimate"), aliases=tuple(m.get("aliases", ())),
            native_config=m.get("ffnlab_config"), counted=m.get("counted"),
        )
        for m in raw["models"]
    )


@lru_cache(maxsize=1)
def _index() -> dict[str, ZooEntry]:
    idx: dict[str, ZooEntry] = {}
    for e in load_zoo():
        for key in (e.name, e.display, *e.aliases):
            idx.setdefault(key.lower(), e)
    return idx


def find(name: str) -> ZooEntry:
    """Look a model up by name or alias (case-insensitive); suggest close names on a miss."""
    hit = _index().get(name.lower())
    if hit is not None:
        return hit
    names = [e.name for e in load_zoo()]
    close = difflib.get_close_matches(name.lower()[:100], names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see 'ffnlab zoo' for the list"
    raise FfnlabError(f"unknown model {show(name, CLIP)}{hint}")


def is_zoo_name(name: str) -> bool:
    return name.lower() in _index()
