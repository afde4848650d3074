"""The storage contract through the public API and the Store interface: what every backend must do.

Part of the backend kit (:mod:`graphmem.testing.kit`): each test gets a fresh :class:`Memory` over
the store under test (the ``graphmem_config`` fixture of :mod:`graphmem.testing.plugin`) and writes
under tenant ids no other test uses.
"""

from __future__ import annotations

import random
import threading
import unicodedata
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from graphmem import InvalidFilterError, InvalidInputError, Memory, NotFoundError, ScopeError, StoreError
from graphmem.errors import ReadOnlyError, UnsupportedError
from graphmem.filters import evaluate, parse
from graphmem.models import EventType, HistoryEvent, MemoryRecord, Scope, text_hash
from graphmem.stores.base import NewMemory, Store

from .fixtures import mem, uid

__all__ = [
    "mem", "test_add_get_update_delete_roundtrip", "test_bad_input_is_refused_and_nothing_written",
    "test_concurrent_writers_lose_nothing", "test_crowded_index_still_finds_the_scopes_matches",
    "test_cypher_is_read_only_or_refused", "test_each_memory_follows_the_one_written_before_it_in_its_scope",
    "test_every_call_needs_a_scope", "test_exact_duplicate_is_not_stored_twice",
    "test_failed_batch_writes_nothing", "test_filters_agree_with_reference_semantics",
    "test_history_outlives_delete_and_is_scoped", "test_ids_with_prefix_stay_in_scope",
    "test_nearest_finds_each_rows_closest_memory_in_scope", "test_optimize_keeps_data_and_ranking",
    "test_oversized_and_bad_metadata_refused", "test_scale_vector_search_is_exact_enough",
    "test_search_respects_filters_threshold_and_top_k", "test_search_sees_updates_and_deletes",
    "test_tenant_isolation", "test_times_are_stored_to_the_microsecond", "test_unicode_and_large_texts_roundtrip",
    "test_vector_and_fulltext_each_find_on_their_own", "uid",
]


def ids(result: dict[str, Any]) -> list[str]:
    return [r["id"] for r in result["results"]]


def test_add_get_update_delete_roundtrip(mem: Memory, uid: str) -> None:
    added = mem.add(
        [{"role": "user", "content": "I adopted a cat named Miso", "name": "Ana"},
         {"role": "assistant", "content": "Miso is a lovely name for a cat."}],
        infer=False, user_id=uid, agent_id="helper", metadata={"topic": "pets", "priority": 2}, memory_type="episodic",
        timestamp="2024-05-01T10:00:00Z",
    )
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    first = mem.get(added["results"][0]["id"], user_id=uid)
    assert first["memory"] == "I adopted a cat named Miso"
    assert first["role"] == "user" and first["actor_id"] == "Ana" and first["agent_id"] == "helper"
    assert first["metadata"] == {"topic": "pets", "priority": 2}
    assert first["memory_type"] == "episodic"
    assert first["event_time"].startswith("2024-05-01T10:00:00")

    updated = mem.update(first["id"], "I adopted two cats, Miso and Tofu", metadata={"priority": None, "n": 1},
                         user_id=uid)
    assert updated["memory"] == "I adopted two cats, Miso and Tofu"
    again = mem.get(first["id"], user_id=uid)
    assert again["metadata"] == {"topic": "pets", "n": 1}
    assert again["updated_at"] >= again["created_at"]
    assert ids(mem.search("Tofu", user_id=uid, top_k=1)) == [first["id"]]

    mem.delete(first["id"], user_id=uid)
    with pytest.raises(NotFoundError):
        mem.get(first["id"], user_id=uid)
    assert ids(mem.get_all(user_id=uid)) == [added["results"][1]["id"]]
    history = mem.history(first["id"], user_id=uid)
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"]
    assert history[1]["old_memory"] == "I adopted a cat named Miso"
    assert history[1]["new_memory"] == "I adopted two cats, Miso and Tofu"
    assert history[2]["old_memory"] == "I adopted two cats, Miso and Tofu"


