"""The REST server: every ``Memory`` operation over HTTP (FastAPI), started by ``graphmem serve``.

One :class:`~graphmem.Memory` per server process, opened before the first request and closed at
shutdown; every engine call is blocking and runs in the threadpool (the endpoints are plain
functions). Each request's scope comes from its API key (:mod:`.auth`); errors are problem+json
(:mod:`.errors`); bodies are bounded and every request is one JSON log line (:mod:`.middleware`).
The API's documentation pages (``/docs``, ``/redoc``) load their scripts from the server itself, so
they work without internet access.

Memory lists page with cursors: ``GET /v1/memories`` is newest first (``created_at`` descending,
then ``id``), and ``next_cursor`` holds the last row's (``created_at``, ``id``); the next page asks
the store for the rows after it with a filter on those two fields, so rows added meanwhile never
shift a page (they are newer than every cursor) and no row is read twice.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import json
import math
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config import MemoryConfig
from ..errors import ConfigError, GraphmemError, InvalidInputError, NotFoundError, OntologyError, clip, short
from ..memory import Memory
from ..models import Scope
from ..version import __version__
from . import schemas as s
from . import view
from .auth import INSECURE_LOCAL, KeyRing, Principal, ScopeArgs, UnauthenticatedError
from .errors import HTTP_TITLES, PROBLEM_JSON, body, kind_of, problem
from .middleware import AccessLog, BodyLimit, error_log

API: Final = "/v1"
_bearer = HTTPBearer(auto_error=False, description="An API key of server.keys: `Authorization: Bearer <key>`")


@dataclass
class ServerState:
    config: MemoryConfig
    keys: KeyRing
    insecure_local: bool
    memory: Memory | None = None
    owned: bool = False
    startup_error: BaseException | None = None


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.graphmem
    return state


async def caller(request: Request,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    state = _state(request)
    if state.insecure_local:
        who = INSECURE_LOCAL
    elif credentials is None:
        raise UnauthenticatedError("send an API key: 'Authorization: Bearer <key>'")
    else:
        found = state.keys.lookup(credentials.credentials)
        if found is None:
            raise UnauthenticatedError("this API key is not one the server knows")
        who = found
    request.state.key_id = who.key_id
    return who


async def engine(request: Request) -> Memory:
    memory = _state(request).memory
    if memory is None:  # only between a failed start and the process's exit
        raise ConfigError("the server has no open store")
    return memory


Caller = Annotated[Principal, Depends(caller)]
Engine = Annotated[Memory, Depends(engine)]
UserQ = Annotated[str | None, Query(description="Narrow to this user (a key bound to a user_id fixes it)")]
AgentQ = Annotated[str | None, Query(description="Narrow to this agent (a key bound to an agent_id fixes it)")]
RunQ = Annotated[str | None, Query(description="Narrow to this run (a key bound to a run_id fixes it)")]
LimitQ = Annotated[int | None, Query(ge=1, description="Page size (default limits.get_all_limit)")]
CursorQ = Annotated[str | None, Query(description="next_cursor of the previous page")]


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of the error statuses an endpoint may answer (problem+json)."""
    every = (401, 422, 500, 503)
    return {code: {"model": s.Problem, "description": HTTP_TITLES.get(code) or _STATUS_TEXT.get(code, "Error")}
            for code in sorted({*every, *codes})}


_STATUS_TEXT: Final = {403: "Forbidden (scope or admin)", 404: "Not found in the caller's scope",
                       409: "Conflict", 501: "Not supported by this store", 502: "The embedder or LLM failed",
                       503: "Store unavailable", 504: "Query timeout", 500: "Internal error"}
WRITE: Final = problems(400, 403, 409, 413, 502)
READ: Final = problems(403)

