"""Reads of memories and their history (the graph's are in :mod:`.graph`, search's in :mod:`.search`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...filters import Filter
from ...models import HistoryEvent, MemoryRecord, Scope
from .cypher import conjunction, exact_scope_where, hint, scope_where
from .cypher import memories as q
from .filters import Params, compile_filter
from .records import live_dict, to_history, to_record
from .session import Db


def find_hashes(db: Db, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
    """The oldest memory of exactly ``scope`` holding each hash."""
    wanted = list(dict.fromkeys(hashes))
    if not wanted:
        return {}
    params: dict[str, Any] = {"hashes": wanted}
    query = q.find_hashes(exact_scope_where(scope, "m", params))
    rows = db.read("find_hashes", lambda tx: tx.run(query, params).data())
    return {r["hash"]: r["id"] for r in rows}


def get(db: Db, memory_id: str, scope: Scope) -> MemoryRecord | None:
    params: dict[str, Any] = {"id": memory_id}
    query = q.get_memory(scope_where(scope, "m", params))
    row = db.read("get", lambda tx: tx.run(query, params).single())
    return to_record(row["rec"]) if row is not None and live_dict(row["rec"]) else None


def list_memories(db: Db, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
    """Newest first (``created_at`` descending, then ``id`` ascending)."""
    if limit <= 0:
        return []
    fp = Params("f")
    params: dict[str, Any] = {"limit": int(limit)}
    where = scope_where(scope, "m", params)
    if flt is not None:
        where = conjunction(where, compile_filter(flt, "m", fp))
        params.update(fp.values)
    query = q.list_memories(hint(scope), where)
    rows = db.read("list", lambda tx: tx.run(query, params).data())
    return [to_record(r["rec"]) for r in rows if live_dict(r["rec"])]


def history(db: Db, memory_id: str, scope: Scope) -> list[HistoryEvent]:
    params: dict[str, Any] = {"id": memory_id}
    query = q.history(scope_where(scope, "h", params))
    rows = db.read("history", lambda tx: tx.run(query, params).data())
    return [to_history(r["ev"]) for r in rows]


def count(db: Db, scope: Scope | None) -> int:
    params: dict[str, Any] = {}
    query = q.COUNT_ALL if scope is None else q.count(scope_where(scope, "m", params))
    row = db.read("count", lambda tx: tx.run(query, params).single())
    return int(row["n"]) if row is not None else 0


def ids_with_prefix(db: Db, scope: Scope, prefix: str, limit: int) -> list[str]:
    params: dict[str, Any] = {"prefix": prefix, "limit": int(limit)}
    query = q.ids_with_prefix(scope_where(scope, "m", params))
    return [r["id"] for r in db.read("ids_with_prefix", lambda tx: tx.run(query, params).data())]