def test_exact_duplicate_is_not_stored_twice(mem: Memory, uid: str) -> None:
    a = mem.add("I live in Lisbon", infer=False, user_id=uid)
    b = mem.add("  i LIVE in   lisbon ", infer=False, user_id=uid)
    assert b["results"][0]["event"] == "NONE"
    assert b["results"][0]["id"] == a["results"][0]["id"]
    assert len(mem.get_all(user_id=uid)["results"]) == 1
    # the same text in another scope is another tenant's memory
    other = mem.add("I live in Lisbon", infer=False, user_id=uid + "-other")
    assert other["results"][0]["event"] == "ADD"


def test_vector_and_fulltext_each_find_on_their_own(mem: Memory, uid: str) -> None:
    texts = [
        "The quarterly budget review is on Friday",
        "My favourite programming language is Rust",
        "Ticket ZX-4411 tracks the login outage",
        "I go climbing at the gym on Tuesdays",
    ]
    added = {r["memory"]: r["id"] for r in mem.add([{"role": "user", "content": t} for t in texts],
                                                     infer=False, user_id=uid)["results"]}
    scope = Scope(user_id=uid)
    vec = mem.embedder.embed_one("favourite programming languages")
    cands = mem.store.candidates(scope, None, vec, None, 3)
    assert cands.vector[0][0] == added[texts[1]]
    assert not cands.fulltext
    assert all(-1.0001 <= s <= 1.0001 for _, s in cands.vector)
    assert [s for _, s in cands.vector] == sorted((s for _, s in cands.vector), reverse=True)
    cands = mem.store.candidates(scope, None, None, "zx-4411 outage", 3)
    assert cands.fulltext[0][0] == added[texts[2]] and not cands.vector
    assert set(cands.records) == {i for i, _ in cands.fulltext}
    # query syntax in user text is plain words, never operators
    for hostile in ['"unclosed', "AND OR NOT", "title:x*", "a) OR (b", "NEAR(", "-*"]:
        mem.search(hostile, user_id=uid)
    result = mem.search("climbing gym", user_id=uid, explain=True)
    top = result["results"][0]
    assert top["id"] == added[texts[3]]
    assert set(top["score_details"]) >= {"vector", "fulltext", "fused"}
    assert top["score"] == pytest.approx(top["score_details"]["fused"])


def test_search_respects_filters_threshold_and_top_k(mem: Memory, uid: str) -> None:
    for i in range(6):
        mem.add(f"note number {i} about gardening", infer=False, user_id=uid, metadata={"i": i, "even": i % 2 == 0})
    res = mem.search("gardening note", user_id=uid, filters={"even": True}, top_k=10)
    assert sorted(r["metadata"]["i"] for r in res["results"]) == [0, 2, 4]
    assert len(mem.search("gardening note", user_id=uid, top_k=2)["results"]) == 2
    assert mem.search("gardening note", user_id=uid, threshold=2.0)["results"] == []
    with pytest.raises(InvalidFilterError, match="unknown operator"):
        mem.search("x", user_id=uid, filters={"i": {"between": [1, 2]}})
    with pytest.raises(InvalidFilterError):
        mem.get_all(user_id=uid, filters={"bad key!": 1})


def _random_value(rng: random.Random) -> Any:
    return rng.choice([
        None, True, False, 0, 1, 2, 2.5, -3, "a", "b", "Alpha", "alpha", "ß", "10", ["a", "b"], [1, 2], [], {"x": 1},
    ])


