"""The documentation site as a reader gets it: ``mkdocs build --strict`` (what ``make docs`` runs),
served over real HTTP on loopback and opened in headless Chromium with every other host refused.

A reader offline, or behind a proxy that blocks font and script CDNs, must get the whole site: the
theme's fonts are the system's (``font: false``), and a request to another host fails the test. A
screenshot of the home page is written to ``.cache/docs-home.png`` (the path is printed).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.test_view import browser  # noqa: F401 - the shared headless Chromium fixture

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / ".cache" / "docs-home.png"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=240)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_builds_with_every_page_and_the_generated_reference(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "reference/configuration/index.html",
                 "reference/cli/index.html", "benchmarks/index.html", "guide/memory/index.html"):
        assert (site / page).is_file(), page
    reference = (site / "reference/configuration/index.html").read_text(encoding="utf-8")
    assert "GRAPHMEM_SEARCH__GRAPH__DEPTH" in reference and "store.busy_timeout_ms" in reference


def _heading(tab: Any) -> str:
    """The page's title heading without its permalink mark."""
    return str(tab.locator("article h1").first.inner_text()).rstrip("¶").strip()


def test_the_home_page_renders_offline(served: str, browser: Any) -> None:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    elsewhere: list[str] = []

    def route(r: Any) -> None:
        if urlsplit(r.request.url).hostname in {"127.0.0.1", "localhost"}:
            r.continue_()
        else:
            elsewhere.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        tab.goto(served, wait_until="networkidle")
        assert tab.title().startswith("graphmem")
        assert _heading(tab) == "graphmem"
        nav = tab.locator("nav.md-nav--primary").first.inner_text()
        for section in ("Getting started", "Agent developers", "Analysts", "Domain modellers", "Operators",
                        "Benchmarks"):
            assert section in nav, section
        tab.locator("a.md-nav__link", has_text="Getting started").first.click()
        tab.wait_for_load_state("networkidle")
        assert _heading(tab) == "Getting started"
        tab.goto(served, wait_until="networkidle")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        tab.screenshot(path=str(SCREENSHOT), full_page=False)
        print(f"docs home page screenshot: {SCREENSHOT}")
    finally:
        context.close()
    assert not elsewhere, f"the site asked other hosts: {elsewhere}"
    assert not errors, errors
