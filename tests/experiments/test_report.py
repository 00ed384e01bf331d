"""The report: one model, two renderings (HTML autoescaped, Markdown), escaping, and the page in a
real headless browser (skipped, not faked, when no Chromium is installed)."""

from __future__ import annotations

import json
import re

import pytest
from fake_sweeps import fake_sweep

from ffnlab.experiments.reporting.browser import check_in_browser, find_browser
from ffnlab.experiments.reporting.report import write_report
from ffnlab.sizing.audit import audit_entry
from ffnlab.sizing.zoo import load_zoo

EVIL = "<script>alert('x')</script> & <b>bold</b> | pipe"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    fake_sweep(root, {"gelu-r2": (-0.05, 1.2), "gelu-r4": (0.0, 1.0), "gelu-r8": (0.05, 0.9),
                      "swiglu-pm4": (-0.02, 1.05)}, 4, 0.01)
    record = json.loads((root / "sweep.json").read_text())
    record["spec"]["description"] = EVIL
    (root / "sweep.json").write_text(json.dumps(record))
    paths = write_report(root, root / "report", with_claims=True, audit_rows=[audit_entry(e) for e in load_zoo()])
    return paths


def test_strings_from_the_sweep_are_escaped(report):
    html = report["html"].read_text()
    md = report["markdown"].read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "<script>" not in md and "\\| pipe" in md


def test_html_and_markdown_show_the_same_verdicts_cards_first(report):
    html = report["html"].read_text()
    md = report["markdown"].read_text()
    claims = json.loads(report["claims"].read_text())
    assert set(claims) == {"ratio_optimal", "convergence_speed", "glu_vs_plain"}
    ids = {"ratio_optimal": "ratio-4-optimal", "convergence_speed": "golden-transformer-8pct",
           "glu_vs_plain": "glu-beats-plain"}
    for key, v in claims.items():
        assert f"{ids[key]}: <span class=\"v {v['verdict']}\">{v['verdict']}</span>" in html
        assert f"### {ids[key]}: `{v['verdict']}`" in md
        # the static claim table shows this run's verdict, as a real table row, in both renderings
        # ... its verdict coloured as the cards colour it
        assert f"<td>{ids[key]}</td><td><span class=\"v {v['verdict']}\">{v['verdict']}</span></td>" in html
        assert f"| {ids[key]} | {v['verdict']} |" in md
    first_card = html.index('class="card ')
    assert first_card < html.index('<h2 id="comparisons">') < html.index('<h2 id="convergence">')
    assert html.index('<h2 id="claims">') < html.index('<h2 id="audit">') < html.index('<h2 id="provenance">')
    assert "<pre>" not in html and html.count("<table") >= 8
    n_zoo = len(load_zoo())
    audit = html[html.index('<h2 id="audit">'):html.index('<h2 id="provenance">')]
    assert audit.count("<tr>") == n_zoo + 1  # header + one row per model
    for section in ("## Verdicts", "## Scale", "## Comparisons", "## Final loss per seed", "## Convergence speed",
                    "## Loss relative to the reference", "## Perplexity and bits per byte per arm",
                    "## Every claim checked", "## Zoo audit", "## Provenance"):
        assert section in md
    assert len(re.findall(r"data:image/png;base64,", html)) == 6  # forest, pairs, tokens, curves, kaplan, frontier
    assert "deciding 95% interval" in html and "Levene" in html and "sensitivity" in html


def css_rules(html: str) -> dict[str, str]:
    """The page's style sheet as {selector: declarations}, one entry per selector of each rule."""
    css = html[html.index("<style>") + 7:html.index("</style>")]
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        for sel in selectors.split(","):
            rules[" ".join(sel.split())] = rules.get(" ".join(sel.split()), "") + ";" + body
    return rules


def test_a_verdict_word_never_breaks_inside_a_table_cell(report):
    """Table cells may break anywhere (overflow-wrap:anywhere keeps long names inside a narrow
    page), which split a verdict such as INCONCLUSIVE or NEEDS-EXPERIMENT over two lines: the
    verdict's span keeps it whole. Every verdict word in a cell is such a span."""
    html = report["html"].read_text()
    rules = css_rules(html)
    assert "overflow-wrap:anywhere" in rules["table td"]
    assert "white-space:nowrap" in rules[".v"] and "overflow-wrap:normal" in rules[".v"]
    words = ("true", "false", "inconclusive", "misleading", "unverifiable", "needs-experiment")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    verdicts = [c for c in cells if re.sub(r"<[^>]+>", "", c) in words]
    assert verdicts and all(re.fullmatch(r'<span class="v [a-z-]+">[a-z-]+</span>', c) for c in verdicts)


def test_page_in_a_headless_browser(report):
    if find_browser() is None:
        pytest.skip("no Chromium on PATH (apt-get install -y chromium)")
    shot = report["dir"] / "screenshot.png"
    for width in (1280, 500):
        check = check_in_browser(report["html"], width=width, screenshot=shot if width == 1280 else None)
        assert check is not None and check["images"] == 6 and check["undecoded"] == []
        assert check["scroll_width"] <= check["viewport_width"], (width, check)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_scale_sweep_reports_its_trend(tmp_path):
    import math

    arms = {f"{sc}.gelu-r{r}": (0.02 * (math.log2(r) - 1.5) ** 2, 1.0) for sc in ("s1", "s2") for r in (1, 2, 4, 8)}
    fake_sweep(tmp_path, arms, 2, 0.002, claims=["ratio_optimal"])
    record = json.loads((tmp_path / "sweep.json").read_text())
    record["spec"]["scales"] = [{"name": "s1", "model": {}}, {"name": "s2", "model": {}}]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    paths = write_report(tmp_path, tmp_path / "report")
    html, md = paths["html"].read_text(), paths["markdown"].read_text()
    assert '<h2 id="trends">' in html and "## How the best ratio moves" in md
    assert "scale_trend.png" in md and "## Comparisons in cell s1" in md and "## Comparisons in cell s2" in md
    assert "| s1 |" in md and "| s2 |" in md
    runs = (paths["dir"] / "runs.csv").read_text().splitlines()
    assert len(runs) == 1 + 16  # every run of both sizes is exported, not only the last size's


