"""Names a user chooses for folders ffnlab makes (sweep, arm, capacity preset and budget names):
never ffnlab's own temporary names, never two that one case-insensitive file system reads as one.

ffnlab names its temporaries ``.ffnlab-tmp-...`` (``files.TEMP_PREFIX``), what it sets aside
``.ffnlab-old-...`` and its marker ``.ffnlab-owned``, and removes stale ones it finds; a budget,
sweep or arm of that name is a user's folder in that namespace. Oracle: the CLI's exit status and
its one error line (fuzz_cli's in-process runner); nothing is trained (the sweep executor is
replaced by one that records what it was asked to run).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_cli import assert_refused, cli

from ffnlab import files

SPEC = ("name: {sweep}\ncontrol: fixed-d-model\nseeds: [0]\nbase: {{model: {{d_model: 32, n_layers: 1, n_heads: 2}}, "
        "data: {{corpus: shakespeare}}}}\narms:\n{arms}")
ARM = "  - {{name: {name}, ffn: {{kind: gelu, rule: ratio, ratio: {ratio}}}}}\n"
CAPACITY = ("name: {preset}\nbudgets:\n{budgets}sweep:\n  control: fixed-d-model\n"
            "  seeds: [0]\n  base:\n    model: {{n_layers: 1, n_heads: 2}}\n    data: {{corpus: \"facts:subjects=50,"
            "relations=2,values=4,value_len=1,style=compact,seed=0\", tokenizer: byte}}\n    train: {{seq_len: 32, "
            "batch_size: 4, max_steps: 2, tensorboard: false, progress: 'off', threads: 1}}\n"
            "  arms:\n    - {{name: a, ffn: {{kind: gelu, rule: ratio, ratio: 2}}}}\n")
BUDGET = "  - {{name: {name}, model: {{d_model: {width}}}}}\n"


def _spec(sweep: str = "s", arms: tuple[str, ...] = ("a",)) -> str:
    return SPEC.format(sweep=sweep, arms="".join(ARM.format(name=n, ratio=2 + i) for i, n in enumerate(arms)))


def _preset(preset: str = "p", budgets: tuple[str, ...] = ("small",)) -> str:
    return CAPACITY.format(preset=preset, budgets="".join(BUDGET.format(name=n, width=32 + 16 * i)
                                                          for i, n in enumerate(budgets)))


@pytest.fixture
def executed(monkeypatch) -> list[Path]:
    """The sweep folders the executor was asked to run (nothing is trained)."""
    import ffnlab.experiments.sweep.run as sweep_run

    seen: list[Path] = []
    monkeypatch.setattr(sweep_run, "execute", lambda spec, out, **kw: seen.append(out) or out.mkdir(parents=True)
                        or {})
    return seen


def test_ffnlabs_own_names_share_the_reserved_prefix(tmp_path):
    from ffnlab.validation import RESERVED_PREFIX

    assert all(n.startswith(RESERVED_PREFIX) for n in (files.TEMP_PREFIX, files.OLD_PREFIX, files.MARK))
    made = files.new_temp_dir(tmp_path, "x")  # the name of a real temporary, and its marker
    assert made.name.startswith(RESERVED_PREFIX) and [p.name for p in made.iterdir()] == [files.MARK]


@pytest.mark.parametrize("name", [".ffnlab-tmp-small-123-abcdef012345", ".ffnlab-old-x", ".ffnlab-owned",
                                  ".FFNLAB-TMP-x"])
def test_a_budget_named_as_ffnlabs_own_temporaries_is_refused(tmp_path, executed, name):
    (tmp_path / "p.yaml").write_text(_preset(budgets=(name,)))
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    assert_refused(r, ".ffnlab-")
    assert executed == [] and not (tmp_path / "o").exists()


def test_a_capacity_preset_named_as_ffnlabs_own_temporaries_is_refused(tmp_path, executed):
    (tmp_path / "p.yaml").write_text(_preset(preset=".ffnlab-tmp-p"))
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    assert_refused(r, ".ffnlab-")
    assert executed == []


@pytest.mark.parametrize(("sweep", "arms"), [(".ffnlab-tmp-s", ("a",)), ("s", (".ffnlab-tmp-a-1-0a", "b"))],
                         ids=["sweep", "arm"])
def test_a_sweep_or_arm_named_as_ffnlabs_own_temporaries_is_refused(tmp_path, sweep, arms):
    (tmp_path / "s.yaml").write_text(_spec(sweep, arms))
    assert_refused(cli("sweep", "s.yaml", "--estimate", where=tmp_path), ".ffnlab-")


def test_names_near_the_reserved_prefix_stay_accepted(tmp_path, executed):
    """Controls: the refusal is the prefix, not the words (these names are the user's own)."""
    (tmp_path / "s.yaml").write_text(_spec("ffnlab-tmp-s", ("ffnlab-tmp-a", ".ffnlab")))
    r = cli("sweep", "s.yaml", "--estimate", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    (tmp_path / "p.yaml").write_text(_preset(budgets=("ffnlab-tmp-small", ".ffnlabtmp")))
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    assert sorted(p.name for p in executed) == [".ffnlabtmp", "ffnlab-tmp-small"]


SCALES = ("scales:\n  - {{name: {a}, model: {{d_model: 32}}}}\n  - {{name: {b}, model: {{d_model: 48}}}}\n")


@pytest.mark.parametrize(("first", "second"), [("A", "a"), ("glu", "GLU"), ("Mixed-Case.1", "mixed-case.1")])
def test_arms_that_differ_only_by_case_are_refused_naming_both(tmp_path, first, second):
    (tmp_path / "s.yaml").write_text(_spec("s", (first, "other", second)))
    line = assert_refused(cli("sweep", "s.yaml", "--estimate", where=tmp_path), "only by case")
    assert repr(first) in line and repr(second) in line


def test_scales_that_differ_only_by_case_are_refused_naming_both(tmp_path):
    (tmp_path / "s.yaml").write_text(_spec("s", ("a", "b")) + SCALES.format(a="Small", b="small"))
    line = assert_refused(cli("sweep", "s.yaml", "--estimate", where=tmp_path), "only by case")
    assert "'Small'" in line and "'small'" in line


def test_budgets_that_differ_only_by_case_are_refused_naming_both(tmp_path, executed):
    (tmp_path / "p.yaml").write_text(_preset(budgets=("Small", "small")))
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    line = assert_refused(r, "only by case")
    assert "'Small'" in line and "'small'" in line and executed == [] and not (tmp_path / "o").exists()


def test_names_that_differ_by_more_than_case_stay_accepted(tmp_path, executed):
    """Controls: distinct names (case aside) are run as before."""
    (tmp_path / "s.yaml").write_text(_spec("s", ("A", "b")) + SCALES.format(a="Small", b="large"))
    r = cli("sweep", "s.yaml", "--estimate", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    (tmp_path / "p.yaml").write_text(_preset(budgets=("Small", "big")))
    r = cli("capacity", "run", "p.yaml", "--out", "o", "--workers", "1", "--no-report", where=tmp_path)
    assert r.code == 0, r.stderr[-2000:]
    assert sorted(p.name for p in executed) == ["Small", "big"]
