"""What the adversarial count passes' test files share (tests/sizing/hf/test_counts_*_pass.py):
the findings as parameters (a strict xfail naming its root cause until the finding is mended), the
check that each finding's input is still transformers' verdict as stored, and the day's rotation of
the cases whose transformers verdict is rebuilt live."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from typing import Any

import pytest
from hf_counts_all import check


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
