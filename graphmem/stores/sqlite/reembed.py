"""Re-embedding an SQLite store: new vectors staged in side tables, swapped in with the pin in one
transaction (see the re-embedding methods of :class:`~graphmem.stores.base.Store`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...models import Scope
from ..base import ReembedRow, Vector
from .sql import scope_sql

STAGING = """
CREATE TABLE IF NOT EXISTS reembed_memory (id TEXT PRIMARY KEY, checked TEXT NOT NULL, embedding BLOB NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reembed_entity (id TEXT PRIMARY KEY, checked TEXT NOT NULL, embedding BLOB NOT NULL)
    WITHOUT ROWID;
"""
_TARGET_KEY = "reembed_target"
_SOURCES = {
    # kind: (table, alias, text column, check column, rows that carry a vector)
    "memory": ("memories", "m", "memory", "hash", "1"),
    "entity": ("entities", "e", "name", "name", "e.embedding IS NOT NULL"),
}


def start(conn: sqlite3.Connection, embedder: str, dims: int) -> None:
    """Create the staging tables; drop what they hold for another target (a resumed run keeps it)."""
    for statement in STAGING.split(";"):
        if statement.strip():
            conn.execute(statement)
    target = json.dumps({"embedder": embedder, "dims": dims})
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_TARGET_KEY,)).fetchone()
    if row is None or row[0] != target:
        conn.execute("DELETE FROM reembed_memory")
        conn.execute("DELETE FROM reembed_entity")
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_TARGET_KEY, target))


def _unstaged(kind: str) -> tuple[str, str]:
    table, a, _, check, has = _SOURCES[kind]
    join = f"{table} AS {a} LEFT JOIN reembed_{kind} AS s ON s.id = {a}.id AND s.checked = {a}.{check}"
    return join, f"s.id IS NULL AND {has}"


def _scoped(kind: str, scope: Scope | None) -> tuple[str, str, list[Any]]:
    join, where = _unstaged(kind)
    params: list[Any] = []
    if scope is not None:
        scoped, params = scope_sql(scope, alias=_SOURCES[kind][1])
        where += f" AND {scoped}"
    return join, where, params


def count(conn: sqlite3.Connection, kind: str, scope: Scope | None) -> int:
    join, where, params = _scoped(kind, scope)
    return int(conn.execute(f"SELECT count(*) FROM {join} WHERE {where}", params).fetchone()[0])


def pending(conn: sqlite3.Connection, kind: str, scope: Scope | None, after: str | None, limit: int
            ) -> list[ReembedRow]:
    _, a, text, check, _ = _SOURCES[kind]
    join, where, params = _scoped(kind, scope)
    if after is not None:
        where += f" AND {a}.id > ?"
        params.append(after)
    rows = conn.execute(f"SELECT {a}.id, {a}.{text}, {a}.{check} FROM {join} WHERE {where} "
                        f"ORDER BY {a}.id LIMIT ?", [*params, limit]).fetchall()
    return [ReembedRow(r[0], r[1], r[2]) for r in rows]


def stage(conn: sqlite3.Connection, kind: str, rows: Sequence[ReembedRow], vectors: Vector) -> None:
    table, _, _, check, _ = _SOURCES[kind]
    matrix = np.asarray(vectors, dtype=np.float32)
    conn.executemany(
        f"INSERT OR REPLACE INTO reembed_{kind} (id, checked, embedding) "
        f"SELECT id, {check}, ? FROM {table} WHERE id = ? AND {check} = ?",
        [(matrix[i].tobytes(), r.key, r.check) for i, r in enumerate(rows)])


def finish(conn: sqlite3.Connection, embedder: str, dims: int) -> int:
    """Inside the caller's write transaction: swap vectors and pin when nothing is left to stage."""
    missing = sum(count(conn, kind, None) for kind in _SOURCES)
    if missing:
        return missing
    conn.execute("UPDATE memories SET embedding = (SELECT s.embedding FROM reembed_memory s WHERE s.id = memories.id)")
    conn.execute("UPDATE entities SET embedding = (SELECT s.embedding FROM reembed_entity s WHERE s.id = entities.id) "
                 "WHERE embedding IS NOT NULL")
    conn.executemany("UPDATE meta SET value = ? WHERE key = ?", [(embedder, "embedder"), (str(dims), "dims")])
    conn.execute("DELETE FROM meta WHERE key = ?", (_TARGET_KEY,))
    conn.execute("DROP TABLE reembed_memory")
    conn.execute("DROP TABLE reembed_entity")
    return 0