def test_provenance_gives_each_cells_tokens_and_keeps_the_dirty_mark(tmp_path):
    from ffnlab.provenance import short_commit

    arms = {f"{sc}.gelu-r{r}": (0.0, 1.0) for sc in ("s1", "s2") for r in (1, 4)}
    fake_sweep(tmp_path, arms, 2, 0.002, claims=["ratio_optimal"])
    record = json.loads((tmp_path / "sweep.json").read_text())
    record["spec"]["scales"] = [{"name": "s1", "model": {}}, {"name": "s2", "model": {}}]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    for r in record["runs"]:  # s2 trains on four times s1's tokens, as a size cell at fixed tokens/param
        path = tmp_path / "runs" / r["run"] / "summary.json"
        summary = json.loads(path.read_text())
        summary["tokens"] = 4096 * (4 if r["arm"].startswith("s2.") else 1)
        summary["ffnlab_commit"] = "0123456789abcdef0123-dirty" if r["arm"].startswith("s2.") else "f" * 40
        path.write_text(json.dumps(summary))
    md = write_report(tmp_path, tmp_path / "report")["markdown"].read_text()
    assert "4,096 to 16,384 training tokens per run (by cell)" in md
    assert "0123456789ab-dirty, ffffffffffff" in md
    assert short_commit("unknown") == "unknown"


def test_a_best_ratio_beyond_the_tested_ones_is_drawn_at_the_edge(tmp_path):
    import math

    from ffnlab.experiments.reporting import plots

    # s1's minimum is at ratio 2; s2's loss still falls at ratio 8 (its parabola bottoms out near 32)
    shape = {"s1": 1.0, "s2": 5.0}
    arms = {f"{sc}.gelu-r{r}": (0.01 * (math.log2(r) - m) ** 2, 1.0) for sc, m in shape.items() for r in (1, 2, 4, 8)}
    fake_sweep(tmp_path, arms, 3, 0.001, claims=["ratio_optimal"])
    record = json.loads((tmp_path / "sweep.json").read_text())
    record["spec"]["scales"] = [{"name": "s1", "model": {}}, {"name": "s2", "model": {}}]
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    md = write_report(tmp_path, tmp_path / "report")["markdown"].read_text()
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith(("| s1 |", "| s2 |"))}
    assert "| 2.00 \\[1.98, 2.02\\] |" in rows["s1"]  # a bounded interval around ratio 2, inside 1-8
    assert "32.00 \\[30.20, 34.00\\] (not inside the tested 1-8)" in rows["s2"]
    # a cell whose interval is unbounded, or that has no minimum, still draws
    from dataclasses import replace

    from ffnlab.experiments.analysis.analyse import analyse

    result = analyse(tmp_path)
    cells = result.cells
    odd = [replace(cells[0], shape="all", lo=-math.inf, hi=math.inf, inside_tested=False),
           replace(cells[1], best_ratio=math.nan, lo=math.nan, hi=math.nan, shape="none")]
    assert plots.scale_trend(odd, result.arm_objects, "gelu-r4")[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("control", ["iso-params", "iso-flops", "fixed-d-model"])
def test_the_setup_names_a_tolerance_only_where_the_control_uses_one(tmp_path, control):
    """A fixed-d-model sweep read "Control fixed-d-model (tolerance 2%)": its d_model is the base's for
    every arm, whatever the tolerance. Oracle: the sweep's own resolve() - a tolerance no d_model
    can meet (1e-9) refuses the sweep under the two matched controls, never under fixed-d-model."""
    from ffnlab.errors import FfnlabError
    from ffnlab.experiments.sweep.spec import resolve, spec_from_dict

    def widths(tolerance: float) -> list[int] | None:
        spec = spec_from_dict({
            "name": "t", "control": control, "tolerance": tolerance, "reference": "g4", "seeds": [0],
            "base": {"model": {"d_model": 128, "n_layers": 2, "n_heads": 2}},
            "arms": [{"name": "g4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
                     {"name": "g1", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 1}}]})
        try:
            return [r.d_model for r in resolve(spec, 256)]
        except FfnlabError:  # "no d_model ... keeps arm 'g1' within 0% of the reference"
            return None

    assert widths(0.5) is not None
    uses_tolerance = widths(1e-9) is None
    assert uses_tolerance == (control != "fixed-d-model")
    fake_sweep(tmp_path, {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.0, 1.0)}, 3, 0.01, spec_extra={"control": control})
    paths = write_report(tmp_path, tmp_path / "report")
    setup = next(line for line in (tmp_path / "report" / "report.md").read_text().splitlines()
                 if line.startswith("Control "))
    html = paths["html"].read_text()
    if uses_tolerance:
        assert setup.startswith(f"Control {control} (tolerance 2%), reference arm gelu-r4"), setup
        assert f"Control {control} (tolerance 2%)" in html
    else:
        assert setup.startswith(f"Control {control}, reference arm gelu-r4"), setup
        assert "tolerance" not in setup and f"Control {control}, reference arm" in html
