"""Reads of memories and their history (the graph's are in :mod:`.graph`, search's in :mod:`.search`),
as statements (:mod:`.statements`) that the sync and the async store run alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...filters import Filter
from ...models import HistoryEvent, MemoryRecord, Scope
from .cypher import conjunction, hint, scope_where
from .cypher import memories as q
from .filters import Params, compile_filter
from .records import identity, live_dict, to_history, to_record
from .statements import Statements, run


def find_hashes(scope: Scope, hashes: Sequence[str]) -> Statements[dict[str, str]]:
    """The memory of exactly ``scope`` holding each hash as its ``identity`` (the oldest one, in a
    store from before identities, whose backfill gave it to the oldest)."""
    wanted = [identity(scope.user_id, scope.agent_id, scope.run_id, h) for h in dict.fromkeys(hashes)]
    if not wanted:
        return {}
    rows = yield run(q.FIND_IDENTITIES, {"identities": wanted})
    return {r["hash"]: r["id"] for r in rows}


def get(memory_id: str, scope: Scope) -> Statements[MemoryRecord | None]:
    params: dict[str, Any] = {"id": memory_id}
    row = yield run(q.get_memory(scope_where(scope, "m", params)), params, "single")
    return to_record(row["rec"]) if row is not None and live_dict(row["rec"]) else None


def list_memories(scope: Scope, flt: Filter | None, limit: int) -> Statements[list[MemoryRecord]]:
    """Newest first (``created_at`` descending, then ``id`` ascending)."""
    if limit <= 0:
        return []
    fp = Params("f")
    params: dict[str, Any] = {"limit": int(limit)}
    where = scope_where(scope, "m", params)
    if flt is not None:
        where = conjunction(where, compile_filter(flt, "m", fp))
        params.update(fp.values)
    rows = yield run(q.list_memories(hint(scope), where), params)
    return [to_record(r["rec"]) for r in rows if live_dict(r["rec"])]


def history(memory_id: str, scope: Scope) -> Statements[list[HistoryEvent]]:
    params: dict[str, Any] = {"id": memory_id}
    rows = yield run(q.history(scope_where(scope, "h", params)), params)
    return [to_history(r["ev"]) for r in rows]


def scope_of(memory_id: str) -> Statements[Scope | None]:
    row = yield run(q.SCOPE_OF, {"id": memory_id}, "single")
    if row is None or all(row[k] is None for k in ("user_id", "agent_id", "run_id")):
        return None
    return Scope(user_id=row["user_id"], agent_id=row["agent_id"], run_id=row["run_id"])


def count(scope: Scope | None) -> Statements[int]:
    params: dict[str, Any] = {}
    query = q.COUNT_ALL if scope is None else q.count(scope_where(scope, "m", params))
    row = yield run(query, params, "single")
    return int(row["n"]) if row is not None else 0


def ids_with_prefix(scope: Scope, prefix: str, limit: int) -> Statements[list[str]]:
    params: dict[str, Any] = {"prefix": prefix, "limit": int(limit)}
    rows = yield run(q.ids_with_prefix(scope_where(scope, "m", params)), params)
    return [r["id"] for r in rows]


def history_ids_with_prefix(scope: Scope, prefix: str, limit: int) -> Statements[list[str]]:
    params: dict[str, Any] = {"prefix": prefix, "limit": int(limit)}
    rows = yield run(q.history_ids_with_prefix(scope_where(scope, "h", params)), params)
    return [r["id"] for r in rows]
