"""The glossary: one module (ffnlab.experiments.reporting.glossary), rendered as docs/glossary.md and linked from the
README and every doc, so a reader meeting Dunnett or TOST in a report finds the word explained."""

from __future__ import annotations

from paths import ROOT

from ffnlab.experiments.reporting import glossary


def test_docs_glossary_is_the_modules_rendering() -> None:
    assert (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8") == glossary.markdown(), \
        "regenerate: python -c 'from ffnlab.experiments.reporting import glossary; " \
        "print(glossary.markdown(), end=\"\")' > docs/glossary.md"


def test_every_doc_and_the_readme_link_the_glossary() -> None:
    docs = [p for p in (ROOT / "docs").rglob("*.md") if p.name != "glossary.md"
            and (p.parent == ROOT / "docs" or p == ROOT / "docs" / "results" / "README.md")]
    missing = [p.relative_to(ROOT).as_posix() for p in docs
               if "glossary.md)" not in p.read_text(encoding="utf-8")]
    assert docs and not missing, missing
    assert "(docs/glossary.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_glossary_explains_the_words_the_reports_use() -> None:
    terms = " ".join(t.term for t in glossary.TERMS)
    for word in ("Dunnett", "TOST", "Levene", "Fieller", "tokens per parameter", "Welch", "Cochran",
                 "equivalence margin", "hypothesis"):
        assert word in terms, word
    assert len({t.term for t in glossary.TERMS}) == len(glossary.TERMS)


def test_every_html_template_ends_with_the_glossary() -> None:
    """Every page ffnlab writes is an HTML template on base.html.j2, which ends with the glossary
    (the sweep report's page is checked whole in tests/experiments/test_hypotheses.py)."""
    templates = ROOT / "src" / "ffnlab" / "experiments" / "reporting" / "templates"
    pages = [p for p in templates.glob("*.html.j2") if p.name != "base.html.j2"]
    assert pages and all('{% extends "base.html.j2" %}' in p.read_text(encoding="utf-8") for p in pages)
    base = (templates / "base.html.j2").read_text(encoding="utf-8")
    assert base.index("{% block content %}") < base.index('<h2 id="glossary">') < base.index("</body>")
    # and links it before the page's content, so a reader meeting "Dunnett" need not scroll to find it
    assert base.index('<a href="#glossary">') < base.index("{% block content %}")
