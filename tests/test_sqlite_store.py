"""What only the embedded store has to show: several processes on one file, and schema checks."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest

from graphmem import Memory, SchemaMismatchError
from graphmem.embedding import HashingEmbedder


def _config(path: Path) -> dict[str, object]:
    return {"store": {"provider": "sqlite", "path": str(path)}, "embedder": {"provider": "hashing"}}


def _writer(path: str, worker: int, n: int) -> None:
    with Memory(_config(Path(path))) as m:
        for i in range(n):
            m.add(f"process {worker} wrote fact number {i}", infer=False, user_id="shared", metadata={"w": worker})
            if i % 10 == 0:
                m.search(f"fact {i}", user_id="shared")


@pytest.mark.slow
def test_several_processes_write_one_file_without_lock_errors(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with Memory(_config(db)) as m:  # create the schema, and keep a reader open during the writes
        m.add("seed", infer=False, user_id="shared")
        assert m.search("fact", user_id="shared")["results"]
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=_writer, args=(str(db), w, 40)) for w in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        assert m.store.count() == 161
        # this process's vector cache catches up with the other processes' writes
        top = m.search("process 3 wrote fact number 39", user_id="shared", top_k=1)["results"][0]
        assert top["memory"] == "process 3 wrote fact number 39"
        assert m.get_all(user_id="shared", filters={"w": 2}, limit=1000)["results"].__len__() == 40


def test_reopening_with_another_embedder_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    Memory(_config(db), embedder=HashingEmbedder(384)).close()
    with pytest.raises(SchemaMismatchError, match="384"):
        Memory(_config(db), embedder=HashingEmbedder(256))
    Memory(_config(db), embedder=HashingEmbedder(384)).close()  # same embedder reopens fine


def test_memory_without_config_uses_graphmem_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRAPHMEM_EMBEDDER__PROVIDER", "hashing")
    with Memory() as m:
        m.add("hello", infer=False, user_id="u")
    assert (tmp_path / "home" / "graphmem.db").exists()


def test_store_from_before_access_counts_gains_them(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with Memory(_config(db)) as m:
        mid = m.add("The boiler was serviced in May", infer=False, user_id="u")["results"][0]["id"]
    with sqlite3.connect(db) as conn:  # the table as an earlier graphmem made it
        conn.executescript("ALTER TABLE memories DROP COLUMN access_count; "
                           "ALTER TABLE memories DROP COLUMN last_accessed_at;")
    cfg = {**_config(db), "search": {"decay": {"half_life_days": {"semantic": 30}, "flush_every": 1}}}
    with Memory(cfg) as m:
        assert m.get(mid, user_id="u")["access_count"] == 0
        assert [r["id"] for r in m.search("boiler", user_id="u")["results"]] == [mid]
        assert m.get(mid, user_id="u")["access_count"] == 1


def test_the_connections_of_finished_threads_are_closed(tmp_path: Path) -> None:
    """A server's worker threads retire after a lull and new ones take their place (the soak found one
    leaked connection, ~1.3 MB and two file descriptors, per thread that ever ran a call)."""
    import threading

    with Memory(_config(tmp_path / "graphmem.db"), embedder=HashingEmbedder(384)) as m:
        m.add("Ada lives in Lisbon.", user_id="u", infer=False)
        for _ in range(3):  # three lulls: a new set of workers each time
            workers = [threading.Thread(target=m.get_all, kwargs={"user_id": "u"}) for _ in range(6)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        late = threading.Thread(target=m.get_all, kwargs={"user_id": "u"})  # opening its connection prunes
        late.start()
        late.join()
        held = m.store._conns  # type: ignore[attr-defined]
        assert len(held) <= 2  # this thread's and the late one's, of the 20 connections opened
        assert all(t.is_alive() or t is late for t, _ in held)
        assert m.get_all(user_id="u")["results"]


def test_the_entity_vector_cache_keeps_its_bound(tmp_path: Path) -> None:
    cfg = {**_config(tmp_path / "graphmem.db"), "store": {"provider": "sqlite", "path": str(tmp_path / "graphmem.db"),
                                                        "entity_cache_mb": 0.01}}
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        for run in range(12):  # a run id per conversation: a new scope each
            for person, town in (("Ada", "Lisbon"), ("Bruno", "Porto")):  # the second looks up similar names
                m.add(f"{person} lives in {town}.", user_id="u", run_id=f"r{run}", infer=False, triples=[
                    {"source": person, "relation": "livesIn", "target": town, "source_type": "Person",
                     "target_type": "City"}])
        scopes, held = m.store._entity_vectors.held()  # type: ignore[attr-defined]
        assert held <= 0.01 * (1 << 20) and 1 <= scopes < 12
        assert len(m.facts(user_id="u", run_id="r0")["results"]) == 2  # a dropped scope is read again


def test_the_entity_vector_cache_drops_idle_scopes(tmp_path: Path) -> None:
    """Ended conversations (run ids not written for a while) leave the cache before its bound is reached."""
    def lives(m: Memory, person: str, town: str, run: str) -> None:  # a new name looks up similar ones
        m.add(f"{person} lives in {town}.", user_id="u", run_id=run, infer=False, triples=[
            {"source": person, "relation": "livesIn", "target": town, "source_type": "Person", "target_type": "City"}])

    with Memory(_config(tmp_path / "graphmem.db"), embedder=HashingEmbedder(384)) as m:
        cache = m.store._entity_vectors  # type: ignore[attr-defined]
        for run in range(4):
            lives(m, "Ada", "Lisbon", f"r{run}")
            lives(m, "Bruno", "Porto", f"r{run}")
        assert cache.held()[0] == 4  # well under the bound, none idle yet
        cache.idle_s = 0.0
        lives(m, "Carla", "Braga", "r0")
        assert cache.held()[0] == 1  # the scope just written
        lives(m, "Ada", "Faro", "r1")
        names = [e["name"] for e in m.entities(user_id="u", run_id="r1")["results"]]
        assert sorted(names) == ["Ada", "Bruno", "Faro", "Lisbon", "Porto"]  # Ada resolved to her entity
