"""The fixtures the kit's tests share: a Memory over the store under test, and a fresh tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder

__all__ = ["mem", "uid"]


@pytest.fixture
def mem(graphmem_config: dict[str, Any]) -> Iterator[Memory]:
    """A Memory over the store under test, with the 384-dimension hashing embedder (offline, exact)."""
    m = Memory(MemoryConfig.load(graphmem_config), embedder=HashingEmbedder(384))
    yield m
    m.close()


@pytest.fixture
def uid() -> str:
    """A user id no other test uses, so tests sharing one store (a server) never see each other's data."""
    return f"u-{uuid.uuid4().hex[:12]}"
