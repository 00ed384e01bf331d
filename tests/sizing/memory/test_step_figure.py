"""The step figure's geometry (sizing/memory/step_figure.py) and its drawing (experiments/reporting/step_figure.py).

Oracles: the memory model's own peak through another route (``memory_summary``'s ``peak_bytes``,
``finetune_summary``'s), the timeline's moments (one bar each, in order, each bar's rectangles
adding up to its moment's bytes on the figure's scale), and the committed docs figure, which must
be byte-identical to a regeneration and whose peak label must be the model's peak.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.experiments.reporting.step_figure import peak_label_of, svg_text, write_figure
from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary
from ffnlab.sizing.memory.engines import apply_engine
from ffnlab.sizing.memory.parallel import Layout, memory_summary
from ffnlab.sizing.memory.step_figure import GROUPS, group_of, step_figure, timeline_of
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find

ROOT = Path(__file__).resolve().parents[3]


def _cfg(name: str):  # noqa: ANN202 - a ModelConfig
    cfg = find(name).config()
    assert cfg is not None
    return cfg


@pytest.mark.parametrize(("model", "work", "lay"), [
    ("llama-3-8b", Workload(seq_len=4096), Layout()),
    ("gpt2", Workload(seq_len=1024, batch=4, recompute="full"), Layout(dp=8, zero=3)),
    ("qwen2-0.5b", apply_engine(Workload(seq_len=2048), "nanogpt"), Layout(dp=2, zero=1)),
])
def test_the_figure_shows_every_moment_and_the_peak_memory_summary_gives(model: str, work: Workload,
                                                                         lay: Layout) -> None:
    cfg = _cfg(model)
    tl = timeline_of(cfg, work, lay)
    fig = step_figure(tl, title=model)
    assert [b.moment for b in fig.bars] == [m.name for m in tl.moments]
    assert fig.peak_bytes == memory_summary(cfg, work, lay).peak_bytes
    assert fig.bars[fig.peak_index].moment == memory_summary(cfg, work, lay).peak_moment
    assert fig.peak_label == f"peak {fig.peak_bytes / 2**30:,.2f} GiB at {fig.bars[fig.peak_index].moment}"
    bx, by, bw, bh = fig.box
    top_gib = float(fig.y_ticks[-1][1])
    for bar, m in zip(fig.bars, tl.moments, strict=True):
        assert bar.total_bytes == m.total
        stacked = sum(h for *_, h in bar.rects)
        assert stacked == pytest.approx(m.total / (top_gib * 2**30) * bh, abs=0.01 * len(bar.rects) + 1e-9)
        order = [g for g, *_ in bar.rects]
        assert order == [g for g, _ in GROUPS if g in order]  # bottom to top in the one order
        assert all(bx <= x and x + w <= bx + bw and by - 0.01 <= y for _, x, y, w, _ in bar.rects)
    assert top_gib * 2**30 >= fig.peak_bytes  # the peak bar fits the box


def test_the_lora_figure_is_the_fine_tuning_step() -> None:
    cfg = _cfg("llama-3-8b")
    work = apply_engine(Workload(seq_len=1024, finetune=FinetuneOptions("qlora")), "hf-trainer")
    fig = step_figure(timeline_of(cfg, work), title="q")
    assert fig.peak_bytes == finetune_summary(cfg, work).peak.peak_bytes


def test_every_thing_alive_falls_in_a_named_group() -> None:
    assert group_of("weights") == "weights"
    assert group_of("this layer's attention activations (recomputed)") == "kept activations"
    assert group_of("logits (held)") == group_of("loss: log-softmax gradients") == "logits and loss"
    assert group_of("gradients (accumulated)") == group_of("head gradients (made in forward)") == "gradients"
    assert group_of("QLoRA: a frozen weight dequantised") == group_of("optimizer temporaries") == "temporaries"
    assert group_of("engine working memory") == "buffers"
    cfg = _cfg("gpt2")
    for lay in (Layout(), Layout(dp=4, zero=3)):
        for m in timeline_of(cfg, Workload(seq_len=512), lay).moments:
            for what, _ in m.alive:  # nothing but the buffers falls through to them
                assert group_of(what) != "buffers" or what == "engine working memory", what


def test_the_svg_names_the_peak_and_the_engine_and_is_written_whole(tmp_path: Path) -> None:
    cfg = _cfg("gpt2")
    work = apply_engine(Workload(seq_len=1024), "trl")
    fig = step_figure(timeline_of(cfg, work), title="gpt2, engine trl@x & <y>")
    text = svg_text(fig)
    assert text == svg_text(fig)  # deterministic
    assert peak_label_of(text) == (memory_summary(cfg, work).peak_bytes, fig.peak_label)
    assert "engine trl@x &amp; &lt;y&gt;" in text  # escaped
    out = write_figure(tmp_path / "step.svg", fig)
    assert out.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step.svg"]  # no temporary left behind
    with pytest.raises(FfnlabError, match="must name a .svg or .png"):
        write_figure(tmp_path / "step.pdf", fig)
    with pytest.raises(FfnlabError, match="does not exist"):
        write_figure(tmp_path / "no" / "step.svg", fig)


def test_a_png_needs_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fig = step_figure(timeline_of(_cfg("gpt2"), Workload(seq_len=256)), title="gpt2")
    pytest.importorskip("matplotlib")
    write_figure(tmp_path / "step.png", fig)
    assert (tmp_path / "step.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    with pytest.raises(FfnlabError, match="needs matplotlib"):
        write_figure(tmp_path / "again.png", fig)
    assert not (tmp_path / "again.png").exists()


def test_the_docs_figure_is_a_regeneration_and_labels_the_models_peak() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import step_figure as tool  # tools/step_figure.py
    finally:
        sys.path.remove(str(ROOT / "tools"))
    kept = tool.FIGURE.read_text(encoding="utf-8")
    assert kept == tool.figure_text(), "docs/figures/step-llama-3-8b.svg is stale: run make docs"
    peak, label = peak_label_of(kept)
    want = memory_summary(_cfg("llama-3-8b"), tool.workload(), Layout()).peak_bytes
    assert peak == want and label.startswith(f"peak {want / 2**30:,.2f} GiB at ")
    assert "engine hf-trainer@" in kept
