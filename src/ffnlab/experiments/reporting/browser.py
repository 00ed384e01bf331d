"""Open a page ffnlab wrote in a real headless Chromium: do its images decode, does it fit its
width (the report tests use it; skipped, not faked, where no browser exists)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict, cast

from ffnlab.errors import require

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHECK = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images];
  const bad = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt);
  document.body.setAttribute('data-ffnlab-check', JSON.stringify({images: imgs.length, undecoded: bad,
    scroll_width: document.documentElement.scrollWidth, viewport_width: window.innerWidth}));
});</script>"""


class PageCheck(TypedDict):
    """What the page check (:data:`_CHECK`) found: images on the page, those that did not decode (by
    alt text), the page's width and the viewport's, in CSS px."""

    images: int
    undecoded: list[str]
    scroll_width: int
    viewport_width: int


def find_browser() -> str | None:
    """A headless-capable Chromium on PATH, or None."""
    import shutil

    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def check_in_browser(index_html: Path, *, width: int = 1280, screenshot: Path | None = None,
                     browser: str | None = None, timeout: float = 120) -> PageCheck | None:
    """Load ``index_html`` in headless Chromium at ``width`` px: how many images decoded and
    whether the page is wider than the viewport; save a screenshot if asked. None without a browser."""
    import re
    import subprocess
    import tempfile

    exe = browser or find_browser()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        # offline and quiet: no background networking, a fresh profile; the last two flags vary
        flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-quic", f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size={width},1600",
                 "--virtual-time-budget=10000"]
        probe = Path(tmp) / "probe.html"
        probe.write_text(index_html.read_text(encoding="utf-8").replace("</body>", _CHECK + "</body>"),
                         encoding="utf-8")
        dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                             timeout=timeout).stdout
        if screenshot is not None:
            subprocess.run([*flags[:-2], f"--window-size={width},2400", f"--screenshot={screenshot}",
                            index_html.resolve().as_uri()], capture_output=True, timeout=timeout)
    m = re.search(r"data-ffnlab-check=\"([^\"]*)\"", dom)
    require(m is not None, f"{exe} did not run the page check (no result in the DOM)")
    import html as html_mod

    assert m is not None  # the require above
    return cast(PageCheck, json.loads(html_mod.unescape(m.group(1))))  # the object _CHECK writes
