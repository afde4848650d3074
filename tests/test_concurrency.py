"""Concurrent writers and readers on both backends: the result equals some serial order of the writes.

The races come from ``bench/race.py`` (writers released together by a barrier); the soak runs writers
and readers side by side for ``GRAPHMEM_SOAK_SECONDS`` (default 15 per backend) and then checks that
nothing acknowledged was lost and that the graph has no duplicate, orphan or dangling part.
"""

from __future__ import annotations

import os
import random
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from bench import race
from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ConflictError, DuplicateMemoryError
from graphmem.models import Scope, norm_name
from tests.conftest import make_config

GM = "https://graphmem.dev/ontology#"
SOAK_SECONDS = float(os.environ.get("GRAPHMEM_SOAK_SECONDS", "30"))


def run_threads(work: list[tuple[Any, int]]) -> list[BaseException]:
    """Run each ``fn(i)`` of ``work`` in its own thread; the exceptions they raised."""
    errors: list[BaseException] = []

    def guarded(fn: Any, i: int) -> None:
        try:
            fn(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=job) for job in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def memory(backend: str, tmp_path: Path, **extra: Any) -> Memory:
    return Memory(MemoryConfig.load(make_config(backend, tmp_path, **extra)), embedder=HashingEmbedder(384))


@pytest.mark.slow
def test_racing_writers_keep_every_identity_and_the_guard(backend: str, tmp_path: Path, uid: str) -> None:
    """8 threads per round, each scenario twice: one entity per name, one memory per text, one open
    value of a functional property and of a max-count-1 property, and the store's own facts pass
    its shapes afterwards."""
    with memory(backend, tmp_path) as m:
        got = race.run_threads(m, Scope(user_id=uid), threads=8, rounds=2)
    for name in race.SCENARIOS:
        assert got[name]["broken_rounds"] == 0, (name, got[name])
        assert got[name]["errors"] == 0, (name, got[name]["error_samples"])
    assert got["dry_run_invalid"] == 0


@pytest.mark.slow
def test_racing_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    """4 processes x 2 threads on one file (each process its own Memory, as separate workers are)."""
    got = race.run_processes(tmp_path, processes=4, rounds=1)
    assert got["errors"] == 0, got["error_samples"]
    assert got["broken_rounds"] == {"entity": 0, "text": 0, "functional": 0}, got
    assert got["dry_run_invalid"] == 0


def test_a_write_that_keeps_conflicting_raises_and_writes_nothing(backend: str, tmp_path: Path, uid: str) -> None:
    """With no re-plans allowed, writers that lose the race get ConflictError, and their memories
    and facts are absent: the winners' are all there is."""
    with memory(backend, tmp_path, store={**make_config(backend, tmp_path)["store"], "conflict_retries": 0}) as m:
        scope = Scope(user_id=uid)
        race._seed_person(m, scope, "Ada", "livesIn", "Oldtown", "City")
        won: list[str] = []

        def move(i: int) -> None:
            r = m.add(f"Ada moved to Town {i}.", user_id=uid, infer=False, triples=[
                {"source": "Ada", "relation": "livesIn", "target": f"Town {i}", "target_type": "City"}])
            won.append(r["results"][0]["memory"])

        errors = race.together(8, move)
        assert all(isinstance(e, ConflictError) for e in errors), errors
        assert len(won) + len(errors) == 8 and won
        stored = {r["memory"] for r in m.get_all(user_id=uid)["results"]}
        assert stored == {"Ada livesIn Oldtown.", *won}
        assert race.open_values(m, scope, "Ada", "livesIn") == 1


def test_update_relinks_an_entity_only_that_memory_mentions(backend: str, tmp_path: Path, uid: str) -> None:
    """The README's example: the updated text names the entity the old one alone supported."""
    with memory(backend, tmp_path) as m:
        added = m.add([{"role": "user", "content": "I'm allergic to peanuts", "name": "Maya"}], user_id=uid)
        memory_id = added["results"][0]["id"]
        assert m.store.relations(Scope(user_id=uid)), "the rule extractor states a fact about Maya"
        out = m.update(memory_id, "I'm allergic to peanuts and shellfish", user_id=uid)
        assert out["memory"] == "I'm allergic to peanuts and shellfish"
        scope = Scope(user_id=uid)
        facts = m.store.relations(scope, include_closed=False)
        assert facts and all(f.memory_ids == [memory_id] for f in facts)
        assert m.store.find_entities(scope, [norm_name("Maya")])
        assert m.get(memory_id, user_id=uid)["memory"].endswith("shellfish")


def test_update_to_another_memorys_text_is_refused(backend: str, tmp_path: Path, uid: str) -> None:
    with memory(backend, tmp_path) as m:
        first = m.add("I like green tea", user_id=uid, infer=False)["results"][0]["id"]
        second = m.add("I like black coffee", user_id=uid, infer=False)["results"][0]["id"]
        with pytest.raises(DuplicateMemoryError, match=first):
            m.update(second, "I like green tea", user_id=uid)
        assert m.get(second, user_id=uid)["memory"] == "I like black coffee"
        assert len(m.history(second, user_id=uid)) == 1