class _Route(APIRoute):
    """Answers hold the fields the engine returned, as the Python API does (``null`` where it says so,
    nothing where it says nothing)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **{**kwargs, "response_model_exclude_unset": True})


_QUERY_NAMES: dict[int, frozenset[str]] = {}


async def strict_query(request: Request) -> None:
    """Query parameters are the operation's, each at most once: a misspelt scope field
    (``runid=r1``) would otherwise widen a request to the key's whole scope without a word."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _QUERY_NAMES.get(id(route))
    if known is None:
        known = _QUERY_NAMES[id(route)] = frozenset(_query_names(route.dependant))
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in known:
            expected = ", ".join(sorted(known)) or "none"
            raise InvalidInputError(f"unknown query parameter {short(name, 60)}; this operation takes: {expected}")
        if name in seen:
            raise InvalidInputError(f"query parameter {short(name, 60)} is given more than once")
        seen.add(name)


def _query_names(dependant: Any) -> Iterator[str]:
    for param in getattr(dependant, "query_params", ()):
        yield param.alias
    for sub in getattr(dependant, "dependencies", ()):
        yield from _query_names(sub)


router = APIRouter(route_class=_Route, dependencies=[Depends(strict_query)])


# -- memories ---------------------------------------------------------------------------------------
@router.post(f"{API}/memories", response_model=s.AddResponse, responses=WRITE, tags=["memories"],
             summary="Store messages as memories, and facts (Memory.add)")
def add_memories(req: s.AddRequest, who: Caller, m: Engine) -> dict[str, Any]:
    return m.add(**_add_args(req, who))


@router.post(f"{API}/memories/batch", response_model=s.AddManyResponse, responses=WRITE, tags=["memories"],
             summary="Many adds in bulk, each item checked before anything is written (Memory.add_many)")
def add_many_memories(req: s.AddManyRequest, who: Caller, m: Engine) -> dict[str, Any]:
    return m.add_many([_add_args(item, who) for item in req.items])


def _add_args(req: s.AddRequest, who: Principal) -> dict[str, Any]:
    """``Memory.add``'s arguments from a request, its scope within the caller's key."""
    messages: Any = req.messages
    if isinstance(messages, s.MessageIn):
        messages = messages.model_dump(exclude_none=True)
    elif isinstance(messages, list):
        messages = [msg.model_dump(exclude_none=True) for msg in messages]
    triples = None if req.triples is None else [t.model_dump(exclude_none=True) for t in req.triples]
    return {"messages": messages, "metadata": req.metadata, "infer": req.infer, "memory_type": req.memory_type,
            "timestamp": req.timestamp, "triples": triples, "expires_at": req.expires_at, "speaker": req.speaker,
            **who.scope(req.user_id, req.agent_id, req.run_id)}


@router.get(f"{API}/memories", response_model=s.MemoryPage, responses=READ, tags=["memories"],
            summary="List memories, newest first, a page at a time (Memory.get_all)")
def list_memories(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None, run_id: RunQ = None,
                  limit: LimitQ = None, cursor: CursorQ = None,
                  filters: Annotated[str | None, Query(description="A filter as JSON (see the docs' Filters)")]
                  = None) -> dict[str, Any]:
    scope = who.scope(user_id, agent_id, run_id)
    return memory_page(m, scope, _json_param(filters, "filters"), limit, cursor)


@router.delete(f"{API}/memories", response_model=s.DeleteAllResponse, responses=problems(403, 409),
               tags=["memories"], summary="Delete every memory of the scope (Memory.delete_all)")
def delete_all(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None,
               run_id: RunQ = None) -> dict[str, Any]:
    return m.delete_all(**who.scope(user_id, agent_id, run_id))


@router.get(API + "/memories/{memory_id}", response_model=s.MemoryOut, responses=problems(403, 404),
            tags=["memories"], summary="One memory (Memory.get)")
def get_memory(memory_id: str, who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None,
               run_id: RunQ = None) -> dict[str, Any]:
    return m.get(memory_id, **who.scope_by_id(user_id, agent_id, run_id))


@router.patch(API + "/memories/{memory_id}", response_model=s.UpdateResponse, responses=problems(400, 403, 404, 409,
                                                                                                  413, 502),
              tags=["memories"], summary="Change a memory's text and/or metadata (Memory.update)")
