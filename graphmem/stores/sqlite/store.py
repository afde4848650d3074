"""The embedded default store: one SQLite file (WAL, FTS5) with vectors searched by NumPy.

Why it does not say "database is locked": every write transaction starts with ``BEGIN IMMEDIATE``
(it takes the write lock up front, so a reader never has to upgrade and fail) and waits up to
``busy_timeout_ms`` for other writers, in this process or another. Each thread has its own
connection; readers never block writers in WAL mode.

Vectors live in the ``memories`` table as float32 blobs and in memory per process, one contiguous
matrix per tenant (:mod:`.vectors`, which also keeps a snapshot file for a fast cold start).
Triggers append every vector change to ``vec_changes``; before a search the matrices replay the
changes they have not seen, inside the search's read transaction, so they are exact and consistent
even when other processes write to the same file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConflictError, DuplicateMemoryError, SchemaMismatchError, StoreError, StoreUnavailableError
from ...filters import Filter
from ...models import (
    Entity,
    EventType,
    HistoryEvent,
    Keep,
    MemoryRecord,
    MemoryType,
    QuarantineEntry,
    Relation,
    Scope,
    build_record,
    iso,
)
from ...private_files import create_private_file, make_private_dirs
from ..base import (
    Candidates,
    EntityQuery,
    Expectations,
    FactQuery,
    FactStates,
    GraphQuery,
    GraphWrite,
    MemoryPatch,
    NewMemory,
    Records,
    ReembedRow,
    Restore,
    Store,
    StoreInfo,
    Subgraph,
    ThreadScope,
    Vector,
    WriteResult,
    new_tails,
    patched_metadata,
    seed_ids,
    stale_entities,
    stale_memories,
    thread_key,
    thread_scope,
    threaded,
)
from ..text import fts5_phrase, fts5_query, query_terms
from . import dump, graph, reembed
from .sql import exact_scope_sql, filter_sql, scope_sql
from .vectors import TOKEN_KEY, VectorCache

log = logging.getLogger("graphmem")

SCHEMA_VERSION = "2"
_MMAP_BYTES = 1 << 40
_BM25 = "'bm25(1.0, 0.0)'"  # the text column only: scope tokens must not score
_RANKED = 1_000
"""Rows BM25 ranks per full-text query when the scope and the query's terms allow a bound."""
_PRUNE_AT = 200_000  # vec_changes rows kept; a process further behind reloads the whole matrix

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    memory TEXT NOT NULL,
    hash TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    user_id TEXT, agent_id TEXT, run_id TEXT,
    role TEXT, actor_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL, updated_at TEXT, event_time TEXT, expires_at TEXT,
    embedding BLOB NOT NULL,
    scope_terms TEXT NOT NULL DEFAULT '',
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed_at TEXT,
    identity TEXT,
    follows TEXT
);
CREATE INDEX IF NOT EXISTS memories_user ON memories (user_id, created_at);
CREATE INDEX IF NOT EXISTS memories_agent ON memories (agent_id, created_at);
CREATE INDEX IF NOT EXISTS memories_run ON memories (run_id, created_at);
CREATE INDEX IF NOT EXISTS memories_hash ON memories (hash);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    memory, scope_terms, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS vec_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, mem_rowid INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, memory, scope_terms) VALUES (new.rowid, new.memory, new.scope_terms);
    INSERT INTO vec_changes (mem_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, memory, scope_terms)
        VALUES ('delete', old.rowid, old.memory, old.scope_terms);
    INSERT INTO vec_changes (mem_rowid) VALUES (old.rowid);
END;
CREATE TRIGGER IF NOT EXISTS memories_au_text AFTER UPDATE OF memory ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, memory, scope_terms)
        VALUES ('delete', old.rowid, old.memory, old.scope_terms);
    INSERT INTO memories_fts (rowid, memory, scope_terms) VALUES (new.rowid, new.memory, new.scope_terms);
END;
CREATE TRIGGER IF NOT EXISTS memories_au_vec AFTER UPDATE OF embedding ON memories BEGIN
    INSERT INTO vec_changes (mem_rowid) VALUES (new.rowid);
