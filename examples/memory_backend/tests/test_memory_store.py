"""What this backend promises beyond graphmem's contract: it is found by name, and it is honest about
being one process's memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from graphmem_memory_backend import MemoryStore

from graphmem import Memory, MemoryConfig, SchemaMismatchError
from graphmem.stores import providers


def test_the_entry_point_names_it(tmp_path: Path) -> None:
    assert "memory" in providers()
    with Memory({"home": str(tmp_path), "store": {"provider": "memory"}, "embedder": {"provider": "hashing"}}) as m:
        assert isinstance(m.store, MemoryStore) and m.info.backend == "memory"
        m.add("kept in this process only", user_id="u1", infer=False)
        assert [r["memory"] for r in m.get_all(user_id="u1")["results"]] == ["kept in this process only"]


def test_nothing_outlives_the_store(tmp_path: Path) -> None:
    config = MemoryConfig.load({"home": str(tmp_path), "store": {"provider": "memory"},
                                "embedder": {"provider": "hashing"}})
    with Memory(config) as m:
        m.add("gone with the process", user_id="u1", infer=False)
    with Memory(config) as again:
        assert again.get_all(user_id="u1")["results"] == []


def test_one_embedder_per_store() -> None:
    store = MemoryStore()
    store.open("hashing-384", 384)
    with pytest.raises(SchemaMismatchError):
        store.open("other", 64)
