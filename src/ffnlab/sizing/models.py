"""Which model a name on the command line means: the one place a target is resolved.

``audit``, ``fit``, ``size --from``, ``table`` and the Python API take a target that is a zoo
name or alias (``ffnlab zoo``), a config.json path or a folder holding one, or a Hugging Face Hub
id ``org/name[@revision]``. :func:`resolve` decides which, in that order of precedence (a zoo
name or an existing local path is never sent to the Hub, :func:`ffnlab.sizing.hf.hub.hub_id`),
fetches a Hub id's config.json (or reads it from the HF cache), reads the config.json and
translates it, and returns a :class:`ResolvedModel`. A config.json that no translator reads is
still resolved, with the translator's refusal kept: ``audit`` counts such a model through
transformers, the other commands refuse it with that line (:meth:`ResolvedModel.sized`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ffnlab.errors import FfnlabError, require
from ffnlab.files import expand_user
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hf import config_name, read_hf_config, translate_hf_dict
from ffnlab.sizing.hf.hub import HubId, fetch_config, hub_id
from ffnlab.sizing.zoo import ZooEntry, find, is_zoo_name
from ffnlab.validation import named


@dataclass(frozen=True)
class ResolvedModel:
    """A target found: a zoo entry, or a config.json (local, or a Hub id's copy in the HF cache).

    ``name`` is what the commands call it: the zoo name, the Hub id with its revision, else the
    translated config's name (the path where it has none). ``config`` is None for a zoo entry
    without a published architecture (an estimate) and for a config.json no translator reads
    (``refusal`` says why); ``raw`` holds the config.json's keys (a zoo entry's published ones)."""

    target: str  # as named
    name: str
    config: ModelConfig | None
    raw: dict[str, object] | None = None
    entry: ZooEntry | None = None
    hub: HubId | None = None
    path: Path | None = None  # the config.json (or its folder) as named, or the HF cache's copy
    defaulted: dict[str, object] = field(default_factory=dict)  # size keys taken from transformers' defaults
    refusal: FfnlabError | None = None  # why no translator reads the config.json at ``path``
    duplicated: tuple[str, ...] = ()  # keys the config.json gives twice in one object (the last value is read)

    def sized(self) -> ModelConfig:
        """The config to size; a one-line error when there is none."""
        if self.refusal is not None:
            raise self.refusal
        require(self.config is not None, f"{self.name} has no published architecture to size")
        assert self.config is not None
        return self.config


def resolve(target: str, *, hub: bool = True) -> ResolvedModel:
    """The model ``target`` names (module docstring). With ``hub=False`` a Hub id is not fetched:
    it is read as a local path, as the Python API's :func:`ffnlab.sizing.audit.audit` reads one.

    Errors, one line each: an unknown name (close zoo names suggested), a missing or unreadable
    config.json, a Hub id that cannot be fetched, an empty target (never the working folder's
    config.json: :func:`ffnlab.validation.named`)."""
    named(target, "the model name or path")
    hid = hub_id(target) if hub else None
    if hid is not None:
        return _from_file(target, fetch_config(hid), hid)
    if not is_zoo_name(target):
        p = expand_user(target)  # '~/m/config.json' as a shell would read it
        if p.exists() or target.endswith(".json") or "/" in target:
            return _from_file(target, p, None)
    e = find(target)  # not a file either: names close zoo entries in its error
    return ResolvedModel(target=target, name=e.name, config=e.config(), raw=e.hf_config, entry=e)


def _from_file(target: str, path: Path, hid: HubId | None) -> ResolvedModel:
    duplicated: list[str] = []
    found_at, raw = read_hf_config(path, duplicated)
    try:
        cfg, defaulted = translate_hf_dict(raw, name=config_name(found_at))
    except FfnlabError as refused:  # no translator, or one refusing this config (audit: transformers counts it)
        return ResolvedModel(target=target, name=hid.label if hid else str(path), config=None, raw=raw, hub=hid,
                             path=path, refusal=refused, duplicated=tuple(duplicated))
    return ResolvedModel(target=target, name=hid.label if hid else cfg.name or str(path), config=cfg, raw=raw,
                         hub=hid, path=path, defaulted=dict(defaulted), duplicated=tuple(duplicated))
