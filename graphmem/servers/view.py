"""The graph view: one scope's entities, facts and quarantine as a web page.

The page is static (``static/view.html``, ``view.js``, ``view.css`` and the vendored Cytoscape.js,
see ``static/vendor/VENDOR.json``); its data is one JSON answer built from the public API
(:func:`scope_graph`: ``Memory.entities``, ``Memory.facts`` with closed facts, ``Memory.rejected``),
and the side panel asks ``Memory.get`` for each source memory of the entity it shows.

It is served two ways. ``graphmem view`` (:func:`serve`) runs :func:`local_app` for one scope on
127.0.0.1 without keys; it answers only requests whose ``Host`` is a loopback name, so a web page
that rebinds its own host name to 127.0.0.1 cannot read the scope through the visitor's browser.
The REST server serves the same page at ``/v1/view`` (``rest.py``); there the page sends the
caller's API key (from the URL fragment ``#key=...`` or a form, kept in the tab's session storage)
with every data request, and the key decides the scope as on every other route.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import signal
import socket
import string
import threading
import time
import webbrowser
from collections.abc import Callable
from functools import cache
from importlib import resources
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, Literal

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ..errors import GraphmemError, NotFoundError, short
from ..models import Scope
from . import schemas as s
from .auth import ScopeArgs
from .errors import PROBLEM_JSON, kind_of, problem

if TYPE_CHECKING:
    from ..memory import Memory

MAX_ENTITIES: Final = 2_000
"""Entities one page draws; past a few thousand nodes a browser's layout takes too long to be a view."""
MAX_FACTS: Final = 5_000

ASSETS: Final[dict[str, tuple[str, str]]] = {
    "view.js": ("view.js", "text/javascript; charset=utf-8"),
    "view.css": ("view.css", "text/css; charset=utf-8"),
    "cytoscape.min.js": ("vendor/cytoscape.min.js", "text/javascript; charset=utf-8"),
}
"""What the page loads, by the name in its URL: nothing else of the package is served."""

CYTOSCAPE_STYLE: Final = ".__________cytoscape_container { position: relative; }"
"""The one stylesheet Cytoscape.js inserts (as an inline ``<style>``); the policy allows it by its hash."""
_STYLE_HASH: Final = base64.b64encode(hashlib.sha256(CYTOSCAPE_STYLE.encode()).digest()).decode()

SECURITY_HEADERS: Final = {
    # scripts and styles come from the page's own files only; data only from its own origin
    "Content-Security-Policy": f"default-src 'none'; script-src 'self'; style-src 'self' 'sha256-{_STYLE_HASH}'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost")


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class ViewTruncated(_Out):
    entities: bool
    """More entities than ``limits.max_entities`` exist; the view holds the oldest."""
    facts: bool


class ViewLimits(_Out):
    max_entities: int
    max_facts: int


class ViewGraph(_Out):
    """What the page draws: the scope's entities, every fact (closed ones too) and the quarantine."""

    scope: dict[str, str]
    entities: list[s.EntityOut]
    facts: list[s.FactOut]
    quarantine: list[s.QuarantineEntryOut]
    truncated: ViewTruncated
    limits: ViewLimits


def scope_graph(memory: Memory, *, user_id: str | None = None, agent_id: str | None = None,
                run_id: str | None = None, max_entities: int = MAX_ENTITIES,
                max_facts: int = MAX_FACTS) -> dict[str, Any]:
    """The page's data, read page by page through the public API (so the scope rules are the API's)."""
    scope = ScopeArgs(user_id=user_id, agent_id=agent_id, run_id=run_id)
    page_size = memory.config.limits.max_list_limit

    def read(fetch: Callable[[int, str | None], dict[str, Any]], cap: int) -> tuple[list[dict[str, Any]], bool]:
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(rows) <= cap:  # one row past the cap tells that more exist
            got = fetch(min(page_size, cap + 1 - len(rows)), cursor)
            rows.extend(got["results"])
            cursor = got["next_cursor"]
            if cursor is None:
                break
        return rows[:cap], len(rows) > cap

    entities, more_entities = read(lambda n, c: memory.entities(limit=n, cursor=c, **scope), max_entities)
    facts, more_facts = read(lambda n, c: memory.facts(include_closed=True, limit=n, cursor=c, **scope), max_facts)
    return {
        "scope": {k: v for k, v in scope.items() if isinstance(v, str)},
        "entities": entities, "facts": facts, "quarantine": memory.rejected(**scope),
        "truncated": {"entities": more_entities, "facts": more_facts},
        "limits": {"max_entities": max_entities, "max_facts": max_facts},
    }


