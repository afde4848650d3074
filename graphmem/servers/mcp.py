"""The MCP server: graphmem's memory as tools a model calls (``graphmem mcp``), on the official ``mcp`` SDK.

The tools take no ``user_id``/``agent_id``/``run_id``: a model writes their arguments, and a tenant
chosen by free text would let a prompt injection read another user's memories. The scope is fixed
outside the model's reach instead, by the server's command line (stdio: one process per user) or,
over streamable HTTP, by each request's API key (the REST server's keys, :mod:`.auth`, bound to a
scope; admin keys bind none and are refused here). Unknown arguments are refused, not ignored.

Every tool answers structured content (the dict the Python API returns, described by the REST
server's response models, :mod:`.schemas`) and the same JSON as text; a graphmem error is a tool
error carrying its type and message (a server-side fault's message stays in the log, as in REST).
What a model reads is kept short, since it all lands in its context: descriptions are one paragraph
without the source's indentation, answers leave out the 64-character digests (a memory's ``hash``,
a quarantine entry's ``ontology``) unless ``include_hash`` asks for them, and an argument the schema
refuses is one sentence naming it and what is expected, not the validator's report.
One :class:`~graphmem.Memory` serves the process; the SDK runs the (blocking) tools in worker threads.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Annotated, Any, Final, Literal

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.routing import Mount

from ..config import MemoryConfig, ServerConfig
from ..errors import ConfigError, GraphmemError, clip, short
from ..memory import Memory
from ..models import Scope
from ..version import __version__
from . import schemas as s
from .auth import KeyRing, KeyScopeError, Principal, ScopeArgs, UnauthenticatedError, read_keys_file
from .errors import problem
from .middleware import AccessLog, ASGIApp, Receive, Send, send_problem
from .middleware import Scope as AsgiScope
from .rest import LOG_CONFIG, json_safe, memory_page

MCP_PATH: Final = "/mcp"
_PRINCIPAL: Final = "graphmem.principal"
"""Where the HTTP layer leaves the caller's principal in the ASGI scope of each request."""

INSTRUCTIONS: Final = (
    "graphmem is this user's long-term memory: memories (short texts) and a knowledge graph of typed "
    "entities and facts checked against an ontology. Search before answering questions about the user; add "
    "what is worth remembering. Every tool acts in one fixed scope (user, agent or run) chosen by the server, "
    "never by arguments. Ids come from earlier results.")


# -- answers: the REST models, less the digests a model has no use for ---------------------------------
HashField = Annotated[str | None, Field(
    description="The duplicate key (SHA-256 of the folded text); only with include_hash")]


class MemoryOut(s.MemoryOut):
    hash: HashField = None  # type: ignore[assignment]


class ScoredMemory(s.ScoredMemory):
    hash: HashField = None  # type: ignore[assignment]


class SearchResponse(s.SearchResponse):
    results: list[ScoredMemory]  # type: ignore[assignment]


class MemoryPage(s.MemoryPage):
    results: list[MemoryOut]  # type: ignore[assignment]


OntologyDigest = Annotated[str | None, Field(
    description="Digest of the ontology version that refused it; only with include_hash")]


class QuarantineEntry(s.QuarantineEntryOut):
    ontology: OntologyDigest = None  # type: ignore[assignment]


class QuarantineList(BaseModel):
    """The quarantine as one object (structured tool content is an object, never a bare list)."""

    model_config = ConfigDict(extra="allow")
    results: list[QuarantineEntry]


DIGESTS: Final = ("hash", "ontology")
"""The fields of an answer's rows that hold a 64-character digest."""


def without_digests(rows: list[dict[str, Any]], keep: bool) -> list[dict[str, Any]]:
    """``rows`` less their digests, unless ``keep``: 64 characters a model pays for and cannot use."""
    if keep:
        return rows
    return [{k: v for k, v in row.items() if k not in DIGESTS} for row in rows]


# -- arguments the model fills in --------------------------------------------------------------------
Filters = Annotated[dict[str, Any] | None, Field(
    description='Metadata or field filter: {"key": value} is equality; {"key": {"op": value}} with op in '
                'eq ne gt gte lt lte in nin contains icontains; combine with {"AND": [...]}, {"OR": [...]}, '
                '{"NOT": {...}}')]
