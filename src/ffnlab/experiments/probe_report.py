"""Write a probe's result as ``probe.json`` and a self-contained ``index.html`` (every string
from the model, the corpus or the user is escaped)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ffnlab import escape
from ffnlab.errors import require
from ffnlab.files import make_dir, write_atomic

STYLE = ("body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222}"
         "table{border-collapse:collapse;font-size:13px;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 7px;"
         "vertical-align:top}th{background:#f3f3f3}.ctx{font-family:monospace;white-space:pre-wrap}"
         "mark{background:#ffd54f;font-weight:bold}.tok{font-family:monospace;background:#eef;padding:0 3px;"
         "margin:1px;display:inline-block;white-space:pre}.neg{background:#fee}h3{margin-top:1.4em}")


def _show(text: str) -> str:
    """Escape for HTML (:func:`ffnlab.escape.html`), with newlines and tabs made visible."""
    return escape.html(text).replace("\n", "\u21b5").replace("\t", "\u21e5")


def _tokens(items: list[dict[str, Any]], cls: str = "tok") -> str:
    return "".join(f"<span class='{cls}' title='logit {t['logit']:.3f}'>{_show(t['token'])}</span>" for t in items)


def _summary_table(layers: list[dict[str, Any]]) -> str:
    keys = ["d_ff", "gated", "mean_fire_rate", "median_fire_rate", "dead_units", "always_on_units",
            "mean_abs_coefficient", "value_entropy_bits_mean", "value_entropy_bits_max", "value_top_mass_mean"]
    head = "<tr><th>layer</th>" + "".join(f"<th>{html.escape(k)}</th>" for k in keys) + "</tr>"

    def fmt(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    body = "".join(f"<tr><td>{ly['layer']}</td>" + "".join(f"<td>{html.escape(fmt(ly['summary'][k]))}</td>"
                                                          for k in keys) + "</tr>" for ly in layers)
    return f"<table>{head}{body}</table>"


def _unit_html(u: dict[str, Any], gated: bool) -> str:
    gate_head = "<th>act(gate)</th><th>up</th>" if gated else ""
    rows = []
    for e in u["examples"]:
        gate = f"<td>{e['gate_act']:.3f}</td><td>{e['up']:.3f}</td>" if gated and "up" in e else ""
        rows.append(f"<tr><td>{e['coefficient']:.3f}</td>{gate}<td class='ctx'>{_show(e['before'])}"
                    f"<mark>{_show(e['trigger'])}</mark>{_show(e['after'])}</td></tr>")
    return (f"<h3>unit {u['unit']}</h3><p>max coefficient {u['max_coefficient']:.3f}, fires on "
            f"{u['fire_rate']:.1%} of positions, mean |coefficient| {u['mean_abs_coefficient']:.4f}; value "
            f"projection entropy {u['value_entropy_bits']:.2f} bits, top tokens hold {u['value_top_mass']:.1%}</p>"
            f"<p>promotes: {_tokens(u['promotes'])}</p><p>suppresses: {_tokens(u['suppresses'], 'tok neg')}</p>"
            f"<table><tr><th>coefficient</th>{gate_head}<th>context (trigger marked)</th></tr>{''.join(rows)}</table>")


def render_html(result: dict[str, Any]) -> str:
    title = f"ffnlab probe: {result['model']}"
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(result['kind'])}; {result['tokens']:,} tokens of "
             f"<code>{html.escape(str(result.get('corpus', '')))}</code> ({html.escape(result['tokenizer'])} "
             f"tokenizer) in windows of {result['seq_len']}.</p>",
             f"<p>{html.escape(result['method'])}</p>", "<h2>Per-layer summary</h2>",
             _summary_table(result["layers"])]
    for ly in result["layers"]:
        parts.append(f"<h2>Layer {ly['layer']}: top {len(ly['units'])} units by coefficient</h2>")
        parts += [_unit_html(u, ly["summary"]["gated"]) for u in ly["units"]]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")


def write(result: dict[str, Any], out: str | Path) -> dict[str, Path]:
    """``out/probe.json`` and ``out/index.html``."""
    folder = Path(out)
    require(not folder.exists() or folder.is_dir(), f"{folder} is a file; choose a folder for the probe")
    make_dir(folder)
    write_atomic(folder / "probe.json", json.dumps(result, indent=1, ensure_ascii=False))
    write_atomic(folder / "index.html", render_html(result))
    return {"json": folder / "probe.json", "html": folder / "index.html"}
