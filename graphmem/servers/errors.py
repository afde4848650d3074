"""graphmem's typed errors as HTTP statuses with RFC 9457 problem details (``application/problem+json``).

Every error answer has ``type``, ``title``, ``status``, ``detail`` and ``error`` (graphmem's error
class name, or ``RequestValidationError``/``HTTPError`` for what the HTTP layer refuses). A client
error's detail is graphmem's own message (it quotes at most ~100 characters of the caller's input and
names nothing of another tenant). A server-side fault's detail says what kind of fault it was and
never its message: store URIs, configuration and tracebacks stay in the server's log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .. import errors as e
from .auth import AdminOnlyError, KeyScopeError, UnauthenticatedError

PROBLEM_TYPE_BASE: Final = "https://graphmem.dev/problems/"
PROBLEM_JSON: Final = "application/problem+json"


@dataclass(frozen=True)
class Kind:
    status: int
    slug: str
    title: str
    safe_detail: str | None = None
    """For server-side faults: the detail sent instead of the error's message."""


# Most specific first: the first class in an error's MRO that is listed here decides.
KINDS: Final[dict[type[BaseException], Kind]] = {
    UnauthenticatedError: Kind(401, "unauthenticated", "Missing or unknown API key"),
    KeyScopeError: Kind(403, "scope-forbidden", "Scope outside the API key's"),
    AdminOnlyError: Kind(403, "admin-only", "Administration needs an admin key"),
    e.NotFoundError: Kind(404, "not-found", "Not found"),
    e.DuplicateMemoryError: Kind(409, "duplicate-memory", "Another memory of the scope has this text"),
    e.ConflictError: Kind(409, "conflict", "Concurrent writers kept conflicting; nothing was written, retry"),
    e.CypherRefusedError: Kind(403, "cypher-refused", "Analyst Cypher refused"),
    e.ReadOnlyError: Kind(403, "read-only", "Analyst Cypher only reads"),
    e.QueryTimeoutError: Kind(504, "query-timeout", "The analyst query ran too long"),
    e.RowLimitError: Kind(422, "row-limit", "The analyst query returned too many rows"),
    e.ScopeError: Kind(422, "invalid-scope", "Missing or invalid scope"),
    e.InvalidFilterError: Kind(422, "invalid-filter", "Invalid filter"),
    e.InvalidInputError: Kind(422, "invalid-input", "Invalid input"),
    e.OntologyError: Kind(500, "ontology", "Ontology error", "the server's ontology or shapes cannot be used"),
    e.UnsupportedError: Kind(501, "unsupported", "Not supported by this store"),
    e.StoreUnavailableError: Kind(503, "store-unavailable", "Store unavailable",
                                  "the store cannot be reached; retry later"),
    e.SchemaMismatchError: Kind(500, "store-schema", "Store schema mismatch",
                                "the store was built with another embedder than the server's"),
    e.StoreError: Kind(500, "store", "Store error", "the store failed; nothing of this request was written"),
    e.EmbeddingError: Kind(502, "embedding", "Embedding model failed", "the embedding model did not answer"),
    e.LLMError: Kind(502, "llm", "Language model failed", "the language model did not answer; nothing was written"),
    e.ExtractionError: Kind(502, "extraction", "Extraction failed",
                            "the language model kept returning unusable output; nothing was written"),
    e.ConfigError: Kind(500, "config", "Server configuration error", "the server's configuration is invalid"),
    e.GraphmemError: Kind(500, "internal", "Internal error", "the server failed"),
}
INTERNAL: Final = Kind(500, "internal", "Internal error", "the server failed")


def kind_of(exc: BaseException) -> Kind:
    for cls in type(exc).__mro__:
        if cls in KINDS:
            return KINDS[cls]
    return INTERNAL


def problem(exc: BaseException) -> dict[str, Any]:
    """The problem+json body of ``exc``."""
    kind = kind_of(exc)
    detail = kind.safe_detail if kind.safe_detail is not None else str(exc)
    return body(kind.status, kind.slug, kind.title, detail, type(exc).__name__ if isinstance(exc, e.GraphmemError)
                else "InternalError")


def body(status: int, slug: str, title: str, detail: str, error: str, **extra: Any) -> dict[str, Any]:
    return {"type": PROBLEM_TYPE_BASE + slug, "title": title, "status": status, "detail": detail, "error": error,
            **extra}


HTTP_TITLES: Final = {
    400: "Bad request (the body is not UTF-8 JSON)", 401: "Unauthenticated", 404: "Not found",
    405: "Method not allowed", 406: "Not acceptable", 413: "Request body too large", 415: "Unsupported media type",
    422: "Invalid request",
}
