"""graphmem: a memory engine for AI agents that keeps what an agent learns as a typed knowledge graph.

Public API::

    from graphmem import Memory, AsyncMemory, MemoryConfig
"""

from .config import MemoryConfig
from .errors import (
    ConfigError,
    ConflictError,
    CypherRefusedError,
    DuplicateMemoryError,
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
from .memory import AsyncMemory, Memory
from .models import MemoryType, Scope

__version__ = "0.1.0"

__all__ = [
    "AsyncMemory",
    "ConfigError",
    "ConflictError",
    "CypherRefusedError",
    "DuplicateMemoryError",
    "EmbeddingError",
    "ExtractionError",
    "GraphmemError",
    "InvalidFilterError",
    "InvalidInputError",
    "LLMError",
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