Limit = Annotated[int | None, Field(ge=1, description="Page size (server default when absent)")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page, to read the next one")]
IsoTime = Annotated[str | None, Field(description="ISO-8601 time, e.g. 2024-05-01 or 2024-05-01T12:00:00Z")]
MemoryId = Annotated[str, Field(description="A memory id from an earlier result")]
IncludeHash = Annotated[bool, Field(description="Also each memory's hash (its duplicate key)")]


class NoteIn(BaseModel):
    """One thing to remember in ``add_memories``: ``add_memory``'s arguments, less ``infer``."""

    model_config = ConfigDict(extra="forbid")
    text: Annotated[str, Field(description="What to remember, e.g. a message of the user")]
    timestamp: Annotated[IsoTime, Field(description="When it was said (resolves 'yesterday'); default now")] = None
    metadata: Annotated[dict[str, Any] | None, Field(description="JSON metadata stored with it")] = None
    memory_type: Literal["semantic", "episodic", "procedural"] | None = None
    triples: Annotated[list[s.TripleIn] | None, Field(description="Facts to store with it")] = None
    speaker: Annotated[str | None, Field(description="Who said it: whom 'I' in the text is")] = None

    def add_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"messages": {"role": "user", "content": self.text}, "timestamp": self.timestamp,
                                "metadata": self.metadata, "memory_type": self.memory_type, "speaker": self.speaker,
                                "triples": None if self.triples is None else
                                [t.model_dump(exclude_none=True) for t in self.triples]}
        return {k: v for k, v in args.items() if v is not None}


class _Answer:
    """Builds one tool's answer; the scope function is the server's (fixed or per request)."""

    def __init__(self, memory: Memory, scope_of: Callable[[Context], ScopeArgs]) -> None:
        self.memory = memory
        self.scope_of = scope_of

    def __call__(self, ctx: Context, action: Callable[[Memory, ScopeArgs], Any]) -> CallToolResult:
        try:
            data = json_safe(action(self.memory, self.scope_of(ctx)))
        except GraphmemError as exc:
            raise _GraphmemError(_tool_error_message(exc)) from exc
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _tool_error_message(exc: GraphmemError) -> str:
    """``Type: message`` of a client error; a server-side fault's fixed text instead (it may name hosts)."""
    return f"{type(exc).__name__}: {problem(exc)['detail']}"


