"""The graph view in a real browser: headless Chromium (Debian's package), driven by Playwright.

A known scope is built on SQLite through the public API: five entities, four facts between them
(one closed by a later value of a functional property), one literal value, one quarantined
triple, and another tenant's data that must never show. The page is served by ``graphmem view``'s
app and by the REST server (``/v1/view`` with a key); the tests read the counts of the rendered
graph (Cytoscape's own elements, through the ``window.graphmemView`` hook the page exposes), click
a node with the mouse and read the side panel, read the quarantine's SHACL messages, and write a
screenshot to ``.cache/view-screenshot.png`` (the path is printed). The page's Content Security
Policy is in force: a console error (a blocked script or style, a failed request) fails a test.

Without Chromium the browser tests skip, except under ``CI=true``, where they fail: ``make test``
installs the package when it runs as root.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from graphmem import Memory
from graphmem.errors import ScopeError
from graphmem.servers import view
from graphmem.servers.auth import new_key
from graphmem.servers.rest import create_app, running
from tests.conftest import IN_CI, make_config

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / ".cache" / "view-screenshot.png"
CHROMIUM = os.environ.get("GRAPHMEM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
STATIC = ROOT / "graphmem" / "servers" / "static"

# the known scope: what the page must draw
NODES, EDGES, CLOSED, QUARANTINED = 5, 4, 1, 1
BORN_IN = "gm:bornIn takes one gm:Place"  # the start of the shape's sh:message


def build_known_scope(m: Memory, user: str, other: str) -> None:
    m.add("I live in Beijing and work for Acme", user_id=user, timestamp="2023-05-01", infer=False,
          metadata={"source": "chat"}, triples=[
              {"source": "Wei", "relation": "lives in", "target": "Beijing", "source_type": "Person",
               "target_type": "City"},
              {"source": "Wei", "relation": "works for", "target": "Acme", "target_type": "Company"},
              {"source": "Wei", "relation": "email", "target": "wei@example.com"}])
    moved = m.add("I moved from Beijing to Shanghai, where I met Ana", user_id=user, timestamp="2024-02-01",
                  infer=False, metadata={"source": "chat"}, triples=[
                      {"source": "Wei", "relation": "lives in", "target": "Shanghai", "target_type": "City"},
                      {"source": "Wei", "relation": "knows", "target": "Ana", "target_type": "Person"},
                      {"source": "Wei", "relation": "born in", "target": "Shanghai Tower",
                       "target_type": "Organization"}])
    assert [s["relation"] for s in moved["relations"]["superseded"]] == ["livesIn"]
    assert len(moved["relations"]["rejected"]) == 1
    m.add("Mallory lives in Paris", user_id=other, infer=False, triples=[
        {"source": "Mallory", "relation": "lives in", "target": "Paris", "source_type": "Person",
         "target_type": "City"}])


@dataclass
class Known:
    memory: Memory
    user: str
    other: str
    config: dict[str, Any]


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Known]:
    tmp = tmp_path_factory.mktemp("view")
    cfg = make_config("sqlite", tmp, llm={"provider": "none"})
    with Memory(cfg) as m:
        build_known_scope(m, "wei", "mallory")
        yield Known(m, "wei", "mallory", cfg)


# -- the data, without a browser ------------------------------------------------------------------------
def test_scope_graph_is_the_public_api_of_one_scope(backend: str, tmp_path: Path) -> None:
    user, other = f"wei-{uuid.uuid4().hex[:8]}", f"mallory-{uuid.uuid4().hex[:8]}"
    with Memory(make_config(backend, tmp_path, llm={"provider": "none"})) as m:
        build_known_scope(m, user, other)
        got = view.scope_graph(m, user_id=user)
        assert got["scope"] == {"user_id": user}
        assert sorted(e["name"] for e in got["entities"]) == ["Acme", "Ana", "Beijing", "Shanghai", "Wei"]
        edges = [f for f in got["facts"] if f["target"] is not None]
        assert len(edges) == EDGES and [f["value"] for f in got["facts"] if f["target"] is None] == ["wei@example.com"]
        assert [f["target"]["name"] for f in edges if f["valid_to"]] == ["Beijing"]
        assert [q["triple"]["relation"] for q in got["quarantine"]] == ["born in"]
        assert got["truncated"] == {"entities": False, "facts": False}
        # the same as the API's own answers, page for page
        assert got["facts"] == m.facts(include_closed=True, user_id=user)["results"]
        assert got["quarantine"] == m.rejected(user_id=user)
        # capped: the oldest entities, and the answer says more exist
        capped = view.scope_graph(m, user_id=user, max_entities=2, max_facts=5)
        assert [e["id"] for e in capped["entities"]] == [e["id"] for e in got["entities"][:2]]
        assert capped["truncated"] == {"entities": True, "facts": False} and len(capped["facts"]) == 5
        exact = view.scope_graph(m, user_id=user, max_entities=NODES, max_facts=EDGES + 1)
        assert exact["truncated"] == {"entities": False, "facts": False}
        with pytest.raises(ScopeError):
            view.scope_graph(m)


def test_local_app_answers_loopback_hosts_only(known: Known) -> None:
    with running(view.local_app(known.memory, user_id=known.user)) as url:
        page = httpx.get(f"{url}/")
        assert page.status_code == 200 and 'data-auth="none"' in page.text
        assert "script-src 'self';" in page.headers["content-security-policy"]
        assert httpx.get(f"{url}/graph").json()["scope"] == {"user_id": known.user}
        for host in ("localhost", "127.0.0.1"):
            port = url.rsplit(":", 1)[1]
            assert httpx.get(f"{url}/graph", headers={"Host": f"{host}:{port}"}).status_code == 200
        # a page of another site whose name was rebound to 127.0.0.1 is refused
        assert httpx.get(f"{url}/graph", headers={"Host": "attacker.example"}).status_code == 400
        assert httpx.get(f"{url}/assets/view.css").headers["content-type"].startswith("text/css")
        missing = httpx.get(f"{url}/assets/view.html")  # only the page's own files are served
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
        assert httpx.get(f"{url}/assets/..%2Fview.py").status_code == 404
        mallorys = known.memory.get_all(user_id=known.other)["results"][0]["id"]
        assert httpx.get(f"{url}/memories/{mallorys}").status_code == 404  # another tenant's id: missing
    with pytest.raises(ScopeError):
        view.local_app(known.memory)


def test_vendored_cytoscape_is_the_recorded_release() -> None:
    record = json.loads((STATIC / "vendor" / "VENDOR.json").read_text())["cytoscape"]
    code = (STATIC / "vendor" / record["file"]).read_bytes()
    assert hashlib.sha256(code).hexdigest() == record["sha256"]
    version = record["npm"].split("@")[1]
    assert f'version="{version}"'.encode() in code
    assert "MIT" in record["license"] and "Permission is hereby granted" in (
        STATIC / "vendor" / record["license_file"]).read_text()
    # the stylesheet Cytoscape inserts is the one the page's policy allows by hash
    assert view.CYTOSCAPE_STYLE.split(" {")[0].lstrip(".").encode() in code


def test_graphmem_view_command(known: Known, tmp_path: Path) -> None:
    cfg = tmp_path / "graphmem.yaml"
    cfg.write_text(yaml.safe_dump(known.config))
    exe = [sys.executable, "-m", "graphmem"]
    refused = subprocess.run([*exe, "view", "--config", str(cfg)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "ScopeError" in refused.stderr
    proc = subprocess.Popen([*exe, "view", "-u", known.user, "--config", str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        print(line)
        assert line.startswith(f"graph view of user_id={known.user}: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1]
        got = httpx.get(f"{url}graph", timeout=30).json()
        assert len(got["entities"]) == NODES and got["scope"] == {"user_id": known.user}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err  # a graceful stop: the store is closed, no traceback
    assert "Traceback" not in err


# -- in Chromium --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if shutil.which(CHROMIUM) is None:
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium; `make test` does it as root)"
        if IN_CI:
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


class Page:
    """A browser tab that records console errors and failed page scripts."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.tab = self.context.new_page()
        self.errors: list[str] = []
        self.tab.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.tab.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def open(self, url: str) -> Any:
        self.tab.goto(url)
        self.tab.wait_for_selector("body[data-ready='true'], #keyform:not([hidden]), .status.error",
                                   state="attached", timeout=30_000)
        return self.tab.evaluate("() => ({ready: window.graphmemView.ready, error: window.graphmemView.error})")

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = self.tab.evaluate("() => window.graphmemView.counts")
        return counts

    def node_names(self) -> list[str]:
        names: list[str] = self.tab.evaluate("() => window.graphmemView.cy.nodes().map(n => n.data('label')).sort()")
        return names

    def click_node(self, name: str) -> None:
        """A real mouse click where Cytoscape drew the node."""
        at = self.tab.evaluate("""(name) => {
            const cy = window.graphmemView.cy;
            const node = cy.nodes().filter(n => n.data('label') === name)[0];
            const box = cy.container().getBoundingClientRect();
            const p = node.renderedPosition();
            return {x: box.left + p.x, y: box.top + p.y};
        }""", name)
        self.tab.mouse.click(at["x"], at["y"])

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Page]:
    page = Page(browser)
    yield page
    page.close()


