"""Backups of a live store (``Memory.backup``, ``graphmem backup``) and their restore.

Writers keep adding (with facts about shared people) and deleting while the backup runs; the
backup restored into a new store must hold every write acknowledged before the backup began and
not deleted before it, and pass the integrity checks: SQLite's own, no fact citing a memory the
store lacks, one entity per name, at most one open value of a functional property, the shapes."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench import race
from graphmem import Memory
from graphmem.errors import DumpConflictError, InvalidInputError
from graphmem.models import Scope
from graphmem.transfer.export import export_dump
from tests.conftest import make_config
from tests.test_cli_transfer import run

PEOPLE = ["Ada", "Bruno", "Chen", "Dara"]
TOWNS = ["Lisbon", "Porto", "Braga", "Faro"]


def _memory(backend: str, home: Path) -> Memory:
    return Memory(make_config(backend, home))


class Writers:
    """Threads adding memories with facts (and deleting some of their own) until stopped; what each
    acknowledged, and when."""

    def __init__(self, m: Memory, uid: str, threads: int = 3) -> None:
        self.m, self.uid = m, uid
        self.acked: list[tuple[float, str, str]] = []  # (time acknowledged, id, text)
        self.deleted: list[tuple[float, float, str]] = []  # (time the delete began, acknowledged, id)
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(w,)) for w in range(threads)]

    def _run(self, w: int) -> None:
        n = 0
        mine: list[str] = []
        try:
            while not self.stop.is_set():
                n += 1
                person, town = PEOPLE[(w + n) % 4], TOWNS[n % 4]
                if n % 5 == 0 and mine:
                    mid = mine.pop()  # the newest: what was added before a backup mostly stays
                    start = time.monotonic()
                    self.m.delete(mid, user_id=self.uid)
                    with self.lock:
                        self.deleted.append((start, time.monotonic(), mid))
                    continue
                text = f"{person} note {w}-{n}: moved to {town}"
                r = self.m.add(text, user_id=self.uid, infer=False, triples=[
                    {"source": person, "relation": "livesIn", "target": town, "source_type": "Person",
                     "target_type": "City"},
                    {"source": person, "relation": "knows", "target": PEOPLE[n % 4], "target_type": "Person"}])
                mid = r["results"][0]["id"]
                mine.append(mid)
                with self.lock:
                    self.acked.append((time.monotonic(), mid, text))
        except BaseException as exc:
            self.errors.append(exc)

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        while (len(self.acked) < 6 or not self.deleted) and not self.errors:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def expected(self, began: float, ended: float) -> tuple[dict[str, str], set[str]]:
        """What a backup that began and ended at these times must hold: the adds acknowledged before
        it began and not being deleted before it ended (a snapshot would keep those deleted after it
        began too); and what it must not: the deletes acknowledged before it began."""
        with self.lock:
            touched = {mid for start, _, mid in self.deleted if start < ended}
            held = {mid: text for at, mid, text in self.acked if at < began and mid not in touched}
            return held, {mid for _, done, mid in self.deleted if done < began}


def check_integrity(m: Memory, uid: str) -> None:
    scope = Scope(user_id=uid)
    present = {r["id"] for r in m.get_all(user_id=uid, limit=10_000)["results"]}
    dangling = [(f.id, mid) for f in m.store.relations(scope) for mid in f.memory_ids if mid not in present]
    assert dangling == []
    for name in PEOPLE + TOWNS:
        assert race.entity_count(m, scope, name) <= 1, name
    for person in PEOPLE:
        assert race.open_values(m, scope, person, "livesIn") <= 1, person
    assert m.dry_run(m.ontology, user_id=uid)["invalid"] == []


def check_sqlite_file(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


@pytest.mark.slow
def test_backup_under_writers_restores_every_acknowledged_write(backend: str, tmp_path: Path, uid: str) -> None:
    with _memory(backend, tmp_path / "live") as m, Writers(m, uid) as writers:
        time.sleep(0.3)
        began = time.monotonic()
        result = m.backup(tmp_path / "backup")
        ended = time.monotonic()
        time.sleep(0.2)  # writers go on after it
    assert not writers.errors, writers.errors[:1]
    expected, gone = writers.expected(began, ended)
    assert len(expected) >= 5 and gone
    if backend == "sqlite":
        assert result["format"] == "sqlite" and result["snapshot"] is True
        check_sqlite_file(tmp_path / "backup")
    else:
        assert result["format"] == "jsonl" and result["snapshot"] is False and "not a snapshot" in result["note"]
    with _memory("sqlite", tmp_path / "restored") as fresh:  # Neo4j Community has one database: the live one
        check_restore(fresh, tmp_path / "backup", result["format"], uid, expected, gone)
        check_sqlite_file(tmp_path / "restored" / "graphmem.db")


def check_restore(fresh: Memory, backup: Path, kind: str, uid: str, expected: dict[str, str], gone: set[str]
                  ) -> None:
    assert fresh.restore(backup)["format"] == kind
    stored = {r["id"]: r["memory"] for r in fresh.get_all(user_id=uid, limit=10_000)["results"]}
    assert {mid: text for mid, text in expected.items() if stored.get(mid) != text} == {}
    assert gone & set(stored) == set()
    check_integrity(fresh, uid)


@pytest.mark.neo4j
@pytest.mark.slow
def test_a_sqlite_backup_under_writers_restores_into_neo4j(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    with _memory("sqlite", tmp_path / "live") as m, Writers(m, uid) as writers:
        time.sleep(0.3)
        began = time.monotonic()
        m.backup(tmp_path / "backup")
        ended = time.monotonic()
    expected, gone = writers.expected(began, ended)
    with _memory("neo4j", tmp_path / "restored") as fresh:
        try:
            check_restore(fresh, tmp_path / "backup", "sqlite", uid, expected, gone)
        finally:
            fresh.delete_all(user_id=uid)

def test_a_restore_into_a_store_holding_the_scope_is_refused_and_writes_nothing(backend: str, tmp_path: Path,
                                                                                uid: str) -> None:
    with _memory(backend, tmp_path / "live") as m:
        m.add("Ada lives in Lisbon.", user_id=uid, infer=False)
        m.backup(tmp_path / "backup")
        before = m.get_all(user_id=uid)["results"]
        with pytest.raises(DumpConflictError):
            m.restore(tmp_path / "backup")
        assert m.get_all(user_id=uid)["results"] == before


def test_backup_refuses_an_existing_file_and_a_missing_folder(tmp_path: Path, uid: str) -> None:
    with _memory("sqlite", tmp_path / "live") as m:
        (tmp_path / "taken").write_text("keep me")
        with pytest.raises(InvalidInputError, match="exists"):
            m.backup(tmp_path / "taken")
        assert (tmp_path / "taken").read_text() == "keep me"
        with pytest.raises(InvalidInputError, match="folder"):
            m.backup(tmp_path / "nowhere" / "backup")
        with pytest.raises(InvalidInputError):
            m.restore(tmp_path / "no-such-backup")


def test_a_sqlite_backup_is_itself_a_store(tmp_path: Path, uid: str) -> None:
    """The backup file opens as the store (``store.path``) with everything in it."""
    with _memory("sqlite", tmp_path / "live") as m:
        m.add("Ada lives in Lisbon.", user_id=uid, infer=False, triples=[
            {"source": "Ada", "relation": "livesIn", "target": "Lisbon", "source_type": "Person",
             "target_type": "City"}])
        m.backup(tmp_path / "backup.db")
        want = m.get_all(user_id=uid)["results"]
    cfg = make_config("sqlite", tmp_path / "other")
    cfg["store"]["path"] = str(tmp_path / "backup.db")
    with Memory(cfg) as copy:
        assert copy.get_all(user_id=uid)["results"] == want
        assert [f["relation"].rpartition("#")[2] for f in copy.facts(user_id=uid)["results"]] == ["livesIn"]


def test_an_export_while_writers_run_imports_whole(backend: str, tmp_path: Path, uid: str) -> None:
    """Read a page at a time, an export under writers leaves out references to rows it passed before
    they were written (and says how many), so the import never refuses it."""
    with _memory(backend, tmp_path / "live") as m, Writers(m, uid):
        time.sleep(0.3)
        dumped = export_dump(m.store, tmp_path / "dump.jsonl", scope=Scope(user_id=uid), embedder=m.embedder.name,
                             dims=m.embedder.dims, batch=2)
    assert set(dumped["left_out"]) == {"mentions", "facts", "citations"}
    with _memory("sqlite", tmp_path / "fresh") as fresh:
        fresh.import_(tmp_path / "dump.jsonl")
        check_integrity(fresh, uid)


def test_cli_backup_and_restore(tmp_path: Path, uid: str) -> None:
    home = tmp_path / "home"
    with _memory("sqlite", home) as m:
        m.add("Ada lives in Lisbon.", user_id=uid, infer=False)
    code, out, err = run(home, "backup", str(tmp_path / "b.db"), "--json")
    assert code == 0, err
    assert json.loads(out)["snapshot"] is True
    code, out, err = run(tmp_path / "new", "restore", str(tmp_path / "b.db"), "--json")
    assert code == 0, err
    assert json.loads(out)["copied"]["memory"] == 1
    code, out, err = run(tmp_path / "new", "restore", str(tmp_path / "b.db"))
    assert code != 0 and "already holds scope" in err


def test_a_dump_page_skips_rows_deleted_while_it_was_read() -> None:
    """A memory deleted by another transaction after the page's read matched it reads as nulls (Neo4j
    is read-committed): it is left out, and a page holding only such rows is read past, not taken
    for the end of the dump."""
    from graphmem.stores.neo4j.dump import _live_page

    rows = [{"key": f"m{i}", "alive": i not in (2, 3, 4, 5)} for i in range(1, 9)]
    reads: list[str] = []

    class Tx:
        def run(self, _query: str, params: dict[str, Any]) -> Any:
            reads.append(params["after"])
            page = [r for r in rows if r["key"] > params["after"]][: params["limit"]]
            return type("Result", (), {"data": lambda self: page})()

    class Db:
        def read(self, _what: str, work: Any) -> Any:
            return work(Tx())

    def pages() -> list[list[str]]:
        out, after = [], ""
        while page := _live_page(Db(), "dump", "q", {"after": after, "limit": 2}, lambda r: r["alive"]):  # type: ignore[arg-type]
            out.append([r["key"] for r in page])
            after = page[-1]["key"]
        return out

    assert pages() == [["m1"], ["m6", "m7"], ["m8"]]
    assert reads == ["", "m1", "m3", "m5", "m7", "m8"]  # m2..m5 read past, then the end
