"""The per-engine error range every answer names (data/published_ranges.json).

Oracle: the published peaks themselves (data/published_peaks.json, each trainer's own figure).
The kept file must equal a recomputation from the suite byte for byte, so a change to the memory
model or to the suite that moves a figure fails here until ``benchmarks/memory_published.py
--write-ranges`` writes it again; every engine of data/engines.json has an entry; the phrase
the commands print carries the file's lowest and highest error.
"""

from __future__ import annotations

from importlib import resources

from ffnlab.sizing.memory import published_peaks, published_ranges
from ffnlab.sizing.memory.engines import engine_names, resolve


def test_the_kept_ranges_equal_a_recomputation_from_the_suite() -> None:
    kept = resources.files("ffnlab.data").joinpath(published_ranges.DATA).read_text(encoding="utf-8")
    assert kept == published_ranges.render_file(published_peaks.engine_ranges(engine_names())), (
        "data/published_ranges.json is stale: run benchmarks/memory_published.py --write-ranges")


def test_each_error_is_the_published_figure_against_the_prediction() -> None:
    by_id = {c["id"]: c for c in published_peaks.cases()}
    for name in engine_names():
        got = published_ranges.range_of(name)
        for entry in got["cases"]:
            case = by_id[entry["id"]]
            assert case["trainer"] == name and case["memory_kind"] != "capacity"
            ours, price = published_peaks.predicted_peak(case)
            assert price.expressible
            assert abs(ours / case["figure"]["bytes"] - 1 - entry["error"]) < 1e-4
        if got["cases"]:
            errors = [e["error"] for e in got["cases"]]
            assert (got["low"], got["high"]) == (min(errors), max(errors))
        mine = [c for c in by_id.values() if c["trainer"] == name]
        capacities = got.get("capacities", [])
        assert len(got["cases"]) + got["not_expressible"] + len(capacities) == len(mine)
        expressed_capacities = [c for c in mine if c["memory_kind"] == "capacity"
                                and published_peaks.pricing(c).expressible]
        assert [c["id"] for c in capacities] == [c["id"] for c in expressed_capacities]
        for entry in capacities:  # ffnlab's longest fitting length, found again, over the published one
            case = by_id[entry["id"]]
            length, _ = published_peaks.predicted_capacity(case)
            assert abs(length / case["figure"]["seq_len_fitting"] - entry["ratio"]) < 1e-4


def test_the_phrase_names_the_range_or_says_there_is_none() -> None:
    for name in engine_names():
        got = published_ranges.range_of(name)
        text = resolve(name).published
        if got["cases"]:
            assert f"{got['low']:+.1%}..{got['high']:+.1%}" in text
            assert f"{len(got['cases'])} case" in text
        elif got.get("capacities"):
            assert text.startswith("published peaks: none; ") and "capacit" in text
        elif got["not_expressible"]:
            assert text == f"published peaks: none it expresses, {got['not_expressible']} not expressible yet"
        else:
            assert text == "no published cases"
    assert published_ranges.range_text("no-such-engine") == "no published cases"
    # Unsloth's one case is a capacity ffnlab expresses: said as such, with its ratio, not as "not expressible"
    (cap,) = published_ranges.range_of("unsloth")["capacities"]
    assert resolve("unsloth").published == (
        f"published peaks: none; 1 published capacity expressed at {cap['ratio']:.3f}x its length "
        "(a longest fitting length, not a peak)")


def test_the_engine_json_carries_the_range() -> None:
    eng = resolve("hf-trainer@0.0.1")
    out = eng.as_dict()
    assert out["published_peaks"]["text"] == eng.published
    assert out["note"] == f"hf-trainer@0.0.1 is not known: priced as {eng.label}, the newest known"
