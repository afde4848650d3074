"""The knowledge-graph half of the SQLite store: entities, facts, provenance, mentions, quarantine.

Functions here run inside a transaction that :class:`~graphmem.stores.sqlite.SQLiteStore` opened,
so a memory and the graph facts it supports are written, or forgotten, together.

Provenance is a table (``relation_support``) rather than a JSON list, so "which facts does this
memory support" is an index lookup and removing a memory's support is one statement.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ...errors import ConflictError
from ...models import Entity, QuarantineEntry, Relation, Scope, build_entity, build_relation, iso, norm_name
from ..base import EntityQuery, FactQuery, FactStates, GraphWrite, WriteResult, successor_order
from .sql import exact_scope_sql, scope_sql

SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    classes TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    user_id TEXT, agent_id TEXT, run_id TEXT,
    created_at TEXT NOT NULL, updated_at TEXT,
    embedding BLOB,
    name_key TEXT
);
CREATE INDEX IF NOT EXISTS entities_user ON entities (user_id);
CREATE INDEX IF NOT EXISTS entities_agent ON entities (agent_id);
CREATE INDEX IF NOT EXISTS entities_run ON entities (run_id);
CREATE TABLE IF NOT EXISTS entity_keys (
    entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    PRIMARY KEY (key, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_keys_entity ON entity_keys (entity_id);
-- stores written by earlier versions kept an entity-name full-text table that no read used
DROP TRIGGER IF EXISTS entities_fts_ai;
DROP TRIGGER IF EXISTS entities_fts_ad;
DROP TRIGGER IF EXISTS entities_fts_au;
DROP TABLE IF EXISTS entities_fts;
CREATE TABLE IF NOT EXISTS relations (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source_id TEXT NOT NULL REFERENCES entities (id),
    relation TEXT NOT NULL,
    target_id TEXT REFERENCES entities (id),
    value TEXT, datatype TEXT,
    valid_from TEXT, valid_to TEXT, created_at TEXT NOT NULL,
    user_id TEXT, agent_id TEXT, run_id TEXT
);
CREATE INDEX IF NOT EXISTS relations_source ON relations (source_id, relation);
CREATE INDEX IF NOT EXISTS relations_target ON relations (target_id);
CREATE INDEX IF NOT EXISTS relations_user ON relations (user_id);
CREATE TABLE IF NOT EXISTS relation_support (
    relation_id TEXT NOT NULL REFERENCES relations (id) ON DELETE CASCADE,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (relation_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relation_support_memory ON relation_support (memory_id);
CREATE TABLE IF NOT EXISTS mentions (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    PRIMARY KEY (memory_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity_id);
CREATE TABLE IF NOT EXISTS quarantine (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    triple TEXT NOT NULL, reasons TEXT NOT NULL, memory_ids TEXT NOT NULL DEFAULT '[]',
    ontology TEXT NOT NULL, status TEXT NOT NULL,
    user_id TEXT, agent_id TEXT, run_id TEXT,
    created_at TEXT NOT NULL, released_at TEXT
);
CREATE INDEX IF NOT EXISTS quarantine_user ON quarantine (user_id, status);
"""

def backfill_name_keys(conn: sqlite3.Connection, scope_key: str) -> None:
    """Give entities of stores from before entity identity their normalized name (``name_key``, the
    column the uniqueness index covers): the oldest entity of each scope and name only."""
    if "name_key" not in {r[1] for r in conn.execute("PRAGMA table_info(entities)")}:
        conn.execute("ALTER TABLE entities ADD COLUMN name_key TEXT")
    first: dict[tuple[Any, ...], tuple[str, str]] = {}
    for row in conn.execute(f"SELECT id, name, {scope_key} FROM entities ORDER BY rowid"):
        first.setdefault((*tuple(row)[2:], norm_name(row[1])), (row[0], norm_name(row[1])))
    conn.executemany("UPDATE entities SET name_key = ? WHERE id = ?", [(k, i) for i, k in first.values()])


