"""A step figure drawn: SVG text (no dependency) or PNG bytes (matplotlib), written via temp + rename.

The geometry is :func:`ffnlab.sizing.memory.step_figure.step_figure`'s (bars stacked by what is
alive at each moment of the step, the peak and its moment, the engine in the title); this module
only draws it. :func:`svg_text` is deterministic (the same figure gives the same bytes, so a
committed figure can be checked against a regeneration); the peak's label is a ``<text
id="peak">`` carrying the exact bytes in ``data-peak-bytes``. :func:`write_figure` picks the format
from the file's suffix (``.svg``, ``.png``) and writes only the file named, through a temporary
in its folder renamed into place (an existing file only replaced with ``--overwrite``, a link there
replaced, never followed); a ``.png`` without matplotlib installed is one error line.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from xml.sax.saxutils import escape

from ffnlab.errors import FfnlabError, require
from ffnlab.files import write_atomic
from ffnlab.render import gib
from ffnlab.sizing.memory.step_figure import StepFigure
from ffnlab.validation import show

FORMATS = (".svg", ".png")
FONT = "font-family=\"DejaVu Sans, Arial, sans-serif\""


def _f(x: float) -> str:
    """A coordinate as SVG writes it: at most two decimals, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def svg_text(fig: StepFigure) -> str:
    """The figure as an SVG document (a string ending in a newline)."""
    bx, by, bw, bh = fig.box
    colours = dict(fig.groups)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{fig.width}" height="{fig.height}" '
           f'viewBox="0 0 {fig.width} {fig.height}" {FONT} font-size="12">',
           f'<rect x="0" y="0" width="{fig.width}" height="{fig.height}" fill="#ffffff"/>',
           f'<text x="{_f(fig.width / 2)}" y="22" text-anchor="middle" font-size="14">{escape(fig.title)}</text>']
    for y, label in fig.y_ticks:
        out.append(f'<line x1="{_f(bx)}" y1="{_f(y)}" x2="{_f(bx + bw)}" y2="{_f(y)}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{_f(bx - 6)}" y="{_f(y + 4)}" text-anchor="end">{escape(label)}</text>')
    out.append(f'<text x="18" y="{_f(by + bh / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 18 {_f(by + bh / 2)})">live memory per GPU (GiB)</text>')
    for bar in fig.bars:
        out.append(f"<g><title>{escape(bar.moment)}: {gib(bar.total_bytes)}</title>")
        out += [f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" fill="{colours[g]}"/>'
                for g, x, y, w, h in bar.rects]
        out.append("</g>")
    out.append(f'<line x1="{_f(bx)}" y1="{_f(by + bh)}" x2="{_f(bx + bw)}" y2="{_f(by + bh)}" stroke="#333333"/>')
    out.append(f'<line x1="{_f(bx)}" y1="{_f(by)}" x2="{_f(bx)}" y2="{_f(by + bh)}" stroke="#333333"/>')
    peak = fig.bars[fig.peak_index]
    top = min(y for _, _, y, _, _ in peak.rects)
    cx = peak.rects[0][1] + peak.rects[0][3] / 2
    out.append(f'<line x1="{_f(cx)}" y1="{_f(by)}" x2="{_f(cx)}" y2="{_f(by + bh)}" stroke="#000000" '
               'stroke-dasharray="4 3"/>')
    anchor = "end" if cx > bx + bw / 2 else "start"
    dx = -4 if anchor == "end" else 4
    out.append(f'<text id="peak" data-peak-bytes="{fig.peak_bytes}" x="{_f(cx + dx)}" y="{_f(max(top - 6, by + 12))}" '
               f'text-anchor="{anchor}" font-weight="bold">{escape(fig.peak_label)}</text>')
    first, last = fig.bars[0], fig.bars[-1]
    out.append(f'<text x="{_f(bx)}" y="{_f(by + bh + 16)}" text-anchor="start">{escape(first.moment)}</text>')
    out.append(f'<text x="{_f(bx + bw)}" y="{_f(by + bh + 16)}" text-anchor="end">{escape(last.moment)}</text>')
    out.append(f'<text x="{_f(bx + bw / 2)}" y="{_f(by + bh + 40)}" text-anchor="middle">{escape(fig.x_label)}</text>')
    lx = bx + bw + 16
    for k, (g, c) in enumerate(reversed(fig.groups)):  # top of the stack first, as drawn
        y = by + 8 + 20 * k
        out.append(f'<rect x="{_f(lx)}" y="{_f(y)}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{_f(lx + 18)}" y="{_f(y + 10)}">{escape(g)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def png_bytes(fig: StepFigure) -> bytes:
    """The figure as PNG (matplotlib, headless); one error line when matplotlib is not installed."""
    _matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    dpi = 100
    bx, by, bw, bh = fig.box
    colours = dict(fig.groups)
    figure = plt.figure(figsize=(fig.width / dpi, fig.height / dpi), dpi=dpi)
    try:
        ax = figure.add_axes((bx / fig.width, 1 - (by + bh) / fig.height, bw / fig.width, bh / fig.height))
        ax.set_xlim(bx, bx + bw)
        ax.set_ylim(by + bh, by)  # pixel y grows downwards
        for bar in fig.bars:
            for g, x, y, w, h in bar.rects:
                ax.add_patch(Rectangle((x, y), w, h, color=colours[g], linewidth=0))
        ax.set_yticks([y for y, _ in fig.y_ticks], [label for _, label in fig.y_ticks])
        ax.set_xticks([])
        ax.set_ylabel("live memory per GPU (GiB)")
        ax.set_xlabel(fig.x_label)
        peak = fig.bars[fig.peak_index]
        cx = peak.rects[0][1] + peak.rects[0][3] / 2
        ax.axvline(cx, color="black", linestyle="--", linewidth=1)
        top = min(y for _, _, y, _, _ in peak.rects)
        ax.annotate(fig.peak_label, (cx, top), xytext=(4, -4), textcoords="offset points", fontweight="bold",
                    ha="right" if cx > bx + bw / 2 else "left", va="bottom")
        figure.suptitle(fig.title, fontsize=11)
        handles = [Rectangle((0, 0), 1, 1, color=c) for _, c in reversed(fig.groups)]
        ax.legend(handles, [g for g, _ in reversed(fig.groups)], loc="upper left", bbox_to_anchor=(1.01, 1),
                  frameon=False, fontsize=9)
        buf = io.BytesIO()
        figure.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(figure)
    return buf.getvalue()


def _exists_line(path: str | Path) -> str:
    """The error line for a ``--plot FILE`` that is already there (a file, a link, anything)."""
    return f"--plot: {show(str(path))} already exists; pass --overwrite to replace it (or name a new file)"


def check_plot_path(path: str | Path, overwrite: bool = False) -> Path:
    """``--plot FILE`` checked before any model is read: a .svg or .png in a folder that exists, not
    a file (or link) already there unless ``overwrite``, and for .png, matplotlib installed (each
    refusal one error line)."""
    target = Path(path)
    suffix = target.suffix.lower()
    require(suffix in FORMATS, f"--plot must name a .svg or .png file, got {show(str(path))}")
    require(target.parent.is_dir(), f"--plot: the folder {show(str(target.parent))} does not exist")
    require(not target.is_dir(), f"--plot: {show(str(path))} is a folder")
    require(overwrite or not os.path.lexists(target), _exists_line(path))
    if suffix == ".png":
        _matplotlib()
    return target


def _matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FfnlabError("--plot FILE.png needs matplotlib (pip install matplotlib); "
                          "or give a .svg file, which needs nothing more") from None


def write_figure(path: str | Path, fig: StepFigure, overwrite: bool = False) -> Path:
    """Write ``fig`` to ``path`` (``.svg`` or ``.png``, by its suffix) via a temporary file renamed
    into place in its folder: a link at ``path`` is replaced, never followed; without
    ``overwrite`` nothing there is replaced (one error line, also for a file that appeared while
    the model was read)."""
    target = check_plot_path(path, overwrite)
    suffix = target.suffix.lower()
    data: str | bytes = svg_text(fig) if suffix == ".svg" else png_bytes(fig)
    write_atomic(target, data, exists=None if overwrite else _exists_line(path))
    return target


def peak_label_of(svg: str) -> tuple[int, str]:
    """The peak's exact bytes and its label text, read back from an SVG :func:`svg_text` wrote."""
    start = svg.index('<text id="peak"')
    tag_end = svg.index(">", start)
    head = svg[start:tag_end]
    found = head.split('data-peak-bytes="', 1)[1].split('"', 1)[0]
    text = svg[tag_end + 1:svg.index("</text>", tag_end)]
    return int(found), text


__all__ = ["FORMATS", "check_plot_path", "peak_label_of", "png_bytes", "svg_text", "write_figure"]