def test_view_draws_the_scope_and_shows_facts_provenance_and_quarantine(known: Known, tab: Page) -> None:
    with running(view.local_app(known.memory, user_id=known.user)) as url:
        state = tab.open(f"{url}/")
        assert state["ready"] and state["error"] is None
        assert tab.counts() == {"nodes": NODES, "edges": EDGES, "closed": CLOSED, "notDrawn": 0,
                                "quarantine": QUARANTINED}
        assert tab.node_names() == ["Acme", "Ana", "Beijing", "Shanghai", "Wei"]  # never Mallory's
        closed = tab.tab.evaluate("() => window.graphmemView.cy.edges('.closed').map(e => e.style('opacity'))")
        assert [float(o) for o in closed] == [0.35]  # dimmed
        labels = tab.tab.evaluate("() => window.graphmemView.cy.edges().map(e => e.data('label')).sort()")
        assert labels == ["knows", "livesIn", "livesIn", "worksFor"]
        colours = tab.tab.evaluate("() => Object.fromEntries(window.graphmemView.cy.nodes().map("
                                   "n => [n.data('label'), n.style('background-color')]))")
        assert colours["Beijing"] == colours["Shanghai"] != colours["Wei"] == colours["Ana"] != colours["Acme"]
        assert tab.tab.inner_text("#counts") == "5 entities · 4 facts (1 closed) · 1 value · 1 quarantined"
        assert tab.tab.locator("#legend li").all_inner_texts() == ["gm:City 2", "gm:Company 1", "gm:Person 2"]

        # the quarantine with its SHACL reasons, as Memory.rejected has them
        reason = known.memory.rejected(user_id=known.user)[0]["reasons"][0]
        assert reason["message"].startswith(BORN_IN)
        assert tab.tab.inner_text("#q-count") == "1"
        entry = tab.tab.locator("#q-list li.q-entry")
        assert entry.locator(".reason .message").all_inner_texts() == [reason["message"]]
        assert "ClassConstraintComponent" in entry.locator(".reason .where").inner_text()
        assert "Shanghai Tower (Organization)" in entry.locator(".statement").inner_text()

        # click Wei: the panel lists its facts, closed ones marked, each with the memories that state it
        tab.click_node("Wei")
        tab.tab.wait_for_selector("#panel h2.entity-name")
        assert tab.tab.inner_text("#panel h2") == "Wei"
        assert tab.tab.evaluate("() => window.graphmemView.selected") == known.memory.entities(
            user_id=known.user, name="Wei")["results"][0]["id"]
        facts = tab.tab.locator("#panel li.fact")
        assert facts.count() == 5  # four edges and the email value
        statements = facts.locator(".statement").all_inner_texts()
        assert "Wei gm:email wei@example.com" in [" ".join(s.split()) for s in statements]
        closed_rows = tab.tab.locator("#panel li.fact.closed")
        assert closed_rows.count() == 1 and "Beijing" in closed_rows.inner_text()
        assert "2023-05-01 → 2024-02-01" in closed_rows.locator(".valid").inner_text()
        # each source memory is read with Memory.get: its time, role and metadata appear
        tab.tab.wait_for_selector("#panel .memory-meta:not([data-loaded])", state="detached")
        (moved,) = [r for r in known.memory.get_all(user_id=known.user)["results"] if "Shanghai" in r["memory"]]
        record = known.memory.get(moved["id"], user_id=known.user)
        row = tab.tab.locator(f"#panel li.memory[data-memory-id='{record['id']}']").first
        assert row.locator("q").inner_text() == record["memory"]
        meta = row.locator(".memory-meta").inner_text()
        assert record["created_at"][:10] in meta and '{"source":"chat"}' in meta and record["role"] in meta

        # follow a fact to its other end
        tab.tab.locator("#panel li.fact button.end", has_text="Acme").click()
        assert tab.tab.inner_text("#panel h2") == "Acme"
        tab.click_node("Wei")
        tab.tab.wait_for_selector("#panel .memory-meta:not([data-loaded])", state="detached")
        # hiding closed facts hides the dimmed edge only
        tab.tab.locator("#show-closed").uncheck()
        visible = tab.tab.evaluate("() => window.graphmemView.cy.edges(':visible').length")
        assert visible == EDGES - CLOSED
        tab.tab.locator("#show-closed").check()

        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.tab.screenshot(path=str(SCREENSHOT))
        print(f"graph view screenshot: {SCREENSHOT}")
        assert SCREENSHOT.stat().st_size > 10_000
    assert tab.errors == []


