"""The dump primitives of the Neo4j store (see the "dump primitives" of :class:`~..base.Store`):
paged reads of one exact scope with vectors, store-wide id lookups, and the verbatim write of
dumped rows in one transaction (memories, events, entities and quarantine through the same rows
and queries as every write; facts created as given, never merged into a twin)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from neo4j import ManagedTransaction

from ...errors import StoreError
from ...models import Entity, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope, to_utc
from ..base import DUMP_KINDS, GraphWrite, NewEntity, Restore, Vector
from .cypher import dump as dump_q
from .cypher import exact_scope_where, hint
from .cypher import graph as graph_q
from .cypher import memories as memory_q
from .naming import rel_type
from .records import (
    chunks,
    history_props,
    live_dict,
    memory_row,
    scope_props,
    to_entity,
    to_history,
    to_quarantine,
    to_record,
    to_relation,
    utc,
    wire,
)
from .session import Db, conflicts
from .statements import drive, quiet
from .writes import run_merge_new, write_graph


def _order(s: Scope) -> tuple[tuple[bool, str], ...]:
    return tuple((v is not None, v or "") for v in (s.user_id, s.agent_id, s.run_id))  # NULL first, as SQLite


def dump_scopes(db: Db) -> list[Scope]:
    rows = db.read("dump_scopes", lambda tx: tx.run(dump_q.DUMP_SCOPES).data())
    found = [Scope(user_id=r["user_id"], agent_id=r["agent_id"], run_id=r["run_id"]) for r in rows
             if any(r[k] is not None for k in ("user_id", "agent_id", "run_id"))]
    return sorted(found, key=_order)


def dump_counts(db: Db, scope: Scope | None) -> dict[str, int]:
    def work(tx: ManagedTransaction) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind in DUMP_KINDS:
            params: dict[str, Any] = {}
            var = "r" if kind == "fact" else "n"
            where = exact_scope_where(scope, var, params) if scope is not None else "true"
            query = dump_q.count_facts(where) if kind == "fact" else dump_q.count_nodes(dump_q.LABELS[kind], where)
            out[kind] = int(tx.run(query, params).single(strict=True)["n"])
        return out

    return db.read("dump_counts", work)


def _vector(value: Any) -> Vector | None:
    return None if value is None else np.asarray(value, dtype=np.float32)


def _live_page(db: Db, what: str, query: str, params: dict[str, Any], alive: Callable[[dict[str, Any]], bool]
               ) -> list[dict[str, Any]]:
    """A page of rows, without those a concurrent transaction deleted after the read matched them
    (their properties read as nulls). A page of only such rows is read past (its sort ``key`` was
    taken before), so an empty answer still means the end."""
    def read(page: dict[str, Any]) -> list[dict[str, Any]]:
        return db.read(what, lambda tx: tx.run(query, page).data())

    while True:
        rows = read(params)
        kept = [r for r in rows if alive(r)]
        if kept or len(rows) < params["limit"]:
            return kept
        params = {**params, "after": rows[-1]["key"]}


def dump_memories(db: Db, dims: int | None, scope: Scope, after: str | None, limit: int
                  ) -> list[tuple[MemoryRecord, Vector]]:
    params: dict[str, Any] = {"after": after or "", "limit": int(limit)}
    query = dump_q.memories(exact_scope_where(scope, "m", params), hint(scope, "m", "Memory"))
    out: list[tuple[MemoryRecord, Vector]] = []
    for r in _live_page(db, "dump_memories", query, params, lambda r: live_dict(r["rec"])):
        vec = _vector(r["vec"])
        out.append((to_record(r["rec"]), vec if vec is not None else np.zeros(dims or 0, dtype=np.float32)))
    return out


def dump_history(db: Db, scope: Scope, after: str | None, limit: int) -> list[HistoryEvent]:
    params: dict[str, Any] = {"after": after or "", "limit": int(limit)}
    query = dump_q.history(exact_scope_where(scope, "h", params), hint(scope, "h", "HistoryEvent"))
    return [to_history(r["ev"]) for r in db.read("dump_history", lambda tx: tx.run(query, params).data())]


def dump_entities(db: Db, scope: Scope, after: str | None, limit: int
                  ) -> list[tuple[Entity, Vector | None, list[str]]]:
    params: dict[str, Any] = {"after": after or "", "limit": int(limit)}
    query = dump_q.entities(exact_scope_where(scope, "e", params), hint(scope, "e", "Entity"))
    rows = _live_page(db, "dump_entities", query, params,
                      lambda r: r["ent"]["name"] is not None and r["ent"]["created_at"] is not None)
    return [(to_entity(r["ent"]), _vector(r["vec"]), sorted(r["mids"])) for r in rows]


def dump_facts(db: Db, scope: Scope, entity_ids: Sequence[str]) -> list[Relation]:
    if not entity_ids:
        return []
    params: dict[str, Any] = {"ids": list(entity_ids)}
    query = dump_q.facts(exact_scope_where(scope, "r", params))
    rows = db.read("dump_facts", lambda tx: tx.run(query, params).data())
    return sorted((to_relation(r) for r in rows), key=lambda r: r.id)


def dump_quarantine(db: Db, scope: Scope, after: str | None, limit: int) -> list[QuarantineEntry]:
    params: dict[str, Any] = {"after": after or "", "limit": int(limit)}
    query = dump_q.quarantine(exact_scope_where(scope, "q", params), hint(scope, "q", "Quarantine"))
    return [to_quarantine(r["entry"]) for r in db.read("dump_quarantine", lambda tx: tx.run(query, params).data())]


def taken_ids(db: Db, kind: str, ids: Sequence[str]) -> set[str]:
    if kind not in DUMP_KINDS:
        raise StoreError(f"no dump kind {kind!r}; kinds: {', '.join(DUMP_KINDS)}")
    query = dump_q.TAKEN_FACTS if kind == "fact" else dump_q.taken(dump_q.LABELS[kind])

    def work(tx: ManagedTransaction) -> set[str]:
        found: set[str] = set()
        for part in chunks(list(ids), 5000):
            found.update(r["id"] for r in tx.run(query, ids=part))
        return found

    return db.read("taken_ids", work) if ids else set()


def restore(db: Db, dims: int | None, scope: Scope, rows: Restore) -> None:
    """One write transaction: memories and events as :func:`.writes.write` writes them, entities,
    mentions and quarantine through :func:`.writes.write_graph`, facts created directly (with
    their validity and provenance as dumped), then the times and counts those leave unset."""
    memory_rows = [memory_row(m, dims) for m in rows.memories]
    event_rows = [history_props(e) for e in rows.events]
    types = {f.relation: rel_type(f.relation) for f in rows.facts}
    graph = GraphWrite(
        # a zero vector is stored as none (records.stored_vector): an entity dumped without one
        entities=[NewEntity(e, v if v is not None else np.zeros(dims or 1, dtype=np.float32))
                  for e, v in rows.entities],
        mentions=list(rows.mentions), quarantine=list(rows.quarantine))
    facts: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    seq = time.time_ns()
    for pos, f in enumerate(rows.facts):
        props = {"id": f.id, "relation": f.relation, "memory_ids": list(dict.fromkeys(f.memory_ids)),
                 "valid_from": utc(f.valid_from), "valid_to": utc(f.valid_to), "created_at": to_utc(f.created_at),
                 "seq": seq + pos, **scope_props(f.user_id, f.agent_id, f.run_id)}
        row: dict[str, Any] = {"source": f.source_id, "target": f.target_id,
                               **wire(props)}
        if f.target_id is None:
            row["value"] = {"id": f.id, "value": f.value, **({"datatype": f.datatype} if f.datatype else {}),
                            **scope_props(f.user_id, f.agent_id, f.run_id)}
        facts.setdefault((types[f.relation], f.target_id is None), []).append(row)
    access = [{"id": mid, "n": n, "at": utc(at)} for mid, (n, at) in rows.access.items()]
    updated = [{"id": e.id, "at": to_utc(e.updated_at)} for e, _ in rows.entities if e.updated_at is not None]
    batch = db.cfg.write_batch_size

    def work(tx: ManagedTransaction) -> None:
        with conflicts():
            for chunk in chunks(memory_rows, batch):
                drive(tx, run_merge_new(memory_q.INSERT_MEMORIES, chunk, "memory"))
            ordered = [wire({**r, "seq": seq + pos}) for pos, r in enumerate(event_rows)]
            for chunk in chunks(ordered, batch):
                tx.run(memory_q.INSERT_HISTORY, quiet({"rows": chunk})).consume()
            drive(tx, write_graph(scope, graph, batch=batch, dims=dims))
        for (rtype, literal), fact_rows in facts.items():
            query = graph_q.create_facts(rtype, literal)
            for chunk in chunks(fact_rows, batch):
                done = tx.run(query, quiet({"rows": chunk})).single()
                if done is None or done["n"] != len(chunk):
                    raise StoreError("a dumped fact names an entity that is not in the store; nothing was written")
        for chunk in chunks(access, batch):
            tx.run(dump_q.SET_ACCESS, quiet({"rows": chunk})).consume()
        for chunk in chunks(updated, batch):
            tx.run(dump_q.SET_ENTITY_UPDATED, quiet({"rows": chunk})).consume()

    db.write("restore", work)