NEWEST_FIRST = "m.created_at DESC, m.rowid DESC"
"""How a search's walk cuts an entity's mentions and a fact's support (memories ``m``): the newest
written first, so two stores of the same writes read the same memories, whatever their random ids
(Neo4j's order is the same: ``created_at``, then ``seq``)."""
_REL_COLUMNS = "r.id, r.source_id, r.relation, r.target_id, r.value, r.datatype, r.valid_from, r.valid_to, " \
    "r.created_at, r.user_id, r.agent_id, r.run_id"


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _entity(row: sqlite3.Row) -> Entity:
    return build_entity({  # validated on the way in; a search builds hundreds
        "id": row["id"], "name": row["name"], "classes": json.loads(row["classes"]),
        "aliases": json.loads(row["aliases"]), "user_id": row["user_id"], "agent_id": row["agent_id"],
        "run_id": row["run_id"], "created_at": datetime.fromisoformat(row["created_at"]),
        "updated_at": _dt(row["updated_at"]),
    })


def _relations(
    conn: sqlite3.Connection, where: str, params: Sequence[Any], support_limit: int | None = None,
    order: str = "ORDER BY r.rowid",
) -> list[Relation]:
    """``support_limit``: each fact's newest memories only (a search's cut, see ``neighbourhood``)."""
    rows = conn.execute(f"SELECT {_REL_COLUMNS} FROM relations AS r WHERE {where} {order}", params).fetchall()
    support: dict[str, list[str]] = {r["id"]: [] for r in rows}
    ids = list(support)
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        query = f"SELECT relation_id, memory_id FROM relation_support WHERE relation_id IN ({_marks(len(part))})"
        args: list[Any] = list(part)
        if support_limit is not None:
            query = (f"SELECT relation_id, memory_id FROM (SELECT x.relation_id, x.memory_id, row_number() OVER "
                     f"(PARTITION BY x.relation_id ORDER BY {NEWEST_FIRST}) AS n FROM ({query}) x "
                     "JOIN memories m ON m.id = x.memory_id) WHERE n <= ?")
            args.append(support_limit)
        for rid, mid in conn.execute(query + " ORDER BY relation_id, memory_id", args):
            support[rid].append(mid)
    return [
        build_relation({  # validated on the way in; a search builds hundreds
            "id": r["id"], "source_id": r["source_id"], "relation": r["relation"], "target_id": r["target_id"],
            "value": r["value"], "datatype": r["datatype"], "memory_ids": support[r["id"]],
            "valid_from": _dt(r["valid_from"]), "valid_to": _dt(r["valid_to"]),
            "created_at": datetime.fromisoformat(r["created_at"]), "user_id": r["user_id"],
            "agent_id": r["agent_id"], "run_id": r["run_id"],
        })
        for r in rows
    ]


def _entity_keys(entity: Entity) -> set[str]:
    return {norm_name(entity.name), *(norm_name(a) for a in entity.aliases)}


