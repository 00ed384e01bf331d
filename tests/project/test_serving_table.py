"""docs/serving.md's table of published start-up logs is what tools/serving_table.py writes now,
and its rows say what the log suite holds: every predicted KV-token figure within 3.5% of the
engine's own log (the MoE rows are the widest, their activation peak not modelled)."""

from __future__ import annotations

import importlib.util
import re
import sys

from paths import ROOT

spec = importlib.util.spec_from_file_location("serving_table", ROOT / "tools" / "serving_table.py")
serving_table = importlib.util.module_from_spec(spec)
sys.modules["serving_table"] = serving_table
spec.loader.exec_module(serving_table)


def test_the_table_in_the_docs_is_current():
    text = serving_table.DOC.read_text()
    assert serving_table.rewrite(text) == text, "run `python tools/serving_table.py`"


def test_the_table_has_a_row_per_case_and_ratios_near_one():
    table = serving_table.table()
    rows = [r for r in table.splitlines()[2:] if r.startswith("| ")]
    assert len(rows) == len(serving_table._cases()) >= 15
    ratios = [float(r.split(" | ")[6]) for r in rows if re.fullmatch(r"\d\.\d{3}", r.split(" | ")[6])]
    assert len(ratios) >= 15 and all(0.97 <= x <= 1.035 for x in ratios), ratios


def test_check_mode_catches_a_stale_table(tmp_path, monkeypatch):
    stale = tmp_path / "serving.md"
    stale.write_text(f"x\n{serving_table.BEGIN}\n| old |\n{serving_table.END}\n")
    monkeypatch.setattr(serving_table, "DOC", stale)
    assert serving_table.main(["--check"]) == 1
    assert serving_table.main([]) == 0 and serving_table.main(["--check"]) == 0
