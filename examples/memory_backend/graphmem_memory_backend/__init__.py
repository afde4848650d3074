"""An in-memory store backend for graphmem: the example a backend author starts from.

``pip install`` it and ``store.provider: memory`` builds a :class:`MemoryStore` through the
``graphmem.stores`` entry point this package declares (pyproject.toml); its tests run graphmem's
backend kit against it (``pytest`` in this folder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .store import MemoryStore

if TYPE_CHECKING:
    from graphmem import MemoryConfig

__all__ = ["MemoryStore", "make_store"]


def make_store(config: MemoryConfig) -> MemoryStore:
    """The factory graphmem calls for ``store.provider: memory``: a new, empty store each time."""
    return MemoryStore(name=str(config.home))
