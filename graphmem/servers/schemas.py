"""Request and response bodies of the REST server: what its OpenAPI schema publishes.

Requests refuse unknown fields; the engine checks every value again (limits, ids, Unicode), so the
bounds here document the contract and the engine's :class:`~graphmem.errors.InvalidInputError` is
the final word (422 either way). Responses are the dicts ``Memory`` returns, described field by
field; they allow fields a later graphmem adds (``additionalProperties``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"}, description="ISO-8601, UTC")]
When = Annotated[str | float, Field(description="ISO-8601 string, or Unix seconds")]
Iso = Annotated[str, Field(description="ISO-8601 time (naive: UTC)")]
ScopeId = Annotated[str, Field(description="A scope id; the API key's binding decides what a request may name")]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class Scoped(_Request):
    """Scope fields a request may name within its key's scope (see the docs' "REST server")."""

    user_id: ScopeId | None = None
    agent_id: ScopeId | None = None
    run_id: ScopeId | None = None


# -- problems -------------------------------------------------------------------------------------
class Problem(BaseModel):
    """RFC 9457 problem details, with graphmem's error class name in ``error``."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    error: str
    """graphmem's error class (``NotFoundError``, ``ScopeError``…) or ``RequestValidationError``/``HTTPError``."""
    errors: list[dict[str, Any]] | None = None
    """For ``RequestValidationError``: where the request did not match the schema."""


# -- memories -------------------------------------------------------------------------------------
class MessageIn(_Request):
    role: Literal["user", "assistant", "system", "tool"]
    content: str
    name: str | None = None
    """The speaker; stored as the memory's ``actor_id``."""


class TripleIn(_Request):
    source: str
    relation: str
    target: str | int | float | bool
    """An entity name, or a literal value."""
    source_type: str | None = None
    target_type: str | None = None
    valid_from: Iso | None = None


class AddRequest(Scoped):
    messages: str | MessageIn | list[MessageIn]
    metadata: dict[str, Any] | None = None
    infer: bool = True
    """Extract memories and facts (the configured LLM, else the rule-based extractor); ``false``
    stores each message verbatim."""
    memory_type: Literal["semantic", "episodic", "procedural"] | None = None
    timestamp: When | None = None
    triples: list[TripleIn] | None = None
    expires_at: Iso | None = None
    speaker: str | None = None
    """Who says the user messages without a ``name`` ("I live in Oslo" becomes that person's fact);
    without one, "I" is the scope's user."""


class AddedMemory(_Response):
    id: str | None
    memory: str
    event: str
    """``ADD``, or ``NONE`` for a duplicate of a stored memory (its id)."""


class RelationsSummary(_Response):
    added: list[dict[str, Any]]
    superseded: list[dict[str, Any]]
    ended: list[dict[str, Any]] = []
    """Stored facts the text said had ended ("I left Acme in May"), closed on that date."""
    rejected: list[dict[str, Any]]
    """Quarantined triples with their reasons (see ``GET /v1/quarantine``)."""


class UsageOut(_Response):
    """What the extraction model was asked during this add (tokens as its server reported them)."""

    prompt_tokens: int
    completion_tokens: int
    calls: int
    repairs: int
    fallbacks: int


class AddResponse(_Response):
    results: list[AddedMemory]
    relations: RelationsSummary
    chunks: int | None = None
    token_counter: str | None = None
    dropped: Any = None
    usage: UsageOut | None = None


class AddManyRequest(_Request):
    items: list[AddRequest]
    """Each an add request (its scope within the key's); consecutive items of one scope are written
    in one transaction."""


class AddManyResponse(_Response):
    items: list[AddResponse]


class MemoryOut(_Response):
    id: str
    memory: str
    hash: str
    memory_type: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    role: str | None = None
    actor_id: str | None = None
    metadata: dict[str, Any]
    created_at: Timestamp
    updated_at: Timestamp | None = None
    event_time: Timestamp | None = None
    expires_at: Timestamp | None = None
    access_count: int = 0
    last_accessed_at: Timestamp | None = None
    follows: str | None = None
    """The memory stored just before this one in its scope."""


