"""Rows to models and models to rows: memories, history, entities, facts, quarantine entries and
vectors, between graphmem's types and what the queries of :mod:`.cypher` return or take.

Rows read back are built unvalidated (they were validated on the way in; a search builds hundreds,
so the lookups here are the cheap ones). A row whose required fields read as null belongs to a
node or fact a concurrent transaction deleted after this read matched it: Neo4j reads committed
data without holding it, and :func:`live` / :func:`gone` tell those apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

import numpy as np
from neo4j.time import DateTime as Neo4jDateTime

from ...errors import InvalidInputError, StoreError
from ...models import (
    Entity,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    QuarantineEntry,
    Relation,
    build_entity,
    build_record,
    build_relation,
    norm_name,
    to_utc,
)
from ..base import FactStates, NewMemory, Records, Subgraph, Vector
from .cypher import MEMORY_FIELDS, MEMORY_TIMES
from .filters import FOLD_PREFIX, FOLDED_FIELDS, mirror_properties, needs_fold, normalize_metadata

T = TypeVar("T")

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_SEP: Final = "\x1f"
_REQUIRED: Final = ("id", "memory", "hash", "created_at")
"""Fields every stored memory has: one that reads as null belongs to a memory deleted mid-read."""
_REQUIRED_AT: Final = tuple(MEMORY_FIELDS.index(f) for f in _REQUIRED)
_MEMORY_TYPES: Final = {t.value: t for t in MemoryType}
_RECORD_TIMES: Final = tuple(MEMORY_TIMES)


def unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def identity(user_id: str | None, agent_id: str | None, run_id: str | None, key: str) -> str:
    """The ``identity`` property: exact scope and key (a normalized name, or a text hash). Scope ids
    hold no control characters (``models.check_id``), so the separator cannot occur in them."""
    return _SEP.join((user_id or "", agent_id or "", run_id or "", key))


# --------------------------------------------------------------------------------------------------
# Times and vectors


def to_datetime(value: Any) -> datetime | None:
    """A time read from Neo4j (``epoch_us`` integers, or driver temporals) as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, int):  # epoch_us
        return _EPOCH + timedelta(microseconds=value)
    if isinstance(value, Neo4jDateTime):
        return to_utc(value.to_native())
    if isinstance(value, datetime):
        return to_utc(value)
    raise StoreError(f"unexpected time value {value!r} in Neo4j")


def _required_dt(value: Any) -> datetime:
    out = to_datetime(value)
    if out is None:
        raise StoreError("a node or fact in Neo4j has no created_at")
    return out


def utc(value: datetime | None) -> datetime | None:
    return to_utc(value) if value is not None else None


def wire(props: dict[str, Any]) -> dict[str, Any]:
    """A write's row: ``props`` without its ``None`` values and its datetimes, and ``t``: each datetime
    as ``[epoch seconds, microseconds]``, which :func:`.cypher.set_times` turns back into the same
    ``DATETIME`` (UTC).

    Why: the driver encodes a Python datetime through ``neo4j.time`` in pure Python, the largest
    client cost of a bulk write (a memory and its ADD event carry three; docs: Benchmarks, "Batched ingest");
    two integers cost next to nothing."""
    times = {k: _epoch_pair(v) for k, v in props.items() if isinstance(v, datetime)}
    return {"props": {k: v for k, v in props.items() if v is not None and k not in times}, "t": times}


def _epoch_pair(value: datetime) -> list[int]:
    delta = to_utc(value) - _EPOCH  # timedelta keeps seconds and microseconds >= 0: a floor, also before 1970
    return [delta.days * 86_400 + delta.seconds, delta.microseconds]


def check_vector(vector: Vector, dims: int | None, what: str) -> list[float]:
    """``vector`` as floats, refused if it has not ``dims`` dimensions or is not finite."""
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dims is not None and arr.shape[0] != dims:
        raise InvalidInputError(
            f"{what} has {arr.shape[0]} dimensions but this store holds {dims}-dimensional vectors"
        )
    if not np.isfinite(arr).all():
        raise InvalidInputError(f"{what} contains NaN or infinity")
    return [float(v) for v in arr.tolist()]


def stored_vector(vector: Vector, dims: int | None, what: str) -> list[float] | None:
    """An embedding to store, or ``None`` for a zero vector (a text without features, e.g. an
    emoji for the hashing embedder): Neo4j's cosine index refuses those, so the node is stored
    without one, which vector search skips, as its cosine of 0 ranks it last on SQLite."""
    arr = check_vector(vector, dims, what)
    return arr if any(arr) else None


