"""Every relative link in README.md and docs/ leads somewhere: the file exists and, where the link
names a heading (``page.md#anchor``), the page has that heading under GitHub's anchor rule (lower
case; characters other than letters, digits, spaces, ``-`` and ``_`` dropped; spaces become ``-``;
a repeated heading gets ``-1``, ``-2``, ...)."""

from __future__ import annotations

import re
from pathlib import Path

from paths import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    bad = []
    for link in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path) if path else page
        if not target.exists():
            bad.append(f"{page.relative_to(root)}: {link} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text(encoding="utf-8")):
            bad.append(f"{page.relative_to(root)}: {link} (no such heading)")
    return bad


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert [b for p in pages for b in broken_links(p)] == []


def test_the_link_check_flags_a_planted_broken_file_and_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A `b`: c, d\n\n## Same\n\n## Same\n", encoding="utf-8")
    page = tmp_path / "index.md"
    page.write_text("[ok](a.md#a-b-c-d) [ok](a.md#same-1) [gone](nothing.md) [bad](a.md#a-b) "
                    "[web](https://x.invalid/#y)\n", encoding="utf-8")
    assert broken_links(page, tmp_path) == ["index.md: nothing.md (no such file)",
                                           "index.md: a.md#a-b (no such heading)"]