class MemoryPage(_Response):
    results: list[MemoryOut]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page (newest first); ``null`` on the last page."""


class UpdateRequest(_Request):
    data: str | None = None
    """The new text (re-embedded, re-extracted with ``infer``)."""
    metadata: dict[str, Any] | None = None
    """Merged into the memory's metadata; a ``null`` value removes its key."""
    infer: bool = True


class UpdateResponse(MemoryOut):
    event: str
    relations: RelationsSummary
    message: str


class DeleteResponse(_Response):
    id: str
    event: str
    message: str


class DeleteAllResponse(_Response):
    deleted: int
    scope: dict[str, str]
    message: str


class HistoryEventOut(_Response):
    id: str
    memory_id: str
    event: str
    old_memory: str | None = None
    new_memory: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    role: str | None = None
    created_at: Timestamp
    details: dict[str, Any] = Field(default_factory=dict)


# -- search ---------------------------------------------------------------------------------------
class SearchRequest(Scoped):
    query: str
    filters: dict[str, Any] | None = None
    top_k: int | None = Field(None, ge=1)
    threshold: float | None = None
    explain: bool = False
    as_of: Iso | None = None
    since: Iso | None = None
    until: Iso | None = None
    now: Iso | None = None
    """When the question is asked (default: now): what "last week" or "in June" in it resolve against."""
    vector: list[float] | None = None
    """The query's embedding by the server's embedder, when the caller already has it."""


class ScoredMemory(MemoryOut):
    score: float
    score_details: dict[str, Any] | None = None
    """With ``explain``: each signal's raw and normalized score, the graph path, decay, rerank."""


class SearchResponse(_Response):
    results: list[ScoredMemory]
    relations: list[Any]
    round_trips: int | None = None
    graph: dict[str, Any] | None = None


# -- the graph ------------------------------------------------------------------------------------
class EntityOut(_Response):
    id: str
    name: str
    classes: list[str]
    aliases: list[str]
    types: list[str]
    """The classes as short names (``gm:Person``)."""
    mentions: int
    """How many memories mention it."""
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: Timestamp
    updated_at: Timestamp | None = None


class EntityPage(_Response):
    results: list[EntityOut]
    next_cursor: str | None


class EntityRef(_Response):
    id: str
    name: str | None


class MemoryRef(_Response):
    id: str
    memory: str


class Derived(_Response):
    from_: str = Field(alias="from")
    """``inverse`` or ``symmetric``: how the stored fact was read the asked way round."""
    stored_relation: str


class FactOut(_Response):
    id: str
    source: EntityRef
    relation: str
    relation_name: str
    target: EntityRef | None
    value: str | None = None
    """A literal object's lexical form (datatype properties; ``target`` is then ``null``)."""
    datatype: str | None = None
    valid_from: Timestamp | None
    valid_to: Timestamp | None
    created_at: Timestamp
    memories: list[MemoryRef]
    derived: Derived | None


class FactPage(_Response):
    results: list[FactOut]
    next_cursor: str | None


# -- quarantine -----------------------------------------------------------------------------------
class QuarantineEntryOut(_Response):
    id: str
    triple: dict[str, Any]
    reasons: list[dict[str, Any]]
    memory_ids: list[str]
    ontology: str
    status: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    created_at: Timestamp
    released_at: Timestamp | None = None


class RecheckRequest(Scoped):
    ids: list[str] | None = None
    """Only these quarantine entries; all of the scope when absent."""


class RecheckResponse(_Response):
    released: list[dict[str, Any]]
    still_rejected: list[dict[str, Any]]


# -- administration -------------------------------------------------------------------------------
class DryRunRequest(Scoped):
    ontology: list[str] = Field(min_length=1)
    """Turtle documents of the changed ontology (self-contained: ``owl:imports`` are refused)."""
    shapes: list[str] = Field(default_factory=list)
    """Turtle documents of the changed SHACL shapes."""


class DryRunResponse(_Response):
    checked: int
    invalid: list[dict[str, Any]]
    scopes: int


class CypherRequest(_Request):
    query: str
    params: dict[str, Any] | None = None


class CypherResponse(_Response):
    rows: list[dict[str, Any]]


class ResetRequest(_Request):
    confirm: Literal[True]
    """Must be ``true``: reset deletes every tenant's memories."""


class ResetResponse(_Response):
    reset: bool


class OptimizeResponse(_Response):
    backend: str
    seconds: float


class Health(_Response):
    status: str
