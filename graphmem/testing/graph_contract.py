"""The knowledge-graph half of the storage contract: atomic graph writes, provenance merging,
supersession, cleanup on delete, guard context, quarantine, tenant scope. Part of the backend kit
(:mod:`graphmem.testing.kit`), written against the :class:`~graphmem.stores.base.Store` methods directly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graphmem import Memory, StoreError
from graphmem.models import Entity, EventType, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope, text_hash
from graphmem.stores.base import GraphWrite, NewEntity, NewMemory

from .fixtures import mem, uid

__all__ = [
    "mem", "test_delete_forgets_only_what_the_memory_alone_supported",
    "test_delete_scope_removes_the_graph_of_that_scope_only", "test_failed_graph_write_leaves_nothing",
    "test_graph_write_merges_provenance_and_reads_back", "test_quarantine_is_stored_listed_and_released",
    "test_supersede_closes_old_edge_and_context_sees_open_facts", "uid",
]

GM = "https://graphmem.dev/ontology#"
T0 = datetime(2024, 3, 1, tzinfo=UTC)


def memory(mem: Memory, uid: str, text: str) -> NewMemory:
    rec = MemoryRecord(id=f"{uid}-m-{text_hash(text)[:8]}", memory=text, hash=text_hash(text), user_id=uid,
                       created_at=T0)
    return NewMemory(rec, mem.embedder.embed_one(text))


def entity(mem: Memory, uid: str, name: str, cls: str, aliases: list[str] | None = None) -> NewEntity:
    e = Entity(id=f"{uid}-e-{name}", name=name, classes=[GM + cls], aliases=aliases or [], user_id=uid, created_at=T0)
    return NewEntity(e, mem.embedder.embed_one(name))


def rel(uid: str, s: str, r: str, o: str, mids: list[str], **kw: Any) -> Relation:
    return Relation(**{"source_id": f"{uid}-e-{s}", "relation": GM + r, "target_id": f"{uid}-e-{o}",
                       "memory_ids": mids, "user_id": uid, "created_at": T0, **kw})


def seed(mem: Memory, uid: str) -> tuple[NewMemory, NewMemory]:
    m1, m2 = memory(mem, uid, "Ana works for Acme in Lisbon"), memory(mem, uid, "Ana still works for Acme")
    ents = [entity(mem, uid, "Ana", "Person", ["Ana Silva"]), entity(mem, uid, "Acme", "Company"),
            entity(mem, uid, "Lisbon", "City")]
    change = GraphWrite(
        memories=[m1, m2], entities=ents,
        mentions=[(m1.record.id, f"{uid}-e-Ana"), (m1.record.id, f"{uid}-e-Acme"), (m1.record.id, f"{uid}-e-Lisbon"),
                  (m2.record.id, f"{uid}-e-Ana"), (m2.record.id, f"{uid}-e-Acme")],
        relations=[rel(uid, "Ana", "worksFor", "Acme", [m1.record.id]),
                   rel(uid, "Ana", "livesIn", "Lisbon", [m1.record.id], valid_from=T0)],
        events=[HistoryEvent(memory_id=m.record.id, event=EventType.ADD, user_id=uid) for m in (m1, m2)],
    )
    result = mem.store.write(Scope(user_id=uid), change)
    assert len(result.added) == 2 and result.merged == []
    # the second memory supports the same fact: provenance grows, no twin edge
    again = mem.store.write(Scope(user_id=uid), GraphWrite(
        relations=[rel(uid, "Ana", "worksFor", "Acme", [m2.record.id])]))
    assert again.added == [] and len(again.merged) == 1
    return m1, m2


def test_graph_write_merges_provenance_and_reads_back(mem: Memory, uid: str) -> None:
    m1, m2 = seed(mem, uid)
    scope = Scope(user_id=uid)
    rels = mem.store.relations(scope)
    works = next(r for r in rels if r.relation == GM + "worksFor")
    assert sorted(works.memory_ids) == sorted([m1.record.id, m2.record.id])
    assert [r.relation for r in mem.store.relations(scope, memory_id=m2.record.id)] == [GM + "worksFor"]
    found = mem.store.find_entities(scope, ["ana silva", "lisbon", "nobody"])
    assert found["ana silva"].name == "Ana" and found["lisbon"].classes == [GM + "City"]
    assert "nobody" not in found
    assert mem.store.find_entities(Scope(user_id=uid + "-x"), ["ana silva"]) == {}


def test_supersede_closes_old_edge_and_context_sees_open_facts(mem: Memory, uid: str) -> None:
    seed(mem, uid)
    scope = Scope(user_id=uid)
    old = next(r for r in mem.store.relations(scope) if r.relation == GM + "livesIn")
    m3 = memory(mem, uid, "Ana moved to Porto")
    later = T0 + timedelta(days=30)
    mem.store.write(scope, GraphWrite(
        memories=[m3], entities=[entity(mem, uid, "Porto", "City")], mentions=[(m3.record.id, f"{uid}-e-Porto")],
        relations=[rel(uid, "Ana", "livesIn", "Porto", [m3.record.id], valid_from=later, created_at=later)],
        closes=[(old.id, later)],
    ))
    lives = [r for r in mem.store.relations(scope) if r.relation == GM + "livesIn"]
    assert [(r.target_id, r.valid_to) for r in lives] == [(f"{uid}-e-Lisbon", later), (f"{uid}-e-Porto", None)]
    assert len(mem.store.relations(scope, include_closed=False)) == 2
    ctx = mem.store.graph_context(scope, [f"{uid}-e-Ana"])
    assert {r.target_id for r in ctx.relations} == {f"{uid}-e-Acme", f"{uid}-e-Porto"}
    assert ctx.entities[f"{uid}-e-Porto"].classes == [GM + "City"]  # the other end's type comes along
    assert mem.store.graph_context(Scope(user_id=uid + "-x"), [f"{uid}-e-Ana"]).entities == {}


def test_delete_forgets_only_what_the_memory_alone_supported(mem: Memory, uid: str) -> None:
    m1, m2 = seed(mem, uid)
    scope = Scope(user_id=uid)
    mem.store.delete([m1.record.id], scope, T0)
    rels = mem.store.relations(scope)
    # worksFor survives on m2's support; livesIn had only m1 and is gone; Lisbon is now an orphan
    assert [(r.relation, r.memory_ids) for r in rels] == [(GM + "worksFor", [m2.record.id])]
    assert set(mem.store.find_entities(scope, ["ana", "acme", "lisbon"])) == {"ana", "acme"}
    mem.store.delete([m2.record.id], scope, T0)
    assert mem.store.relations(scope) == []
    assert mem.store.find_entities(scope, ["ana", "acme"]) == {}


def test_quarantine_is_stored_listed_and_released(mem: Memory, uid: str) -> None:
    scope = Scope(user_id=uid)
    m = memory(mem, uid, "Ana lives in Bob")
    entry = QuarantineEntry(triple={"source": "Ana", "relation": "livesIn", "target": "Bob"},
                            reasons=[{"constraint": "sh:ClassConstraintComponent", "message": "not a Place"}],
                            memory_ids=[m.record.id], ontology="abc", user_id=uid, created_at=T0)
    mem.store.write(scope, GraphWrite(memories=[m], quarantine=[entry]))
    [got] = mem.store.quarantined(scope)
    assert got.triple["target"] == "Bob" and got.reasons[0]["message"] == "not a Place"
    assert got.memory_ids == [m.record.id] and got.status == "quarantined"
    assert mem.store.quarantined(Scope(user_id=uid + "-x")) == []
    mem.store.write(scope, GraphWrite(released=[got.id],
                                      events=[HistoryEvent(memory_id=m.record.id, event=EventType.ADD, user_id=uid)]))
    assert mem.store.quarantined(scope) == []
    assert [q.status for q in mem.store.quarantined(scope, status=None)] == ["released"]
    mem.store.delete([m.record.id], scope, T0)  # quarantine keeps the triple, drops the dangling id
    assert mem.store.quarantined(scope, status=None)[0].memory_ids == []


def test_failed_graph_write_leaves_nothing(mem: Memory, uid: str) -> None:
    scope = Scope(user_id=uid)
    m = memory(mem, uid, "half written")
    bad = GraphWrite(memories=[m, m], entities=[entity(mem, uid, "Ana", "Person")],
                     relations=[rel(uid, "Ana", "knows", "Ana", [m.record.id])])
    with pytest.raises(StoreError):
        mem.store.write(scope, bad)
    assert mem.store.count(scope) == 0
    assert mem.store.relations(scope) == [] and mem.store.find_entities(scope, ["ana"]) == {}


def test_delete_scope_removes_the_graph_of_that_scope_only(mem: Memory, uid: str) -> None:
    seed(mem, uid)
    seed(mem, uid + "-b")
    assert mem.delete_all(user_id=uid)["deleted"] == 2
    assert mem.store.relations(Scope(user_id=uid)) == []
    assert mem.store.find_entities(Scope(user_id=uid), ["ana"]) == {}
    assert len(mem.store.relations(Scope(user_id=uid + "-b"))) == 2
