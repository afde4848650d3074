"""The Neo4j client as a cluster needs it (issue 41): no query or lock wait is bound by the connect
timeout, read-your-writes through bookmarks shared by a Memory's sessions and passed between
Memories, reads sent as read transactions. The whole suite runs through a ``neo4j://`` (routing) URI
(``tools/run-tests.sh``); these tests also run with whatever URI the suite has."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from neo4j import GraphDatabase

from graphmem import AsyncMemory, Memory
from graphmem.errors import InvalidInputError
from tests.conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER, make_config

pytestmark = pytest.mark.neo4j


def _memory(tmp_path: Path, **store: Any) -> Memory:
    cfg = make_config("neo4j", tmp_path)
    cfg["store"].update(store)
    return Memory(cfg)


def test_an_analyst_query_longer_than_the_connect_timeout_completes(tmp_path: Path, neo4j_available: bool) -> None:
    with _memory(tmp_path, connect_timeout_s=0.5, cypher_timeout_s=60) as m:
        started = time.monotonic()
        rows = m.cypher("UNWIND range(1, 20000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x) AS n")
        assert rows == [{"n": 20000000 // 7}]
        assert time.monotonic() - started > 0.5, "the query must outlast the connect timeout to show anything"


def test_a_write_waiting_for_a_lock_longer_than_the_connect_timeout_completes(tmp_path: Path, uid: str,
                                                                             neo4j_available: bool) -> None:
    """Another transaction holds the entity's lock for 2 s; the add waits for it and commits."""
    triple = {"source": "Ada", "relation": "livesIn", "target": "Lisbon", "source_type": "Person",
              "target_type": "City"}
    with _memory(tmp_path, connect_timeout_s=0.5) as m, \
            GraphDatabase.driver(NEO4J_URI, auth=(NEO4J_USER, NEO4J_PASSWORD)) as driver:
        m.add("Ada lives in Lisbon.", user_id=uid, infer=False, triples=[triple])
        held = threading.Event()

        def hold() -> None:
            with driver.session() as session, session.begin_transaction() as tx:
                tx.run("MATCH (e:Entity {user_id: $u}) SET e.held_by_test = true", u=uid).consume()
                held.set()
                time.sleep(2.0)
                tx.rollback()

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        started = time.monotonic()
        out = m.add("Ada moved to Porto.", user_id=uid, infer=False, triples=[{**triple, "target": "Porto"}])
        waited = time.monotonic() - started
        holder.join()
        assert [r["target"] for r in out["relations"]["added"]] == ["Porto"]
        assert waited > 1.0, f"the add did not wait for the lock ({waited:.2f} s): the test shows nothing"
        m.delete_all(user_id=uid)


def test_writes_leave_bookmarks_that_another_memory_reads_after(tmp_path: Path, uid: str,
                                                                neo4j_available: bool) -> None:
    with _memory(tmp_path / "a") as writer, _memory(tmp_path / "b") as reader:
        opened = writer.bookmarks()  # opening a store writes too (its schema, its pins)
        writer.add("Maya moved to Porto.", user_id=uid, infer=False)
        token = writer.bookmarks()
        assert token and token != opened and all(isinstance(b, str) and b for b in token)
        reader.read_after(token)
        assert set(token) <= set(reader.bookmarks())  # kept: every later session of the reader sends them
        assert [r["memory"] for r in reader.get_all(user_id=uid)["results"]] == ["Maya moved to Porto."]
        writer.add("Maya likes tea.", user_id=uid, infer=False)
        assert writer.bookmarks() != token  # the newer bookmark replaces the one it implies
        writer.delete_all(user_id=uid)


def test_a_malformed_bookmark_is_refused_and_not_kept(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    with _memory(tmp_path) as m:
        held = m.bookmarks()
        for bad in (["garbage"], ["FB:kcwQ"]):
            with pytest.raises(InvalidInputError, match="bookmarks"):
                m.read_after(bad)
        assert m.bookmarks() == held
        assert m.get_all(user_id=uid)["results"] == []  # later reads are not poisoned


def test_async_sessions_share_the_bookmarks(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(make_config("neo4j", tmp_path)) as m:
            before = m.bookmarks()
            await m.add("Maya moved to Porto.", user_id=uid, infer=False)  # the async driver's write
            token = m.bookmarks()
            assert token != before
            found = await m.search("Porto", user_id=uid)
            assert found["results"]
            await m.delete_all(user_id=uid)
            return token

    assert asyncio.run(main())


def test_reads_are_read_transactions(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    """A cluster serves read transactions from followers and write transactions from the leader:
    every session a search, get_all, history or facts call opens is a read session, and none runs
    a write transaction (the driver's own session calls, recorded)."""
    with _memory(tmp_path) as m:
        mid = m.add("Maya moved to Porto.", user_id=uid, infer=False)["results"][0]["id"]
        driver = m.store._db.driver  # type: ignore[attr-defined]
        opened: list[str] = []
        real = driver.session

        def session(**kwargs: Any) -> Any:
            s = real(**kwargs)
            opened.append(kwargs.get("default_access_mode", "WRITE"))
            write = s.execute_write

            def execute_write(*args: Any, **kw: Any) -> Any:
                opened.append("execute_write")
                return write(*args, **kw)

            s.execute_write = execute_write
            return s

        driver.session = session
        try:
            m.search("where does Maya live?", user_id=uid)
            m.get_all(user_id=uid)
            m.get(mid, user_id=uid)
            m.history(mid, user_id=uid)
            m.facts(user_id=uid)
            m.entities(user_id=uid)
        finally:
            driver.session = real
        assert opened and set(opened) == {"READ"}, opened
        m.delete_all(user_id=uid)