def update_memory(memory_id: str, req: s.UpdateRequest, who: Caller, m: Engine, user_id: UserQ = None,
                  agent_id: AgentQ = None, run_id: RunQ = None) -> dict[str, Any]:
    return m.update(memory_id, req.data, metadata=req.metadata, infer=req.infer,
                    **who.scope_by_id(user_id, agent_id, run_id))


@router.delete(API + "/memories/{memory_id}", response_model=s.DeleteResponse, responses=problems(403, 404, 409),
               tags=["memories"], summary="Delete one memory (Memory.delete)")
def delete_memory(memory_id: str, who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None,
                  run_id: RunQ = None) -> dict[str, Any]:
    return m.delete(memory_id, **who.scope_by_id(user_id, agent_id, run_id))


@router.get(API + "/memories/{memory_id}/history", response_model=list[s.HistoryEventOut],
            responses=problems(403, 404), tags=["memories"], summary="A memory's changes (Memory.history)")
def history(memory_id: str, who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None,
            run_id: RunQ = None) -> list[dict[str, Any]]:
    return m.history(memory_id, **who.scope_by_id(user_id, agent_id, run_id))


@router.post(f"{API}/search", response_model=s.SearchResponse, responses=problems(400, 403, 413, 502),
             tags=["memories"],
             summary="Rank the scope's memories by relevance (Memory.search)")
def search(req: s.SearchRequest, who: Caller, m: Engine) -> dict[str, Any]:
    scope = who.scope(req.user_id, req.agent_id, req.run_id)
    return m.search(req.query, filters=req.filters, top_k=req.top_k, threshold=req.threshold, explain=req.explain,
                    as_of=req.as_of, since=req.since, until=req.until, vector=req.vector, now=req.now,
                    **scope)


# -- the graph ------------------------------------------------------------------------------------
@router.get(f"{API}/entities", response_model=s.EntityPage, responses=READ, tags=["graph"],
            summary="The scope's entities, oldest first, a page at a time (Memory.entities)")
def entities(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None, run_id: RunQ = None,
             name: Annotated[str | None, Query(description="A fragment of a name or alias")] = None,
             type: Annotated[str | None, Query(description="An ontology class (its subclasses too)")] = None,
             limit: LimitQ = None, cursor: CursorQ = None) -> dict[str, Any]:
    return m.entities(name=name, type=type, limit=limit, cursor=cursor, **who.scope(user_id, agent_id, run_id))


@router.get(f"{API}/facts", response_model=s.FactPage, responses=problems(403, 404), tags=["graph"],
            summary="Facts with their supporting memories, oldest first (Memory.facts)")
def facts(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None, run_id: RunQ = None,
          entity: Annotated[str | None, Query(description="An entity's id, name or alias")] = None,
          relation: Annotated[str | None, Query(description="An ontology property")] = None,
          as_of: Annotated[str | None, Query(description="The facts valid at this ISO time")] = None,
          include_closed: bool = False, limit: LimitQ = None, cursor: CursorQ = None) -> dict[str, Any]:
    return m.facts(entity=entity, relation=relation, as_of=as_of, include_closed=include_closed, limit=limit,
                   cursor=cursor, **who.scope(user_id, agent_id, run_id))


@router.get(f"{API}/quarantine", response_model=list[s.QuarantineEntryOut], responses=READ, tags=["graph"],
            summary="Quarantined triples with their SHACL reasons, oldest first (Memory.rejected)")
def rejected(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None, run_id: RunQ = None,
             include_released: bool = False) -> list[dict[str, Any]]:
    return m.rejected(include_released=include_released, **who.scope(user_id, agent_id, run_id))


@router.post(f"{API}/quarantine/recheck", response_model=s.RecheckResponse, responses=WRITE, tags=["graph"],
             summary="Validate quarantined triples again; write those that pass (Memory.recheck)")
def recheck(req: s.RecheckRequest, who: Caller, m: Engine) -> dict[str, Any]:
    return m.recheck(ids=req.ids, **who.scope(req.user_id, req.agent_id, req.run_id))