def directions(vectors: Vector, dims: int | None, what: str) -> tuple[list[list[float]], list[int], int]:
    """The rows of ``vectors`` that have a direction, their positions, and how many rows there are.
    Neo4j's cosine refuses a zero vector (a text the embedder found no features in): such a row is
    similar to nothing, as its cosine of 0 with everything says on SQLite."""
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix = matrix.reshape(-1, matrix.shape[-1]) if matrix.size else matrix.reshape(0, 0)
    keep = [i for i, row in enumerate(matrix) if np.any(row)]
    return [check_vector(matrix[i], dims, what) for i in keep], keep, len(matrix)


# --------------------------------------------------------------------------------------------------
# Memories and history


def to_record(row: dict[str, Any]) -> MemoryRecord:
    """A record from a ``MEMORY_PROJ`` row, unvalidated."""
    data = {k: v for k, v in row.items() if v is not None}
    for name in _RECORD_TIMES:
        if name in data:
            data[name] = to_datetime(data[name])
    meta = data.get("metadata")
    data["metadata"] = {} if meta is None or meta == "{}" else json.loads(meta)
    if "memory_type" in data:
        data["memory_type"] = _MEMORY_TYPES[data["memory_type"]]
    return build_record(data)


def live(values: list[Any] | None) -> bool:
    """Whether a ``MEMORY_ROW`` list is a whole record: a memory a concurrent transaction
    deleted after this read matched it reads, in part or whole, as nulls."""
    return values is not None and all(values[i] is not None for i in _REQUIRED_AT)


def live_dict(rec: dict[str, Any]) -> bool:
    """:func:`live` for a ``MEMORY_PROJ`` map."""
    return all(rec.get(f) is not None for f in _REQUIRED)


def record_row(values: list[Any]) -> MemoryRecord:
    """A record from a ``MEMORY_ROW`` list."""
    return to_record(dict(zip(MEMORY_FIELDS, values[: len(MEMORY_FIELDS)], strict=True)))


def keep_row(records: Records, states: dict[str, FactStates], memory_id: str, values: list[Any]) -> None:
    """Keep a ``MEMORY_ROW`` list unbuilt in ``records``, and the fact states it carries in ``states``."""
    records.add_row(memory_id, values, record_row)
    if values[-1]:
        states[memory_id] = fact_states(values[-1])


def fact_states(rows: Iterable[dict[str, Any]]) -> FactStates:
    """One memory's fact states from rows of ``cypher.STATE_COLUMNS`` (deleted facts left out)."""
    out = FactStates()
    for row in rows:
        if gone(row["fact"]):
            continue
        later = None if row["next"] is None or gone(row["next"]) else to_relation(
            {"fact": row["next"], "source": row["source"], "target": row["next_target"], "value": row["next_value"],
             "datatype": row["next_datatype"]})
        out.add(to_relation(row), later)
    return out


def similarity(vhits: list[dict[str, Any]], fhits: list[dict[str, Any]]) -> dict[str, float]:
    """Exact cosine of each hit: a vector hit's score is one, a full-text hit carries its ``sim``."""
    out = {h["id"]: float(h["sim"]) for h in fhits if h.get("sim") is not None}
    out.update({h["id"]: max(-1.0, min(1.0, 2.0 * float(h["s"]) - 1.0)) for h in vhits})
    return out


def add_records(sub: Subgraph, recs: list[dict[str, Any]]) -> None:
    """The subgraph's own records (rows of ``graph_record_proj``), unbuilt, their fact states and
    their cosines."""
    if sub.fact_states is None:
        sub.fact_states = {}
    for r in recs:
        if not live(r["rec"]):
            continue
        keep_row(sub.records, sub.fact_states, r["rec"][0], r["rec"])
        if r.get("sim") is not None:
            sub.similarity[r["rec"][0]] = float(r["sim"])


def to_history(row: dict[str, Any]) -> HistoryEvent:
    data = {k: v for k, v in row.items() if v is not None}
    data["created_at"] = to_datetime(data.get("created_at"))
    data["details"] = json.loads(data["details"]) if "details" in data else {}
    return HistoryEvent.model_validate(data)


