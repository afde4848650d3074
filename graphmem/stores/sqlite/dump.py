"""The dump primitives of the SQLite store (see the "dump primitives" of :class:`~.base.Store`):
paged reads of one exact scope with vectors, and the verbatim write of dumped rows.

Functions here run inside a transaction :class:`~graphmem.stores.sqlite.SQLiteStore` opened.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...models import Entity, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope, iso, norm_name
from ..base import DUMP_KINDS, Restore, Vector
from . import graph
from .sql import exact_scope_sql

TABLES = {"memory": "memories", "event": "history", "entity": "entities", "fact": "relations",
          "quarantine": "quarantine"}
"""Where each dump kind lives; every table has a store-wide unique ``id``."""


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _after(alias: str, column: str, after: str | None) -> tuple[str, list[Any]]:
    return (f"{alias}.{column} > ?", [after]) if after is not None else ("1", [])


def dump_scopes(conn: sqlite3.Connection) -> list[Scope]:
    union = " UNION ".join(f"SELECT user_id, agent_id, run_id FROM {t}" for k, t in TABLES.items() if k != "fact")
    rows = conn.execute(f"SELECT DISTINCT * FROM ({union}) ORDER BY user_id, agent_id, run_id").fetchall()
    return [Scope(user_id=r[0], agent_id=r[1], run_id=r[2]) for r in rows if any(v is not None for v in r)]


def dump_counts(conn: sqlite3.Connection, scope: Scope | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for kind in DUMP_KINDS:
        where, params = exact_scope_sql(scope, alias="t") if scope is not None else ("1", [])
        out[kind] = int(conn.execute(f"SELECT count(*) FROM {TABLES[kind]} AS t WHERE {where}", params).fetchone()[0])
    return out


def dump_memories(
    conn: sqlite3.Connection, scope: Scope, after: str | None, limit: int, columns: str,
    build: Callable[[sqlite3.Row], MemoryRecord],
) -> list[tuple[MemoryRecord, Vector]]:
    where, params = exact_scope_sql(scope)
    cut, cparams = _after("m", "id", after)
    rows = conn.execute(f"SELECT {columns}, embedding FROM memories AS m WHERE {where} AND {cut} "
                        "ORDER BY m.id LIMIT ?", [*params, *cparams, limit]).fetchall()
    return [(build(r), np.frombuffer(r["embedding"], dtype=np.float32).copy()) for r in rows]


def dump_history(conn: sqlite3.Connection, scope: Scope, after: str | None, limit: int) -> list[HistoryEvent]:
    where, params = exact_scope_sql(scope, alias="h")
    cut, cparams = _after("h", "memory_id", after)
    mids = [r[0] for r in conn.execute(
        f"SELECT DISTINCT h.memory_id FROM history AS h WHERE {where} AND {cut} ORDER BY h.memory_id LIMIT ?",
        [*params, *cparams, limit])]
    if not mids:
        return []
    rows = conn.execute(
        f"SELECT * FROM history AS h WHERE h.memory_id IN ({_marks(len(mids))}) AND {where} "
        "ORDER BY h.memory_id, h.created_at, h.rowid", [*mids, *params]).fetchall()
    return [HistoryEvent(**{**dict(r), "details": json.loads(r["details"])}) for r in rows]


def dump_entities(
    conn: sqlite3.Connection, scope: Scope, after: str | None, limit: int
) -> list[tuple[Entity, Vector | None, list[str]]]:
    where, params = exact_scope_sql(scope, alias="e")
    cut, cparams = _after("e", "id", after)
    rows = conn.execute(f"SELECT e.* FROM entities AS e WHERE {where} AND {cut} ORDER BY e.id LIMIT ?",
                        [*params, *cparams, limit]).fetchall()
    ids = [r["id"] for r in rows]
    mentions: dict[str, list[str]] = {i: [] for i in ids}
    if ids:
        for eid, mid in conn.execute(f"SELECT entity_id, memory_id FROM mentions WHERE entity_id IN "
                                     f"({_marks(len(ids))}) ORDER BY entity_id, memory_id", ids):
            mentions[eid].append(mid)
    return [(graph.entity_row(r),
             None if r["embedding"] is None else np.frombuffer(r["embedding"], dtype=np.float32).copy(),
             mentions[r["id"]]) for r in rows]


def dump_facts(conn: sqlite3.Connection, scope: Scope, entity_ids: Sequence[str]) -> list[Relation]:
    if not entity_ids:
        return []
    where, params = exact_scope_sql(scope, alias="r")
    ids = list(entity_ids)
    return graph.select_relations(conn, f"r.source_id IN ({_marks(len(ids))}) AND {where}", [*ids, *params],
                                  order="ORDER BY r.id")


def dump_quarantine(conn: sqlite3.Connection, scope: Scope, after: str | None, limit: int) -> list[QuarantineEntry]:
    where, params = exact_scope_sql(scope, alias="q")
    cut, cparams = _after("q", "id", after)
    return graph.quarantine_rows(conn, f"{where} AND {cut} ORDER BY q.id LIMIT ?", [*params, *cparams, limit])


def taken_ids(conn: sqlite3.Connection, kind: str, ids: Sequence[str]) -> set[str]:
    table = TABLES[kind]
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        found.update(r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE id IN ({_marks(len(part))})", part))
    return found


def restore_graph(conn: sqlite3.Connection, rows: Restore) -> None:
    """Everything of ``rows`` but memories and events (the caller's ``_insert``), then the fields
    ``_insert`` and the graph writes leave at their defaults."""
    conn.executemany("UPDATE memories SET access_count = ?, last_accessed_at = ? WHERE id = ?",
                     [(n, iso(at) if at else None, mid) for mid, (n, at) in rows.access.items()])
    for e, vector in rows.entities:
        conn.execute(
            "INSERT INTO entities (id, name, classes, aliases, user_id, agent_id, run_id, created_at, updated_at, "
            "embedding, name_key) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (e.id, e.name, json.dumps(e.classes), json.dumps(e.aliases, ensure_ascii=False), e.user_id, e.agent_id,
             e.run_id, iso(e.created_at), iso(e.updated_at) if e.updated_at else None,
             None if vector is None else np.ascontiguousarray(vector, dtype=np.float32).tobytes(), norm_name(e.name)))
        conn.executemany("INSERT OR IGNORE INTO entity_keys (entity_id, key) VALUES (?, ?)",
                         [(e.id, k) for k in {norm_name(e.name), *(norm_name(a) for a in e.aliases)}])
    conn.executemany("INSERT INTO mentions (memory_id, entity_id) VALUES (?, ?)", rows.mentions)
    conn.executemany(
        "INSERT INTO relations (id, source_id, relation, target_id, value, datatype, valid_from, valid_to, "
        "created_at, user_id, agent_id, run_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [(r.id, r.source_id, r.relation, r.target_id, r.value, r.datatype, _opt(r.valid_from), _opt(r.valid_to),
          iso(r.created_at), r.user_id, r.agent_id, r.run_id) for r in rows.facts])
    conn.executemany("INSERT INTO relation_support (relation_id, memory_id) VALUES (?, ?)",
                     [(r.id, m) for r in rows.facts for m in dict.fromkeys(r.memory_ids)])
    conn.executemany(
        "INSERT INTO quarantine (id, triple, reasons, memory_ids, ontology, status, user_id, agent_id, run_id, "
        "created_at, released_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [(q.id, json.dumps(q.triple, ensure_ascii=False, default=str),
          json.dumps(q.reasons, ensure_ascii=False, default=str), json.dumps(q.memory_ids), q.ontology, q.status,
          q.user_id, q.agent_id, q.run_id, iso(q.created_at), _opt(q.released_at)) for q in rows.quarantine])


def _opt(value: datetime | None) -> str | None:
    return iso(value) if value is not None else None