def test_names_are_shown_as_text_never_markup(tab: Page, tmp_path: Path) -> None:
    with Memory(make_config("sqlite", tmp_path, llm={"provider": "none"})) as m:
        evil = '<img src=x onerror="window.pwned=1">'
        m.add("x", user_id="eve", infer=False, triples=[
            {"source": evil, "relation": "knows", "target": "Bob", "source_type": "Person", "target_type": "Person"}])
        with running(view.local_app(m, user_id="eve")) as url:
            tab.open(f"{url}/")
            tab.click_node(evil)
            assert tab.tab.inner_text("#panel h2") == evil
            assert tab.tab.evaluate("() => document.querySelectorAll('#panel img, #graph-wrap img').length") == 0
            assert tab.tab.evaluate("() => window.pwned === undefined")
            tab.tab.wait_for_selector("#panel .memory-meta:not([data-loaded])", state="detached")
    assert tab.errors == []


def test_rest_view_uses_the_callers_key(known: Known, tab: Page, tmp_path: Path) -> None:
    keys = {"wei": new_key(), "mallory": new_key(), "admin": new_key()}
    cfg = {**known.config, "server": {"keys": [
        {"id": "wei", "api_key": keys["wei"], "user_id": known.user},
        {"id": "mallory", "api_key": keys["mallory"], "user_id": known.other},
        {"id": "admin", "api_key": keys["admin"], "admin": True}]}}
    with running(create_app(cfg, memory=known.memory)) as url:
        # the page holds no data; its data needs the key, which decides the scope
        assert httpx.get(f"{url}/v1/view").status_code == 200
        assert httpx.get(f"{url}/v1/view/graph").status_code == 401
        wei = {"Authorization": f"Bearer {keys['wei']}"}
        assert httpx.get(f"{url}/v1/view/graph", headers=wei).json()["scope"] == {"user_id": known.user}
        assert httpx.get(f"{url}/v1/view/graph", params={"user_id": known.other}, headers=wei).status_code == 403
        assert httpx.get(f"{url}/v1/view/graph", params={"userid": "x"}, headers=wei).status_code == 422
        assert "/v1/view/graph" in httpx.get(f"{url}/openapi.json").json()["paths"]

        # a key in the fragment: read, kept in the tab, taken out of the address bar
        state = tab.open(f"{url}/v1/view#key={keys['wei']}")
        assert state["ready"], state
        assert tab.counts()["nodes"] == NODES and tab.counts()["edges"] == EDGES
        assert "#" not in tab.tab.url
        tab.click_node("Wei")
        tab.tab.wait_for_selector("#panel .memory-meta:not([data-loaded])", state="detached")
        assert "not readable" not in tab.tab.inner_text("#panel")  # Memory.get over /v1/memories with the key

        # no key: a form asks for one; another tenant's key shows that tenant only
        other = Page(tab.context.browser)
        try:
            state = other.open(f"{url}/v1/view")
            assert not state["ready"] and other.tab.is_visible("#keyform")
            other.tab.fill("#key", "gm_not-a-key")
            other.tab.click("#keyform button")
            other.tab.wait_for_selector("#keyerror:not(:empty)")
            assert "not one the server knows" in other.tab.inner_text("#keyerror")
            other.tab.fill("#key", keys["mallory"])
            other.tab.click("#keyform button")
            other.tab.wait_for_selector("body[data-ready='true']", state="attached")
            assert other.node_names() == ["Mallory", "Paris"] and other.counts()["edges"] == 1
            # an admin key names the scope in the page's query, which the page passes on
            state = other.open(f"{url}/v1/view?user_id={known.user}#key={keys['admin']}")
            assert state["ready"] and other.counts()["nodes"] == NODES
        finally:
            other.close()
        unauthorized = [e for e in other.errors if "401" not in e]  # the refused key's answer is logged
        assert unauthorized == []
    assert tab.errors == []