def history_props(event: HistoryEvent) -> dict[str, Any]:
    props: dict[str, Any] = {
        "id": event.id,
        "memory_id": event.memory_id,
        "event": event.event.value,
        "old_memory": event.old_memory,
        "new_memory": event.new_memory,
        "user_id": event.user_id,
        "agent_id": event.agent_id,
        "run_id": event.run_id,
        "actor_id": event.actor_id,
        "role": event.role,
        "created_at": to_utc(event.created_at),
        "details": normalize_metadata(event.details, "history details")[1],
    }
    return {k: v for k, v in props.items() if v is not None}


def memory_row(new: NewMemory, dims: int | None) -> dict[str, Any]:
    """The ``INSERT_MEMORIES`` row of a new memory: its properties (with the metadata mirror, the
    folded fields and its identity; its times apart, see :func:`wire`) and its vector."""
    rec = new.record
    metadata, metadata_json = normalize_metadata(rec.metadata, f"metadata of memory {rec.id}")
    props: dict[str, Any] = {
        "id": rec.id,
        "memory": rec.memory,
        "hash": rec.hash,
        "memory_type": rec.memory_type.value,
        "user_id": rec.user_id,
        "agent_id": rec.agent_id,
        "run_id": rec.run_id,
        "role": rec.role,
        "actor_id": rec.actor_id,
        "metadata": metadata_json,
        "created_at": to_utc(rec.created_at),
        "updated_at": to_utc(rec.updated_at) if rec.updated_at else None,
        "event_time": to_utc(rec.event_time) if rec.event_time else None,
        "expires_at": to_utc(rec.expires_at) if rec.expires_at else None,
        "follows": rec.follows,
    }
    props = {k: v for k, v in props.items() if v is not None}
    for name in FOLDED_FIELDS:
        value = props.get(name)
        if isinstance(value, str) and needs_fold(value):
            props[FOLD_PREFIX + name] = value.casefold()
    props.update(mirror_properties(metadata))
    props["identity"] = identity(rec.user_id, rec.agent_id, rec.run_id, rec.hash)
    return {**wire(props), "vec": stored_vector(new.vector, dims, f"embedding of memory {rec.id}")}


# --------------------------------------------------------------------------------------------------
# The knowledge graph


def gone(row: dict[str, Any]) -> bool:
    """A node or fact a concurrent transaction deleted after this read matched it: a deleted
    element's properties read as null."""
    return any(row.get(k) is None for k in ("id", "created_at")) or any(
        k in row and row[k] is None for k in ("name", "relation"))


def to_entity(row: dict[str, Any]) -> Entity:
    return build_entity({  # validated on the way in; a search builds hundreds
        "id": row["id"], "name": row["name"], "classes": list(row.get("classes") or []),
        "aliases": list(row.get("aliases") or []), "user_id": row.get("user_id"), "agent_id": row.get("agent_id"),
        "run_id": row.get("run_id"), "created_at": _required_dt(row["created_at"]),
        "updated_at": to_datetime(row.get("updated_at")),
    })


def to_relation(row: dict[str, Any]) -> Relation:
    r = row["fact"]
    return build_relation({  # validated on the way in; a search builds hundreds
        "id": r["id"], "source_id": row["source"], "relation": r["relation"], "target_id": row["target"],
        "value": row["value"], "datatype": row["datatype"], "memory_ids": sorted(r.get("memory_ids") or []),
        "valid_from": to_datetime(r.get("valid_from")), "valid_to": to_datetime(r.get("valid_to")),
        "created_at": _required_dt(r["created_at"]), "user_id": r.get("user_id"), "agent_id": r.get("agent_id"),
        "run_id": r.get("run_id"),
    })


def to_quarantine(row: dict[str, Any]) -> QuarantineEntry:
    return QuarantineEntry(
        id=row["id"], triple=json.loads(row["triple"]), reasons=json.loads(row["reasons"]),
        memory_ids=list(row.get("memory_ids") or []), ontology=row["ontology"], status=row["status"],
        user_id=row.get("user_id"), agent_id=row.get("agent_id"), run_id=row.get("run_id"),
        created_at=to_datetime(row["created_at"]), released_at=to_datetime(row.get("released_at")),
    )


def scope_props(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, Any]:
    return {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v is not None}


def aliases_props(aliases: Sequence[str]) -> dict[str, Any]:
    return {
        "aliases": list(aliases),
        "alias_keys": unique(norm_name(a) for a in aliases),
        "aliases_text": "\n".join(aliases) if aliases else None,
    }


def plain(value: Any) -> Any:
    """Driver values as plain Python: temporal types as ISO strings, containers recursively."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return value
