"""What the adversarial count passes' test files share (tests/sizing/hf/test_counts_*_pass.py):
their stored cases and findings (:func:`stored_pass`), audit's answer to a config and the check
that it is transformers' stored verdict, the findings as parameters (a strict xfail naming its root
cause until the finding is mended), the check that each finding's input is still transformers'
verdict as stored, and the day's rotation of the cases whose transformers verdict is rebuilt live."""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hf_counts_all import check

# id -> (config as thrown, transformers' total or None where it refuses, the auto class it built)
Cases = dict[str, tuple[dict[str, Any], int | None, str | None]]
# finding id -> (config, transformers' total or None where it refuses, its auto class, finding)
Findings = dict[str, tuple[dict[str, Any], int | None, str | None, str]]


def stored_pass(path: Path) -> tuple[dict[str, Any], Cases, Findings]:
    """A pass's stored file (``tests/data/hf_counts_*_pass.json``): the whole document, the cases
    that were right and the findings' inputs, each with transformers' verdict as stored."""
    doc: dict[str, Any] = json.loads(path.read_text())
    cases = {r["id"]: (r["config"], r["total"], r["auto"]) for r in doc["records"] if "finding" not in r}
    findings = {r["id"]: (r["config"], r["total"], r["auto"], r["finding"]) for r in doc["records"] if "finding" in r}
    return doc, cases, findings


def audit_file(path: Path) -> Any:
    """audit's row of the config.json at ``path`` or its FfnlabError (anything else: a traceback,
    the test fails)."""
    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.audit import audit
    from ffnlab.training.hf_count import count_with_transformers

    try:
        return audit(str(path), count_with_transformers)
    except FfnlabError as e:
        return e


def audit_config(config: dict[str, Any], folder: Path) -> Any:
    """:func:`audit_file` of ``config`` written as ``folder``/config.json."""
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return audit_file(path)


def assert_agrees(got: Any, total: int | None, auto: str | None = None) -> None:
    """audit's answer ``got`` is transformers' verdict: refused in one line where ``total`` is None,
    else that count; a model with no language-model head (``auto`` AutoModel) says what was counted."""
    if total is None:  # transformers refuses: so must audit, in one line
        assert isinstance(got, Exception), f"counted {got.params_total:,} where transformers refuses"
        assert "\n" not in str(got) and len(str(got)) < 1000
    else:
        assert not isinstance(got, Exception), f"refused a model transformers builds ({total:,}): {got}"
        assert got.params_total == total, f"audit {got.params_total:,} vs transformers {total:,}"
        if auto == "AutoModel":  # no LM head: the row says what was counted
            assert got.note and "no language-model head" in got.note, got.note


def assert_counts_as_stored(config: dict[str, Any], total: int | None, auto: str | None, folder: Path,
                            live: bool) -> None:
    """audit agrees with the stored verdict of transformers; ``live``: that verdict rebuilt too."""
    assert_agrees(audit_config(copy.deepcopy(config), folder), total, auto)
    if live:  # the stored figure is still transformers' own
        rec = check(copy.deepcopy(config), folder)
        assert rec["reference"].get("total") == total, rec["reference"]
        assert rec["reference"].get("auto") == auto


def rotation(every: int) -> int:
    """Which of ``every`` slices of the cases is rebuilt live today (a different one each day)."""
    return datetime.date.today().toordinal() % every


def finding_params(findings: Mapping[str, tuple[Any, ...]], labels: Mapping[str, str],
                   mended: frozenset[str]) -> list[Any]:
    """Each finding by name, a strict xfail with its root cause's label until it is in ``mended``
    (a finding is ``(config, total, auto, root cause)``)."""
    return [pytest.param(n, id=n, marks=() if findings[n][3] in mended else pytest.mark.xfail(
        strict=True, reason=f"finding {findings[n][3]}: {labels[findings[n][3]]}")) for n in sorted(findings)]


def assert_finding_stored(findings: Mapping[str, tuple[Any, ...]], mended: frozenset[str], name: str,
                          folder: Any) -> None:
    """The finding's input is what transformers says it is (so its xfail fails for the finding, not
    for a stale figure); once mended, audit agrees with it."""
    config, total, auto, finding = findings[name]
    rec = check(copy.deepcopy(config), folder)
    assert rec["reference"].get("total") == total, rec["reference"]
    assert rec["reference"].get("auto") == auto
    agreed = "refused" if total is None else "exact"
    assert rec["status"] == (agreed if finding in mended else "off"), rec


def assert_named_case(name: str, cases: Cases, classes: Mapping[str, str | None], every: int,
                      folder: Path) -> None:
    """A pass's stored case ``name`` audited as transformers' stored verdict, its row naming the class
    transformers built; one case in ``every`` (rotating by the day) rebuilt by transformers live."""
    from hf_counts_all import reference

    config, total, auto = cases[name]
    row = audit_config(copy.deepcopy(config), folder)
    assert_agrees(row, total, auto)
    if total is not None and row.counted_by == "transformers":  # the row names transformers' reference class
        assert f"({classes[name]}, {auto}:" in row.verdict, row.verdict
    if sorted(cases).index(name) % every == rotation(every):  # the stored verdict is transformers' own
        ref = reference(copy.deepcopy(config))
        assert (ref.get("total"), ref.get("auto"), ref.get("class")) == (total, auto, classes[name]), ref