def create_server(memory: Memory, *, user_id: str | None = None, agent_id: str | None = None,
                  run_id: str | None = None) -> MCPServer:
    """The MCP server over ``memory``, its tools acting in the scope given here (stdio, or a client in
    the same process); without one, in the scope of each HTTP request's API key (see :func:`http_app`)."""
    if user_id is not None or agent_id is not None or run_id is not None:
        scope = fixed_scope(user_id, agent_id, run_id)
        fixed = ScopeArgs(user_id=scope.user_id, agent_id=scope.agent_id, run_id=scope.run_id)
        answer = _Answer(memory, lambda ctx: fixed)
    else:
        answer = _Answer(memory, _request_scope)

    def add_memory(
        text: Annotated[str, Field(description="What to remember, e.g. a message of the user")],
        metadata: Annotated[dict[str, Any] | None, Field(description="JSON metadata stored with it")] = None,
        infer: Annotated[bool, Field(description="Extract memories, entities and facts from the text (else "
                                                 "store it verbatim as one memory)")] = True,
        timestamp: Annotated[IsoTime, Field(description="When it was said (resolves 'yesterday'); default now")]
        = None,
        memory_type: Literal["semantic", "episodic", "procedural"] | None = None,
        triples: Annotated[list[s.TripleIn] | None, Field(
            description="Facts to store with it, e.g. {source: 'Maya', relation: 'lives in', target: 'Lisbon'}; "
                        "facts the ontology refuses are quarantined (see list_rejected)")] = None,
        speaker: Annotated[str | None, Field(description="Who said it, e.g. 'Kari': whom 'I' in the text is; "
                                                         "default the user of this scope")] = None,
        *, ctx: Context,
    ) -> Annotated[CallToolResult, s.AddResponse]:
        """Remember something about the user. Returns the memories stored (event ADD, or NONE for an exact
        duplicate) and the facts added, superseded (an old value closed) or rejected by the ontology."""
        facts = None if triples is None else [t.model_dump(exclude_none=True) for t in triples]
        return answer(ctx, lambda m, sc: m.add({"role": "user", "content": text}, metadata=metadata, infer=infer,
                                                timestamp=timestamp, memory_type=memory_type, triples=facts,
                                                speaker=speaker, **sc))

    def add_memories(
        items: Annotated[list[NoteIn], Field(min_length=1, description="The things to remember, oldest first")],
        infer: Annotated[bool, Field(description="Extract memories, entities and facts from each text (else "
                                                 "store each verbatim as one memory)")] = True,
        *, ctx: Context,
    ) -> Annotated[CallToolResult, s.AddManyResponse]:
        """Remember several things at once (a conversation's history, notes to import); nothing is stored
        if an item is invalid. Returns add_memory's answer for each item, in order."""
        batch = [it.add_args() for it in items]
        return answer(ctx, lambda m, sc: m.add_many(batch, infer=infer, **sc))

    def search_memories(
        query: Annotated[str, Field(description="A question or keywords")],
        top_k: Annotated[int | None, Field(ge=1, description="How many results (default 5)")] = None,
        filters: Filters = None,
        explain: Annotated[bool, Field(description="Add each result's score_details: the vector, full-text "
                                                   "and graph scores and the graph path that found it")] = False,
        threshold: Annotated[float | None, Field(description="Drop results scoring below this")] = None,
        as_of: Annotated[IsoTime, Field(description="Rank what was known at this time")] = None,
        since: Annotated[IsoTime, Field(description="Only memories at or after this time")] = None,
        until: Annotated[IsoTime, Field(description="Only memories before this time")] = None,
        now: Annotated[IsoTime, Field(description="When the question is asked, if not now: what 'last week' "
                                                  "or 'in June' in it mean")] = None,
        include_hash: IncludeHash = False,
        *, ctx: Context,
    ) -> Annotated[CallToolResult, SearchResponse]:
        """Find the memories most relevant to a query (meaning, words and the knowledge graph), best first,
        each with its score."""
        def search(m: Memory, sc: ScopeArgs) -> dict[str, Any]:
            found = m.search(query, top_k=top_k, filters=filters, explain=explain, threshold=threshold,
                             as_of=as_of, since=since, until=until, now=now, **sc)
            return {**found, "results": without_digests(found["results"], include_hash)}

        return answer(ctx, search)

    def get_memory(memory_id: MemoryId, include_hash: IncludeHash = False, *,
                   ctx: Context) -> Annotated[CallToolResult, MemoryOut]:
        """Read one memory by id, with its metadata and times."""
        return answer(ctx, lambda m, sc: without_digests([m.get(memory_id, **sc)], include_hash)[0])

    def list_memories(limit: Limit = None, cursor: Cursor = None, filters: Filters = None,
                      include_hash: IncludeHash = False, *, ctx: Context) -> Annotated[CallToolResult, MemoryPage]:
        """List memories, newest first, a page at a time (next_cursor reads the next page; null on the last)."""
        def page(m: Memory, sc: ScopeArgs) -> dict[str, Any]:
            got = memory_page(m, sc, filters, limit, cursor)
            return {**got, "results": without_digests(got["results"], include_hash)}

        return answer(ctx, page)

    def delete_memory(memory_id: MemoryId, *, ctx: Context) -> Annotated[CallToolResult, s.DeleteResponse]:
        """Forget one memory, e.g. when the user asks; facts only it supported go too. Cannot be undone."""
        return answer(ctx, lambda m, sc: m.delete(memory_id, **sc))

    def list_entities(
        name: Annotated[str | None, Field(description="A fragment of a name or alias")] = None,
        type: Annotated[str | None, Field(description="A class of the ontology, e.g. Person, City (subclasses "
                                                      "too)")] = None,
        limit: Limit = None, cursor: Cursor = None, *, ctx: Context,
    ) -> Annotated[CallToolResult, s.EntityPage]:
        """List the known entities (people, places, organizations...), oldest first, a page at a time, with
        their types, aliases and how many memories mention each."""
        return answer(ctx, lambda m, sc: m.entities(name=name, type=type, limit=limit, cursor=cursor, **sc))

    def list_facts(
        entity: Annotated[str | None, Field(description="An entity's id, name or alias: its facts")] = None,
        relation: Annotated[str | None, Field(description="A relation, e.g. 'lives in' or gm:worksFor")] = None,
        as_of: Annotated[IsoTime, Field(description="The facts valid at this time")] = None,
        include_closed: Annotated[bool, Field(description="Also facts that were superseded")] = False,
        limit: Limit = None, cursor: Cursor = None, *, ctx: Context,
    ) -> Annotated[CallToolResult, s.FactPage]:
        """What is known as typed facts (source, relation, target), with when each held (valid_from/valid_to)
        and the memories that state it, a page at a time. Answers "what do you know about X"."""
        return answer(ctx, lambda m, sc: m.facts(entity=entity, relation=relation, as_of=as_of,
                                                  include_closed=include_closed, limit=limit, cursor=cursor, **sc))

    def list_rejected(
        include_released: Annotated[bool, Field(description="Also entries a later recheck released")] = False,
        include_hash: Annotated[bool, Field(description="Also the digest of the ontology version that refused "
                                                        "each")] = False,
        *, ctx: Context,
    ) -> Annotated[CallToolResult, QuarantineList]:
        """Facts the ontology refused (quarantined, never lost), oldest first, each with its SHACL reasons."""
        return answer(ctx, lambda m, sc: {"results": without_digests(
            m.rejected(include_released=include_released, **sc), include_hash)})

    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    tools = [
        _strict(add_memory, ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)),
        _strict(add_memories, ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)),
        _strict(search_memories, read), _strict(get_memory, read), _strict(list_memories, read),
        _strict(delete_memory, ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                               open_world_hint=False)),
        _strict(list_entities, read), _strict(list_facts, read), _strict(list_rejected, read),
    ]
    return MCPServer("graphmem", version=__version__, instructions=INSTRUCTIONS, tools=tools, log_level="WARNING")


