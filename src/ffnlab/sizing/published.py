"""The note's table: organisation, model, FFN ratios, training FLOPs per token, WikiText-103 perplexity.

Published perplexities are kept as data (``data/wikitext_published.json``), each with its source
(paper, table, page) and its protocol; a model whose paper reports none is listed with where the
paper says so and stays empty until measured (``ffnlab table --measure``, which fills a separate
column by ffnlab's own protocol, :mod:`ffnlab.training.perplexity`). Pure Python: no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import TypedDict

from ffnlab.errors import require
from ffnlab.sizing.result import Result
from ffnlab.sizing.zoo import ZooEntry

DATA = "wikitext_published.json"
DEFAULT_CONTEXT = 2048  # when a config names no context length
CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx", "seq_length")
MEASURED_PROTOCOL = "lm-eval-wikitext"  # the id of ffnlab perplexity's documents protocol in the table


@dataclass(frozen=True)
class Published:
    model: str  # zoo name
    paper_name: str  # the size as the paper names it
    perplexity: float
    metric: str
    protocol: str  # a key of protocols()
    source: str  # a key of sources()
    where: str  # table, page, column (the row is paper_name)
    sizes: str = ""  # where the paper gives the sizes it names (paper_name)

    @property
    def cite(self) -> str:
        return sources()[self.source]["cite"]


class _Figure(TypedDict):
    model: str
    paper_name: str
    perplexity: float
    metric: str
    protocol: str
    source: str
    where: str


class Figure(_Figure, total=False):
    """One published perplexity (data/wikitext_published.json ``figures``): :class:`Published`'s fields."""

    sizes: str


class Source(TypedDict):
    """A paper: its short and full citation and its address."""

    short: str
    cite: str
    url: str


class NonePublished(TypedDict):
    """Where a family's paper says it reports no WikiText-103 perplexity."""

    family: str
    source: str  # a key of ``sources``
    where: str


class Organisation(TypedDict):
    family: str
    organisation: str
    source: str  # a key of ``sources``, or "zoo: ..."


class WikitextFile(TypedDict):
    """data/wikitext_published.json."""

    schema: int
    about: str
    sources: dict[str, Source]
    protocols: dict[str, str]  # id -> the protocol in words
    figures: list[Figure]
    none_published: list[NonePublished]
    organisations: list[Organisation]


@lru_cache(maxsize=1)
def _data() -> WikitextFile:
    text = resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8")
    data: WikitextFile = json.loads(text)
    return data


def sources() -> dict[str, Source]:
    return _data()["sources"]


def protocols() -> dict[str, str]:
    return _data()["protocols"]


def published() -> tuple[Published, ...]:
    return tuple(Published(**f) for f in _data()["figures"])


def published_for(zoo_name: str | None) -> Published | None:
    return next((p for p in published() if p.model == zoo_name), None)


def none_published(family: str | None) -> NonePublished | None:
    """Where the paper of ``family`` says it reports no WikiText-103 perplexity (None: not known)."""
    return next((x for x in _data()["none_published"] if x["family"] == family), None)


def organisation(family: str | None) -> str | None:
    return next((x["organisation"] for x in _data()["organisations"] if x["family"] == family), None)


def short_cite(source: str) -> str:
    """A source key's short citation ('Radford et al. 2019')."""
    return sources()[source]["short"]


@dataclass(frozen=True)
class NoteRow(Result):
    """One row of the note's table (the command's JSON object)."""

    organisation: str | None
    model: str
    name: str  # what was asked for (zoo name, Hub id or folder)
    ratio_raw: float | None
    ratio_param_matched: float | None
    train_flops_per_token: int | None
    flops_context: int | None
    ppl_published: float | None = None
    ppl_published_metric: str | None = None
    ppl_published_protocol: str | None = None
    ppl_published_source: str | None = None
    ppl_published_url: str | None = None
    ppl_measured: float | None = None  # word perplexity by ffnlab perplexity's documents protocol
    ppl_measured_byte: float | None = None
    ppl_measured_protocol: str | None = None
    measured_revision: str | None = None
    note: str | None = None


def context_of(raw: Mapping[str, object] | None) -> int | None:
    """A config.json's context length (n_positions, max_position_embeddings, n_ctx, seq_length);
    ``raw`` as :mod:`ffnlab.sizing.hf` reads it, each value checked here."""
    for key in CONTEXT_KEYS:
        value = (raw or {}).get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def note_row(*, name: str, model: str, entry: ZooEntry | None, ratio_raw: float | None,
             ratio_param_matched: float | None, train_flops_per_token: int | None,
             flops_context: int | None) -> NoteRow:
    """A row with its organisation and published figure (or why none) filled from the data."""
    family = entry.family if entry is not None else None
    row = NoteRow(organisation=organisation(family), model=model, name=name, ratio_raw=ratio_raw,
                  ratio_param_matched=ratio_param_matched, train_flops_per_token=train_flops_per_token,
                  flops_context=flops_context)
    pub = published_for(entry.name if entry is not None else None)
    if pub is not None:
        return replace(row, ppl_published=pub.perplexity, ppl_published_metric=pub.metric,
                       ppl_published_protocol=pub.protocol,
                       ppl_published_source=f"{short_cite(pub.source)}, {pub.where.split(', ')[0]}, {pub.paper_name}",
                       ppl_published_url=sources()[pub.source]["url"])
    none = none_published(family)
    if none is not None:
        return replace(row, note=f"no published WikiText-103 perplexity: {short_cite(none['source'])}, "
                                 f"{none['where']}")
    return row


def check_data() -> list[str]:
    """Problems in the kept data (the test asks for none): every figure and row names a known
    source and protocol, a table and page, and a positive perplexity."""
    problems = []
    known_sources, known_protocols = set(sources()), set(protocols())
    for p in published():
        if p.source not in known_sources:
            problems.append(f"{p.model}: unknown source {p.source!r}")
        if p.protocol not in known_protocols:
            problems.append(f"{p.model}: unknown protocol {p.protocol!r}")
        if "Table" not in p.where or "p. " not in p.where:
            problems.append(f"{p.model}: 'where' names no table and page")
        if not p.perplexity > 1:
            problems.append(f"{p.model}: perplexity {p.perplexity} is not above 1")
    for x in (*_data()["none_published"], *_data()["organisations"]):
        if x["source"] not in known_sources and not x["source"].startswith("zoo: "):
            problems.append(f"{x['family']}: unknown source {x['source']!r}")
    return problems


def require_data() -> None:
    problems = check_data()
    require(not problems, "data/" + DATA + ": " + "; ".join(problems))
