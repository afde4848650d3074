"""The SQLite store's in-memory vectors (one block per tenant) and their snapshot file: every read
must equal an exact scan of what the file holds, whatever was written, by whom, and in what order."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from graphmem.models import EventType, HistoryEvent, MemoryRecord, Scope, text_hash
from graphmem.stores.base import MemoryPatch, NewMemory
from graphmem.stores.sqlite import SQLiteStore
from graphmem.stores.sqlite.vectors import TOKEN_KEY, VectorCache

DIMS = 16
EMBEDDER = "test-random-16"
NOW = datetime(2024, 1, 1, tzinfo=UTC)
SCOPES = [Scope(user_id="alice"), Scope(user_id="bob"), Scope(user_id="alice", agent_id="helper"),
          Scope(user_id="alice", agent_id="helper", run_id="r1"), Scope(agent_id="helper"), Scope(run_id="r1")]


def _unit(rng: np.random.Generator) -> npt.NDArray[np.float32]:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _open(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    store.open(EMBEDDER, DIMS)
    return store


def _insert(store: SQLiteStore, rng: np.random.Generator, scope: Scope, n: int) -> list[str]:
    mems, events = [], []
    for _ in range(n):
        text = f"memory {uuid.uuid4().hex}"
        rec = MemoryRecord(id=str(uuid.uuid4()), memory=text, hash=text_hash(text), created_at=NOW,
                           user_id=scope.user_id, agent_id=scope.agent_id, run_id=scope.run_id)
        mems.append(NewMemory(rec, _unit(rng)))
        events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=text, user_id=scope.user_id,
                                   agent_id=scope.agent_id, run_id=scope.run_id, created_at=NOW))
    store.insert(mems, events)
    return [m.record.id for m in mems]


def _exact(store: SQLiteStore, scope: Scope, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
    """Top-k by a scan of the file's rows, through SQL alone."""
    conn = store._conn()
    rows = conn.execute("SELECT id, user_id, agent_id, run_id, embedding FROM memories").fetchall()
    hits = [(r[0], float(np.frombuffer(r[4], dtype=np.float32) @ query)) for r in rows
            if all(v is None or r[i] == v for i, v in enumerate((scope.user_id, scope.agent_id, scope.run_id), 1))]
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]


def _check(store: SQLiteStore, rng: np.random.Generator, k: int = 7) -> None:
    for scope in SCOPES:
        query = _unit(rng)
        got = store.candidates(scope, None, query, None, k).vector
        want = _exact(store, scope, query, k)
        assert [i for i, _ in got] == [i for i, _ in want], scope
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
        best = store.nearest(scope, query[None, :])[0]
        assert (best[0] if best else None) == (want[0][0] if want else None)