# -- the graph view (graphmem.servers.view): the page sends the caller's key with each data request ------
@router.get(f"{API}/view", include_in_schema=False)
def view_page(user_id: UserQ = None, agent_id: AgentQ = None, run_id: RunQ = None) -> Response:
    """The page itself holds no data (a browser's navigation carries no key); the scope options are
    passed on by the page to its data requests."""
    return view.page_response(graph_url=f"{API}/view/graph", memory_url=f"{API}/memories/",
                              assets_url=f"{API}/view/assets/", auth="key")


@router.get(API + "/view/assets/{name}", include_in_schema=False)
def view_asset(name: str) -> Response:
    return view.asset_response(name)


@router.get(f"{API}/view/graph", response_model=view.ViewGraph, responses=READ, tags=["graph"],
            summary="The graph view's data: entities, facts (closed ones too) and the quarantine of the scope")
def view_graph(who: Caller, m: Engine, user_id: UserQ = None, agent_id: AgentQ = None,
               run_id: RunQ = None) -> dict[str, Any]:
    return view.scope_graph(m, **who.scope(user_id, agent_id, run_id))


# -- administration -------------------------------------------------------------------------------
ADMIN: Final = problems(400, 403, 413)


@router.post(f"{API}/admin/dry-run", response_model=s.DryRunResponse, responses=ADMIN, tags=["admin"],
             summary="Stored facts a changed ontology would reject; every scope without one (Memory.dry_run)")
def dry_run(req: s.DryRunRequest, who: Caller, m: Engine) -> dict[str, Any]:
    who.require_admin()
    changed = uploaded_ontology(req.ontology, req.shapes)
    return m.dry_run(changed, **who.scope(req.user_id, req.agent_id, req.run_id))


@router.post(f"{API}/admin/cypher", response_model=s.CypherResponse, responses=problems(400, 403, 413, 501, 504),
             tags=["admin"], summary="Analysts' read-only Cypher over every tenant, Neo4j only (Memory.cypher)")
def cypher(req: s.CypherRequest, who: Caller, m: Engine) -> dict[str, Any]:
    who.require_admin()
    return {"rows": [json_safe(row) for row in m.cypher(req.query, req.params)]}


@router.post(f"{API}/admin/optimize", response_model=s.OptimizeResponse, responses=problems(403), tags=["admin"],
             summary="Compact the store's search indexes (Memory.optimize)")
def optimize(who: Caller, m: Engine) -> dict[str, Any]:
    who.require_admin()
    return m.optimize()


@router.post(f"{API}/admin/reset", response_model=s.ResetResponse, responses=ADMIN, tags=["admin"],
             summary="Delete every tenant's memories (Memory.reset)")
def reset(req: s.ResetRequest, who: Caller, m: Engine) -> dict[str, Any]:
    who.require_admin()
    m.reset()
    return {"reset": True}


# -- health ---------------------------------------------------------------------------------------
_HEALTH: Final[dict[int | str, dict[str, Any]]] = {
    422: {"model": s.Problem, "description": "Unknown query parameter"},
    500: {"model": s.Problem, "description": "Internal error"},
}


@router.get("/healthz", response_model=s.Health, responses=_HEALTH, tags=["health"], summary="The process answers")
async def healthz() -> dict[str, Any]:
    return {"status": "ok"}


_READY_SCOPE: Final = Scope(user_id="graphmem-readyz")


@router.get("/readyz", response_model=s.Health,
            responses={**_HEALTH, 503: {"model": s.Problem, "description": "Not ready: the store does not answer"}},
            tags=["health"], summary="The store answers a read")
def readyz(m: Engine) -> dict[str, Any]:
    m.store.count(_READY_SCOPE)
    return {"status": "ready"}


# -- the API's documentation pages: Swagger UI at /docs, ReDoc at /redoc ---------------------------
DOCS_ASSETS_URL: Final = "/docs/assets/"
DOCS_ASSETS: Final[dict[str, str]] = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
"""What the two pages load, by name, from the files the ``fastapi-offline`` package ships (Swagger UI 5,
ReDoc 2): FastAPI's own pages load them from a CDN, so without internet access they stay blank."""

docs_router = APIRouter(include_in_schema=False)


