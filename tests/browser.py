"""Headless Chromium (Debian's package) for tests: the DOM it built from a page, a screenshot.

Run as root, so without its sandbox; every background service that would try
the network is off (the network is closed here).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def available() -> bool:
    return Path(CHROMIUM).exists()


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="pctfleet-chromium-") as profile:
        argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def dump_dom(page: Path) -> str:
    """The DOM Chromium built from `page` (after parsing, as the browser sees it)."""
    return _chromium("--dump-dom", page.resolve().as_uri()).stdout


def screenshot(page: Path, png: Path, size: str = "1400,900") -> None:
    _chromium(f"--screenshot={png}", f"--window-size={size}", page.resolve().as_uri())
    assert png.exists()


@dataclass
class Row:
    container: str
    cells: list[tuple[str, str]] = field(default_factory=list)  # (class, text)

    def outliers(self) -> list[str]:
        return [text for cls, text in self.cells if "outlier" in cls.split()]


class Dom(HTMLParser):
    """What the tests read from a dumped DOM: container rows, tags seen, all text."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self.tags: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._cls = ""
        self._in_row = False
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        self.tags.append(tag)
        if tag == "tr":
            self._in_row = "container" in (found.get("class") or "").split()
            if self._in_row:
                self.rows.append(Row(found.get("data-container") or ""))
        elif tag == "td" and self._in_row and self._cell is None:
            self._cell, self._cls = [], found.get("class") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].cells.append((self._cls, "".join(self._cell)))
            self._cell = None
        if tag == "tr":
            self._in_row = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def row(self, container: str) -> Row:
        (found,) = [r for r in self.rows if r.container == container]
        return found
