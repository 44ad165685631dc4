"""Headless Chromium for the report pages' layout tests: load a page, read what the browser laid
out. A probe script is added to a copy of the page; it writes its findings into the DOM that
``--dump-dom`` prints. `make test` installs chromium-headless-shell where it can (Debian, root).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
needs_browser = pytest.mark.skipif(
    BROWSER is None,
    reason="no headless Chromium: apt-get install chromium-headless-shell (make test does this "
    "when run as root)",
)

BROKEN_WORDS = """
(() => {
  // A text node is a piece between <wbr>s: a word inside one is on one line, or it was broken
  // (a line may end after a hyphen, as in any text).
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest('td, th, p, h1, h2, summary')) continue;
    for (const m of node.textContent.matchAll(/[^\\s-]+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0]);
    }
  }
  return broken;
})()
"""
"""Words (and numbers) the browser broke across lines."""


def measure(page: str, tmp_path: Path, fields: dict[str, str], width: int = 1000) -> Any:
    """Load ``page`` at ``width`` px and return ``{name: value of the JS expression}`` for
    ``fields``, evaluated after the page's load (its own scripts ran first)."""
    assert BROWSER is not None
    body = ", ".join(f"{json.dumps(k)}: ({v})" for k, v in fields.items())
    probe = (
        "<script>window.addEventListener('load', () => { const out = {" + body + "};"
        "const pre = document.createElement('pre'); pre.id = 'probe';"
        "pre.textContent = JSON.stringify(out); document.body.appendChild(pre); });</script>"
    )
    return dump_probe(page.replace("</body>", probe + "</body>"), tmp_path / "page.html", width)


def dump_probe(page: str, path: Path, width: int = 1000) -> Any:
    """Write ``page`` (which carries a probe script filling ``<pre id="probe">`` with JSON) to
    ``path``, load it at ``width`` px and return the probe's JSON."""
    assert BROWSER is not None
    path.write_text(page, encoding="utf-8")
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},900",
         "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)
