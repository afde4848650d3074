"""graphmem: a memory engine for AI agents that keeps what an agent learns as a typed knowledge graph.

Public API::

    from graphmem import Memory, AsyncMemory, MemoryConfig

``import graphmem`` loads only the errors: the engine (pydantic, numpy, the stores, the ontology) is
imported on first access to a name that needs it, so a CLI ``--help`` or a library that only catches
``graphmem.GraphmemError`` does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigError,
    ConflictError,
    CypherRefusedError,
    DumpConflictError,
    DumpFormatError,
    DuplicateMemoryError,
    EmbedderMismatchError,
    EmbeddingError,
    ExtractionError,
    GraphmemError,
    InvalidFilterError,
    InvalidInputError,
    LLMError,
    NotFoundError,
    OntologyError,
    QueryTimeoutError,
    ReadOnlyError,
    RowLimitError,
    SchemaMismatchError,
    ScopeError,
    StoreError,
    StoreUnavailableError,
    UnsupportedError,
)
from .version import __version__

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .embedding import HashingFallbackWarning
    from .mem0 import Mem0CompatWarning, Mem0ConfigWarning
    from .memory import AsyncMemory, Memory
    from .models import MemoryType, Scope

_LAZY: dict[str, str] = {
    "AsyncMemory": ".memory",
    "HashingFallbackWarning": ".embedding",
    "Mem0CompatWarning": ".mem0",
    "Mem0ConfigWarning": ".mem0",
    "Memory": ".memory",
    "MemoryConfig": ".config",
    "MemoryType": ".models",
    "Scope": ".models",
}

__all__ = [
    "AsyncMemory",
    "ConfigError",
    "ConflictError",
    "CypherRefusedError",
    "DumpConflictError",
    "DumpFormatError",
    "DuplicateMemoryError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "ExtractionError",
    "GraphmemError",
    "HashingFallbackWarning",
    "InvalidFilterError",
    "InvalidInputError",
    "LLMError",
    "Mem0CompatWarning",
    "Mem0ConfigWarning",
    "Memory",
    "MemoryConfig",
    "MemoryType",
    "NotFoundError",
    "OntologyError",
    "QueryTimeoutError",
    "ReadOnlyError",
    "RowLimitError",
    "SchemaMismatchError",
    "Scope",
    "ScopeError",
    "StoreError",
    "StoreUnavailableError",
    "UnsupportedError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