def docs_asset_path(name: str) -> Path:
    """A bundled file of the documentation pages (a ``NotFoundError`` for a name they do not load)."""
    if name not in DOCS_ASSETS:
        raise NotFoundError(f"no file {short(name, 60)} in the API docs; they load {', '.join(sorted(DOCS_ASSETS))}")
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static" / name


def _docs_urls(request: Request) -> tuple[str, str]:
    """The schema's URL and the assets' folder, under the root path a proxy serves the API at."""
    root = str(request.scope.get("root_path", "")).rstrip("/")
    return f"{root}{request.app.openapi_url}", f"{root}{DOCS_ASSETS_URL}"


@docs_router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    openapi, assets = _docs_urls(request)
    return get_swagger_ui_html(openapi_url=openapi, title=f"{request.app.title} API",
                               swagger_js_url=f"{assets}swagger-ui-bundle.js",
                               swagger_css_url=f"{assets}swagger-ui.css", swagger_favicon_url=f"{assets}favicon.png")


@docs_router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    openapi, assets = _docs_urls(request)
    return get_redoc_html(openapi_url=openapi, title=f"{request.app.title} API",
                          redoc_js_url=f"{assets}redoc.standalone.js", redoc_favicon_url=f"{assets}favicon.png",
                          with_google_fonts=False)


REDOC_LOGO: Final = b'src:"https://cdn.redoc.ly/redoc/logo-mini.svg"'
"""ReDoc's menu shows Redocly's logo from their CDN, whatever its options: served with that address
emptied, the page asks no other host (the image fails and ReDoc hides it)."""


@cache
def _redoc_js() -> bytes:
    return docs_asset_path("redoc.standalone.js").read_bytes().replace(REDOC_LOGO, b'src:"data:,"')


@docs_router.get(DOCS_ASSETS_URL + "{name}")
def docs_asset(name: str) -> Response:
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    path = docs_asset_path(name)
    if name == "redoc.standalone.js":
        return Response(_redoc_js(), media_type=DOCS_ASSETS[name], headers=headers)
    return FileResponse(path, media_type=DOCS_ASSETS[name], headers=headers)