def write_graph(conn: sqlite3.Connection, change: GraphWrite) -> WriteResult:
    """Apply the graph part of a :class:`GraphWrite` (memories and events are the caller's).

    A second entity of one scope and name fails the ``entities_identity`` index (the caller turns
    that into a conflict). A fact merges into the stored fact of its id (the planner names the
    stored fact a run of one value restates), else, when open, into an open twin of the same key.
    Entity updates add classes and aliases to the stored lists rather than replacing them, so two
    writers growing one entity both keep what they added."""
    for item in change.entities:
        e = item.entity
        conn.execute(
            "INSERT INTO entities (id, name, classes, aliases, user_id, agent_id, run_id, created_at, updated_at, "
            "embedding, name_key) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (e.id, e.name, json.dumps(e.classes), json.dumps(e.aliases, ensure_ascii=False), e.user_id, e.agent_id,
             e.run_id, iso(e.created_at), None, np.ascontiguousarray(item.vector, dtype=np.float32).tobytes(),
             norm_name(e.name)),
        )
        conn.executemany("INSERT OR IGNORE INTO entity_keys (entity_id, key) VALUES (?, ?)",
                         [(e.id, k) for k in _entity_keys(e)])
    for e in change.entity_updates:
        row = conn.execute("SELECT classes, aliases FROM entities WHERE id = ?", (e.id,)).fetchone()
        if row is None:
            continue  # the write's expectations name every entity it updates: it exists here
        classes = list(dict.fromkeys([*json.loads(row["classes"]), *e.classes]))
        aliases = list(dict.fromkeys([*json.loads(row["aliases"]), *e.aliases]))
        conn.execute(
            "UPDATE entities SET classes = ?, aliases = ?, updated_at = ? WHERE id = ?",
            (json.dumps(classes), json.dumps(aliases, ensure_ascii=False),
             iso(e.updated_at) if e.updated_at else None, e.id),
        )
        conn.executemany("INSERT OR IGNORE INTO entity_keys (entity_id, key) VALUES (?, ?)",
                         [(e.id, k) for k in _entity_keys(e)])
    conn.executemany("INSERT OR IGNORE INTO mentions (memory_id, entity_id) VALUES (?, ?)", change.mentions)
    result = WriteResult()
    # Closes first: a fact stated again after a closed value is a new fact, not the closed one.
    conn.executemany("UPDATE relations SET valid_to = ? WHERE id = ? AND valid_to IS NULL",
                     [(iso(at), rid) for rid, at in change.closes])
    for rel in change.relations:
        twin = conn.execute("SELECT id FROM relations WHERE id = ?", (rel.id,)).fetchone()
        if twin is None and rel.valid_to is None:
            twin = conn.execute(
                "SELECT id FROM relations WHERE source_id = ? AND relation = ? AND target_id IS ? AND value IS ? "
                "AND datatype IS ? AND valid_to IS NULL",
                (rel.source_id, rel.relation, rel.target_id, rel.value, rel.datatype),
            ).fetchone()
        if twin is None:
            conn.execute(
                "INSERT INTO relations (id, source_id, relation, target_id, value, datatype, valid_from, valid_to, "
                "created_at, user_id, agent_id, run_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (rel.id, rel.source_id, rel.relation, rel.target_id, rel.value, rel.datatype,
                 iso(rel.valid_from) if rel.valid_from else None, iso(rel.valid_to) if rel.valid_to else None,
                 iso(rel.created_at), rel.user_id, rel.agent_id, rel.run_id),
            )
            rid = rel.id
            result.added.append(rid)
        else:
            rid = twin[0]
            result.merged.append(rid)
        conn.executemany("INSERT OR IGNORE INTO relation_support (relation_id, memory_id) VALUES (?, ?)",
                         [(rid, m) for m in rel.memory_ids])
    for q in change.quarantine:
        conn.execute(
            "INSERT INTO quarantine (id, triple, reasons, memory_ids, ontology, status, user_id, agent_id, run_id, "
            "created_at, released_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (q.id, json.dumps(q.triple, ensure_ascii=False, default=str),
             json.dumps(q.reasons, ensure_ascii=False, default=str), json.dumps(q.memory_ids), q.ontology, q.status,
             q.user_id, q.agent_id, q.run_id, iso(q.created_at), None),
        )
    if change.released:
        now = max((e.created_at for e in change.events), default=None)
        for qid in dict.fromkeys(change.released):
            done = conn.execute("UPDATE quarantine SET status = 'released', released_at = ? "
                                "WHERE id = ? AND status = 'quarantined'", (iso(now) if now else None, qid))
            if done.rowcount != 1:
                raise ConflictError(f"quarantine entry {qid} was released by a concurrent recheck")
    return result


