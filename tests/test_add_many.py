"""``add_many``: the same stored state as one ``add`` per item, checked before anything is written,
written in one transaction per run of items of one scope, and safe to call again after a failure."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from graphmem import AsyncMemory, InvalidInputError, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from tests.conftest import make_config

HISTORY: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "name": "Maya", "content": "I live in Lisbon and I work at Northwind."}],
     "timestamp": "2024-01-01"},
    {"messages": [{"role": "user", "name": "Maya", "content": "My sister Ana is a nurse."}], "timestamp": "2024-02-01"},
    {"messages": [{"role": "user", "name": "Maya", "content": "I moved to Porto last week."}],
     "timestamp": "2024-06-01"},
    {"messages": [{"role": "user", "name": "Maya", "content": "I live in Lisbon and I work at Northwind."}],
     "timestamp": "2024-07-01"},  # said again: a duplicate of the first item's memory
]


def _state(m: Memory, user: str) -> tuple[set[tuple[Any, ...]], list[tuple[str, str]]]:
    facts = m.facts(user_id=user, include_closed=True)["results"]
    memories = m.get_all(user_id=user)["results"]
    return ({(f["source"]["name"], f["relation_name"], (f["target"] or {}).get("name", f.get("value")),
              f["valid_from"], f["valid_to"]) for f in facts},
            sorted((r["memory"], r.get("event_time") or "") for r in memories))


def test_add_many_stores_what_one_add_per_item_stores(mem: Memory, uid: str) -> None:
    for item in HISTORY:
        mem.add(**item, user_id=f"{uid}-one")
    out = mem.add_many(HISTORY, user_id=f"{uid}-many")
    assert _state(mem, f"{uid}-many") == _state(mem, f"{uid}-one")
    items = out["items"]
    assert [r["event"] for it in items for r in it["results"]] == ["ADD", "ADD", "ADD", "NONE"]
    assert items[3]["results"][0]["id"] == items[0]["results"][0]["id"]
    # each item is told its own facts: the move is the third item's, the sister the second's
    assert {(a["relation"], a["target"]) for a in items[2]["relations"]["added"]} == {("livesIn", "Porto")}
    assert items[1]["relations"]["added"] and all("Ana" in (a["source"], a["target"])
                                                  for a in items[1]["relations"]["added"])
    assert all(a["target"] != "Porto" for a in items[0]["relations"]["added"])
    lived = sorted((f[3], f[2], f[4]) for f in _state(mem, f"{uid}-many")[0] if f[1] == "gm:livesIn")
    assert [(city, to is None) for _, city, to in lived] == [("Lisbon", False), ("Porto", False), ("Lisbon", True)]
    # called again (after a failure, say): nothing is stored twice
    again = mem.add_many(HISTORY, user_id=f"{uid}-many")
    assert {r["event"] for it in again["items"] for r in it["results"]} == {"NONE"}
    assert _state(mem, f"{uid}-many") == _state(mem, f"{uid}-one")


def test_a_bad_item_is_named_and_nothing_is_written(mem: Memory, uid: str) -> None:
    bad = [*HISTORY[:2], {"messages": "fine", "timestamp": "not a time"}]
    with pytest.raises(InvalidInputError, match=r"items\[2\]: .*timestamp"):
        mem.add_many(bad, user_id=uid)
    with pytest.raises(InvalidInputError, match=r"items\[1\] has unknown key\(s\) 'usr_id'"):
        mem.add_many([HISTORY[0], {"messages": "x", "usr_id": uid}], user_id=uid)
    with pytest.raises(InvalidInputError, match=r"items\[0\]: .*system messages"):
        mem.add_many([{"messages": [{"role": "system", "content": "be brief"}]}], user_id=uid)
    with pytest.raises(InvalidInputError, match="items must be a list"):
        mem.add_many("one string", user_id=uid)  # type: ignore[arg-type]
    assert mem.get_all(user_id=uid)["results"] == []
    assert mem.add_many([], user_id=uid) == {"items": []}


def test_runs_of_one_scope_share_a_transaction(backend: str, tmp_path: Path, uid: str) -> None:
    m = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384))
    writes: list[tuple[str | None, int]] = []
    write = m.store.write

    def counted(scope: Any, change: Any) -> Any:
        writes.append((scope.user_id, len(change.memories)))
        return write(scope, change)

    m.store.write = counted  # type: ignore[method-assign]
    embeds: list[int] = []
    embed = m.embedder.embed

    def counted_embed(texts: Any) -> Any:
        embeds.append(len(texts))
        return embed(texts)

    m.embedder.embed = counted_embed  # type: ignore[method-assign]
    try:
        b_item = {"messages": "note for b", "user_id": f"{uid}-b", "metadata": {"src": "b"}}
        items: list[Any] = [f"note {i} for a" for i in range(3)] + [b_item, "note 4 for a", "note 5 for a"]
        out = m.add_many(items, user_id=f"{uid}-a", infer=False, metadata={"src": "a"})
        assert writes == [(f"{uid}-a", 3), (f"{uid}-b", 1), (f"{uid}-a", 2)]
        assert embeds == [6]  # every text in one batch
        assert [it["results"][0]["memory"] for it in out["items"]] == [
            "note 0 for a", "note 1 for a", "note 2 for a", "note for b", "note 4 for a", "note 5 for a"]
        b = m.get_all(user_id=f"{uid}-b")["results"]
        assert [(r["memory"], r["metadata"]) for r in b] == [("note for b", {"src": "b"})]
        assert {r["metadata"]["src"] for r in m.get_all(user_id=f"{uid}-a")["results"]} == {"a"}
    finally:
        m.close()


def test_async_add_many(backend: str, tmp_path: Path, uid: str) -> None:
    async def go() -> None:
        async with AsyncMemory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384)) as am:
            out = await am.add_many(HISTORY[:3], user_id=uid)
            assert [len(it["results"]) for it in out["items"]] == [1, 1, 1]
            found = await am.search("where does Maya live", user_id=uid)
            assert "Porto" in " ".join(r["memory"] for r in found["results"])

    asyncio.run(go())


def test_a_value_said_twice_before_the_next_is_one_fact(mem: Memory, uid: str) -> None:
    """Lisbon, Lisbon, Madrid in one write: one Lisbon fact (both memories its provenance), closed
    when Madrid starts, as three adds leave it (a first plan left the first Lisbon open)."""
    said = [("I live in Lisbon.", "2024-01-01"), ("I live in Lisbon now.", "2024-02-01"),
            ("I live in Madrid.", "2024-03-01")]
    batch = [{"messages": [{"role": "user", "name": "Ines", "content": t}], "timestamp": when} for t, when in said]
    for item in batch:
        mem.add(**item, user_id=f"{uid}-one")
    mem.add_many(batch, user_id=f"{uid}-many")
    assert _state(mem, f"{uid}-many") == _state(mem, f"{uid}-one")
    facts = mem.facts(user_id=f"{uid}-many", include_closed=True)["results"]
    lived = sorted((f["valid_from"], f["target"]["name"], f["valid_to"], len(f["memories"])) for f in facts)
    assert lived == [("2024-01-01T00:00:00Z", "Lisbon", "2024-03-01T00:00:00Z", 2),
                     ("2024-03-01T00:00:00Z", "Madrid", None, 1)]


def test_a_stored_value_said_again_after_another_is_a_new_fact(mem: Memory, uid: str) -> None:
    """Oslo stored; then Oslo, Lima, Oslo, Lima, Oslo in one write. The stored Oslo holds the first
    run and ends when Lima starts; each later Oslo is a fact of its own (a first plan merged every
    Oslo into the stored one and closed it where the last value started)."""
    def say(city: str, when: str) -> dict[str, Any]:  # a text per date: no memory is a duplicate
        text = f"On {when} I live in {city}."
        return {"messages": [{"role": "user", "name": "Ines", "content": text}], "timestamp": when}

    later = [say(c, f"2024-0{k + 2}-01") for k, c in enumerate(["Oslo", "Lima", "Oslo", "Lima", "Oslo"])]
    expected = [("2024-01-01", "Oslo", "2024-03-01", 2), ("2024-03-01", "Lima", "2024-04-01", 1),
                ("2024-04-01", "Oslo", "2024-05-01", 1), ("2024-05-01", "Lima", "2024-06-01", 1),
                ("2024-06-01", "Oslo", None, 1)]
    for user, write in ((f"{uid}-one", lambda: [mem.add(**it, user_id=f"{uid}-one") for it in later]),
                        (f"{uid}-many", lambda: mem.add_many(later, user_id=f"{uid}-many"))):
        mem.add(**say("Oslo", "2024-01-01"), user_id=user)
        write()
        facts = mem.facts(user_id=user, include_closed=True)["results"]
        lived = sorted((f["valid_from"][:10], f["target"]["name"], f["valid_to"] and f["valid_to"][:10],
                        len(f["memories"])) for f in facts)
        assert lived == expected, user


def test_an_older_value_in_a_write_becomes_history_before_the_stored_one(mem: Memory, uid: str) -> None:
    mem.add(messages=[{"role": "user", "name": "Ines", "content": "I live in Oslo."}], timestamp="2024-06-01",
            user_id=uid)
    mem.add_many([{"messages": [{"role": "user", "name": "Ines", "content": f"I live in {c}."}], "timestamp": t}
                  for c, t in (("Lima", "2024-01-01"), ("Quito", "2024-02-01"))], user_id=uid)
    facts = mem.facts(user_id=uid, include_closed=True)["results"]
    lived = sorted((f["valid_from"][:10], f["target"]["name"], f["valid_to"] and f["valid_to"][:10]) for f in facts)
    assert lived == [("2024-01-01", "Lima", "2024-02-01"), ("2024-02-01", "Quito", "2024-06-01"),
                     ("2024-06-01", "Oslo", None)]


def test_a_near_duplicate_in_a_later_item_is_the_earlier_items_memory(tmp_path: Path, uid: str) -> None:
    cfg = MemoryConfig.load(make_config("sqlite", tmp_path, dedup={"memory_similarity": 0.9}))
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        said = [[{"role": "user", "name": "Rui", "content": t}]
                for t in ("I really like green tea in the morning.", "I really like green tea in the morning!")]
        one, two = m.add_many(said, user_id=uid)["items"]
        assert [r["event"] for r in one["results"] + two["results"]] == ["ADD", "NONE"]
        assert two["results"][0]["id"] == one["results"][0]["id"]
        assert len(m.get_all(user_id=uid)["results"]) == 1


def test_a_sentence_said_twice_near_a_stored_memory_is_that_memory_twice(backend: str, tmp_path: Path,
                                                                         uid: str) -> None:
    """The second copy of a sentence follows the first, which a near-duplicate of a stored memory takes
    over; it once pointed at an id never written, and every re-plan of the write failed."""
    cfg = MemoryConfig.load(make_config(backend, tmp_path, dedup={"memory_similarity": 0.9}))
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        stored = m.add("I live in Lisbon with my two cats.", user_id=uid, speaker="Kari")["results"][0]["id"]
        out = m.add("I live in Lisbon with my two cats! I live in Lisbon with my two cats!", user_id=uid,
                    speaker="Kari")["results"]
        assert [(r["id"], r["event"]) for r in out] == [(stored, "NONE"), (stored, "NONE")]
        assert len(m.get_all(user_id=uid)["results"]) == 1


def test_entity_names_not_stored_are_embedded_with_the_memories(backend: str, tmp_path: Path, uid: str) -> None:
    """A local model's call costs about as much for a short name as for a sentence, so ``add`` makes
    one embedding call: the memories and the entity names a read found unknown; a stored name is not
    embedded again."""
    m = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384))
    calls: list[list[str]] = []
    embed = m.embedder.embed

    def counted(texts: Any) -> Any:
        calls.append(list(texts))
        return embed(texts)

    m.embedder.embed = counted  # type: ignore[method-assign]
    try:
        def lives(text: str, city: str) -> None:
            m.add(text, user_id=uid, infer=False, triples=[
                {"source": "Maya", "relation": "livesIn", "target": city, "source_type": "Person",
                 "target_type": "City"}])

        lives("Maya lives in Lisbon", "Lisbon")
        assert calls == [["Maya lives in Lisbon", "Maya", "Lisbon"]]
        lives("Maya moved to Porto", "Porto")
        assert calls[1:] == [["Maya moved to Porto", "Porto"]]
        facts = m.facts(user_id=uid, include_closed=True)["results"]
        assert sorted((f["target"]["name"], f["valid_to"] is None) for f in facts) == [
            ("Lisbon", False), ("Porto", True)]
        assert len({f["source"]["id"] for f in facts}) == 1  # one Maya
    finally:
        m.close()
