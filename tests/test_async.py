"""Native ``AsyncMemory``: many concurrent adds and searches on one instance lose nothing, and a
cancelled add writes all or nothing.

The LLM is the suite's OpenAI-compatible stand-in over real HTTP (``fact_responder``: the chunk's
``FACT`` lines are what the model "extracts"); Neo4j is the shared dev server, each test in its own
user scope. The stand-in's ``ThreadingHTTPServer`` answers requests concurrently.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import AsyncMemory, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.testing import StandinServer
from graphmem.testing.fake_llm import fact_responder
from tests.conftest import make_config


class _Counting:
    """``fact_responder`` with a fixed delay, counting the requests it serves at once."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.delay_s)
            return fact_responder(body)
        finally:
            with self.lock:
                self.now -= 1


@pytest.fixture
def llm() -> Iterator[StandinServer]:
    with StandinServer() as server:
        yield server


def _config(backend: str, tmp_path: Path, llm: StandinServer, **extra: Any) -> MemoryConfig:
    return MemoryConfig.load(make_config(backend, tmp_path, llm={
        "provider": "openai", "base_url": llm.base_url, "api_key": "test", "model": "standin",
        "max_retries": 1, "output_retries": 1, "timeout_s": 30, "repair": False,
    }, dedup={"memory_similarity": 1.0, "entity_similarity": 1.0}, **extra))
    # "Worker5" and "Worker59" (their texts, their names) are different people here: the hashing
    # embedder's n-grams would make them near-duplicates, a judgement these tests are not about


def _fact(who: str, firm: str) -> list[dict[str, str]]:
    return [{"role": "user", "name": who, "content": f"FACT {who}:Person worksFor {firm}:Company"}]


@pytest.mark.neo4j
def test_hundred_concurrent_adds_and_searches_lose_nothing(neo4j_available: bool, tmp_path: Path,
                                                          llm: StandinServer, uid: str) -> None:
    if not neo4j_available:
        pytest.skip("no Neo4j")
    responder = _Counting(0.02)
    llm.chat_responder = responder
    n, firms = 100, 5  # a few shared companies: concurrent adds race to create them (write conflicts, re-plans)

    async def main() -> tuple[list[Any], dict[str, Any], dict[str, Any], dict[str, Any], list[list[Any]]]:
        async with AsyncMemory(_config("neo4j", tmp_path, llm), embedder=HashingEmbedder(384)) as m:
            assert type(m._store).__name__ == "AsyncNeo4jStore"
            # One add and search of another scope first: the server plans their statements once, before
            # a hundred sessions would miss its plan cache together (what is tested is the writes racing).
            await m.add(_fact("Warm", "WarmFirm"), user_id=f"{uid}-warm")
            await m.search("Warm worksFor", user_id=f"{uid}-warm")
            adds = [m.add(_fact(f"Worker{i}", f"Firm{i % firms}"), user_id=uid) for i in range(n)]
            searches = [m.search(f"Worker{i} worksFor", user_id=uid) for i in range(0, n, 4)]
            done = await asyncio.gather(*adds, *searches)
            listed = await m.get_all(user_id=uid, limit=1000)
            facts = await m.facts(user_id=uid, limit=1000)
            people = await m.entities(user_id=uid, type="Person", limit=1000)
            histories = await asyncio.gather(*(m.history(r["id"], user_id=uid) for r in listed["results"]))
            return done, listed, facts, people, histories

    done, listed, facts, people, histories = asyncio.run(main())
    added, searched = done[:n], done[n:]
    odd = [a for a in added if not (len(a["results"]) == 1 and a["results"][0]["event"] == "ADD")]
    assert not odd, odd[:3]
    assert all(len(a["results"]) == 1 and a["results"][0]["event"] == "ADD" for a in added)
    assert all(len(a["relations"]["added"]) == 1 for a in added)
    ids = [a["results"][0]["id"] for a in added]
    assert len(set(ids)) == n  # none duplicated
    texts = sorted(r["memory"] for r in listed["results"])
    assert texts == sorted(f"Worker{i} worksFor Firm{i % firms}" for i in range(n))  # none lost
    assert {r["id"] for r in listed["results"]} == set(ids)
    assert all([e["event"] for e in h] == ["ADD"] for h in histories)
    assert len(facts["results"]) == n
    assert all(len(f["memories"]) == 1 for f in facts["results"])
    assert sorted(f["source"]["name"] for f in facts["results"]) == sorted(f"Worker{i}" for i in range(n))
    assert len({f["target"]["id"] for f in facts["results"]}) == firms  # one entity per firm, however raced
    assert len(people["results"]) == n
    assert all(isinstance(s["results"], list) for s in searched) and len(searched) == n // 4
    assert responder.most > 1  # the stand-in really served requests at the same time