def forget_memories(conn: sqlite3.Connection, memory_ids: Sequence[str], *, drop_orphans: bool = True) -> set[str]:
    """Drop what only these (deleted) memories supported: mentions, provenance, then orphans.

    Returns the entities whose support changed; ``drop_orphans=False`` leaves those without any to
    the caller (an update drops them after writing the new text's facts)."""
    touched_all: set[str] = set()
    if not memory_ids:
        return touched_all
    for i in range(0, len(memory_ids), 500):
        ids = list(memory_ids[i : i + 500])
        marks = _marks(len(ids))
        touched_rel = [r[0] for r in conn.execute(
            f"SELECT DISTINCT relation_id FROM relation_support WHERE memory_id IN ({marks})", ids)]
        touched_ent = {r[0] for r in conn.execute(
            f"SELECT DISTINCT entity_id FROM mentions WHERE memory_id IN ({marks})", ids)}
        conn.execute(f"DELETE FROM mentions WHERE memory_id IN ({marks})", ids)
        conn.execute(f"DELETE FROM relation_support WHERE memory_id IN ({marks})", ids)
        for j in range(0, len(touched_rel), 500):
            part = touched_rel[j : j + 500]
            for row in conn.execute(
                f"DELETE FROM relations WHERE id IN ({_marks(len(part))}) AND NOT EXISTS "
                "(SELECT 1 FROM relation_support s WHERE s.relation_id = relations.id) "
                "RETURNING source_id, target_id", part,
            ).fetchall():
                touched_ent.update(x for x in row if x is not None)
        touched_all |= touched_ent
        if drop_orphans:
            drop_orphans_of(conn, touched_ent)
        for row in conn.execute(
            f"SELECT q.id, q.memory_ids FROM quarantine q, json_each(q.memory_ids) j WHERE j.value IN ({marks})", ids
        ).fetchall():
            kept = [m for m in json.loads(row["memory_ids"]) if m not in set(ids)]
            conn.execute("UPDATE quarantine SET memory_ids = ? WHERE id = ?", (json.dumps(kept), row["id"]))
    return touched_all


def drop_orphans_of(conn: sqlite3.Connection, entity_ids: Iterable[str]) -> None:
    """Delete those of the entities that no memory mentions and no fact uses."""
    ids = list(entity_ids)
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        conn.execute(
            f"DELETE FROM entities WHERE id IN ({_marks(len(part))}) "
            "AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = entities.id) "
            "AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.source_id = entities.id OR r.target_id = entities.id)",
            part,
        )


def delete_graph_scope(conn: sqlite3.Connection, scope: Scope) -> None:
    """Remove every graph row in scope (the memories themselves are deleted by the caller)."""
    where, params = scope_sql(scope, alias="r")
    conn.execute(f"DELETE FROM relations AS r WHERE {where}", params)
    where, params = scope_sql(scope, alias="e")
    conn.execute(f"DELETE FROM entities AS e WHERE {where}", params)
    where, params = scope_sql(scope, alias="q")
    conn.execute(f"DELETE FROM quarantine AS q WHERE {where}", params)


def reset_graph(conn: sqlite3.Connection) -> None:
    for table in ("relation_support", "relations", "mentions", "entity_keys", "entities", "quarantine"):
        conn.execute(f"DELETE FROM {table}")


def find_entities(
    conn: sqlite3.Connection, scope: Scope, keys: Sequence[str], *, exact: bool = True
) -> dict[str, Entity]:
    if not keys:
        return {}
    where, params = exact_scope_sql(scope, alias="e") if exact else scope_sql(scope, alias="e")
    out: dict[str, Entity] = {}
    rows = conn.execute(
        # CROSS JOIN keeps this order: seek the keys, then their entities (the planner otherwise
        # walks the scope's entities and probes every key for each, which grows with the scope)
        f"SELECT k.key, e.* FROM entity_keys k CROSS JOIN entities e ON e.id = k.entity_id "
        f"WHERE k.key IN ({_marks(len(keys))}) AND {where} ORDER BY e.rowid", [*keys, *params],
    ).fetchall()
    for row in rows:
        out.setdefault(row["key"], _entity(row))
    return out