# -- the page -----------------------------------------------------------------------------------------
@cache
def _static(name: str) -> bytes:
    return resources.files("graphmem.servers").joinpath("static", *name.split("/")).read_bytes()


def page(*, graph_url: str, memory_url: str, assets_url: str, auth: Literal["none", "key"]) -> str:
    """The page's HTML: where its data and files are, and whether it must send an API key."""
    from html import escape

    template = string.Template(_static("view.html").decode("utf-8"))
    return template.substitute(graph_url=escape(graph_url), memory_url=escape(memory_url),
                               assets=escape(assets_url), auth=auth)


def page_response(**where: Any) -> HTMLResponse:
    return HTMLResponse(page(**where), headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


def asset_response(name: str) -> Response:
    known = ASSETS.get(name)
    if known is None:
        raise NotFoundError(f"no file {short(name, 60)} in the graph view; it loads {', '.join(sorted(ASSETS))}")
    path, media_type = known
    return Response(_static(path), media_type=media_type, headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"})


# -- graphmem view: one scope on 127.0.0.1 ------------------------------------------------------------
def local_app(memory: Memory, *, user_id: str | None = None, agent_id: str | None = None,
              run_id: str | None = None) -> FastAPI:
    """The view of one scope without keys, for a loopback address only (``graphmem view``)."""
    checked = Scope.of(user_id, agent_id, run_id)  # a missing or malformed scope fails before anything is served
    fixed = ScopeArgs(user_id=checked.user_id, agent_id=checked.agent_id, run_id=checked.run_id)
    app = FastAPI(title="graphmem view", openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/")
    def index() -> HTMLResponse:
        return page_response(graph_url="graph", memory_url="memories/", assets_url="assets/", auth="none")

    @app.get("/assets/{name}")
    def asset(name: str) -> Response:
        return asset_response(name)

    @app.get("/graph", response_model=ViewGraph)
    def graph() -> dict[str, Any]:
        return scope_graph(memory, **fixed)

    @app.get("/memories/{memory_id}")
    def get_memory(memory_id: str) -> dict[str, Any]:
        return memory.get(memory_id, **fixed)

    async def failed(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(problem(exc), status_code=kind_of(exc).status, media_type=PROBLEM_JSON)

    app.add_exception_handler(GraphmemError, failed)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS))
    return app


def serve(memory: Memory, scope: ScopeArgs, *, port: int = 0, open_browser: bool = False,
          announce: Callable[[str], None] = print) -> None:
    """Serve :func:`local_app` on 127.0.0.1 in the foreground until SIGINT/SIGTERM; ``announce``
    gets the URL once the port is bound (``port=0``: a free one)."""
    import uvicorn

    app = local_app(memory, **scope)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)  # before the URL is announced: a client that connects at once waits in the backlog
    except OSError as exc:
        sock.close()
        from ..errors import ConfigError

        raise ConfigError(f"cannot serve the view on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                                           lifespan="off", timeout_graceful_shutdown=5))
    announce(url)
    if open_browser:
        def open_when_started() -> None:
            deadline = time.monotonic() + 30
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(webbrowser.Error):
                webbrowser.open(url)

        threading.Thread(target=open_when_started, name="graphmem-view-open", daemon=True).start()
    # uvicorn stops gracefully on SIGINT/SIGTERM, then raises the signal again for the handler it found:
    # here that ends this call, so the caller still closes its store (SIGTERM's default would not)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stopped) if main else None
    try:
        server.run(sockets=[sock])
    except (_Stopped, KeyboardInterrupt):
        pass
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        sock.close()


class _Stopped(Exception):
    """SIGTERM arrived (after uvicorn's graceful stop)."""


def _stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped
