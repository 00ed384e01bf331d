"""``audit`` against transformers for every model type it knows (``tests/data/hf_counts_all.json``,
written by ``tests/helpers/hf_counts_all.py --write`` under the pinned transformers).

The guard: a record stored as ``exact`` (audit's total is transformers') or ``refused`` (both
refuse) must stay so. The configs ffnlab translates are recounted here in pure Python, every one;
those counted by building the model are rebuilt in a rotating live sample (a different sample each
day, or each CI run: ``FFNLAB_COUNTS_SEED``; ``FFNLAB_COUNTS_SAMPLE=all`` rebuilds every record),
which also checks that transformers still builds what the file says.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hf_counts_all import PATH, check, load, model_types
from paths import ROOT

from ffnlab.errors import FfnlabError
from ffnlab.sizing.audit import audit
from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES

SAVED = load()
RECORDS: list[dict[str, Any]] = SAVED["records"]
SAMPLE = 200  # records rebuilt live per run (about 15 s on one core)


def _sample() -> list[dict[str, Any]]:
    built = [r for r in RECORDS if r["audit"].get("by") != "translator"]
    if os.environ.get("FFNLAB_COUNTS_SAMPLE") == "all":
        return built
    seed = os.environ.get("FFNLAB_COUNTS_SEED") or os.environ.get("GITHUB_RUN_NUMBER") or \
        datetime.date.today().isoformat()
    return random.Random(seed).sample(built, min(SAMPLE, len(built)))


def _pinned() -> str:
    found = re.search(r'"transformers==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert found, "pyproject.toml pins no transformers"
    return found.group(1)


def test_the_file_is_of_the_pinned_transformers() -> None:
    assert SAVED["transformers"] == _pinned(), f"regenerate {PATH.name}: hf_counts_all.py --write"


def test_every_record_has_a_verdict() -> None:
    assert len({r["id"] for r in RECORDS}) == len(RECORDS)
    for r in RECORDS:
        assert r["status"] in ("exact", "refused", "off"), r["id"]
        assert (r["status"] == "off") == (r["reason"] is not None), r["id"]
        assert "traceback" not in r["audit"] or r["status"] == "off", r["id"]


def translated_regressions(records: list[dict[str, Any]], folder: Path) -> list[tuple[Any, ...]]:
    """The records stored as exact that ffnlab's translators, recounted now without transformers,
    no longer count exactly: (id, now, transformers' total)."""
    path = folder / "config.json"
    worse = []
    for r in records:
        if r["audit"].get("by") != "translator" or r["status"] != "exact":
            continue
        path.write_text(json.dumps(r["config"]))
        try:
            total: int | str | None = audit(str(path)).params_total
        except FfnlabError as e:
            total = f"refused: {e}"
        if total != r["reference"]["total"]:
            worse.append((r["id"], total, r["reference"]["total"]))
    return worse


def test_translated_configs_count_what_transformers_built(tmp_path: Path) -> None:
    """Every record ffnlab's translators counted, recounted without transformers: what was exact
    (the stored transformers total) stays exact."""
    assert sum(r["audit"].get("by") == "translator" for r in RECORDS) > 100
    worse = translated_regressions(RECORDS, tmp_path)
    assert not worse, worse


def test_the_guard_catches_a_count_that_stops_being_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A translator that ignores head_dim again (StarCoder2's old miscount) turns the guard red."""
    from ffnlab.sizing import hf

    real = hf.HF_TRANSLATORS["starcoder2"]

    def ignores_head_dim(k: Any) -> Any:
        k.data.pop("head_dim", None)
        return real(k)

    monkeypatch.setitem(hf.HF_TRANSLATORS, "starcoder2", ignores_head_dim)
    planted = [r for r in RECORDS if r["id"] == "starcoder2/head-dim"]
    assert planted and planted[0]["status"] == "exact" and planted[0]["audit"]["by"] == "translator"
    assert [w[0] for w in translated_regressions(planted, tmp_path)] == ["starcoder2/head-dim"]


@pytest.mark.skipif(SAVED["transformers"] != _pinned(), reason="the file is of another transformers")
def test_a_rotating_sample_rebuilt_live(tmp_path: Path) -> None:
    """A sample of the records counted by building the model: transformers still builds (or
    refuses) what the file says, with the same total, and audit's verdict is no worse."""
    pytest.importorskip("transformers")
    problems = []
    for r in _sample():
        now = check(r["config"], tmp_path)
        if ("total" in r["reference"]) != ("total" in now["reference"]) or \
                now["reference"].get("total") != r["reference"].get("total"):
            problems.append((r["id"], "transformers changed", r["reference"], now["reference"]))
        if r["status"] != "off" and now["status"] != r["status"]:
            problems.append((r["id"], f"was {r['status']}, now {now['status']}: {now['reason']}"))
    assert not problems, problems


def test_every_model_type_of_this_transformers_is_recorded() -> None:
    pytest.importorskip("transformers")
    if SAVED["transformers"] != _pinned():
        pytest.skip("the file is of another transformers")
    recorded = {r["id"].split("/")[0] for r in RECORDS}
    missing = sorted(set(model_types()) - recorded)
    assert not missing, f"regenerate {PATH.name} (hf_counts_all.py --write): {missing[:10]}"
    assert set(SUPPORTED_MODEL_TYPES) <= recorded
