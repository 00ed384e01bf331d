"""`ffnlab verify` end to end on a micro spec whose answer is known: the only alternative to the
ratio-4 reference is an identical twin (same FFN, same seeds), so on CPU its runs reproduce the
reference's exactly. Ratio 4 cannot beat itself (ratio-4-optimal must come out false: the twin
is equivalent within the margin) and cannot be 8% faster than itself (the tokens ratio is
exactly 1 and the claim is never true)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_run import run

MICRO_VERIFY = {
    "name": "micro-verify", "control": "fixed-d-model", "reference": "gelu-r4", "seeds": [0, 1],
    "threads_per_worker": 1, "claims": ["ratio_optimal", "convergence_speed"], "margin": 0.05,
    "maturity": 0.01,  # a 12-step toy declared mature: this test judges the verdicts, not the rule
    "comparisons": {"ratio_optimal": ["gelu-r4-twin"], "convergence_speed": ["gelu-r4-twin"]},
    "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "norm": "layernorm"},
             "data": {"corpus": "shakespeare"},
             "train": {"seq_len": 32, "batch_size": 8, "max_steps": 12, "warmup_steps": 2, "eval_every": 4,
                       "eval_tokens": 2048, "checkpoint_every": 12, "tensorboard": False}},
    "arms": [{"name": "gelu-r4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
             {"name": "gelu-r4-twin", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}],
}


@pytest.mark.slow
def test_verify_end_to_end_decides_a_known_case(tmp_path, tmp_path_factory):
    spec = json.loads(json.dumps(MICRO_VERIFY))
    spec["base"]["data"]["cache_dir"] = str(tmp_path_factory.getbasetemp() / "sweep_cache")
    path = tmp_path / "micro.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "verify"
    p = run("verify", "--preset", str(path), "--out", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    claims = json.loads((out / "claims.json").read_text())
    ro, cs = claims["ratio_optimal"], claims["convergence_speed"]
    assert ro["interval"][0] == 0.0 and ro["interval"][1] < 0 < ro["interval"][2]  # the twin: exactly equal
    assert ro["verdict"] == "false" and "equivalent" in ro["evidence"]
    point, lo, hi = map(float, cs["interval"])  # strict JSON writes an unbounded end as "inf"
    assert point == 1.0 and lo < 1 < hi
    assert cs["verdict"] in ("false", "inconclusive")  # never "true": ratio 4 is not faster than itself
    # the CLI, claims --evidence, the HTML claim table and the Markdown all show the same verdicts
    assert f"ratio-4-optimal: {ro['verdict']}" in p.stdout
    assert p.stdout.rstrip().splitlines()[-1].startswith(f"next: open {out / 'index.html'}; more commands: ")
    rows = {r["id"]: r for r in json.loads(run("claims", "--evidence", str(out), "--json").stdout)}
    assert rows["ratio-4-optimal"]["verdict"] == "false"
    assert rows["golden-transformer-8pct"]["verdict"] == cs["verdict"]
    html = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    assert '<td>ratio-4-optimal</td><td><span class="v false">false</span></td>' in html
    assert "| ratio-4-optimal | false |" in md and "### ratio-4-optimal: `false`" in md
    # the verdict cards come first, before any section; the audit follows the claims
    assert html.index("ratio-4-optimal: <span class=\"v false\">") < html.index('<h2 id="comparisons">')
    assert html.index('<h2 id="audit">Zoo audit</h2>') > html.index('<h2 id="claims">Every claim checked')
    assert "needs-experiment: run ffnlab verify" not in html


def test_verify_names_the_venvs_ffnlab_when_the_shell_has_none(tmp_path, monkeypatch):
    """make demo runs verify from .venv without activating it: the last line says how to reach ffnlab."""
    from ffnlab.cli import experiments

    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "activate").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(experiments.sys, "executable", str(venv_bin / "python"))
    monkeypatch.setattr(experiments.shutil, "which", lambda name: None)
    line = experiments.next_command_hint(Path("reports/verify"))
    assert line == ("next: open reports/verify/index.html; more commands: `source .venv/bin/activate` "
                    "(then `ffnlab --help`), or `.venv/bin/ffnlab --help`")
    monkeypatch.setattr(experiments.shutil, "which", lambda name: "/usr/bin/ffnlab")
    assert experiments.next_command_hint(Path("r")).endswith("more commands: `ffnlab --help`")
    (venv_bin / "activate").unlink()  # no virtual environment: the interpreter runs the module
    monkeypatch.setattr(experiments.shutil, "which", lambda name: None)
    assert experiments.next_command_hint(Path("r")).endswith(f"`{venv_bin / 'python'} -m ffnlab --help`")
