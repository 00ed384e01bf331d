"""The error ffnlab measured per engine on the published-peak suite, as every answer names it.

``data/published_ranges.json`` keeps, per engine of ``data/engines.json``, ffnlab's error
(predicted / published - 1) on each published peak of that trainer it can express
(``data/published_peaks.json``), the lowest and highest error, and how many of the trainer's
cases it cannot express yet. The file is written by ``benchmarks/memory_published.py
--write-ranges`` from :func:`ffnlab.sizing.memory.published_peaks.engine_ranges`, and a test
recomputes it and compares exactly, so a change to the memory model that moves a figure fails
until the file is written again. :func:`range_text` is the phrase ``size``, ``audit`` and ``fit``
print beside the engine ("published peaks: 2 cases within -6.2%..-4.5%"); :func:`range_of` its
JSON object. Pure Python.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's own from Python 3.11

DATA = "published_ranges.json"
ABOUT = ("ffnlab's error (predicted / published - 1) on the published training peaks of "
         "data/published_peaks.json, per engine of data/engines.json: the cases of that trainer ffnlab "
         "expresses (capacities left out), their lowest and highest error, how many it cannot express, and "
         "(where there are any) each capacity it expresses, as its longest fitting length over the published one. "
         "Written by benchmarks/memory_published.py --write-ranges; tests/sizing/memory/test_published_ranges.py "
         "recomputes it and compares exactly.")


class CaseError(TypedDict):
    """ffnlab's error on one published peak."""

    id: str  # the case's id in data/published_peaks.json
    error: float  # predicted / published - 1, rounded to 1e-4


class CapacityRatio(TypedDict):
    """ffnlab on one published capacity: its longest fitting length over the published one."""

    id: str  # the case's id in data/published_peaks.json
    ratio: float  # rounded to 1e-4


class EngineRange(TypedDict):
    """One engine's entry: its cases' errors, the lowest and highest, and how many are left out."""

    cases: list[CaseError]
    low: float | None  # None without a case
    high: float | None
    not_expressible: int
    # capacity cases ffnlab expresses (a longest fitting length, not a peak: a ratio of lengths); only where any
    capacities: NotRequired[list[CapacityRatio]]


class RangesFile(TypedDict):
    """data/published_ranges.json."""

    about: str
    engines: dict[str, EngineRange]


@functools.cache
def ranges_data() -> RangesFile:
    """The parsed ``data/published_ranges.json``."""
    data: RangesFile = json.loads(resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8"))
    return data


def render_file(ranges: dict[str, EngineRange]) -> str:
    """The file's text for ``ranges`` (:func:`ffnlab.sizing.memory.published_peaks.engine_ranges`)."""
    return json.dumps({"about": ABOUT, "engines": ranges}, indent=1) + "\n"


def range_of(name: str) -> EngineRange:
    """The engine's entry (``cases``, ``low``, ``high``, ``not_expressible``); an engine the file
    does not list has no published cases."""
    found = ranges_data()["engines"].get(name)
    return found or {"cases": [], "low": None, "high": None, "not_expressible": 0}


def range_text(name: str) -> str:
    """``published peaks: 2 cases within -6.2%..-4.5%`` (and how many it cannot express, and the
    capacities it expresses: ``1 published capacity expressed at 1.076x its length``), or ``no
    published cases``."""
    got = range_of(name)
    n, skipped, caps = len(got["cases"]), got["not_expressible"], got.get("capacities", [])
    more = f"; {skipped} more not expressible yet" if skipped else ""
    ratios = sorted(c["ratio"] for c in caps)
    at = f"{ratios[0]:.3f}x" if len(ratios) == 1 else f"{ratios[0]:.3f}x..{ratios[-1]:.3f}x" if ratios else ""
    cap = (f"{len(caps)} published capacit{'y' if len(caps) == 1 else 'ies'} expressed at {at} "
           f"{'its' if len(caps) == 1 else 'their'} length (a longest fitting length, not a peak)")
    if not n:
        if caps:
            return f"published peaks: none; {cap}{more}"
        return f"published peaks: none it expresses, {skipped} not expressible yet" if skipped else "no published cases"
    low, high = got["low"], got["high"]
    assert low is not None and high is not None  # an engine with cases has their range
    caps_said = f"; {cap}" if caps else ""
    return f"published peaks: {n} case{'s' if n > 1 else ''} within {low:+.1%}..{high:+.1%}{more}{caps_said}"


__all__ = ["ABOUT", "DATA", "CapacityRatio", "CaseError", "EngineRange", "RangesFile", "range_of", "range_text",
           "ranges_data",
           "render_file"]