def test_names_without_features_do_not_block_a_tenant(backend: str, tmp_path: Path, uid: str) -> None:
    """The hashing embedder gives an emoji or punctuation a zero vector; Neo4j's cosine refuses those.
    Both backends store such names and memories, and later writes and searches in the scope work."""
    with memory(backend, tmp_path) as m:
        for odd in ("🙂", "!!!"):
            r = m.add(f"Ada likes {odd}", user_id=uid, infer=False, triples=[
                {"source": "Ada", "relation": "likes", "target": odd, "source_type": "Person"}])
            assert r["relations"]["added"] or r["relations"]["rejected"]
        assert m.add("🙂🙂", user_id=uid, infer=False)["results"][0]["event"] == "ADD"
        r = m.add("Ada works for Acme", user_id=uid, infer=False, triples=[
            {"source": "Ada", "relation": "worksFor", "target": "Acme", "target_type": "Organization"}])
        assert r["relations"]["added"]
        assert m.search("🙂", user_id=uid)["results"] is not None
        assert m.search("Ada Acme", user_id=uid)["results"]



def test_delete_all_while_writers_add(backend: str, tmp_path: Path, uid: str) -> None:
    """delete_all racing adds: every memory that survives keeps its facts (each is either deleted
    with the scope or added after it), and no fact cites a memory that is gone."""
    with memory(backend, tmp_path) as m:
        scope = Scope(user_id=uid)
        stop = time.monotonic() + 4

        def writer(w: int) -> None:
            n = 0
            while time.monotonic() < stop:
                n += 1
                m.add(f"Ada met Friend {w}-{n}", user_id=uid, infer=False, triples=[
                    {"source": "Ada", "relation": "knows", "target": f"Friend {w}-{n}", "source_type": "Person",
                     "target_type": "Person"}])

        def wiper(_: int) -> None:
            while time.monotonic() < stop:
                m.delete_all(user_id=uid)
                time.sleep(0.3)

        errors = run_threads([(writer, i) for i in range(3)] + [(wiper, 0)])
        assert not errors, "\n".join(f"{type(e).__name__}: {e}" for e in errors[:3])
        survivors = m.get_all(user_id=uid, limit=10_000)["results"]
        for rec in survivors:
            assert m.store.relations(scope, memory_id=rec["id"]), rec["memory"]
        assert _dangling(m, scope) == []
        assert race.entity_count(m, scope, "Ada") == (1 if survivors else 0)

def _dangling(m: Memory, scope: Scope) -> list[str]:
    """Provenance that names a memory no longer stored, and entities nothing supports."""
    present = {r["id"] for r in m.get_all(user_id=scope.user_id, limit=10_000)["results"]}
    out = [f"fact {f.id} cites {mid}" for f in m.store.relations(scope) for mid in f.memory_ids if mid not in present]
    return out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_soak_writers_and_readers(backend: str, tmp_path: Path, uid: str) -> None:
    """4 writers (add with facts about a few shared people, update, delete) and 2 readers (search,
    get_all) for SOAK_SECONDS: no error, every acknowledged memory present with its last text,
    every deleted one absent, one entity per name, no dangling provenance, shapes still pass."""
    with memory(backend, tmp_path) as m:
        scope = Scope(user_id=uid)
        people = ["Ada", "Bruno", "Chen", "Dara"]
        towns = ["Lisbon", "Porto", "Braga", "Faro", "Evora"]
        stop = time.monotonic() + SOAK_SECONDS
        expected: dict[str, str] = {}
        deleted: set[str] = set()
        lock = threading.Lock()
        ops = {"add": 0, "update": 0, "delete": 0, "search": 0}

        def writer(w: int) -> None:
            rng = random.Random(w)
            mine: list[str] = []
            n = 0
            while time.monotonic() < stop:
                n += 1
                person, town = rng.choice(people), rng.choice(towns)
                kind = rng.random()
                if kind < 0.7 or not mine:
                    text = f"{person} note {w}-{n}: moved to {town}"
                    r = m.add(text, user_id=uid, infer=False, triples=[
                        {"source": person, "relation": "livesIn", "target": town, "source_type": "Person",
                         "target_type": "City"},
                        {"source": person, "relation": "knows", "target": rng.choice(people), "target_type": "Person"},
                    ])
                    mid = r["results"][0]["id"]
                    mine.append(mid)
                    with lock:
                        expected[mid] = text
                        ops["add"] += 1
                elif kind < 0.85:
                    mid = rng.choice(mine)
                    text = f"{person} note {w}-{n}: lives in {town} now"
                    m.update(mid, text, user_id=uid)
                    with lock:
                        expected[mid] = text
                        ops["update"] += 1
                else:
                    mid = mine.pop(rng.randrange(len(mine)))
                    m.delete(mid, user_id=uid)
                    with lock:
                        expected.pop(mid, None)
                        deleted.add(mid)
                        ops["delete"] += 1

        def reader(r: int) -> None:
            rng = random.Random(100 + r)
            while time.monotonic() < stop:
                m.search(f"where does {rng.choice(people)} live", user_id=uid, top_k=5)
                m.get_all(user_id=uid, limit=20)
                with lock:
                    ops["search"] += 1

        errors = run_threads([(writer, i) for i in range(4)] + [(reader, i) for i in range(2)])
        assert not errors, "\n".join("".join(traceback.format_exception(e)) for e in errors[:3])
        assert ops["add"] > 10 and ops["search"] > 5, ops
        stored = {r["id"]: r["memory"] for r in m.get_all(user_id=uid, limit=10_000)["results"]}
        assert stored == expected
        assert not deleted & set(stored)
        for name in people + towns:
            assert race.entity_count(m, scope, name) <= 1, name
        for person in people:
            assert race.open_values(m, scope, person, "livesIn") <= 1, person
        assert _dangling(m, scope) == []
        assert m.dry_run(m.ontology, user_id=uid)["invalid"] == []

