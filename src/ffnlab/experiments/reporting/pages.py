"""Every page ffnlab writes, written one way: a report model (plain data) rendered by autoescaped
Jinja2 templates (``templates/*.j2``: HTML, and Markdown through :func:`md_cell`), each file written
atomically into the report folder (:func:`ffnlab.files.write_atomic`).

A report model is a mapping: ``title``, ``description``, ``warnings``, ``cards`` (verdicts),
``scale`` ((label, value) pairs), ``sections`` (each ``{id, title, text: [paragraphs], tables:
[Table], figures: [name]}``) and ``provenance`` ((label, value) pairs). Sweep, capacity and verify
reports share ``report.html.j2`` / ``report.md.j2``; the probe page has its own template on the
same base.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ffnlab import escape
from ffnlab.files import make_dir, write_atomic
from ffnlab.render import plain

if TYPE_CHECKING:
    import jinja2



class Table(TypedDict):
    """A table for the templates: its headers, its rows (every cell a string), which columns are
    right-aligned, and a caption."""

    headers: list[str]
    rows: list[list[str]]
    right: list[bool]
    caption: str


class Section(TypedDict):
    """A section of a report page: its anchor, title, paragraphs, tables and figures (by name)."""

    id: str
    title: str
    text: list[str]
    tables: list[Table]
    figures: list[str]


class PageModel(TypedDict):
    """A report model (module docstring): what ``report.html.j2`` and ``report.md.j2`` show."""

    title: str
    description: str
    warnings: list[str]
    setup: str
    cards: list[dict[str, str]]  # a verdict card: its labels and texts
    scale: list[tuple[str, str]]
    sections: list[Section]
    provenance: list[tuple[str, str]]


def table(headers: list[str], rows: list[list[Any]], right: list[bool] | None = None, caption: str = "") -> Table:
    """A table for the templates: every cell a string."""
    return {"headers": headers, "rows": [[str(c) for c in r] for r in rows],
            "right": right or [False] * len(headers), "caption": caption}


def section(id_: str, title: str, text: list[str] | None = None, tables: list[Table] | None = None,
            figures: list[str] | None = None) -> Section:
    return {"id": id_, "title": title, "text": text or [], "tables": tables or [], "figures": figures or []}


def md_cell(text: Any) -> str:
    """A string as one Markdown table cell or line: pipes and backslashes escaped, no line
    breaks, no raw HTML, no control characters."""
    return escape.markdown(text)


def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("ffnlab.experiments.reporting", "templates"),
                             autoescape=jinja2.select_autoescape(["html.j2"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             finalize=escape.visible)  # no control characters from files reach a page
    env.filters["md"] = md_cell
    from ffnlab.experiments.reporting.glossary import TERMS
    from ffnlab.sizing.verdicts import VERDICTS

    env.globals["glossary"] = TERMS  # base.html.j2 ends every page with it, report.md.j2 too
    env.globals["verdict_words"] = VERDICTS  # report.html.j2 marks a table cell holding one
    return env


def render(template: str, model: PageModel, images: dict[str, bytes], titles: dict[str, str]) -> str:
    """One template (e.g. ``report.html.j2``) rendered with the model and its figures (the HTML
    embeds them; the Markdown links to ``plots/NAME``)."""
    figs = {n: {"name": n, "title": titles.get(n, n), "data": base64.b64encode(b).decode()} for n, b in images.items()}
    return environment().get_template(template).render(r=model, figures=figs)


def write_page(out: Path, model: PageModel, images: dict[str, bytes], titles: dict[str, str],
               templates: tuple[str, ...] = ("report.html.j2", "report.md.j2"),
               root: Path | None = None) -> dict[str, Path]:
    """``out/index.html`` and ``out/report.md`` (one per template) and ``out/plots/*.png``, never
    written through a link out of ``root`` (the folder the user named)."""
    make_dir(out / "plots", root)
    for name, data in images.items():
        write_atomic(out / "plots" / name, data, root=root)
    paths = {}
    for tpl in templates:
        name = "index.html" if tpl.endswith(".html.j2") else tpl.removesuffix(".j2")
        path = out / name
        write_atomic(path, render(tpl, model, images, titles), root=root)
        paths["html" if name.endswith(".html") else "markdown"] = path
    return paths


def _finite_or_word(x: float) -> str | None:
    """A NaN as None, an infinity as "inf" / "-inf" (strict JSON has neither)."""
    return None if math.isnan(x) else "inf" if x > 0 else "-inf"


def json_safe(x: Any) -> Any:
    """``x`` as JSON data (:func:`ffnlab.render.plain`), NaN as None and infinities as "inf"/"-inf"."""
    return plain(x, _finite_or_word)