class _StrictArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class _GraphmemError(ToolError):
    """A graphmem error as the model reads it: ``Type: message``."""


class ModelTool(Tool):
    """A tool whose errors are one plain sentence: an argument the schema refuses is named with what
    is expected (pydantic's report carries input types, internal model names and a URL), and a graphmem
    error reads ``Type: message`` without the SDK's ``Error executing tool ...`` before it."""

    async def run(self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:  # the SDK logs a ToolError caused by it with field names only
            raise ToolError(argument_error(self.name, self.parameters, exc)) from exc
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, _GraphmemError):
                raise exc.__cause__ from exc.__cause__.__cause__
            raise


def argument_error(tool: str, schema: dict[str, Any], exc: ValidationError, most: int = 3) -> str:
    """One sentence for a model from pydantic's errors, e.g. ``search_memories: unknown argument 'foo';
    expected query, top_k, ...``: each argument's path, what is wrong and what would be right."""
    shape = _Schema(schema)
    groups: dict[tuple[int | str, ...], list[Any]] = {}
    for err in exc.errors(include_url=False):
        loc = list(err.get("loc", ()))
        unknown = err.get("type") == "extra_forbidden" and loc
        path = (*shape.path(loc[:-1]), loc[-1]) if unknown else tuple(shape.path(loc))
        groups.setdefault(path, []).append(err)  # a union's alternatives fail at one path
    said: list[str] = []
    for at, errs in groups.items():
        kind, where = errs[0].get("type", ""), _path(at) or "the arguments"
        if kind == "extra_forbidden" and at:
            parent, name = list(at[:-1]), at[-1]
            expected = ", ".join(shape.fields(parent)) or "none"
            text = (f"{_path(parent)} has an unknown field {name!r}" if parent else
                    f"unknown argument {name!r}") + f"; expected {expected}"
        elif kind == "missing" and at:
            text = f"missing argument {at[-1]!r}" if len(at) == 1 else f"{_path(at[:-1])} needs {at[-1]!r}"
        else:
            msgs = list(dict.fromkeys(str(e.get("msg", "is invalid")).removeprefix("Value error, ") for e in errs))
            got = f", got {short(errs[0]['input'], 40)}" if "input" in errs[0] else ""
            if all(m.startswith("Input should ") for m in msgs):  # "should be a valid string or a valid integer"
                rest = [m.removeprefix("Input should ") for m in msgs]
                text = f"{where} should {rest[0]}" + "".join(f" or {r.removeprefix('be ')}" for r in rest[1:]) + got
            else:
                text = f"{where}: {msgs[0][:1].lower()}{msgs[0][1:]}{got}"
        said.append(clip(text, 300))
    more = f" (and {len(said) - most} more)" if len(said) > most else ""
    return f"{tool}: {'; '.join(said[:most]) or 'invalid arguments'}{more}."