END;
CREATE TABLE IF NOT EXISTS history (
    id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    event TEXT NOT NULL,
    old_memory TEXT, new_memory TEXT,
    user_id TEXT, agent_id TEXT, run_id TEXT, actor_id TEXT, role TEXT,
    created_at TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS history_memory ON history (memory_id, created_at);
CREATE TABLE IF NOT EXISTS threads (
    key TEXT PRIMARY KEY,
    user_id TEXT, agent_id TEXT, run_id TEXT,
    last TEXT NOT NULL
);
"""
_FOLLOWS_INDEX = "CREATE INDEX IF NOT EXISTS memories_follows ON memories (follows) WHERE follows IS NOT NULL"

_SCOPE_KEY = "coalesce(user_id, char(0)), coalesce(agent_id, char(0)), coalesce(run_id, char(0))"
_IDENTITY = {
    "memories_identity": f"CREATE UNIQUE INDEX IF NOT EXISTS memories_identity ON memories ({_SCOPE_KEY}, identity)",
    "entities_identity": f"CREATE UNIQUE INDEX IF NOT EXISTS entities_identity ON entities ({_SCOPE_KEY}, name_key)",
}
"""One memory per (exact scope, text hash), one entity per (exact scope, normalized name): the
store refuses a second one, whichever process or thread writes it (see :meth:`SQLiteStore.write`).
``identity`` is the memory's hash, and ``name_key`` the entity's normalized name, except on the
duplicates concurrent writers of an earlier graphmem could leave: there it is NULL (see
:meth:`SQLiteStore._identity_indexes`)."""

_WRITE_COLUMNS = (
    "id, memory, hash, memory_type, user_id, agent_id, run_id, role, actor_id, metadata, "
    "created_at, updated_at, event_time, expires_at, follows"
)
_COLUMNS = _WRITE_COLUMNS + ", access_count, last_accessed_at"
"""A record's columns; search's access counts (:meth:`SQLiteStore.touch`) are not written with it."""


@contextlib.contextmanager
def _conflicts() -> Iterator[None]:
    """A second memory or entity with the same identity: a concurrent writer got there first."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if "_identity" not in str(exc):
            raise
        raise ConflictError(f"a concurrent write stored the same memory or entity first ({exc})") from exc


def _opt_dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _record(row: sqlite3.Row) -> MemoryRecord:
    return build_record({  # validated on the way in; a search builds hundreds
        "id": row["id"], "memory": row["memory"], "hash": row["hash"], "memory_type": MemoryType(row["memory_type"]),
        "user_id": row["user_id"], "agent_id": row["agent_id"], "run_id": row["run_id"],
        "role": row["role"], "actor_id": row["actor_id"], "metadata": json.loads(row["metadata"]),
        "created_at": datetime.fromisoformat(row["created_at"]), "updated_at": _opt_dt(row["updated_at"]),
        "event_time": _opt_dt(row["event_time"]), "expires_at": _opt_dt(row["expires_at"]),
        "access_count": row["access_count"], "last_accessed_at": _opt_dt(row["last_accessed_at"]),
        "follows": row["follows"],
    })


def _event_row(e: HistoryEvent) -> tuple[Any, ...]:
    return (
        e.id, e.memory_id, e.event.value, e.old_memory, e.new_memory, e.user_id, e.agent_id, e.run_id,
        e.actor_id, e.role, iso(e.created_at), json.dumps(e.details, ensure_ascii=False),
    )


def _delete_event(row: sqlite3.Row, at: datetime) -> HistoryEvent:
    return HistoryEvent(
        memory_id=row["id"], event=EventType.DELETE, old_memory=row["memory"], user_id=row["user_id"],
        agent_id=row["agent_id"], run_id=row["run_id"], actor_id=row["actor_id"], role=row["role"],
        created_at=at,
    )


def _scope_token(kind: str, value: str) -> str:
    return kind + hashlib.blake2b(value.encode("utf-8"), digest_size=10).hexdigest()


def scope_terms(user_id: str | None, agent_id: str | None, run_id: str | None) -> str:
    """Opaque tokens for a row's scope fields, indexed in FTS5 next to the text."""
    pairs = (("u", user_id), ("a", agent_id), ("r", run_id))
    return " ".join(_scope_token(k, v) for k, v in pairs if v is not None)


def scope_match(scope: Scope) -> str:
    """FTS5 condition selecting the rows of a read scope (every given field must match)."""
    kinds = {"user_id": "u", "agent_id": "a", "run_id": "r"}
    return " AND ".join(f'scope_terms : "{_scope_token(kinds[k], v)}"' for k, v in scope.items())


class SQLiteStore(Store):
    def __init__(self, path: Path, busy_timeout_ms: int = 30_000, entity_cache_mb: float = 64.0) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._conns: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._conns_lock = threading.Lock()
        self._vec: VectorCache | None = None
        self._entity_cache_bytes = int(entity_cache_mb * (1 << 20))
        self._entity_vectors = graph.EntityVectors(self._entity_cache_bytes)
        self._closed = False

    # -- connections and transactions -------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError(f"the store at {self.path} is closed")
        try:
            make_private_dirs(self.path.parent)  # 0700 folders, a 0600 file: see private_files.py
            create_private_file(self.path)
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Reads through a map of the file: a search's row lookups (full-text hits joined to their
            # memories, the walk's entities and mentions) skip a read() per page; SQLite caps the size
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            conn.create_function("py_casefold", 1, lambda s: s.casefold() if isinstance(s, str) else s,
                                 deterministic=True)
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailableError(f"cannot open SQLite store {self.path}: {exc}") from exc
        self._local.conn = conn
        with self._conns_lock:
            # A connection belongs to its thread (thread-local); a server's worker threads retire
            # after a lull and new ones replace them, so those of finished threads are closed here.
            ended = [c for t, c in self._conns if not t.is_alive()]
            self._conns = [(t, c) for t, c in self._conns if t.is_alive()]
            self._conns.append((threading.current_thread(), conn))
        for old in ended:
            with contextlib.suppress(sqlite3.Error):
                old.close()
        return conn

    @contextlib.contextmanager
    def _tx(self, write: bool) -> Iterator[sqlite3.Connection]:
        """A transaction on this thread's connection; a read inside an open one joins it (so the
        walk's primitive reads see the snapshot its caller's read began)."""
        conn = self._conn()
        if not write and conn.in_transaction:
            yield conn
            return
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"SQLite store {self.path} stayed locked by another writer for "
                f"{self.busy_timeout_ms} ms (store.busy_timeout_ms): {exc}"
            ) from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise StoreError(f"commit to {self.path} failed, nothing was written: {exc}") from exc

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._guard(self._tx(True))

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._guard(self._tx(False))

    @contextlib.contextmanager
    def _guard(self, tx: contextlib.AbstractContextManager[sqlite3.Connection]) -> Iterator[sqlite3.Connection]:
        try:
            with tx as conn:
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.path}: {exc}; the operation was rolled back") from exc

    # -- lifecycle --------------------------------------------------------------------------------
    def open(self, embedder: str, dims: int) -> StoreInfo:
        try:  # executescript commits whatever is open, so the schema gets its own transaction
            self._conn().executescript("BEGIN IMMEDIATE;" + _SCHEMA + graph.SCHEMA + "COMMIT;")
        except sqlite3.Error as exc:
            raise StoreUnavailableError(f"cannot create the schema in {self.path}: {exc}") from exc
        with self._write() as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta and meta.get("schema_version") != SCHEMA_VERSION:
                raise SchemaMismatchError(
                    f"{self.path} has schema version {meta.get('schema_version')}, this graphmem writes "
                    f"{SCHEMA_VERSION}; export it with the graphmem that wrote it, or use another store path"
                )
            if not meta:
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("embedder", embedder), ("dims", str(dims)), ("schema_version", SCHEMA_VERSION)],
                )
            elif meta.get("embedder") != embedder or meta.get("dims") != str(dims):
                raise SchemaMismatchError(
                    f"{self.path} holds vectors from embedder {meta.get('embedder')!r} "
                    f"({meta.get('dims')} dims) but {embedder!r} ({dims} dims) is configured; "
                    "configure the same embedder, or use another store path"
                )
            have = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
            if "access_count" not in have:  # stores from before access counts
                conn.execute("ALTER TABLE memories ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0")
                conn.execute("ALTER TABLE memories ADD COLUMN last_accessed_at TEXT")
            if "follows" not in have:  # stores from before the reply link
                conn.execute("ALTER TABLE memories ADD COLUMN follows TEXT")
            conn.execute(_FOLLOWS_INDEX)
            self._identity_indexes(conn)
        self._vec = self._vector_cache(dims)
        return StoreInfo("sqlite", str(self.path), embedder, dims)

    def recorded_embedder(self) -> tuple[str, int] | None:
        if not self.path.exists():
            return None
        try:
            with self._read() as conn:
                meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dims')").fetchall())
        except StoreError:  # a file without graphmem's tables: open() decides what it is
            return None
        if "embedder" not in meta or not str(meta.get("dims", "")).isdigit():
            return None
        return str(meta["embedder"]), int(meta["dims"])

    # -- re-embedding (see Store.reembed_start) ----------------------------------------------------
    def reembed_start(self, embedder: str, dims: int) -> None:
        with self._write() as conn:
            reembed.start(conn, embedder, dims)

    def reembed_pending(self, kind: str, scope: Scope | None, after: str | None, limit: int) -> list[ReembedRow]:
        with self._read() as conn:
            return reembed.pending(conn, kind, scope, after, limit)

    def reembed_count(self, kind: str, scope: Scope | None) -> int:
        with self._read() as conn:
            return reembed.count(conn, kind, scope)

    def reembed_stage(self, kind: str, rows: Sequence[ReembedRow], vectors: Vector) -> None:
        with self._write() as conn:
            reembed.stage(conn, kind, rows, vectors)

    def reembed_finish(self, embedder: str, dims: int) -> int:
        with self._write() as conn:
            missing = reembed.finish(conn, embedder, dims)
            if not missing:  # the vector snapshot holds the old vectors
                conn.execute("DELETE FROM meta WHERE key = ?", (TOKEN_KEY,))
        if not missing:  # this process's caches hold the old vectors (and maybe another size)
            self._vec = self._vector_cache(dims)
            self._entity_vectors = graph.EntityVectors(self._entity_cache_bytes)
        return missing

    def _identity_indexes(self, conn: sqlite3.Connection) -> None:
        """Fill the identity columns of a store from before them (once), then create the uniqueness
        indexes. Where concurrent writers of an earlier graphmem left duplicates, the oldest row of
        each gets the identity (reads already resolve a name or text to the oldest) and the others
        NULL: they stay as they are, and no new duplicate can be written."""
        if conn.execute("SELECT 1 FROM meta WHERE key = 'identity'").fetchone() is None:
            if "identity" not in {r[1] for r in conn.execute("PRAGMA table_info(memories)")}:
                conn.execute("ALTER TABLE memories ADD COLUMN identity TEXT")
            conn.execute(f"UPDATE memories SET identity = hash WHERE rowid IN "
                         f"(SELECT min(rowid) FROM memories GROUP BY {_SCOPE_KEY}, hash)")
            graph.backfill_name_keys(conn, _SCOPE_KEY)
            conn.execute("INSERT INTO meta (key, value) VALUES ('identity', '1')")
        for statement in _IDENTITY.values():
            conn.execute(statement)

    def _vector_cache(self, dims: int) -> VectorCache:
        return VectorCache(dims, self.path.with_name(self.path.name + "-vectors"))

    def save_vectors(self, force: bool = False) -> bool:
        """Write the vector snapshot (see :mod:`.vectors`) when the loaded vectors are far
        ahead of it, or ``force``: loading them first, then. Whether one was written."""
        vec = self._vec
        if vec is None or self._closed:
            return False
        with vec.lock:
            if force:
                with self._read() as conn:
                    vec.refresh(conn)
            if not (force or vec.stale()):
                return False
            token = vec.save()
        if token is None:
            return False
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (TOKEN_KEY, token))
        return True

    def close(self) -> None:
        if not self._closed:  # a cache, so a failure to write it never fails close
            with contextlib.suppress(StoreError):
                self.save_vectors()
        self._closed = True
        with self._conns_lock:
            for _, conn in self._conns:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._conns.clear()
        self._local = threading.local()

    def backup(self, target: Path) -> dict[str, Any]:
        """SQLite's online backup into ``target``: the pages of one read transaction (a snapshot;
        in WAL mode writers go on meanwhile), copied in one step, since a copy in steps starts again
        whenever another connection writes. Written to a private temporary sibling, synced, then
        renamed: ``target`` is a whole store or absent. The vector snapshot, a cache, is not copied."""
        target = Path(target)
        partial = target.with_name(target.name + ".partial")
        began = time.perf_counter()
        try:
            partial.unlink(missing_ok=True)
            create_private_file(partial)
            copy = sqlite3.connect(partial)
            try:
                with self._guard(contextlib.nullcontext(self._conn())) as conn:
                    conn.backup(copy)
                copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                copy.close()
            with partial.open("rb") as f:
                os.fsync(f.fileno())
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return {"format": "sqlite", "path": str(target), "bytes": target.stat().st_size,
                "seconds": round(time.perf_counter() - began, 3)}

    # -- writes -----------------------------------------------------------------------------------
    def write(self, scope: Scope, change: GraphWrite) -> WriteResult:
        """One ``BEGIN IMMEDIATE`` transaction: the write lock is held from the check of what the plan
        read (:class:`Expectations`) to the commit, so writers apply in some serial order."""
        with self._write() as conn:
            self._check(conn, scope, change.expect)
            with _conflicts():
                self._insert(conn, change.memories, change.events, self._thread(conn, change.memories))
                return graph.write_graph(conn, change)

    def _check(self, conn: sqlite3.Connection, scope: Scope, expect: Expectations) -> None:
        """Raise :class:`ConflictError` when the stored state a plan relied on has changed."""
        if expect.memories:
            ids = list(expect.memories)
            where, params = scope_sql(scope)
            found = dict(conn.execute(
                f"SELECT id, hash FROM memories AS m WHERE m.id IN ({','.join('?' * len(ids))}) AND {where}",
                [*ids, *params]).fetchall())
            gone = stale_memories(expect, found)
            if gone:
                raise ConflictError(f"memory {gone[0]} changed or was deleted by a concurrent write")
        if expect.entities:
            stale = stale_entities(expect, self.graph_context(scope, list(expect.entities)))  # joins this write
            if stale:
                raise ConflictError(f"entity {stale[0]} changed or was deleted by a concurrent write")

    def _thread(self, conn: sqlite3.Connection, memories: Sequence[NewMemory]) -> list[str | None]:
        """What each new memory follows (:func:`~graphmem.stores.records.threaded`), from the threads'
        last memories read under the write lock, which then point at this write's last. A scope
        without a thread (new, restored, older than threads) or whose last memory was deleted: its
        newest memory that none follows."""
        tails: dict[ThreadScope, str | None] = {}
        for scope in dict.fromkeys(thread_scope(m.record) for m in memories):
            row = conn.execute("SELECT t.last FROM threads AS t JOIN memories AS m ON m.id = t.last "
                               "WHERE t.key = ?", (thread_key(scope),)).fetchone()
            if row is None:
                where, params = exact_scope_sql(Scope(user_id=scope[0], agent_id=scope[1], run_id=scope[2]))
                row = conn.execute(
                    f"SELECT id FROM memories AS m WHERE {where} AND NOT EXISTS "
                    "(SELECT 1 FROM memories AS f WHERE f.follows = m.id) "
                    "ORDER BY m.created_at DESC, m.id DESC LIMIT 1", params).fetchone()
            tails[scope] = row[0] if row else None
        conn.executemany(
            "INSERT INTO threads (key, user_id, agent_id, run_id, last) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET last = excluded.last",
            [(thread_key(sc), *sc, last) for sc, last in new_tails(memories).items()])
        return threaded(memories, tails)

    def _insert(self, conn: sqlite3.Connection, memories: Sequence[NewMemory], events: Sequence[HistoryEvent],
                follows: Sequence[str | None] | None = None) -> None:
        """``follows``: what each memory follows (a write's); ``None``: as its record says (a restore)."""
        rows = []
        for pos, item in enumerate(memories):
            r = item.record
            rows.append((
                r.id, r.memory, r.hash, r.memory_type.value, r.user_id, r.agent_id, r.run_id, r.role,
                r.actor_id, json.dumps(r.metadata, ensure_ascii=False), iso(r.created_at),
                iso(r.updated_at) if r.updated_at else None, iso(r.event_time) if r.event_time else None,
                iso(r.expires_at) if r.expires_at else None, r.follows if follows is None else follows[pos],
                np.ascontiguousarray(item.vector, dtype=np.float32).tobytes(),
                scope_terms(r.user_id, r.agent_id, r.run_id), r.hash,
            ))
        conn.executemany(
            f"INSERT INTO memories ({_WRITE_COLUMNS}, embedding, scope_terms, identity) VALUES ({','.join('?' * 18)})",
            rows
        )
        conn.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", map(_event_row, events))
        self._prune(conn)

    def _prune(self, conn: sqlite3.Connection) -> None:
        top = conn.execute("SELECT max(seq) FROM vec_changes").fetchone()[0] or 0
        if top % 10_000 < 1 or top > _PRUNE_AT:  # cheap check; delete rarely
            conn.execute("DELETE FROM vec_changes WHERE seq <= ?", (top - _PRUNE_AT // 2,))

    def update(
        self, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
    ) -> MemoryRecord | None:
        where, params = scope_sql(scope)
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories AS m WHERE m.id = ? AND {where}", [memory_id, *params]
            ).fetchone()
            if row is None:
                return None
            old = _record(row)
            if relink is not None:
                self._check(conn, scope, relink.expect)
            if patch.hash is not None and patch.hash != old.hash:
                where_x, params_x = exact_scope_sql(old.scope)
                twin = conn.execute(f"SELECT id FROM memories AS m WHERE m.hash = ? AND m.id != ? AND {where_x}",
                                    [patch.hash, memory_id, *params_x]).fetchone()
                if twin is not None:
                    raise DuplicateMemoryError(
                        f"memory {twin[0]} of this scope already has that text; delete one of them instead")
            sets: dict[str, Any] = {"updated_at": iso(patch.updated_at)}
            if patch.text is not None:
                sets["memory"], sets["hash"], sets["identity"] = patch.text, patch.hash, patch.hash
            if patch.vector is not None:
                sets["embedding"] = np.ascontiguousarray(patch.vector, dtype=np.float32).tobytes()
            if patch.expires_at is not Keep.KEEP:
                sets["expires_at"] = iso(patch.expires_at) if patch.expires_at else None
            metadata = patched_metadata(old.metadata, patch)
            sets["metadata"] = json.dumps(metadata, ensure_ascii=False)
            conn.execute(
                f"UPDATE memories SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",
                [*sets.values(), memory_id],
            )
            new = old.model_copy(update={
                "memory": patch.text or old.memory, "hash": patch.hash or old.hash,
                "metadata": metadata, "updated_at": patch.updated_at,
                "expires_at": old.expires_at if patch.expires_at is Keep.KEEP else patch.expires_at,
            })
            event = HistoryEvent(
                id=patch.event_id, memory_id=memory_id, event=EventType.UPDATE, old_memory=old.memory,
                new_memory=new.memory, user_id=old.user_id, agent_id=old.agent_id, run_id=old.run_id,
                actor_id=old.actor_id, role=old.role, created_at=patch.updated_at, details=patch.details(),
            )
            conn.execute("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", _event_row(event))
            if relink is not None:
                # the memory stays; what it alone supported goes, once the new text's facts are in (an
                # entity both texts name would otherwise be dropped, then linked to again)
                left = graph.forget_memories(conn, [memory_id], drop_orphans=False)
                with _conflicts():
                    self._insert(conn, relink.memories, relink.events)
                    graph.write_graph(conn, relink)
                graph.drop_orphans_of(conn, left)
        return new

    def _delete_where(self, conn: sqlite3.Connection, where: str, params: list[Any], at: datetime) -> list[str]:
        rows = conn.execute(
            f"DELETE FROM memories AS m WHERE {where} "
            "RETURNING id, memory, user_id, agent_id, run_id, actor_id, role", params
        ).fetchall()
        conn.executemany(
            "INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [_event_row(_delete_event(r, at)) for r in rows],
        )
        self._prune(conn)
        return [r["id"] for r in rows]

    def delete(self, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        where, params = scope_sql(scope, indexed=False)
        with self._write() as conn:
            deleted = self._delete_where(conn, f"m.id IN ({','.join('?' * len(ids))}) AND {where}", [*ids, *params], at)
            graph.forget_memories(conn, deleted)
        return deleted

    def touch(self, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
        where, params = scope_sql(scope, alias="memories", indexed=False)
        rows = [(n, iso(at), iso(at), mid, *params) for mid, (n, at) in accesses.items()]
        with self._write() as conn:  # fixed-width UTC ISO strings (iso) compare as the times do
            conn.executemany(
                "UPDATE memories SET access_count = access_count + ?, last_accessed_at = "
                "CASE WHEN last_accessed_at IS NULL OR last_accessed_at < ? THEN ? ELSE last_accessed_at END "
                f"WHERE id = ? AND {where}", rows)

    def delete_scope(self, scope: Scope, at: datetime) -> int:
        where, params = scope_sql(scope)
        with self._write() as conn:
            deleted = self._delete_where(conn, where, params, at)
            graph.forget_memories(conn, deleted)
            graph.delete_graph_scope(conn, scope)
            conn.execute(f"DELETE FROM threads AS m WHERE {where}", params)
        return len(deleted)

    def reset(self) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM memories")
            conn.execute("DELETE FROM history")
            conn.execute("DELETE FROM threads")
            graph.reset_graph(conn)

    def optimize(self) -> dict[str, Any]:
        """Merge each FTS5 index into one b-tree, refresh the planner's statistics, truncate the WAL."""
        started = time.perf_counter()
        with self._write() as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%' "
                "ORDER BY name")]
            for table in tables:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            conn.execute("ANALYZE")
        with self._guard(contextlib.nullcontext(self._conn())) as conn:
            conn.execute("PRAGMA optimize")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        snapshot = self.save_vectors(force=True)
        return {"backend": "sqlite", "fulltext_merged": tables, "vectors_snapshot": snapshot,
                "seconds": round(time.perf_counter() - started, 3)}

    # -- graph reads ------------------------------------------------------------------------------
    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]:
        with self._read() as conn:
            return graph.find_entities(conn, scope, list(dict.fromkeys(keys)), exact=exact)

    def similar_entities(self, scope: Scope, vectors: Vector) -> list[tuple[Entity, float] | None]:
        with self._read() as conn:
            return self._entity_vectors.similar(conn, scope, vectors)

    def neighbourhood(
        self, scope: Scope, query: GraphQuery, seed_memories: Sequence[str] = (), flt: Filter | None = None
    ) -> Subgraph:
        with self._read():  # the walk's reads in one snapshot
            return super().neighbourhood(scope, query, seed_memories, flt)

    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
        with self._read() as conn:
            return graph.entities(conn, scope, ids)

    def entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> dict[str, tuple[int, list[str]]]:
        with self._read() as conn:
            return graph.entity_memories(conn, scope, ids, limit, hub_degree)

    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        with self._read() as conn:
            return graph.memory_entities(conn, scope, memory_ids)

    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
        history: bool = False,
    ) -> list[Relation]:
        with self._read() as conn:
            return graph.facts(conn, scope, entity_ids, as_of=as_of, limit=limit, support=support,
                               history=history)

    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]:
        with self._read() as conn:
            out = self._memories_by(conn, "id", ids, scope, flt)
            similarity = {} if vector is None else self._similarity(conn, scope, list(out), vector)
        return out, similarity

    def followers(self, scope: Scope, ids: Sequence[str], flt: Filter | None) -> Records:
        with self._read() as conn:
            return self._memories_by(conn, "follows", ids, scope, flt)

    @staticmethod
    def _memories_by(conn: sqlite3.Connection, column: str, values: Sequence[str], scope: Scope,
                     flt: Filter | None) -> Records:
        """The memories in scope passing ``flt`` whose ``column`` (``id`` or ``follows``) is one of ``values``."""
        out = Records()
        where, params = scope_sql(scope, indexed=False)
        fsql, fparams = filter_sql(flt)
        todo = list(dict.fromkeys(values))
        for i in range(0, len(todo), 500):
            part = todo[i : i + 500]
            for row in conn.execute(
                f"SELECT {_COLUMNS} FROM memories AS m WHERE m.{column} IN ({','.join('?' * len(part))}) "
                f"AND {where} AND {fsql}", [*part, *params, *fparams]
            ):
                out.add_row(row["id"], row, _record)
        return out

    def _similarity(
        self, conn: sqlite3.Connection, scope: Scope, ids: Sequence[str], vector: Vector
    ) -> dict[str, float]:
        assert self._vec is not None
        with self._vec.lock:
            self._vec.refresh(conn)
            return self._vec.similarity(scope, ids, np.asarray(vector, dtype=np.float32))

    def search(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
        graph_query: GraphQuery | None, timed: Sequence[str] = (),
    ) -> tuple[Candidates, Subgraph]:
        """Both reads in one transaction: the neighbourhood sees the snapshot the candidates came from."""
        with self._read() as conn:
            cands = self._candidates(conn, scope, flt, vector, text, k)
            if graph_query is None:
                return cands, Subgraph()
            return cands, self.neighbourhood(scope, graph_query, seed_ids(cands, graph_query.seed_memories), flt)

    def list_entities(self, scope: Scope, query: EntityQuery) -> list[Entity]:
        with self._read() as conn:
            return graph.list_entities(conn, scope, query)

    def list_facts(self, scope: Scope, query: FactQuery) -> list[Relation]:
        with self._read() as conn:
            return graph.list_facts(conn, scope, query)

    def scope_of(self, memory_id: str) -> Scope | None:
        with self._read() as conn:
            row = conn.execute("SELECT user_id, agent_id, run_id FROM memories WHERE id = ?", (memory_id,)).fetchone() \
                or conn.execute("SELECT user_id, agent_id, run_id FROM history WHERE memory_id = ? "
                                "ORDER BY created_at LIMIT 1", (memory_id,)).fetchone()
        return None if row is None else Scope(user_id=row[0], agent_id=row[1], run_id=row[2])

    def fact_states(self, scope: Scope, memory_ids: Sequence[str]) -> dict[str, FactStates]:
        with self._read() as conn:
            return graph.fact_states(conn, scope, memory_ids)

    def graph_scopes(self) -> list[Scope]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT user_id, agent_id, run_id FROM relations ORDER BY user_id, agent_id, run_id"
            ).fetchall()
        return [Scope(user_id=r[0], agent_id=r[1], run_id=r[2]) for r in rows]

    def quarantined(self, scope: Scope, status: str | None = "quarantined") -> list[QuarantineEntry]:
        with self._read() as conn:
            return graph.quarantined(conn, scope, status)

    # -- dump primitives (graphmem.transfer; see .dump) ---------------------------------------
    def dump_scopes(self) -> list[Scope]:
        with self._read() as conn:
            return dump.dump_scopes(conn)

    def dump_counts(self, scope: Scope | None) -> dict[str, int]:
        with self._read() as conn:
            return dump.dump_counts(conn, scope)

    def dump_memories(self, scope: Scope, after: str | None, limit: int) -> list[tuple[MemoryRecord, Vector]]:
        with self._read() as conn:
            return dump.dump_memories(conn, scope, after, limit, _COLUMNS, _record)

    def dump_history(self, scope: Scope, after: str | None, limit: int) -> list[HistoryEvent]:
        with self._read() as conn:
            return dump.dump_history(conn, scope, after, limit)

    def dump_entities(
        self, scope: Scope, after: str | None, limit: int
    ) -> list[tuple[Entity, Vector | None, list[str]]]:
        with self._read() as conn:
            return dump.dump_entities(conn, scope, after, limit)

    def dump_facts(self, scope: Scope, entity_ids: Sequence[str]) -> list[Relation]:
        with self._read() as conn:
            return dump.dump_facts(conn, scope, entity_ids)

    def dump_quarantine(self, scope: Scope, after: str | None, limit: int) -> list[QuarantineEntry]:
        with self._read() as conn:
            return dump.dump_quarantine(conn, scope, after, limit)

    def taken_ids(self, kind: str, ids: Sequence[str]) -> set[str]:
        with self._read() as conn:
            return dump.taken_ids(conn, kind, ids)

    def restore(self, scope: Scope, rows: Restore) -> None:
        with self._write() as conn, _conflicts():
            self._insert(conn, rows.memories, rows.events)
            dump.restore_graph(conn, rows)

    # -- reads ------------------------------------------------------------------------------------
    def find_hashes(self, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
        if not hashes:
            return {}
        where, params = exact_scope_sql(scope)
        marks = ",".join("?" * len(hashes))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT hash, id FROM memories AS m WHERE m.hash IN ({marks}) AND {where} ORDER BY m.rowid",
                [*hashes, *params],
            ).fetchall()
        found: dict[str, str] = {}
        for h, mid in rows:
            found.setdefault(h, mid)
        return found

    def ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        where, params = scope_sql(scope)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT m.id FROM memories AS m WHERE m.id >= ? AND m.id < ? AND {where} ORDER BY m.id LIMIT ?",
                [prefix, prefix + "\U0010ffff", *params, limit]).fetchall()
        return [r[0] for r in rows]

    def history_ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        where, params = scope_sql(scope, alias="h")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT h.memory_id FROM history AS h WHERE h.memory_id >= ? AND h.memory_id < ? AND {where} "
                "ORDER BY h.memory_id LIMIT ?", [prefix, prefix + "\U0010ffff", *params, limit]).fetchall()
        return [r[0] for r in rows]

    def list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
        where, params = scope_sql(scope)
        fsql, fparams = filter_sql(flt)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories AS m WHERE {where} AND {fsql} "
                "ORDER BY m.created_at DESC, m.id LIMIT ?",
                [*params, *fparams, limit],
            ).fetchall()
        return [_record(r) for r in rows]

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        where, params = scope_sql(scope, alias="h")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT * FROM history AS h WHERE h.memory_id = ? AND {where} ORDER BY h.created_at, h.rowid",
                [memory_id, *params],
            ).fetchall()
        return [
            HistoryEvent(**{**dict(r), "details": json.loads(r["details"])})
            for r in rows
        ]

    def nearest(self, scope: Scope, vectors: Vector) -> list[tuple[str, float] | None]:
        if self._vec is None:
            raise StoreError("store not opened: call open() first")
        rows = np.asarray(vectors, dtype=np.float32).reshape(-1, self._vec.dims)
        with self._read() as conn, self._vec.lock:
            self._vec.refresh(conn)
            return self._vec.nearest(scope, rows)

    def count(self, scope: Scope | None = None) -> int:
        where, params = scope_sql(scope) if scope else ("1", [])
        with self._read() as conn:
            return int(conn.execute(f"SELECT count(*) FROM memories AS m WHERE {where}", params).fetchone()[0])

    def _vector_hits(
        self, conn: sqlite3.Connection, scope: Scope, flt: Filter | None, vector: Vector, k: int
    ) -> list[tuple[str, float]]:
        """Exact top-k by cosine. With a filter, first check the best ``8k`` in score order (cheap
        when the filter keeps most rows); only when that leaves fewer than ``k`` does it score the
        filter's full row set."""
        assert self._vec is not None
        with self._vec.lock:
            self._vec.refresh(conn)
            if flt is None:
                return self._vec.search(scope, vector, k, None)
            wide = self._vec.search(scope, vector, 8 * k, None)
        where, params = scope_sql(scope, indexed=False)
        fsql, fparams = filter_sql(flt)
        marks = ",".join("?" * len(wide))
        passing = {r[0] for r in conn.execute(
            f"SELECT m.id FROM memories AS m WHERE m.id IN ({marks}) AND {where} AND {fsql}",
            [*(i for i, _ in wide), *params, *fparams])} if wide else set()
        if len(passing) >= k or len(wide) < 8 * k:
            return [h for h in wide if h[0] in passing][:k]
        where, params = scope_sql(scope)
        allowed = {r[0] for r in conn.execute(
            f"SELECT m.rowid FROM memories AS m WHERE {where} AND {fsql}", [*params, *fparams])}
        with self._vec.lock:
            return self._vec.search(scope, vector, k, allowed)

    @staticmethod
    def _fulltext_hits(
        conn: sqlite3.Connection, terms: list[str], scope: Scope, flt: Filter | None, k: int
    ) -> list[tuple[str, float]]:
        """Top-k by BM25 among rows in scope passing the filter, ranking a bounded number of rows.

        FTS5 ranks every row a query matches, and BM25 counts the rows of every phrase in the query,
        the scope's token too: a query of common words in a big tenant ranked tens of thousands of
        rows and read the tenant's whole posting list. So a small scope (at most :data:`_RANKED`
        rows) is ranked exactly, with its token in the query. In a bigger one the rows each term
        matches are counted first (up to the budget, without ranking), and the query is ranked over
        its rarer terms, the rarest first while their rows stay within the budget (a row holding
        only the common words scores low anyway: their inverse document frequency is small), the
        scope applied to the ranked rows; fewer than ``k`` hits may come back, the vector candidates
        fill the list. When every term is common, or the rare ones match nothing in scope, the
        scope's newest ``_RANKED`` matching rows are ranked (:meth:`_ranked_in_index`).
        """
        where, params = scope_sql(scope, indexed=False)
        fsql, fparams = filter_sql(flt)

        def ranked(match: str, after: int = 0) -> list[tuple[str, float]]:
            rows = conn.execute(
                "SELECT m.id, -rank FROM memories_fts CROSS JOIN memories AS m ON m.rowid = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND rank MATCH {_BM25} AND memories_fts.rowid > ? AND {where} AND {fsql}",
                [match, after, *params, *fparams]).fetchall()
            return sorted(((r[0], float(r[1])) for r in rows), key=lambda h: (-h[1], h[0]))[:k]

        def rows_of(match: str) -> int:
            return int(conn.execute("SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? "
                                    "LIMIT ?)", [match, _RANKED + 1]).fetchone()[0])

        in_scope = f"{scope_match(scope)} AND memory : "
        if rows_of(scope_match(scope)) <= _RANKED:  # a small scope: rank all its matches
            return ranked(f"{in_scope}({fts5_query(terms)})")
        counts = {t: rows_of(f"memory : {fts5_phrase(t)}") for t in terms}
        present = sorted((t for t in terms if counts[t]), key=lambda t: counts[t])
        if not present:  # no term matches any row
            return []
        rare: list[str] = []
        total = 0
        while len(rare) < len(present) and total + counts[present[len(rare)]] <= _RANKED:
            total += counts[present[len(rare)]]
            rare.append(present[len(rare)])
        if rare:
            hits = ranked(f"memory : ({fts5_query(rare)})")
            if hits or len(rare) == len(present):
                return hits
        # every term common, or the rare ones match nothing in scope: rank the scope's newest matches
        match = f"memory : ({fts5_query(present)})"
        scoped = f"{in_scope}({fts5_query(present)})"
        edge = conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC "
                            "LIMIT 1 OFFSET ?", [scoped, _RANKED]).fetchone()
        after = 0 if edge is None else int(edge[0])
        return ranked(match, after) if flt is not None else SQLiteStore._ranked_in_index(conn, scoped, after, k)

    @staticmethod
    def _ranked_in_index(conn: sqlite3.Connection, match: str, after: int, k: int) -> list[tuple[str, float]]:
        """The top-k by BM25 of ``match`` (the scope's token in it) among rows above ``after``.

        Why the token in the match here: the rows above ``after`` include other tenants' (a common
        word matches thousands of them), and ranking each, then joining it to ``memories`` to test
        its scope, grew with them. With the token, only the scope's (at most :data:`_RANKED`) rows
        are ranked, and the scores are the same: its column weighs 0 in BM25. Only the best (every
        tie of the k-th included) are joined for their ids.
        """
        scored = conn.execute(f"SELECT rowid, -rank FROM memories_fts WHERE memories_fts MATCH ? "
                              f"AND rank MATCH {_BM25} AND rowid > ?", [match, after]).fetchall()
        if not scored:
            return []
        scored.sort(key=lambda h: -h[1])
        cut = scored[min(k, len(scored)) - 1][1]
        best = [(int(r), float(sc)) for r, sc in scored if sc >= cut]
        ids = dict(conn.execute(f"SELECT rowid, id FROM memories WHERE rowid IN ({','.join('?' * len(best))})",
                                [r for r, _ in best]).fetchall())
        return sorted(((ids[r], sc) for r, sc in best if r in ids), key=lambda h: (-h[1], h[0]))[:k]

    def candidates(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int
    ) -> Candidates:
        with self._read() as conn:
            return self._candidates(conn, scope, flt, vector, text, k)

    def _candidates(
        self, conn: sqlite3.Connection, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None,
        k: int,
    ) -> Candidates:
        if self._vec is None:
            raise StoreError("store not opened: call open() first")
        out = Candidates()
        if vector is not None:
            out.vector = self._vector_hits(conn, scope, flt, np.asarray(vector, dtype=np.float32), k)
        terms = query_terms(text) if text else []
        if terms:
            out.fulltext = self._fulltext_hits(conn, terms, scope, flt, k)
        ids = list(dict.fromkeys([i for i, _ in out.vector] + [i for i, _ in out.fulltext]))
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            for row in conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(part))})", part
            ):
                out.records.add_row(row["id"], row, _record)
        if vector is not None:
            out.similarity = dict(out.vector)
            missing = [i for i in out.records if i not in out.similarity]
            out.similarity.update(self._similarity(conn, scope, missing, vector) if missing else {})
        return out