# -- helpers --------------------------------------------------------------------------------------
def _json_param(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError:
        raise InvalidInputError(f"{name} must be JSON, got {short(value)}") from None


_CURSOR_MAX: Final = 512


def encode_cursor(row: dict[str, Any]) -> str:
    raw = json.dumps([row["created_at"], row["id"]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        if len(cursor) > _CURSOR_MAX:
            raise ValueError
        at, mid = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(at, str) or not isinstance(mid, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error):
        raise InvalidInputError(f"cursor {short(cursor)} is not one this API returned as next_cursor") from None
    return at, mid


def after_cursor(flt: Any, cursor: tuple[str, str]) -> dict[str, Any]:
    """``flt`` and "after the cursor's row" in the list order (``created_at`` descending, ``id``
    ascending). The condition joins the filter's own top-level ``AND`` (or adds one), so the
    caller's filter keeps the nesting depth it had."""
    at, mid = cursor
    after = {"OR": [{"created_at": {"lt": at}}, {"created_at": at, "id": {"gt": mid}}]}
    if flt is None or flt == {}:
        return after
    if isinstance(flt, dict):
        given = flt.get("AND")
        if given is None:
            return {**flt, "AND": [after]}
        if isinstance(given, list):
            return {**flt, "AND": [*given, after]}
    return {"AND": [flt, after]}  # not a filter: the engine refuses it with its own message


def memory_page(m: Memory, scope: ScopeArgs, flt: Any, limit: int | None,
                cursor: str | None) -> dict[str, Any]:
    """One page of ``get_all``: asks for one row more than the page, to know whether another follows."""
    limits = m.config.limits
    size = limits.get_all_limit if limit is None else limit
    if size > limits.max_list_limit:
        raise InvalidInputError(f"limit={size} is more than limits.max_list_limit ({limits.max_list_limit}); "
                                "ask for fewer or raise the limit")
    if cursor is not None:
        flt = after_cursor(flt, decode_cursor(cursor))
    fetch = min(size + 1, limits.max_list_limit)
    rows = m.get_all(filters=flt, limit=fetch, **scope)["results"]
    more = len(rows) > size or (fetch == size and len(rows) == size)
    page = rows[:size]
    return {"results": page, "next_cursor": encode_cursor(page[-1]) if more and page else None}


def json_safe(value: Any) -> Any:
    """An analyst row as JSON can carry it: non-finite floats and bytes as strings, others by ``str``."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


def uploaded_ontology(ontology: Sequence[str], shapes: Sequence[str]) -> Any:
    """Compile Turtle documents sent by an administrator. They must be self-contained: an
    ``owl:imports`` would make the loader read files of the server, so it is refused."""
    from rdflib import Graph
    from rdflib.namespace import OWL

    from ..ontology import Ontology

    labels: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-dry-run-") as tmp:
        folders = {"ontology": Path(tmp, "ontology"), "shapes": Path(tmp, "shapes")}
        for kind, docs in (("ontology", ontology), ("shapes", shapes)):
            folders[kind].mkdir()
            for i, doc in enumerate(docs):
                label = f"{kind}[{i}]"
                graph = Graph()
                try:
                    graph.parse(data=doc, format="turtle")
                except Exception as exc:  # rdflib raises many kinds for bad Turtle
                    raise InvalidInputError(f"{label} is not Turtle: {clip(str(exc), 300)}") from None
                if (None, OWL.imports, None) in graph:
                    raise InvalidInputError(f"{label} has owl:imports; send every document it needs instead")
                path = folders[kind] / f"{kind}-{i:04d}.ttl"
                path.write_text(doc, encoding="utf-8")
                labels[str(path)] = label
        try:
            return Ontology.load([folders["ontology"]], [folders["shapes"]] if shapes else [], use_cache=False)
        except OntologyError as exc:
            where = labels.get(str(exc.path), "the upload") if exc.path is not None else "the upload"
            line = f":{exc.line}" if exc.line else ""
            raise InvalidInputError(f"{where}{line}: {clip(exc.reason, 500)}") from None


# -- the application --------------------------------------------------------------------------------
def _problem_response(status: int, content: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(content, status_code=status, media_type=PROBLEM_JSON, headers=headers)


async def _graphmem_error(request: Request, exc: Exception) -> JSONResponse:
    kind = kind_of(exc)
    if kind.status >= 500:  # the message stays here: it may name hosts or files
        error_log.warning("request failed", extra={"fields": {
            "event": "error", "error": type(exc).__name__, "status": kind.status, "detail": clip(str(exc), 500)}})
    headers = {"WWW-Authenticate": "Bearer"} if kind.status == 401 else None
    return _problem_response(kind.status, problem(exc), headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    errs = exc.errors() if isinstance(exc, RequestValidationError) else []
    listed = [{"loc": list(err.get("loc", ())), "msg": clip(str(err.get("msg", "")), 200), "type": err.get("type")}
              for err in errs[:50]]
    first = listed[0] if listed else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"])
    detail = f"{where}: {first['msg']}" + (f" (and {len(listed) - 1} more)" if len(listed) > 1 else "")
    return _problem_response(422, body(422, "invalid-request", "Invalid request", detail, "RequestValidationError",
                                       errors=listed))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    title = HTTP_TITLES.get(exc.status_code, "HTTP error")
    detail = exc.detail if isinstance(exc.detail, str) else title
    slug = title.lower().replace(" ", "-")
    return _problem_response(exc.status_code, body(exc.status_code, slug, title, detail, "HTTPError"),
                             dict(exc.headers) if exc.headers else None)


def create_app(config: MemoryConfig | dict[str, Any] | None = None, *, insecure_local: bool = False,
               memory: Memory | None = None) -> FastAPI:
    """The ASGI application. ``memory``: an open ``Memory`` to serve (the caller closes it); without
    one the application opens its own at startup and closes it at shutdown.

    Refuses (``ConfigError``) to be built without an API key unless ``insecure_local``, and with
    keys and ``insecure_local`` together."""
    cfg = MemoryConfig.load(config)
    keys = KeyRing.from_config(cfg.server)
    if insecure_local and len(keys):
        raise ConfigError("--insecure-local serves without keys; remove server.keys/server.keys_file or the flag")
    if not insecure_local and not len(keys):
        raise ConfigError("no API key is configured (server.keys, GRAPHMEM_SERVER__KEYS or server.keys_file; "
                          "`graphmem serve --new-key ID` makes one); --insecure-local serves 127.0.0.1 without keys")
    state = ServerState(cfg, keys, insecure_local, memory)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if state.memory is None:
            try:
                state.memory = await run_in_threadpool(Memory, cfg)
            except BaseException as exc:
                state.startup_error = exc
                raise
            state.owned = True
        await run_in_threadpool(state.memory.warm)  # before the first request is accepted
        try:
            yield
        finally:
            if state.owned and state.memory is not None:
                opened, state.memory = state.memory, None
                await run_in_threadpool(opened.close)

    app = FastAPI(title="graphmem", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="A memory engine for AI agents: memories and a typed knowledge graph checked "
                              "against an ontology. Every request acts within its API key's scope.")
    app.state.graphmem = state
    app.include_router(router)
    app.include_router(docs_router)  # /docs and /redoc from bundled files, not FastAPI's CDN
    app.add_exception_handler(GraphmemError, _graphmem_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(BodyLimit, max_bytes=cfg.server.max_body_bytes)
    app.add_middleware(AccessLog)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema, with the error answers typed ``application/problem+json``."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                for code, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if code.isdigit() and int(code) >= 400 and "application/json" in content:
                        response["content"] = {PROBLEM_JSON: content.pop("application/json")}
        app.openapi_schema = schema
    return app.openapi_schema


# -- running it -----------------------------------------------------------------------------------
LOG_CONFIG: Final[dict[str, Any]] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "graphmem.servers.middleware.JsonFormatter"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        "graphmem": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}
"""Every line the server writes is JSON: its requests, its own start and stop, graphmem's notes."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(config: MemoryConfig, *, host: str | None = None, port: int | None = None,
          insecure_local: bool = False) -> None:
    """Run the server in the foreground until SIGINT/SIGTERM (``graphmem serve``)."""
    import uvicorn

    host = host or ("127.0.0.1" if insecure_local else config.server.host)
    port = config.server.port if port is None else port
    if insecure_local and not is_loopback(host):
        raise ConfigError(f"--insecure-local serves without keys, so it binds a loopback address only, not {host!r}")
    app = create_app(config, insecure_local=insecure_local)  # refuses a keyless start before the store opens
    state: ServerState = app.state.graphmem
    state.memory, state.owned = Memory(config), True  # a store that cannot be opened fails here, in one line
    try:  # the lifespan closes the memory at shutdown (uvicorn then re-raises SIGTERM/SIGINT)
        uvicorn.run(app, host=host, port=port, log_config=LOG_CONFIG, access_log=False, server_header=False,
                    timeout_graceful_shutdown=15)
    finally:
        if state.memory is not None:  # uvicorn never started the application
            state.memory.close()


@contextlib.contextmanager
def running(app: FastAPI, host: str = "127.0.0.1", port: int = 0, timeout_s: float = 60.0) -> Iterator[str]:
    """Serve ``app`` from a background thread on ``host:port`` (0: a free port) and yield its base
    URL, for tests, benchmarks and notebooks; the server stops when the block ends."""
    import uvicorn

    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of such a socket (without it
    # every answer waits for the client's delayed ACK, ~40 ms)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                                           server_header=False, timeout_graceful_shutdown=10))
    def serve() -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when the application fails to start
            server.run(sockets=[sock])

    thread = threading.Thread(target=serve, name="graphmem-rest", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    state: ServerState | None = getattr(app.state, "graphmem", None)  # None: another app (the graph view's)
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()
            if state is not None and state.startup_error is not None:
                raise state.startup_error
            raise RuntimeError("the REST server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host if ':' not in host else f'[{host}]'}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