def test_blocks_follow_inserts_deletes_updates_and_other_writers(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    db = tmp_path / "v.db"
    reader, writer = _open(db), _open(db)  # two stores on one file: the writer stands for another process
    ids: dict[str, list[str]] = {}
    for scope in SCOPES[:4]:
        ids[str(scope)] = _insert(writer, rng, scope, 40)
    _check(reader, rng)
    alice = ids[str(SCOPES[0])]
    # deletes in the middle of a block (the last row moves into the hole), then new rows
    writer.delete(alice[3:30:2], SCOPES[0], NOW)
    _check(reader, rng)
    ids[str(SCOPES[0])] += _insert(writer, rng, SCOPES[0], 25)
    # a new vector for a memory, from the reader itself and from the other store
    for store, mid in ((reader, alice[0]), (writer, alice[1]), (writer, ids[str(SCOPES[2])][5])):
        scope = SCOPES[2] if mid == ids[str(SCOPES[2])][5] else SCOPES[0]
        store.update(mid, scope, MemoryPatch(updated_at=NOW, event_id=str(uuid.uuid4()), vector=_unit(rng)))
    _check(reader, rng)
    writer.delete_scope(Scope(user_id="bob"), NOW)
    _check(reader, rng)
    assert reader.candidates(Scope(user_id="bob"), None, _unit(rng), None, 5).vector == []
    reader.close()
    writer.close()


def test_a_tenant_never_sees_another_tenants_vectors(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    store = _open(tmp_path / "t.db")
    mine = set(_insert(store, rng, Scope(user_id="u1"), 30))
    theirs = _insert(store, rng, Scope(user_id="u2"), 30)
    _insert(store, rng, Scope(user_id="u1", agent_id="a"), 10)
    probe = store.candidates(Scope(user_id="u2"), None, _unit(rng), None, 5).vector  # load the cache
    assert probe
    for _ in range(20):
        hits = store.candidates(Scope(user_id="u1", agent_id=None), None, _unit(rng), None, 100).vector
        assert set(theirs).isdisjoint(i for i, _ in hits)
        hits = store.candidates(Scope(user_id="u1", agent_id="a"), None, _unit(rng), None, 100).vector
        assert len(hits) == 10 and mine.isdisjoint(i for i, _ in hits)
    # the cosine of another tenant's memory is not given out either
    assert store.records(Scope(user_id="u1"), theirs[:3], None, _unit(rng))[1] == {}
    assert store.candidates(Scope(user_id="nobody"), None, _unit(rng), None, 5).vector == []
    store.close()


def _loaded_from_snapshot(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Refresh ``store``'s cache, saying whether it came from the snapshot (no full SQL load)."""
    loads: list[int] = []
    original = VectorCache._load_all

    def counting(self: VectorCache, conn: object) -> None:
        loads.append(1)
        original(self, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorCache, "_load_all", counting)
    store.candidates(Scope(user_id="alice"), None, np.ones(DIMS, dtype=np.float32) / 4, None, 1)
    monkeypatch.setattr(VectorCache, "_load_all", original)
    return not loads


def test_snapshot_is_used_then_replayed_and_refused_when_it_does_not_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    db = tmp_path / "s.db"
    snapshot = db.with_name(db.name + "-vectors")
    store = _open(db)
    for scope in SCOPES[:4]:
        _insert(store, rng, scope, 30)
    assert store.optimize()["vectors_snapshot"] is True and snapshot.exists()
    store.close()

    fresh = _open(db)
    assert _loaded_from_snapshot(fresh, monkeypatch)
    _check(fresh, rng)
    # writes after the snapshot (another store) are replayed on top of it at the next cold start
    other = _open(db)
    gone = _insert(other, rng, SCOPES[1], 5)
    other.delete(gone[:2], SCOPES[1], NOW)
    other.update(gone[2], SCOPES[1], MemoryPatch(updated_at=NOW, event_id=str(uuid.uuid4()), vector=_unit(rng)))
    later = _open(db)
    assert _loaded_from_snapshot(later, monkeypatch)
    _check(later, rng)
    _check(fresh, rng)
    for s in (fresh, later, other):
        s.close()

    # a snapshot whose token is not the store's (another store's file, a restored backup) is ignored
    conn = _open(db)
    conn._conn().execute("UPDATE meta SET value = 'someone-else' WHERE key = ?", (TOKEN_KEY,))
    assert not _loaded_from_snapshot(conn, monkeypatch)
    _check(conn, rng)
    conn.close()

    # a file cut short is ignored too, and the store still answers exactly
    store = _open(db)
    assert store.optimize()["vectors_snapshot"] is True
    store.close()
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[: len(data) - 100])
    cut = _open(db)
    assert not _loaded_from_snapshot(cut, monkeypatch)
    _check(cut, rng)
    cut.close()


def test_snapshot_is_never_partly_written_and_stays_private(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    db = tmp_path / "p.db"
    store = _open(db)
    _insert(store, rng, SCOPES[0], 20)
    store.optimize()
    store.close()
    snapshot = db.with_name(db.name + "-vectors")
    assert snapshot.stat().st_mode & 0o777 == 0o600
    assert not list(tmp_path.glob("*.tmp"))  # written beside, then renamed over


def test_reembed_drops_the_snapshot_of_the_old_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    db = tmp_path / "r.db"
    store = _open(db)
    _insert(store, rng, SCOPES[0], 20)
    store.optimize()
    store.reembed_start("test-random-16b", DIMS)
    for kind in ("memory", "entity"):
        rows = store.reembed_pending(kind, None, None, 1000)
        if rows:
            store.reembed_stage(kind, rows, np.stack([_unit(rng) for _ in rows]))
    assert store.reembed_finish("test-random-16b", DIMS) == 0
    store.close()
    again = SQLiteStore(db)
    again.open("test-random-16b", DIMS)
    assert not _loaded_from_snapshot(again, monkeypatch)
    _check(again, rng)
    again.close()


def test_close_rewrites_the_snapshot_only_when_far_behind(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    db = tmp_path / "c.db"
    store = _open(db)
    _insert(store, rng, SCOPES[0], 10)
    store.optimize()
    store.close()
    snapshot = db.with_name(db.name + "-vectors")
    first = snapshot.stat().st_mtime_ns
    store = _open(db)
    _insert(store, rng, SCOPES[0], 3)
    _check(store, rng)  # loads the snapshot, replays three rows
    store.close()  # three changes behind: not rewritten
    assert snapshot.stat().st_mtime_ns == first


def test_close_writes_a_snapshot_of_a_big_store_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmem.stores.sqlite.vectors as sv

    monkeypatch.setattr(sv, "_SNAPSHOT_FROM", 50)
    rng = np.random.default_rng(4)
    for name, rows in (("small.db", 20), ("big.db", 60)):
        store = _open(tmp_path / name)
        _insert(store, rng, SCOPES[0], rows)
        _check(store, rng)  # loads the vectors through SQL
        store.close()
    assert not (tmp_path / "small.db-vectors").exists()
    assert (tmp_path / "big.db-vectors").exists()
    again = _open(tmp_path / "big.db")
    assert _loaded_from_snapshot(again, monkeypatch)
    _check(again, rng)
    again.close()


def test_the_int8_pass_of_a_big_block_returns_the_exact_top_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big block ranks its int8 copy, then re-scores: the hits and scores must be the exact scan's
    through appends, deletes (rows moved into holes), new vectors, a snapshot and a replay."""
    import numkong

    import graphmem.stores.sqlite.vectors as sv

    monkeypatch.setattr(sv, "_COARSE_FROM", 64)  # the pass runs from 64 rows, re-scoring 4k or 16
    monkeypatch.setattr(sv, "_RESCORED_MIN", 16)
    passes: list[int] = []
    cdist = numkong.cdist

    def counted(*args: object, **kwargs: object) -> object:
        passes.append(1)
        return cdist(*args, **kwargs)

    monkeypatch.setattr(numkong, "cdist", counted)
    rng = np.random.default_rng(13)
    db = tmp_path / "q.db"
    store, other = _open(db), _open(db)
    alice = _insert(store, rng, SCOPES[0], 300)
    _insert(store, rng, SCOPES[2], 40)
    _check(store, rng)
    assert passes, "the int8 pass did not run"
    store.delete(alice[10:200:3], SCOPES[0], NOW)
    for mid in alice[1:9]:
        other.update(mid, SCOPES[0], MemoryPatch(updated_at=NOW, event_id=str(uuid.uuid4()), vector=_unit(rng)))
    _insert(other, rng, SCOPES[0], 50)
    for _ in range(5):
        _check(store, rng)
    assert store.optimize()["vectors_snapshot"] is True
    store.close()
    _insert(other, rng, SCOPES[0], 20)  # replayed on top of the snapshot
    again = _open(db)
    assert _loaded_from_snapshot(again, monkeypatch)
    passes.clear()
    for _ in range(5):
        _check(again, rng)
    assert passes
    again.close()
    other.close()
