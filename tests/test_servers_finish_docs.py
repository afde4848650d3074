"""The REST server's documentation pages without internet access: ``/docs`` (Swagger UI) and ``/redoc``
load their scripts and styles from the server itself (the ``fastapi-offline`` package's files), never
from a CDN. Checked over real HTTP and in headless Chromium whose every request to another host is
blocked and recorded: the pages must render the API's operations and ask for nothing outside.
Screenshots go to ``.cache/rest-docs-offline.png`` and ``.cache/rest-redoc-offline.png`` (the paths are
printed).

Without Chromium the browser tests skip, except under ``CI=true`` (``tests/test_view.py``'s fixture).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from graphmem.servers.auth import new_key
from graphmem.servers.rest import DOCS_ASSETS, create_app, running
from tests.conftest import make_config
from tests.test_view import browser

__all__ = ["browser"]  # the module's fixture, shared with the graph view's tests

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / ".cache" / "rest-docs-offline.png"
REDOC_SCREENSHOT = ROOT / ".cache" / "rest-redoc-offline.png"
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.IGNORECASE)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("rest-docs")
    cfg = make_config("sqlite", tmp, server={"keys": [{"id": "ops", "api_key": new_key(), "admin": True}]})
    with running(create_app(cfg)) as url:
        yield url


def operations(url: str) -> list[tuple[str, str]]:
    schema = httpx.get(f"{url}/openapi.json").json()
    return sorted((method.upper(), path) for path, item in schema["paths"].items() for method in item)


def test_docs_pages_load_only_the_servers_own_files(api: str) -> None:
    for page, wanted in (("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")), ("/redoc", ("redoc.standalone.js",))):
        r = httpx.get(f"{api}{page}")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        assert not EXTERNAL.search(r.text), f"{page} loads something from another host"
        assert "fonts.googleapis" not in r.text and "cdn." not in r.text
        for name in wanted:
            assert f'/docs/assets/{name}"' in r.text or f"/docs/assets/{name}'" in r.text, (page, name)
        assert "/openapi.json" in r.text
    for name, media_type in DOCS_ASSETS.items():
        asset = httpx.get(f"{api}/docs/assets/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"] == media_type, name
        assert len(asset.content) > 1000 and asset.headers["x-content-type-options"] == "nosniff"
    assert b"cdn.redoc.ly" not in httpx.get(f"{api}/docs/assets/redoc.standalone.js").content  # ReDoc's logo
    missing = httpx.get(f"{api}/docs/assets/core.py")  # only the pages' own files are served
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
    assert httpx.get(f"{api}/docs/assets/..%2F__init__.py").status_code == 404
    schema = httpx.get(f"{api}/openapi.json").json()
    assert not [p for p in schema["paths"] if p.startswith(("/docs", "/redoc"))]  # pages, not API operations


def test_docs_pages_follow_the_root_path_of_a_proxy(tmp_path: Path) -> None:
    """Behind a proxy that serves the API under a prefix, the pages ask for the prefixed files."""
    cfg = make_config("sqlite", tmp_path, server={"keys": [{"id": "ops", "api_key": new_key(), "admin": True}]})
    app = create_app(cfg)
    app.root_path = "/memory"
    with running(app) as url:
        page = httpx.get(f"{url}/docs").text
        assert "/memory/docs/assets/swagger-ui-bundle.js" in page and "/memory/openapi.json" in page
        assert "/memory/docs/assets/redoc.standalone.js" in httpx.get(f"{url}/redoc").text


class OfflineTab:
    """A browser tab that may reach the server under test only: every other request is aborted and
    recorded, as are console errors and failed page scripts."""

    def __init__(self, browser: Any, origin: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.blocked: list[str] = []
        self.errors: list[str] = []
        host = urlsplit(origin).netloc

        def route(r: Any) -> None:
            if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:")):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort("internetdisconnected")

        self.context.route("**/*", route)
        self.tab = self.context.new_page()
        self.tab.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.tab.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def offline(browser: Any, api: str) -> Iterator[OfflineTab]:
    tab = OfflineTab(browser, api)
    yield tab
    tab.close()


def test_swagger_ui_renders_offline(api: str, offline: OfflineTab) -> None:
    tab = offline.tab
    tab.goto(f"{api}/docs")
    tab.wait_for_selector(".opblock", timeout=30_000)
    shown = sorted(zip(tab.locator(".opblock .opblock-summary-method").all_inner_texts(),
                       tab.locator(".opblock .opblock-summary-path").all_inner_texts(), strict=True))
    shown = [(method, path.replace("\u200b", "")) for method, path in shown]  # Swagger UI's word-break hints
    assert shown == operations(api)
    assert tab.locator(".info .title").inner_text().startswith("graphmem")
    assert tab.locator("button.authorize").count() == 1  # the bearer key, from the schema's security scheme
    SCREENSHOT.parent.mkdir(exist_ok=True)
    tab.screenshot(path=str(SCREENSHOT), full_page=False)
    print(f"screenshot of /docs offline: {SCREENSHOT}")
    assert offline.blocked == [] and offline.errors == []


def test_redoc_renders_offline(api: str, offline: OfflineTab) -> None:
    tab = offline.tab
    tab.goto(f"{api}/redoc")
    tab.wait_for_selector("[data-section-id^='tag/']", state="attached", timeout=30_000)
    tab.wait_for_selector("h2:has-text('Rank the scope')", state="attached", timeout=30_000)
    titles = tab.locator("h2").all_inner_texts()
    assert "Rank the scope's memories by relevance (Memory.search)" in titles
    assert "Delete every tenant's memories (Memory.reset)" in titles
    REDOC_SCREENSHOT.parent.mkdir(exist_ok=True)
    tab.screenshot(path=str(REDOC_SCREENSHOT), full_page=False)
    print(f"screenshot of /redoc offline: {REDOC_SCREENSHOT}")
    assert offline.blocked == [] and offline.errors == []


def test_the_offline_tab_does_block_other_hosts(api: str, offline: OfflineTab) -> None:
    """The check itself: a page asking another host for a script is caught."""
    tab = offline.tab
    tab.goto(f"{api}/healthz")
    tab.set_content('<script src="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"></script>')
    assert offline.blocked == ["https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"]