def _check_whole(sync: Memory, uid: str, trials: int) -> tuple[int, int]:
    """Each trial's add is fully there (memory, ADD event, fact, entity) or not at all; no orphans."""
    listed = {r["memory"]: r for r in sync.get_all(user_id=uid, limit=1000)["results"]}
    facts = sync.facts(user_id=uid, limit=1000)["results"]
    by_source = {f["source"]["name"]: f for f in facts}
    entities = {e["name"]: e for e in sync.entities(user_id=uid, limit=1000)["results"]}
    present = absent = 0
    for i in range(trials):
        who, text = f"Trial{i}", f"Trial{i} worksFor Firm{i % 3}"
        if text in listed:
            present += 1
            mid = listed[text]["id"]
            assert [e["event"] for e in sync.history(mid, user_id=uid)] == ["ADD"]
            assert [m["id"] for m in by_source[who]["memories"]] == [mid]
            assert entities[who]["mentions"] == 1
        else:
            absent += 1
            assert who not in by_source and who not in entities
    assert set(listed) <= {f"Trial{i} worksFor Firm{i % 3}" for i in range(trials)} | {"After worksFor Firm0"}
    for e in entities.values():  # no orphan entity: each is mentioned by a stored memory
        assert e["mentions"] >= 1, e
    for f in facts:  # no fact without its memory
        assert f["memories"] and all(m["memory"] in listed for m in f["memories"])
    return present, absent


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)], indirect=True)
def test_cancelled_add_writes_all_or_nothing(backend: str, tmp_path: Path, llm: StandinServer, uid: str) -> None:
    llm.chat_responder = _Counting(0.01)
    trials = 40
    rng = random.Random(16)
    extra: dict[str, Any] = {}
    if backend == "sqlite":  # the OpenAI embedder over AsyncOpenAI too (Neo4j's store is pinned to 384 dims)
        extra["embedder"] = {"provider": "openai", "base_url": llm.base_url, "api_key": "test", "model": "standin",
                             "dims": 64}
    cfg = _config(backend, tmp_path, llm, **extra)
    embedder = HashingEmbedder(384) if backend == "neo4j" else None

    async def main() -> tuple[int, dict[str, Any]]:
        m = AsyncMemory(cfg, embedder=embedder)
        try:
            durations = []
            for j in range(3):  # the usual duration of one add
                start = time.perf_counter()
                await m.add(_fact(f"Warmup{j}", "Firm0"), user_id=f"{uid}-warm")
                durations.append(time.perf_counter() - start)
            usual = statistics.median(durations)
            cancelled = 0
            for i in range(trials):
                task = asyncio.create_task(m.add(_fact(f"Trial{i}", f"Firm{i % 3}"), user_id=uid))
                await asyncio.sleep(rng.uniform(0, usual))
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    cancelled += 1
            after = await m.add(_fact("After", "Firm0"), user_id=uid)  # still works
            found = await m.search("After worksFor", user_id=uid)
            assert found["results"][0]["memory"] == "After worksFor Firm0"
            return cancelled, after
        finally:
            await m.close()

    cancelled, after = asyncio.run(main())  # its end waits for worker threads still writing (SQLite)
    assert after["results"][0]["event"] == "ADD" and cancelled > 0
    sync = Memory(cfg, embedder=embedder)
    try:
        present, absent = _check_whole(sync, uid, trials)
    finally:
        sync.close()
    assert present + absent == trials and absent >= 1


def test_async_with_closes_and_sync_memory_unchanged(tmp_path: Path, llm: StandinServer, uid: str) -> None:
    """``async with`` closes the async clients; the sync Memory runs the same steps."""
    llm.chat_responder = fact_responder
    cfg = _config("sqlite", tmp_path, llm)

    async def main() -> AsyncMemory:
        async with AsyncMemory(cfg, embedder=HashingEmbedder(384)) as m:
            out = await m.add(_fact("Ada", "Babbage"), user_id=uid)
            assert [r["target"] for r in out["relations"]["added"]] == ["Babbage"]
            assert (await m.get(out["results"][0]["id"], user_id=uid))["memory"] == "Ada worksFor Babbage"
            extractor = m.sync.extractor
            assert getattr(extractor, "_aclient", None) is not None  # the extraction went through AsyncOpenAI
        assert getattr(extractor, "_aclient", None) is None  # closed by async with
        return m

    asyncio.run(main())
    with Memory(cfg, embedder=HashingEmbedder(384)) as sync:
        again = sync.add(_fact("Ada", "Babbage"), user_id=uid)
        assert again["results"][0]["event"] == "NONE"
        assert [f["target"]["name"] for f in sync.facts(user_id=uid)["results"]] == ["Babbage"]
