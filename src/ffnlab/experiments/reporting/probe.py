"""Write a probe's result as ``probe.json`` and a self-contained ``index.html``, the page rendered
by the autoescaped template ``templates/probe.html.j2`` (every string from the model, the corpus
or the user is escaped) and both files written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffnlab import escape
from ffnlab.errors import FfnlabError, require
from ffnlab.files import make_dir, provisional_dir, write_atomic
from ffnlab.render import first_non_finite

if TYPE_CHECKING:
    from ffnlab.training.probe import ProbeResult

SUMMARY_KEYS = ["d_ff", "gated", "mean_fire_rate", "median_fire_rate", "dead_units", "always_on_units",
                "mean_abs_coefficient", "value_entropy_bits_mean", "value_entropy_bits_max", "value_top_mass_mean"]


def _show(text: str) -> str:
    """Newlines and tabs made visible, control characters shown as escapes (the template escapes
    the HTML)."""
    return str(escape.visible(str(text))).replace("\n", "\u21b5").replace("\t", "\u21e5")


def _num(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def render_html(result: ProbeResult) -> str:
    from ffnlab.experiments.reporting.pages import environment

    env = environment()
    env.filters["show"] = _show
    env.filters["num"] = _num
    model = {**result.as_dict(), "title": f"ffnlab probe: {result.model}", "corpus": result.corpus or ""}
    return env.get_template("probe.html.j2").render(r=model, keys=SUMMARY_KEYS)


def write(result: ProbeResult, out: str | Path) -> dict[str, Path]:
    """``out/probe.json`` (strict JSON) and ``out/index.html``.

    A probe holding a figure that is not finite (a model whose weights or activations are NaN or
    infinite) is refused in one error line naming where, before anything is made or written: as
    ``--json`` refuses such a figure, and ``generate`` a model whose logits are not finite. A write
    that fails (a full disk) removes what this call made (:func:`ffnlab.files.provisional_dir`)."""
    data = result.as_dict()
    found = first_non_finite(data)
    if found is not None:
        where, value = found
        raise FfnlabError(f"the probe of {result.model} measured {value} at {where}: the model gives figures "
                          "that are not finite (are its weights NaN?); nothing was written")
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
    folder = Path(out)
    require(not folder.exists() or folder.is_dir(), f"{folder} is a file; choose a folder for the probe")
    with provisional_dir(folder):  # a write that fails (a full disk) leaves no folder it made
        make_dir(folder)
        write_atomic(folder / "probe.json", text)
        write_atomic(folder / "index.html", render_html(result))
    return {"json": folder / "probe.json", "html": folder / "index.html"}
