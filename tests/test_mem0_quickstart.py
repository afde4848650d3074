"""mem0's quickstart, written out here from its public documentation, with only the import changed:
every call as mem0 documents it (keyword names included) and the keys mem0 documents in each return."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import Memory  # was: from mem0 import Memory

MEMORY_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user's machine: nothing configured, the default home in a fresh folder."""
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path))
    for name in ("GRAPHMEM_STORE__PROVIDER", "GRAPHMEM_EMBEDDER__PROVIDER", "GRAPHMEM_LLM__PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_the_quickstart_runs_with_only_the_import_changed(home: Path) -> None:
    m = Memory()
    messages = [
        {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
        {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
        {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
        {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies."},
    ]
    added = m.add(messages, user_id="alice", metadata={"category": "movies"})
    assert added["results"] and {"id", "memory", "event"} <= set(added["results"][0])
    assert all(r["event"] == "ADD" for r in added["results"])

    related = m.search(query="What do you know about me?", filters={"user_id": "alice"})
    assert related["results"] and MEMORY_KEYS | {"score"} <= set(related["results"][0])
    assert all(r["updated_at"] is None and r["metadata"]["category"] == "movies" for r in related["results"])
    assert any("sci-fi" in r["memory"] for r in related["results"])

    all_memories = m.get_all(filters={"user_id": "alice"})
    memory_id = all_memories["results"][0]["id"]
    specific = m.get(memory_id=memory_id)  # mem0 scopes no by-id call
    assert set(specific) >= MEMORY_KEYS and specific["id"] == memory_id

    updated = m.update(memory_id=memory_id, data="Loves sci-fi movies, especially space operas")
    assert "message" in updated and m.get(memory_id)["updated_at"] is not None
    history = m.history(memory_id=memory_id)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "is_deleted"} <= set(history[-1])
    assert history[-1]["new_memory"] == "Loves sci-fi movies, especially space operas"

    assert "message" in m.delete(memory_id=memory_id)
    assert [h["event"] for h in m.history(memory_id=memory_id)] == ["ADD", "UPDATE", "DELETE"]
    assert "message" in m.delete_all(user_id="alice")
    assert m.get_all(filters={"user_id": "alice"})["results"] == []
    m.reset()
    m.close()