def _random_filter(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    if depth < 2 and rng.random() < 0.35:
        kind = rng.choice(["AND", "OR", "NOT"])
        if kind == "NOT":
            return {"NOT": _random_filter(rng, depth + 1)}
        return {kind: [_random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    field = rng.choice(["k1", "k2", "k3", "role", "memory_type", "created_at"])
    op = rng.choice(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"])
    if field == "created_at":
        op = rng.choice(["gt", "gte", "lt", "lte", "eq", "ne"])
        return {field: {op: f"2024-01-0{rng.randint(1, 6)}T00:00:00+00:00"}}
    scalars: list[Any] = [None, True, False, 0, 1, 2, 2.5, "a", "b", "alpha", "ALPHA", "ß", "user", "semantic", "10"]
    if op in ("in", "nin"):
        value: Any = rng.sample([s for s in scalars if s is not None], rng.randint(1, 3))
    elif op == "icontains":
        value = rng.choice(["a", "alp", "SS", "ß", "b"])
    elif op == "contains":
        value = rng.choice(["a", "alp", 1, 2, "b"])
    elif op in ("gt", "gte", "lt", "lte"):
        value = rng.choice([0, 1, 2.5, "a", "b", "alpha"])
    else:
        value = rng.choice(scalars)
    return {field: {op: value}}


def test_filters_agree_with_reference_semantics(mem: Memory, uid: str) -> None:
    """Compiled filters (SQL / Cypher) must select exactly what the reference evaluator selects."""
    rng = random.Random(7)
    scope = Scope(user_id=uid)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    records = []
    for i in range(60):
        md = {k: _random_value(rng) for k in ("k1", "k2", "k3") if rng.random() < 0.8}
        records.append(MemoryRecord(
            id=f"{uid}-{i:03d}", memory=f"memory {i}", hash=text_hash(f"memory {i}"), user_id=uid,
            role=rng.choice(["user", "assistant", None]), metadata=md,
            memory_type=rng.choice(["semantic", "episodic"]), created_at=base + timedelta(days=i % 7),
        ))
    vecs = mem.embedder.embed([r.memory for r in records])
    mem.store.insert([NewMemory(r, v) for r, v in zip(records, vecs, strict=True)], [])
    checked = 0
    for _ in range(150):
        spec = _random_filter(rng)
        flt = parse(spec)
        want = {
            r.id for r in records
            if evaluate(flt, {"role": r.role, "memory_type": r.memory_type.value,
                              "created_at": r.created_at}, r.metadata)
        }
        got = {r.id for r in mem.store.list_memories(scope, flt, 1000)}
        assert got == want, f"filter {spec}"
        checked += len(want)
    assert checked > 500  # the filters selected real rows, not only empty sets


def test_history_outlives_delete_and_is_scoped(mem: Memory, uid: str) -> None:
    mid = mem.add("temporary note", infer=False, user_id=uid)["results"][0]["id"]
    mem.delete(mid, user_id=uid)
    assert [h["event"] for h in mem.history(mid, user_id=uid)] == ["ADD", "DELETE"]
    with pytest.raises(NotFoundError):
        mem.history(mid, user_id=uid + "-x")


@pytest.mark.parametrize("text", [
    "naïve café — 東京で寿司を食べた 🍣 שלום مرحبا",
    "e\u0301 combining accents and zero\u200bwidth",
    "x" * 99_000,
    "multi\nline\ttext with \"quotes\" and 'apostrophes' and \\backslashes\\ and $params {braces}",
])
def test_unicode_and_large_texts_roundtrip(mem: Memory, uid: str, text: str) -> None:
    mid = mem.add(text, infer=False, user_id=uid)["results"][0]["id"]
    stored = mem.get(mid, user_id=uid)["memory"]
    assert stored == unicodedata.normalize("NFC", text).strip()
    assert ids(mem.search(text[:200], user_id=uid, top_k=1)) == [mid]


@pytest.mark.parametrize("when", ["1969-12-31T23:59:59.999999+00:00", "1970-01-01T00:00:00.000001+00:00",
                                  "1066-10-14T09:30:00.250000+00:00", "2024-02-29T23:59:59.500000+00:00"])
def test_times_are_stored_to_the_microsecond(mem: Memory, uid: str, when: str) -> None:
    """Memories, events, entities and facts keep their times exactly (the Neo4j store sends them as
    epoch seconds and microseconds: before 1970 that must floor, not truncate)."""
    at = datetime.fromisoformat(when)
    expires = at.replace(year=2996)  # ahead (and a leap year, for 29 February)
    added = mem.add("Ada lived in London", infer=False, user_id=uid, timestamp=when, expires_at=expires,
                    triples=[{"source": "Ada", "relation": "livesIn", "target": "London", "source_type": "Person",
                              "target_type": "City", "valid_from": when}])
    got = mem.get(added["results"][0]["id"], user_id=uid)
    assert datetime.fromisoformat(got["event_time"]) == at
    assert datetime.fromisoformat(got["expires_at"]) == expires
    (fact,) = mem.facts(user_id=uid)["results"]
    assert datetime.fromisoformat(fact["valid_from"]) == at
    assert [h["event"] for h in mem.history(got["id"], user_id=uid)] == ["ADD"]


def test_tenant_isolation(mem: Memory, uid: str) -> None:
    """No call made with scope A ever returns, changes or deletes scope B's data."""
    a, b = uid + "-a", uid + "-b"
    a_ids = ids(mem.add([{"role": "user", "content": f"alpha secret {i}"} for i in range(3)], infer=False, user_id=a))
    b_ids = ids(mem.add([{"role": "user", "content": f"alpha secret {i}"} for i in range(3)], infer=False, user_id=b))
    b_sub = ids(mem.add("alpha secret in a run", infer=False, user_id=b, agent_id="bot", run_id="r1"))
    b_before = {i: mem.get(i, user_id=b) for i in b_ids + b_sub}

    for bid in b_ids + b_sub:
        with pytest.raises(NotFoundError):
            mem.get(bid, user_id=a)
        with pytest.raises(NotFoundError):
            mem.update(bid, "overwritten by A", metadata={"x": 1}, user_id=a)
        with pytest.raises(NotFoundError):
            mem.delete(bid, user_id=a)
        with pytest.raises(NotFoundError):
            mem.history(bid, user_id=a)
    assert set(ids(mem.search("alpha secret", user_id=a, top_k=50))) == set(a_ids)
    assert set(ids(mem.get_all(user_id=a, limit=50))) == set(a_ids)
    with pytest.raises(ScopeError):  # mem0-style, a filter's user_id is the scope: given twice, differently
        mem.get_all(user_id=a, filters={"user_id": b})
    assert set(ids(mem.search("alpha", user_id=a, filters={"OR": [{"user_id": b}, {"user_id": a}]}))) <= set(a_ids)
    assert mem.store.delete(b_ids, Scope(user_id=a), datetime.now(UTC)) == []
    assert mem.delete_all(user_id=a)["deleted"] == 3
    assert mem.delete_all(agent_id="bot", run_id="r1", user_id=a)["deleted"] == 0

    assert {i: mem.get(i, user_id=b) for i in b_ids + b_sub} == b_before
    # narrower scopes inside one tenant
    assert ids(mem.get_all(user_id=b, agent_id="bot")) == b_sub
    assert mem.delete_all(user_id=b, run_id="r1")["deleted"] == 1
    assert set(ids(mem.get_all(user_id=b))) == set(b_ids)


def test_every_call_needs_a_scope(mem: Memory) -> None:
    calls: list[Callable[[], object]] = [
        lambda: mem.add("x"), lambda: mem.search("x"), lambda: mem.get_all(), lambda: mem.delete_all(),
        lambda: mem.add("x", infer=False, user_id=""), lambda: mem.add("x", infer=False, user_id="a\x00b"),
    ]
    for call in calls:
        with pytest.raises(ScopeError):
            call()
    # by-id calls take the memory's own scope (as mem0): an unknown id is simply not found
    for by_id in (lambda: mem.get("id"), lambda: mem.update("id", "x"), lambda: mem.delete("id"),
                  lambda: mem.history("id")):
        with pytest.raises(NotFoundError):
            by_id()


@pytest.mark.parametrize("bad", [
    "", "   ", [], "bell\x07", {"role": "robot", "content": "x"}, {"role": "user", "content": 5},
    {"role": "user", "content": "x", "extra": 1}, [{"role": "system", "content": "be nice"}], b"bytes", "\ud800",
])
def test_bad_input_is_refused_and_nothing_written(mem: Memory, uid: str, bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        mem.add(bad, infer=False, user_id=uid)
    assert mem.get_all(user_id=uid)["results"] == []


def test_oversized_and_bad_metadata_refused(mem: Memory, uid: str) -> None:
    with pytest.raises(InvalidInputError, match="max_memory_chars"):
        mem.add("y" * (mem.config.limits.max_memory_chars + 1), infer=False, user_id=uid)
    with pytest.raises(InvalidInputError):
        mem.add("ok", infer=False, user_id=uid, metadata={"when": object()})
    with pytest.raises(InvalidInputError):
        mem.add("ok", infer=False, user_id=uid, memory_type="dream")
    with pytest.raises(InvalidInputError):
        mem.search("ok", user_id=uid, top_k=0)
    assert mem.get_all(user_id=uid)["results"] == []


def test_failed_batch_writes_nothing(mem: Memory, uid: str) -> None:
    """A write that fails part-way (here: a duplicate id in the batch) leaves the store unchanged."""
    now = datetime.now(UTC)

    def rec(i: str) -> MemoryRecord:
        return MemoryRecord(id=i, memory=f"m {i}", hash=text_hash(i), user_id=uid, created_at=now)

    vec = mem.embedder.embed_one("m")
    dup = str(uuid.uuid4())
    batch = [NewMemory(rec(str(uuid.uuid4())), vec) for _ in range(5)] + [NewMemory(rec(dup), vec)] * 2
    events = [HistoryEvent(memory_id=n.record.id, event=EventType.ADD, user_id=uid) for n in batch]
    with pytest.raises(StoreError):
        mem.store.insert(batch, events)
    assert mem.store.count(Scope(user_id=uid)) == 0
    assert mem.store.history(batch[0].record.id, Scope(user_id=uid)) == []


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(mem: Memory, uid: str) -> None:
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(15):
                mem.add(f"thread {t} fact {i}", infer=False, user_id=uid, metadata={"t": t})
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert mem.store.count(Scope(user_id=uid)) == 90
    # one thread of 90: each memory follows another, none is followed twice (decided under the write lock)
    follows = [r.get("follows") for r in mem.get_all(user_id=uid, limit=100)["results"]]
    assert follows.count(None) == 1 and len(set(follows)) == 90

    target = mem.add("shared counter memory", infer=False, user_id=uid)["results"][0]["id"]

    def patcher(t: int) -> None:
        try:
            for i in range(8):
                mem.update(target, metadata={f"k{t}_{i}": i}, user_id=uid)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=patcher, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(mem.get(target, user_id=uid)["metadata"]) == 48
    assert [h["event"] for h in mem.history(target, user_id=uid)].count("UPDATE") == 48


def test_each_memory_follows_the_one_written_before_it_in_its_scope(mem: Memory, uid: str) -> None:
    """``follows``: within one add, across adds, per exact scope; the store's ``followers`` reads it
    back, search lifts the memory after a hit, and a deleted scope starts a new thread."""
    def add(*texts: str, run_id: str | None = None) -> list[str]:
        out = mem.add([{"role": "user", "content": t} for t in texts], infer=False, user_id=uid, run_id=run_id)
        return [r["id"] for r in out["results"]]

    (a,) = add("Which trail did you take on Saturday?")
    (other,) = add("a memory of another run", run_id="r2")
    (b,) = add("The Ridge Loop, about twelve kilometres.")
    c, d = add("We saw two eagles.", "And a fox near the lake.")
    got = {i: mem.get(i, user_id=uid).get("follows") for i in (a, other, b, c, d)}
    assert got == {a: None, other: None, b: a, c: b, d: c}
    found = mem.store.followers(Scope(user_id=uid), [a, c, "no-such-id"], None)
    assert sorted(found) == sorted([b, d]) and found[b].follows == a
    assert list(mem.store.followers(Scope(user_id=uid + "-other"), [a], None)) == []
    assert list(mem.store.followers(Scope(user_id=uid), [a], parse({"run_id": "r2"}))) == []

    hit = mem.search("Which trail did you take on Saturday?", user_id=uid, top_k=5, explain=True)["results"]
    assert hit[0]["id"] == a
    reply = next(h for h in hit if h["id"] == b)
    assert reply["score_details"]["reply"]["follows"] == a and reply["score_details"]["reply"]["added"] > 0

    mem.delete(d, user_id=uid)  # the last memory gone: the next follows the newest none follows
    (e,) = add("Then it rained.")
    assert mem.get(e, user_id=uid).get("follows") == c
    mem.delete_all(user_id=uid)
    (f,) = add("A new start.")
    assert mem.get(f, user_id=uid).get("follows") is None


def test_search_sees_updates_and_deletes(mem: Memory, uid: str) -> None:
    mid = mem.add("the meeting room is Orion", infer=False, user_id=uid)["results"][0]["id"]
    other = mem.add("lunch is at noon", infer=False, user_id=uid)["results"][0]["id"]
    mem.update(mid, "the meeting room moved to Vega", user_id=uid)
    assert ids(mem.search("Vega meeting room", user_id=uid, top_k=1)) == [mid]
    assert "Orion" not in str(mem.search("Orion", user_id=uid))
    mem.delete(mid, user_id=uid)
    assert ids(mem.search("Vega meeting room", user_id=uid)) == [other]


def test_ids_with_prefix_stay_in_scope(mem: Memory, uid: str) -> None:
    now = datetime.now(UTC)
    vec = mem.embedder.embed_one("prefix")
    mine = [MemoryRecord(id=f"{uid}-p{i}", memory=f"prefix {i}", hash=text_hash(f"p{i}"), user_id=uid, created_at=now)
            for i in (1, 2, 10)]
    theirs = MemoryRecord(id=f"{uid}-p3", memory="prefix 3", hash=text_hash("p3"), user_id=uid + "-x", created_at=now)
    mem.store.insert([NewMemory(r, vec) for r in mine], [])
    mem.store.insert([NewMemory(theirs, vec)], [])
    with pytest.raises(InvalidInputError, match="one exact scope"):
        mem.store.insert([NewMemory(r, vec) for r in [*mine, theirs]], [])
    scope = Scope(user_id=uid)
    assert mem.store.ids_with_prefix(scope, f"{uid}-p", 10) == [f"{uid}-p1", f"{uid}-p10", f"{uid}-p2"]
    assert mem.store.ids_with_prefix(scope, f"{uid}-p1", 10) == [f"{uid}-p1", f"{uid}-p10"]
    assert mem.store.ids_with_prefix(scope, f"{uid}-p", 1) == [f"{uid}-p1"]
    assert mem.store.ids_with_prefix(scope, f"{uid}-p3", 10) == []  # another tenant's
    assert mem.store.ids_with_prefix(scope, f"{uid}-q", 10) == []


def test_scale_vector_search_is_exact_enough(mem: Memory, uid: str) -> None:
    """With 1,500 memories, each memory's own vector finds it first (index recall sanity check)."""
    now = datetime.now(UTC)
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((1500, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    recs = [MemoryRecord(id=f"{uid}-{i}", memory=f"bulk {i}", hash=text_hash(f"bulk {i}"), user_id=uid,
                         created_at=now) for i in range(1500)]
    mem.store.insert([NewMemory(r, v) for r, v in zip(recs, vecs, strict=True)], [])
    scope = Scope(user_id=uid)
    hits = sum(mem.store.candidates(scope, None, vecs[i], None, 5).vector[0][0] == recs[i].id
               for i in range(0, 1500, 50))
    assert hits >= 29
    assert mem.delete_all(user_id=uid)["deleted"] == 1500
    assert mem.store.candidates(scope, None, vecs[0], None, 5).vector == []


def test_crowded_index_still_finds_the_scopes_matches(mem: Memory, uid: str) -> None:
    """Another tenant holding hundreds of stronger matches must not hide this scope's few matches
    from either signal (approximate over-fetch has to fall back to an exact pass)."""
    crowd = uid + "-crowd"
    now = datetime.now(UTC)
    vec = mem.embedder.embed_one("zebra zebra zebra stripes")
    recs = [MemoryRecord(id=f"{crowd}-{i}", memory=f"zebra zebra zebra stripes {i}", hash=f"h{i}",
                         user_id=crowd, created_at=now) for i in range(400)]
    mem.store.insert([NewMemory(r, vec) for r in recs], [])
    mine = ids(mem.add([{"role": "user", "content": f"one zebra among other notes {i}"} for i in range(3)],
                       infer=False, user_id=uid))
    cands = mem.store.candidates(Scope(user_id=uid), None, vec, "zebra stripes", 5)
    assert {i for i, _ in cands.fulltext} == set(mine)
    assert {i for i, _ in cands.vector} == set(mine)
    flt = parse({"role": "user"})
    cands = mem.store.candidates(Scope(user_id=uid), flt, vec, "zebra", 2)
    assert len(cands.fulltext) == 2 and len(cands.vector) == 2
    assert {i for i, _ in cands.fulltext} <= set(mine)
    mem.store.delete_scope(Scope(user_id=crowd), now)


def test_cypher_is_read_only_or_refused(mem: Memory, uid: str) -> None:
    """A store without Cypher refuses it naming the store that has it; one with Cypher never writes
    through it."""
    mem.add("analysts can read this", infer=False, user_id=uid)
    if type(mem.store).cypher is Store.cypher:
        with pytest.raises(UnsupportedError, match="Neo4j"):
            mem.cypher("MATCH (m:Memory) RETURN count(m)")
        return
    for write in ["MATCH (m:Memory {user_id: $u}) DETACH DELETE m", "CREATE (:Memory {id: 'x'})",
                  "MATCH (m:Memory {user_id: $u}) SET m.memory = 'changed'", "CREATE INDEX x FOR (n:X) ON (n.y)",
                  "MERGE (n:Memory {id: 'y'}) RETURN n"]:
        with pytest.raises(ReadOnlyError):
            mem.cypher(write, {"u": uid})
    assert [r["memory"] for r in mem.get_all(user_id=uid)["results"]] == ["analysts can read this"]


def test_nearest_finds_each_rows_closest_memory_in_scope(mem: Memory, uid: str) -> None:
    texts = ["the ferry leaves at noon", "quarterly tax filing is due", "my cat sleeps all day"]
    ids = [r["id"] for r in mem.add([{"role": "user", "content": t} for t in texts], infer=False,
                                    user_id=uid)["results"]]
    mem.add("the ferry leaves at noon", infer=False, user_id=uid + "-other")
    hits = mem.store.nearest(Scope(user_id=uid), mem.embedder.embed([texts[2], texts[0]]))
    assert [h[0] for h in hits if h] == [ids[2], ids[0]]
    assert all(h and h[1] > 0.99 for h in hits)
    assert mem.store.nearest(Scope(user_id=uid + "-none"), mem.embedder.embed(["x"])) == [None]


def test_optimize_keeps_data_and_ranking(mem: Memory, uid: str) -> None:
    """Compacting the indexes changes neither what is stored nor how a search ranks it."""
    texts = ["Ana moved to Lisbon in May", "Ana's sister Rita lives in Porto", "The cat Miso likes tuna",
             "Rita works at a bakery", "Lisbon has many hills"]
    for t in texts:
        mem.add(t, infer=False, user_id=uid)
    queries = ("Where does Rita live?", "tuna")
    before = {q: mem.search(q, user_id=uid, top_k=5, explain=True)["results"] for q in queries}
    assert isinstance(mem.optimize(), dict)
    assert len(mem.get_all(user_id=uid)["results"]) == len(texts)

    def cosines(results: list[dict[str, Any]]) -> list[float | None]:
        return [r["score_details"].get("vector", {}).get("raw") for r in results]

    # BM25 statistics may move (a rebuilt index forgets other tenants' deleted documents); cosines may not
    for q, results in before.items():
        again = mem.search(q, user_id=uid, top_k=5, explain=True)["results"]
        assert [r["id"] for r in again] == [r["id"] for r in results]
        assert cosines(again) == pytest.approx(cosines(results), abs=1e-6)
