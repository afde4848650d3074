"""Every exception graphmem raises on purpose, in one place.

Callers catch :class:`GraphmemError` for everything, or a subclass for one kind of fault. Each message
says what was wrong and what to do about it, because the person reading it is usually not the person
who wrote the call.
"""

from __future__ import annotations

from pathlib import Path


class GraphmemError(Exception):
    """Base class of every error graphmem raises deliberately."""


class ConfigError(GraphmemError):
    """The configuration is invalid or names something that cannot be loaded."""


class InvalidInputError(GraphmemError, ValueError):
    """Input that graphmem refuses: empty or oversized text, control characters, wrong types."""


class ScopeError(InvalidInputError):
    """A read or write without a tenant scope, or with a malformed one."""


class InvalidFilterError(InvalidInputError):
    """A search or listing filter with an unknown operator, field or value type."""


class NotFoundError(GraphmemError, KeyError, ValueError):
    """No memory with that id exists *in the caller's scope* (other tenants' ids look the same).
    A ``ValueError`` too, as mem0 raises for an unknown id."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0]) if self.args else "not found"


class StoreError(GraphmemError):
    """The storage backend failed; nothing of the failed operation was written."""


class StoreUnavailableError(StoreError):
    """The storage backend cannot be reached (the message names where graphmem looked)."""


class ReadOnlyError(StoreError):
    """An analyst query tried to change data; ``Memory.cypher`` only reads."""


class CypherRefusedError(ReadOnlyError):
    """An analyst query that reads, but does something else analyst Cypher does not allow: ``LOAD
    CSV`` (server files, URLs), administration commands (``SHOW``/``TERMINATE TRANSACTIONS``,
    ``SHOW SETTINGS``, another database) or a procedure or function outside the allow-list."""


class QueryTimeoutError(StoreError):
    """The server stopped an analyst query that ran longer than ``store.cypher_timeout_s``."""


class RowLimitError(InvalidInputError):
    """An analyst query returned more rows than ``store.cypher_max_rows``; add a ``LIMIT``."""


class UnsupportedError(GraphmemError):
    """The operation needs a backend feature this store does not have (e.g. Cypher on SQLite)."""


class SchemaMismatchError(StoreError):
    """The store was created with another embedding model or dimension than the one configured."""


class EmbedderMismatchError(SchemaMismatchError, ConfigError):
    """The configuration names another embedder than the one the store was created with (and
    recorded): vectors of two models cannot be searched together. ``graphmem reembed`` (or
    ``Memory.reembed``) moves the store to the new one; ``embedder.provider: auto`` uses the recorded one."""


class EmbeddingError(GraphmemError):
    """The embedding model could not be loaded or did not answer."""


class LLMError(GraphmemError):
    """The language model could not be reached, or refused (rate limit, server error) after the
    configured retries. Nothing of the call was written."""


class ExtractionError(GraphmemError):
    """The language model kept returning output that is cut off or not valid against the extraction
    schema, after the configured retries. Nothing of the call was written."""


class OntologyError(GraphmemError):
    """An ontology or shapes file cannot be used; ``path``/``line`` (1-based) point at it when known."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}: " if self.path is not None and line else f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{message}")


class ConflictError(StoreError):
    """Concurrent writers kept changing what this write depended on (an entity's facts, a duplicate's
    memory), through every re-plan ``store.conflict_retries`` allows. Nothing was written; calling
    again is safe."""


class DumpFormatError(InvalidInputError):
    """A dump (``graphmem export``) that cannot be imported as it is: not JSON, another format
    version, a row that does not validate, fewer rows than its header counts. ``line`` (1-based)
    points at it when known. Nothing was written."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


class DumpConflictError(InvalidInputError):
    """The target store already holds ids (or a scope's text or entity name) of the dump being
    imported or migrated: importing is for new rows, never a silent merge. Nothing was written."""


class DuplicateMemoryError(InvalidInputError):
    """An update would give a memory the same text as another memory of its scope (one memory per
    scope and text: the store enforces it)."""


def short(value: object, limit: int = 100) -> str:
    """``repr(value)`` cut to about ``limit`` characters with an ellipsis: how every message echoes
    caller input, so that a megabyte id or text never becomes a megabyte error message or log line."""
    try:
        text = repr(value[: limit + 1] if isinstance(value, str | bytes) else value)
    except Exception:  # a hostile __repr__ must not replace the error being reported
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def clip(text: str, limit: int = 200) -> str:
    """A message part (not an input value) cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
