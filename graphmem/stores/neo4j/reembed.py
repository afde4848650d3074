"""Re-embedding a Neo4j store (see the re-embedding methods of :class:`~graphmem.stores.base.Store`).

New vectors are staged as node properties no index or read uses; one write transaction swaps them
in and changes the pin. A vector index has a fixed size, so when the size changes the two vector
indexes are dropped and created again after that commit: until they are online, vector searches
fail with ``StoreError`` (nothing is ever answered from vectors of two models).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from neo4j import ManagedTransaction

from ...models import Scope
from ..base import ReembedRow, Vector
from .cypher import reembed as q
from .cypher import schema as sq
from .cypher import scope_where
from .records import check_vector
from .session import Db
from .statements import quiet

VECTOR_INDEXES = ("memory_embedding", "entity_embedding")
_CLEAR_BATCH = 10_000


def start(db: Db, embedder: str, dims: int) -> None:
    target = json.dumps({"embedder": embedder, "dims": dims})
    row = db.single("re-embed", q.READ_TARGET, {})
    if row is not None and row["target"] == target:
        return  # resume: what is staged was computed by this embedder
    with db.errors("re-embed", write=True), db.session() as session:
        for kind in q.SOURCES:
            session.run(q.clear(kind, _CLEAR_BATCH)).consume()
    db.write("re-embed", lambda tx: tx.run(q.WRITE_TARGET, target=target).consume())


def _where(scope: Scope | None, params: dict[str, Any]) -> str:
    return "true" if scope is None else scope_where(scope, "n", params)


def pending(db: Db, kind: str, scope: Scope | None, after: str | None, limit: int) -> list[ReembedRow]:
    params: dict[str, Any] = {"after": after, "limit": limit}
    query = q.pending(kind, _where(scope, params))
    rows = db.read("re-embed", lambda tx: tx.run(query, params).data())
    return [ReembedRow(r["key"], r["text"], r["check"]) for r in rows]


def count(db: Db, kind: str, scope: Scope | None) -> int:
    params: dict[str, Any] = {}
    row = db.single("re-embed", q.count(kind, _where(scope, params)), params)
    return int(row["n"]) if row is not None else 0


def stage(db: Db, kind: str, rows: Sequence[ReembedRow], vectors: Vector, dims: int) -> None:
    data = []
    for i, r in enumerate(rows):
        vec = check_vector(vectors[i], dims, f"new embedding of {kind} {r.key}")
        data.append({"key": r.key, "check": r.check, "vec": vec if any(vec) else []})
    db.write("re-embed", lambda tx: tx.run(q.stage(kind), quiet({"rows": data})).consume())


def finish(db: Db, embedder: str, dims: int, old_dims: int | None, analyzer: str) -> int:
    def switch(tx: ManagedTransaction) -> int:
        missing = sum(int(tx.run(q.count(kind, "true")).single(strict=True)["n"]) for kind in q.SOURCES)
        if missing:
            return missing
        for kind in q.SOURCES:
            tx.run(q.swap(kind)).consume()
            tx.run(q.drop_staged(kind)).consume()
        tx.run(q.PIN, embedder=embedder, dims=dims).consume()
        return 0

    missing = db.write("re-embed", switch)
    if not missing and old_dims != dims:
        rebuild_vector_indexes(db, dims, analyzer)
    return missing


def rebuild_vector_indexes(db: Db, dims: int, analyzer: str) -> None:
    """Drop and create the vector indexes with ``dims`` (schema changes cannot share a transaction
    with data), then wait until they are online."""
    create = {name: s for s in sq.schema_statements(dims, analyzer) for name in VECTOR_INDEXES
              if s.startswith(f"CREATE VECTOR INDEX {name} ")}
    with db.errors("re-embed: vector index rebuild", write=True), db.session() as session:
        for name in VECTOR_INDEXES:
            session.run(sq.drop_index(name)).consume()
            session.run(create[name]).consume()
        session.run(sq.AWAIT_INDEXES).consume()