def _path(loc: Sequence[int | str]) -> str:
    """``items[0].text`` from pydantic's ``("items", 0, "text")``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class _Schema:
    """A tool's input schema, read along an error's location."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(self, node: Any, want: str) -> dict[str, Any]:
        """``node`` itself or, through ``$ref`` and ``anyOf``, the first alternative that has ``want``."""
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = self.defs.get(ref.removeprefix("#/$defs/"), {})
        if want in node:
            return dict(node)
        for alternative in node.get("anyOf", ()):
            found = self.resolve(alternative, want)
            if found:
                return found
        return {}

    def path(self, loc: Sequence[int | str]) -> list[int | str]:
        """``loc`` without pydantic's union tags (``target.int``: which alternative of ``target`` failed),
        the parts that name no property where the schema lists the properties."""
        kept: list[int | str] = []
        node: Any = self.schema
        for part in loc:
            if isinstance(part, int):
                kept.append(part)
                node = self.resolve(node, "items").get("items")
                continue
            props = self.resolve(node, "properties").get("properties")
            if isinstance(props, dict) and part in props:
                kept.append(part)
                node = props[part]
            elif props is None and self.resolve(node, "additionalProperties"):  # a key of a free-form object
                kept.append(part)
                node = None
        return kept

    def fields(self, loc: Sequence[int | str]) -> list[str]:
        """The property names of the object at ``loc`` (``[]`` where the schema does not tell)."""
        node: Any = self.schema
        for part in loc:
            node = (self.resolve(node, "items").get("items") if isinstance(part, int)
                    else self.resolve(node, "properties").get("properties", {}).get(part))
        return list(self.resolve(node, "properties").get("properties", {}))


def description(fn: Callable[..., Any]) -> str:
    """The function's docstring as one paragraph: the source's indentation and line breaks are noise
    in a model's context."""
    return " ".join(inspect.cleandoc(fn.__doc__ or "").split())