class EntityVectors:
    """Entity name embeddings per exact scope, kept in memory between writes.

    Resolution asks for the closest entity on every write, so reloading a scope's entities each time
    made ingest quadratic. Embeddings are never updated in place and rowids only grow, so a scope's
    rows are appended while its count agrees, and reloaded when it does not (a delete happened).
    At most ``max_bytes`` (``store.entity_cache_mb``) are held: the scopes used longest ago go first,
    since a server with a run id per conversation writes to a new scope every few seconds. A scope not
    written for ``idle_s`` goes too: its conversation has ended, and a cache of ended conversations
    grew until the bound (docs: Benchmarks, "Hours under load"), while reading a scope back costs one
    query when it is next written.
    """

    def __init__(self, max_bytes: int = 64 << 20, idle_s: float = 600.0) -> None:
        self.lock = threading.Lock()
        self.max_bytes = max_bytes
        self.idle_s = idle_s
        self._scopes: OrderedDict[tuple[str | None, ...], tuple[int, int, Any, list[int]]] = OrderedDict()
        self._used: dict[tuple[str | None, ...], float] = {}
        self._bytes = 0

    @staticmethod
    def _size(entry: tuple[int, int, Any, list[int]]) -> int:
        return int(entry[2].nbytes) + 8 * len(entry[3])

    def _keep(self, key: tuple[str | None, ...], entry: tuple[int, int, Any, list[int]]) -> None:
        self._drop(key)
        self._scopes[key] = entry
        self._bytes += self._size(entry)
        now = time.monotonic()
        self._used[key] = now
        while len(self._scopes) > 1:  # oldest use first
            first = next(iter(self._scopes))
            if self._bytes <= self.max_bytes and now - self._used[first] <= self.idle_s:
                break
            self._drop(first)

    def _drop(self, key: tuple[str | None, ...]) -> None:
        old = self._scopes.pop(key, None)
        self._used.pop(key, None)
        self._bytes -= self._size(old) if old is not None else 0

    def held(self) -> tuple[int, int]:
        """Scopes and bytes held."""
        with self.lock:
            return len(self._scopes), self._bytes

    def similar(self, conn: sqlite3.Connection, scope: Scope, vectors: Any) -> list[tuple[Entity, float] | None]:
        """Exact cosine against the exact scope's entity name embeddings, best per query row (ties: the oldest)."""
        queries = np.asarray(vectors, dtype=np.float32)
        queries = queries.reshape(-1, queries.shape[-1])
        where, params = exact_scope_sql(scope, alias="e")
        have = "e.embedding IS NOT NULL"
        top, count = conn.execute(f"SELECT max(e.rowid), count(*) FROM entities e WHERE {where} AND {have}",
                                  params).fetchone()
        if not count:
            return [None] * len(queries)
        key = (scope.user_id, scope.agent_id, scope.run_id)
        with self.lock:
            seen, n, matrix, rowids = self._scopes.get(key, (0, 0, np.zeros((0, queries.shape[1]), np.float32), []))
            rows = conn.execute(f"SELECT e.rowid, e.embedding FROM entities e WHERE {where} AND {have} "
                                "AND e.rowid > ? ORDER BY e.rowid", [*params, seen]).fetchall()
            if n + len(rows) != count:  # some were deleted: start over
                seen, n, matrix, rowids = 0, 0, matrix[:0], []
                rows = conn.execute(f"SELECT e.rowid, e.embedding FROM entities e WHERE {where} AND {have} "
                                    "ORDER BY e.rowid", params).fetchall()
            if rows:
                matrix = np.vstack([matrix, *(np.frombuffer(r[1], dtype=np.float32)[None, :] for r in rows)])
                rowids = [*rowids, *(int(r[0]) for r in rows)]
            self._keep(key, (int(top), count, matrix, rowids))
        scores = queries @ matrix.T
        best = scores.argmax(axis=1)
        wanted = sorted({rowids[int(j)] for j in best})
        found = {int(r["rowid"]): _entity(r) for r in conn.execute(
            f"SELECT e.rowid, e.* FROM entities e WHERE e.rowid IN ({_marks(len(wanted))})", wanted)}
        if len(found) < len(wanted):  # deletes and inserts that kept the count: reload once
            with self.lock:
                self._drop(key)
            return self.similar(conn, scope, vectors)
        return [(found[rowids[int(j)]], float(scores[i, j])) for i, j in enumerate(best)]


