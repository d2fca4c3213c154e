"""A real headless Chromium (from the system packages) reading pages from disk: what the viewer tests
of ``report.html``, ``compare.html`` and ``leaderboard.html`` share."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (apt-get install chromium); the viewer tests need a real browser"
)


def browse(url: str, *, screenshot: Path | None = None, size: str = "1280,900") -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and every console message Chromium logged."""
    command = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-proxy-server", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
               f"--window-size={size}", "--hide-scrollbars"]
    command += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run(command + [url], capture_output=True, text=True, timeout=120, cwd=screenshot.parent if screenshot else None)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def loaded(path: Path, hash_: str = "") -> str:
    """The DOM of ``path`` (with ``hash_``), asserting it drew with no console message and no script error."""
    dom, console = browse(path.resolve().as_uri() + hash_)
    assert console == [], f"console messages on {path.name}: {console}"
    root = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-ready="1"' in root and "data-errors" not in root, f"{path.name} did not draw cleanly: {root}"
    return dom