def _strict(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """``fn`` as a tool whose arguments refuse unknown names: a ``user_id`` the model adds is an error it
    reads, not a value silently dropped, and the published schema says ``additionalProperties: false``."""
    tool = ModelTool.from_function(fn, description=description(fn), annotations=annotations)
    base = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(base.__name__, (base,), {
        "model_config": {**base.model_config, **_StrictArguments.model_config}, "__module__": base.__module__})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def _request_scope(ctx: Context) -> ScopeArgs:
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(_PRINCIPAL)
    if not isinstance(principal, Principal):  # only reachable when the app is served without http_app's layer
        raise UnauthenticatedError("this request carries no API key the server checked")
    return principal.scope()


# -- streamable HTTP --------------------------------------------------------------------------------
class KeyAuth:
    """Every HTTP request needs an API key bound to a scope (``Authorization: Bearer``): no key or an
    unknown one is 401, an admin key 403 (it binds no scope), as problem+json. The principal rides on
    the request for the tools, and as the SDK's authenticated user, so a session opened with one key
    cannot be continued with another (the SDK answers 404)."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        kind, _, presented = header.partition(" ")
        try:
            if kind.lower() != "bearer" or not presented.strip():
                raise UnauthenticatedError("send an API key bound to a scope: 'Authorization: Bearer <key>'")
            principal = self.keys.lookup(presented.strip())
            if principal is None:
                raise UnauthenticatedError("this API key is not one the server knows")
            scope.setdefault("state", {})["key_id"] = principal.key_id  # for the access log
            if principal.admin or not principal.bound:
                raise KeyScopeError(f"API key {principal.key_id!r} is an admin key and binds no scope; MCP tools "
                                    "act in the scope of the caller's key: use a key bound to a user_id, agent_id "
                                    "or run_id")
        except (UnauthenticatedError, KeyScopeError) as exc:
            body = problem(exc)
            headers = [(b"www-authenticate", b"Bearer")] if body["status"] == 401 else []
            await send_problem(send, body["status"], body, headers)
            return
        scope[_PRINCIPAL] = principal
        scope["user"] = AuthenticatedUser(AccessToken(token=principal.key_id, client_id=principal.key_id, scopes=[]))
        await self.app(scope, receive, send)


def scoped_keys(server: ServerConfig) -> KeyRing:
    """The configured keys; refuses (``ConfigError``) a configuration without one bound to a scope."""
    entries = list(server.keys)
    if server.keys_file is not None:
        entries.extend(read_keys_file(server.keys_file))
    if not any(not e.admin for e in entries):
        raise ConfigError("graphmem mcp over HTTP needs an API key bound to a scope (server.keys, "
                          "GRAPHMEM_SERVER__KEYS or server.keys_file; `graphmem serve --new-key ID -u USER` makes "
                          "one): each request's key fixes the scope its tools act in")
    return KeyRing(entries)


def http_app(memory: Memory, keys: KeyRing, *, host: str = "127.0.0.1", max_body_bytes: int = 1_048_576,
             on_shutdown: Callable[[], None] | None = None) -> Starlette:
    """The streamable HTTP application (endpoint ``/mcp``), behind :class:`KeyAuth` and the REST server's
    access log. ``host``: the address served (a loopback one turns on the SDK's DNS-rebinding check).
    ``on_shutdown`` runs (in a thread) when the server stops, e.g. to close a memory it owns."""
    mcp_app = create_server(memory).streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                                        max_request_body_size=max_body_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.router.lifespan_context(mcp_app):  # the SDK's session manager
            try:
                yield
            finally:
                if on_shutdown is not None:
                    await anyio.to_thread.run_sync(on_shutdown)

    return Starlette(routes=[Mount("/", app=mcp_app)], lifespan=lifespan,
                     middleware=[Middleware(AccessLog), Middleware(KeyAuth, keys=keys)])


# -- running it -------------------------------------------------------------------------------------
HTTP_LOG_CONFIG: Final[dict[str, Any]] = {
    **LOG_CONFIG,
    "loggers": {**LOG_CONFIG["loggers"], "mcp": {"handlers": ["stderr"], "level": "WARNING", "propagate": False}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}
"""The REST server's JSON lines, for the SDK's notes too (it gives the root logger a console handler)."""


def fixed_scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> Scope:
    """The stdio server's scope from its command line; a missing or invalid one is a ``ConfigError``."""
    if user_id is None and agent_id is None and run_id is None:
        raise ConfigError("graphmem mcp over stdio needs a scope: --user-id U (and/or --agent-id A, --run-id R); "
                          "its tools take none, so the model can never choose whose memory it reads")
    try:
        return Scope.of(user_id, agent_id, run_id)
    except GraphmemError as exc:
        raise ConfigError(str(exc)) from None


def serve(config: MemoryConfig, *, transport: str = "stdio", host: str | None = None, port: int | None = None,
          user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> None:
    """Run the server in the foreground (``graphmem mcp``): over stdio until the client closes it, over
    HTTP until SIGINT/SIGTERM. Everything that can refuse a start does so before the store opens."""
    if transport == "stdio":
        fixed_scope(user_id, agent_id, run_id)  # before the store opens
        with Memory(config) as memory:
            memory.warm()  # before the client's initialize is read
            create_server(memory, user_id=user_id, agent_id=agent_id, run_id=run_id).run("stdio")
        return
    if transport != "http":
        raise ConfigError(f"--transport is stdio or http, not {transport!r}")
    if user_id or agent_id or run_id:
        raise ConfigError("over HTTP each request's API key fixes the scope; --user-id/--agent-id/--run-id are "
                          "for --transport stdio")
    import uvicorn

    keys = scoped_keys(config.server)
    host = host or config.server.host
    port = config.server.port if port is None else port
    memory = Memory(config)  # a store that cannot be opened fails here, in one line
    memory.warm()  # before the port opens
    lock, closed = threading.Lock(), False

    def close_once() -> None:
        nonlocal closed
        with lock:
            if not closed:
                closed = True
                memory.close()

    app = http_app(memory, keys, host=host, max_body_bytes=config.server.max_body_bytes, on_shutdown=close_once)
    try:  # the lifespan closes the memory at shutdown (uvicorn then re-raises SIGTERM/SIGINT)
        uvicorn.run(app, host=host, port=port, log_config=HTTP_LOG_CONFIG, access_log=False, server_header=False,
                    timeout_graceful_shutdown=15)
    finally:
        close_once()  # uvicorn never started the application, or stopped without its lifespan


__all__ = ["KeyAuth", "create_server", "fixed_scope", "http_app", "scoped_keys", "serve"]