def entities(conn: sqlite3.Connection, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
    where, params = scope_sql(scope, alias="e", indexed=False)
    out: dict[str, Entity] = {}
    todo = list(dict.fromkeys(ids))
    for i in range(0, len(todo), 500):
        part = todo[i : i + 500]
        for row in conn.execute(f"SELECT e.* FROM entities e WHERE e.id IN ({_marks(len(part))}) AND {where}",
                                [*part, *params]):
            out[row["id"]] = _entity(row)
    return out


def entity_memories(
    conn: sqlite3.Connection, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
) -> dict[str, tuple[int, list[str]]]:
    where, params = scope_sql(scope, alias="e", indexed=False)
    todo = list(dict.fromkeys(ids))
    found: list[str] = []  # the scope test (no entity is built: an entity's mentions are its scope's memories)
    for i in range(0, len(todo), 500):
        part = todo[i : i + 500]
        found += [r[0] for r in conn.execute(
            f"SELECT e.id FROM entities e WHERE e.id IN ({_marks(len(part))}) AND {where}", [*part, *params])]
    out: dict[str, tuple[int, list[str]]] = {}
    todo = found
    for i in range(0, len(todo), 500):
        part = todo[i : i + 500]
        degree = dict.fromkeys(part, 0)
        degree.update(conn.execute(
            f"SELECT entity_id, count(*) FROM mentions WHERE entity_id IN ({_marks(len(part))}) GROUP BY entity_id",
            part).fetchall())
        for eid, d in degree.items():
            out[eid] = (d, [] if d > hub_degree else [m for (m,) in conn.execute(
                "SELECT x.memory_id FROM mentions x JOIN memories m ON m.id = x.memory_id WHERE x.entity_id = ? "
                f"ORDER BY {NEWEST_FIRST} LIMIT ?", (eid, limit))])
    return out


def memory_entities(conn: sqlite3.Connection, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    where, params = scope_sql(scope, alias="e", indexed=False)
    out: list[tuple[str, str]] = []
    todo = list(dict.fromkeys(memory_ids))
    for i in range(0, len(todo), 500):
        part = todo[i : i + 500]
        out.extend((m, e) for m, e in conn.execute(
            f"SELECT x.memory_id, x.entity_id FROM mentions x JOIN entities e ON e.id = x.entity_id "
            f"WHERE x.memory_id IN ({_marks(len(part))}) AND {where}", [*part, *params]))
    return out


def facts(
    conn: sqlite3.Connection, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int,
    support: int, history: bool = False,
) -> list[Relation]:
    valid, vparams = (("1", []) if history else ("r.valid_to IS NULL", []) if as_of is None else
                      ("(r.valid_from IS NULL OR r.valid_from <= ?) AND (r.valid_to IS NULL OR r.valid_to > ?)",
                       [iso(as_of)] * 2))
    where, params = scope_sql(scope, alias="r", indexed=False)
    wanted: dict[str, None] = {}
    for eid in dict.fromkeys(entity_ids):
        wanted.update(dict.fromkeys(r[0] for r in conn.execute(
            f"SELECT r.id FROM relations r WHERE {valid} AND (r.source_id = ? OR r.target_id = ?) AND {where} "
            "ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?", [*vparams, eid, eid, *params, limit])))
    ids = sorted(wanted)
    found: list[Relation] = []
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        found += _relations(conn, f"r.id IN ({_marks(len(part))})", part, support)
    return sorted(found, key=lambda r: r.id)


def _after(alias: str, after: tuple[datetime, str] | None, where: list[str], params: list[Any]) -> None:
    """Keyset pagination on (created_at, id): ISO times of fixed width sort as they compare."""
    if after is not None:
        where.append(f"({alias}.created_at > ? OR ({alias}.created_at = ? AND {alias}.id > ?))")
        params += [iso(after[0]), iso(after[0]), after[1]]


def _like(fragment: str) -> str:
    return "%" + fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def list_entities(conn: sqlite3.Connection, scope: Scope, q: EntityQuery) -> list[Entity]:
    sql, params = scope_sql(scope, alias="e")
    where = [sql]
    if q.contains is not None:
        where.append("e.id IN (SELECT entity_id FROM entity_keys WHERE key LIKE ? ESCAPE '\\')")
        params.append(_like(q.contains))
    if q.classes:
        where.append(f"EXISTS (SELECT 1 FROM json_each(e.classes) WHERE value IN ({_marks(len(q.classes))}))")
        params += list(q.classes)
    _after("e", q.after, where, params)
    limit = "" if q.limit is None else f" LIMIT {int(q.limit)}"
    rows = conn.execute(f"SELECT e.* FROM entities e WHERE {' AND '.join(where)} ORDER BY e.created_at, e.id{limit}",
                        params).fetchall()
    return [_entity(r) for r in rows]


def list_facts(conn: sqlite3.Connection, scope: Scope, q: FactQuery) -> list[Relation]:
    sql, params = scope_sql(scope, alias="r")
    where = [sql]
    if q.memory_id is not None:
        where.append("r.id IN (SELECT relation_id FROM relation_support WHERE memory_id = ?)")
        params.append(q.memory_id)
    if q.entity_ids:
        marks = _marks(len(q.entity_ids))
        where.append(f"(r.source_id IN ({marks}) OR r.target_id IN ({marks}))")
        params += [*q.entity_ids, *q.entity_ids]
    if q.relations:
        where.append(f"r.relation IN ({_marks(len(q.relations))})")
        params += list(q.relations)
    if q.as_of is not None:
        where.append("(r.valid_from IS NULL OR r.valid_from <= ?) AND (r.valid_to IS NULL OR r.valid_to > ?)")
        params += [iso(q.as_of)] * 2
    elif not q.include_closed:
        where.append("r.valid_to IS NULL")
    _after("r", q.after, where, params)
    limit = "" if q.limit is None else f" LIMIT {int(q.limit)}"
    return _relations(conn, " AND ".join(where), params, order=f"ORDER BY r.created_at, r.id{limit}")


def fact_states(conn: sqlite3.Connection, scope: Scope, memory_ids: Sequence[str]) -> dict[str, FactStates]:
    """See :meth:`Store.fact_states`: the memories' facts, then the newest open value of each closed one."""
    sql, params = scope_sql(scope, alias="r")
    ids = list(dict.fromkeys(memory_ids))
    support: dict[str, list[str]] = {}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        for rid, mid in conn.execute(
            f"SELECT relation_id, memory_id FROM relation_support WHERE memory_id IN ({_marks(len(part))})", part
        ):
            support.setdefault(rid, []).append(mid)
    facts = _relations(conn, f"r.id IN (SELECT value FROM json_each(?)) AND {sql}",
                       [json.dumps(list(support)), *params])
    out: dict[str, FactStates] = {}
    for fact in facts:
        later = None
        if fact.valid_to is not None:
            open_ones = _relations(conn, f"r.source_id = ? AND r.relation = ? AND r.valid_to IS NULL AND r.id <> ? "
                                         f"AND {sql}", [fact.source_id, fact.relation, fact.id, *params])
            later = max(open_ones, key=successor_order, default=None)
        for mid in support[fact.id]:
            out.setdefault(mid, FactStates()).add(fact, later)
    return out


def quarantined(conn: sqlite3.Connection, scope: Scope, status: str | None) -> list[QuarantineEntry]:
    where, params = scope_sql(scope, alias="q")
    if status is not None:
        where += " AND q.status = ?"
        params.append(status)
    return quarantine_rows(conn, f"{where} ORDER BY q.rowid", params)


def quarantine_rows(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> list[QuarantineEntry]:
    """Entries of ``quarantine AS q`` selected by ``where`` (which may end in ORDER BY and LIMIT)."""
    return [
        QuarantineEntry(
            id=r["id"], triple=json.loads(r["triple"]), reasons=json.loads(r["reasons"]),
            memory_ids=json.loads(r["memory_ids"]), ontology=r["ontology"], status=r["status"],
            user_id=r["user_id"], agent_id=r["agent_id"], run_id=r["run_id"],
            created_at=datetime.fromisoformat(r["created_at"]), released_at=_dt(r["released_at"]),
        )
        for r in conn.execute(f"SELECT * FROM quarantine AS q WHERE {where}", params)
    ]


entity_row = _entity
"""An :class:`Entity` from an ``entities`` row (the dump reads them too)."""
select_relations = _relations
"""Facts selected by a ``WHERE`` on ``relations AS r``, with their provenance (the dump reads them too)."""
