"""Neo4j backend of the storage contract (Neo4j 5.26+, Bolt, official ``neo4j`` driver).

Graph model (documented for analysts; these names are stable):

``(:Memory {id, memory, hash, memory_type, user_id, agent_id, run_id, role, actor_id, metadata,
created_at, updated_at, event_time, expires_at, embedding})``
    ``metadata`` is the whole metadata as a JSON string. Each top-level key whose value is a scalar
    (string, integer, float, boolean) or a list of scalars of one type is mirrored as the property
    ``md.<key>`` so Cypher can filter on it; any other non-null value (an object, a mixed list) is
    recorded as ``mdx.<key>``, a list of type-tagged strings of its scalar elements, so filters can
    tell that the key is present and test list membership. Where ``str.casefold`` differs from
    lower-casing (ß, ligatures, final sigma), ``mdfold.<key>`` and, for the caller-supplied record
    fields, ``fold.<field>`` hold the folded form for ``icontains``. Integers beyond 64 bits are
    mirrored as floats. Times are native ``DATETIME`` in UTC. Absent optional fields are absent
    properties. ``embedding`` is a float32 array (``db.create.setNodeVectorProperty``).
``(:HistoryEvent {id, memory_id, event, old_memory, new_memory, user_id, agent_id, run_id, actor_id,
role, created_at, details, seq})``
    ``details`` is a JSON string. History is not linked to the memory, so it outlives it. ``seq``
    (write order, on events written by ``insert``/``write``) breaks ties of ``created_at``.
``(:GraphmemMeta {key: 'schema', embedder, dims, schema_version})``
    Written by :meth:`Neo4jStore.open`, which refuses another embedder or size.

The knowledge graph (``Entity``, typed facts, ``Value``, ``MENTIONS``, ``Quarantine``) is described
and implemented in :mod:`graphmem.stores.neo4j_graph`.

Every query carries the caller's scope as equality predicates on indexed properties; user-supplied
keys and values only ever travel as parameters.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

import numpy as np
from neo4j import (
    READ_ACCESS,
    WRITE_ACCESS,
    Driver,
    GraphDatabase,
    ManagedTransaction,
    NotificationMinimumSeverity,
    Record,
    Session,
)
from neo4j import exceptions as neo4j_errors

from ..config import StoreConfig, display_uri
from ..errors import (
    ConfigError,
    ConflictError,
    DuplicateMemoryError,
    GraphmemError,
    InvalidInputError,
    QueryTimeoutError,
    ReadOnlyError,
    RowLimitError,
    SchemaMismatchError,
    StoreError,
    StoreUnavailableError,
)
from ..filters import RECORD_FIELDS, TIME_FIELDS, And, Cond, Filter, Not, Or
from ..models import (
    Entity,
    EventType,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    QuarantineEntry,
    Relation,
    Scope,
    build_record,
    to_utc,
)
from . import neo4j_cypher as analyst
from . import neo4j_graph as graph
from . import neo4j_reads as reads
from .base import (
    SEED_MIN_COSINE,
    Candidates,
    EntityQuery,
    Expectations,
    FactQuery,
    GraphContext,
    GraphQuery,
    GraphWrite,
    MemoryPatch,
    NewMemory,
    Records,
    Store,
    StoreInfo,
    Subgraph,
    Vector,
    WriteResult,
    patched_metadata,
    seed_ids,
    stale_entities,
    stale_memories,
)
from .neo4j_graph import HINT_ORDER, exact_scope_where, scope_where
from .text import lucene_query

__all__ = ["SCHEMA_VERSION", "Neo4jStore", "compile_filter", "mirror_properties"]

T = TypeVar("T")
log = logging.getLogger("graphmem")

SCHEMA_VERSION: Final = 1
MD_PREFIX: Final = "md."
MDX_PREFIX: Final = "mdx."
MDFOLD_PREFIX: Final = "mdfold."
FOLD_PREFIX: Final = "fold."
_MIRROR_PREFIXES: Final = (MD_PREFIX, MDX_PREFIX, MDFOLD_PREFIX)
_FOLDED_FIELDS: Final = ("role", "actor_id", "user_id", "agent_id", "run_id")
"""Record fields whose values come from callers, so may hold characters that ``toLower`` keeps."""
DATA_LABELS: Final = ("Memory", "HistoryEvent", *graph.GRAPH_LABELS)
"""Every label graphmem writes data under; :meth:`Neo4jStore.reset` empties all of them."""

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_REBUILT_INDEXES: Final = ("memory_text", "entity_link", "entity_embedding", "memory_embedding")
"""What :meth:`Neo4jStore.optimize` rebuilds: the Lucene-backed indexes search reads."""
_REBUILD_TIMEOUT_S: Final = 3_600

_KK_FLOOR: Final = 100
"""Smallest index over-fetch: below this the HNSW index's recall drops faster than its cost does
(each Lucene segment is searched for all the rows, so tools/neo4j keeps their number low by merging
early)."""
_QUANTIZED_OVERFETCH: Final = 4
"""Index rows per wanted hit when a quantized index (an older store's) is re-scored: its own ranking
is approximate, so the true top ``k`` lie among many more rows."""
_KK_MAX: Final = 5_000
"""Largest first over-fetch; past it the exact pass over a (countable) scope is cheaper."""
_KK_WIDE_MAX: Final = 50_000
"""Largest widened over-fetch, for scopes too big to count or to score exactly."""
_FILTER_OVERFETCH: Final = 4
"""Extra index over-fetch when a filter applies: its selectivity is unknown before the query."""
_BIG_SCOPE_TTL_S: Final = 60.0
"""How long a scope found big (past ``vector_exact_max``) is taken as big without probing it again.
The probe is a tenth of a search at 100k memories; a scope that shrank meanwhile only takes the
index path with its fallbacks, which return the same hits."""
_RESET_BATCH: Final = 10_000
_ATOMIC_DELETE_MAX: Final = 20_000
"""Scopes up to this size are deleted in one transaction (see ``Neo4jStore.delete_scope``)."""
_DELETE_CHUNK: Final = 10_000
_BOLT_SCHEMES: Final = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})

_MEMORY_FIELDS: Final = (
    "id",
    "memory",
    "hash",
    "memory_type",
    "user_id",
    "agent_id",
    "run_id",
    "role",
    "actor_id",
    "metadata",
    "created_at",
    "updated_at",
    "event_time",
    "expires_at",
    "access_count",
    "last_accessed_at",
)
_MEMORY_TIMES: Final = TIME_FIELDS | {"last_accessed_at"}
_REQUIRED: Final = ("id", "memory", "hash", "created_at")
"""Fields every stored memory has: one that reads as null belongs to a memory deleted mid-read."""
_REQUIRED_AT: Final = tuple(_MEMORY_FIELDS.index(f) for f in _REQUIRED)
_HISTORY_FIELDS: Final = (
    "id",
    "memory_id",
    "event",
    "old_memory",
    "new_memory",
    "user_id",
    "agent_id",
    "run_id",
    "actor_id",
    "role",
    "created_at",
    "details",
)


# Map projections naming each field, so the embedding never crosses the wire; times as integers
# (see graph.epoch_us: decoding driver DateTime objects dominated reading many records).
_MEMORY_PROJ: Final = graph.projection("m", _MEMORY_FIELDS, _MEMORY_TIMES)
_MEMORY_ROW: Final = "[" + ", ".join(graph.epoch_us(f"m.{f}") if f in _MEMORY_TIMES else f"m.{f}"
                                     for f in _MEMORY_FIELDS) + "]"
"""A record as a list in :data:`_MEMORY_FIELDS` order, for search: it reads hundreds, and a list
carries no field names (less server time and fewer Bolt bytes than the map)."""
_SIM: Final = "2 * vector.similarity.cosine(m.embedding, $vec) - 1"
"""Exact cosine of ``m`` with the query (``Candidates.similarity``), for memories that are not vector hits."""
_HISTORY_PROJ: Final = graph.projection("h", _HISTORY_FIELDS, ("created_at",))



# --------------------------------------------------------------------------------------------------
# Metadata mirroring


def _scalar_kind(value: Any) -> str | None:
    """Neo4j property type of one scalar, or ``None`` when Neo4j cannot store it as one."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if _INT64_MIN <= value <= _INT64_MAX else None
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def _number_tag(value: int | float) -> str | None:
    """One spelling per numeric value, so 1 and 1.0 get the same tag (they are equal in Python)."""
    if isinstance(value, float):
        if math.isnan(value):
            return None  # NaN equals nothing, not even itself
        if math.isinf(value):
            return "n:inf" if value > 0 else "n:-inf"
        if value.is_integer():
            return f"n:{int(value)}"
        return f"n:{value!r}"
    return f"n:{value}"


def _element_tags(value: Any) -> list[str]:
    """Type-tagged strings for a scalar inside an unmirrorable list (``contains`` tests these)."""
    if isinstance(value, bool):
        return ["b:true" if value else "b:false"]
    if isinstance(value, int | float):
        tag = _number_tag(value)
        return [tag] if tag is not None else []
    if isinstance(value, str):
        return ["s:" + value, "c:" + value.casefold()]
    return []


def _want_tag(op: str, want: Any) -> str | None:
    """The tag an unmirrorable list must hold for ``contains``/``icontains`` ``want`` to match."""
    if isinstance(want, str):
        return ("s:" if op == "contains" else "c:") + want
    if isinstance(want, bool):
        return "b:true" if want else "b:false"
    if isinstance(want, int | float):
        return _number_tag(want)
    return None


def _needs_fold(text: str) -> bool:
    """``casefold`` differs from ``lower`` (and so from Cypher's ``toLower``): ß, ligatures, ς, …"""
    return text.casefold() != text.lower()


def mirror_properties(metadata: dict[str, Any]) -> dict[str, Any]:
    """The ``md.*``/``mdx.*``/``mdfold.*`` properties for ``metadata`` (already JSON-normalized).

    ``mdfold.<key>`` holds the case-folded string (or list) only where folding differs from
    lower-casing, so ``icontains`` matches Python's ``casefold`` semantics without doubling storage.
    """
    props: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue  # a null value is treated as missing by filters, so store nothing
        if _scalar_kind(value) is not None:
            props[MD_PREFIX + key] = value
            if isinstance(value, str) and _needs_fold(value):
                props[MDFOLD_PREFIX + key] = value.casefold()
            continue
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**1023:
            # Beyond 64 bits Neo4j has no integer: compare as a float, exact whenever the value is
            # representable (filter operands get the same conversion in _param_value).
            props[MD_PREFIX + key] = float(value)
            continue
        if isinstance(value, list):
            kinds = {_scalar_kind(v) for v in value}
            if len(kinds) <= 1 and None not in kinds:
                props[MD_PREFIX + key] = list(value)
                if kinds == {"str"} and any(_needs_fold(v) for v in value):
                    props[MDFOLD_PREFIX + key] = [v.casefold() for v in value]
                continue
            props[MDX_PREFIX + key] = [t for v in value for t in _element_tags(v)]
        else:
            props[MDX_PREFIX + key] = []
    return props


def _normalize_metadata(metadata: dict[str, Any], what: str) -> tuple[dict[str, Any], str]:
    """JSON round trip: what we mirror and filter on is exactly what a later read returns."""
    try:
        text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serializable: {exc}") from None
    normalized = json.loads(text)
    if not isinstance(normalized, dict):
        raise InvalidInputError(f"{what} must be a mapping")
    return normalized, text


# --------------------------------------------------------------------------------------------------
# Filter compilation


class _Params:
    """Collects query parameters under generated names, so no user value reaches query text.

    Constants go in as parameters too (``$f3`` = false): a literal ``false`` lets the planner fold
    the whole WHERE away, and then the scope index hint becomes unfulfillable and the query fails.
    """

    def __init__(self, prefix: str = "p") -> None:
        self.values: dict[str, Any] = {}
        self._prefix = prefix

    def add(self, value: Any) -> str:
        name = f"{self._prefix}{len(self.values)}"
        self.values[name] = value
        return "$" + name


def _param_value(value: Any) -> Any:
    """Integers beyond 64 bits cannot cross Bolt; compare them as floats (Neo4j cannot store them)."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return float(value) if abs(value) < 2**1023 else math.copysign(math.inf, value)
    return value


_ORDER_OPS: Final = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def compile_filter(flt: Filter, var: str, params: _Params) -> str:
    """A Cypher boolean expression equal to :func:`graphmem.filters.evaluate` on node ``var``.

    Every condition yields ``true`` or ``false``, never ``null``, so ``NOT`` inverts it exactly
    (Cypher's three-valued logic would otherwise drop rows on both sides of a negation).
    """
    if isinstance(flt, And):
        return "(" + " AND ".join(compile_filter(f, var, params) for f in flt.items) + ")"
    if isinstance(flt, Or):
        return "(" + " OR ".join(compile_filter(f, var, params) for f in flt.items) + ")"
    if isinstance(flt, Not):
        return f"(NOT {compile_filter(flt.item, var, params)})"
    return _condition(flt, var, params)


def _condition(cond: Cond, var: str, params: _Params) -> str:
    if not cond.metadata:
        if cond.field not in RECORD_FIELDS:  # the parser guarantees this; never inline anything else
            raise InvalidInputError(f"unknown record field {cond.field!r}")
        if cond.field in TIME_FIELDS:
            return _time_condition(cond, f"{var}.{cond.field}", params)
        folded = f"{var}.`{FOLD_PREFIX}{cond.field}`" if cond.field in _FOLDED_FIELDS else None
        return _value_condition(cond.op, cond.value, f"{var}.{cond.field}", None, folded, params)
    value = f"{var}[{params.add(MD_PREFIX + cond.field)}]"
    opaque = f"{var}[{params.add(MDX_PREFIX + cond.field)}]"
    folded = f"{var}[{params.add(MDFOLD_PREFIX + cond.field)}]"
    return _value_condition(cond.op, cond.value, value, opaque, folded, params)


def _value_condition(op: str, want: Any, a: str, x: str | None, f: str | None, params: _Params) -> str:
    """Condition on a mirrored value ``a``, its unmirrorable form ``x`` and case-folded form ``f``."""
    present = f"{a} IS NOT NULL" + (f" OR {x} IS NOT NULL" if x is not None else "")
    if op in ("eq", "ne") and want is None:
        return f"({present})" if op == "ne" else f"(NOT ({present}))"
    if op in ("eq", "ne"):
        same = f"coalesce({a} = {params.add(_param_value(want))}, false)"
        return same if op == "eq" else f"(NOT {same})"
    if op in ("in", "nin"):
        values = [_param_value(w) for w in want if w is not None]
        hit = f"coalesce({a} IN {params.add(values)}, false)" if values else params.add(False)
        return hit if op == "in" else f"(NOT {hit})"
    if op in ("contains", "icontains"):
        return _contains(op, want, a, x, f, params)
    cmp = _ORDER_OPS[op]
    if isinstance(want, str):
        guard = f"{a} IS :: STRING NOT NULL"
    else:  # the parser refuses booleans and None here
        guard = f"({a} IS :: INTEGER NOT NULL OR {a} IS :: FLOAT NOT NULL)"
    return f"coalesce({guard} AND {a} {cmp} {params.add(_param_value(want))}, false)"


def _contains(op: str, want: Any, a: str, x: str | None, f: str | None, params: _Params) -> str:
    """Substring test on a string, membership test on a list, false on anything else."""
    if isinstance(want, str):
        w = params.add(want)
        if op == "contains":
            on_string, on_list = f"{a} CONTAINS {w}", f"{w} IN {a}"
        else:  # want is already case-folded by the parser; f holds casefold() where lower() differs
            lowered = f"toLower({a})" if f is None else f"coalesce({f}, toLower({a}))"
            on_string = f"{lowered} CONTAINS {w}"
            any_lower = f"any(_x IN {a} WHERE _x IS :: STRING NOT NULL AND toLower(_x) = {w})"
            on_list = any_lower if f is None else f"CASE WHEN {f} IS NULL THEN {any_lower} ELSE {w} IN {f} END"
    else:
        on_string, on_list = params.add(False), f"{params.add(_param_value(want))} IN {a}"
    expr = (
        f"coalesce(CASE WHEN {a} IS :: STRING NOT NULL THEN {on_string} "
        f"WHEN {a} IS :: LIST<ANY> NOT NULL THEN {on_list} ELSE false END, false)"
    )
    tag = _want_tag(op, want)
    if x is not None and tag is not None:
        expr = f"({expr} OR {params.add(tag)} IN coalesce({x}, []))"
    return expr


def _iso_expr(a: str) -> str:
    """Cypher for :func:`graphmem.models.iso` of a DATETIME (fixed-width UTC with microseconds)."""

    def pad(part: str, width: int) -> str:
        return f"right('{'0' * (width - 1)}' + toString(_t.{part}), {width})"

    body = (
        f"{pad('year', 4)} + '-' + {pad('month', 2)} + '-' + {pad('day', 2)} + 'T' + "
        f"{pad('hour', 2)} + ':' + {pad('minute', 2)} + ':' + {pad('second', 2)} + '.' + "
        f"{pad('microsecond', 6)} + '+00:00'"
    )
    return (
        f"CASE WHEN {a} IS NULL THEN null ELSE [_t IN [datetime({{datetime: {a}, timezone: 'UTC'}})] | {body}][0] END"
    )


def _time_condition(cond: Cond, a: str, params: _Params) -> str:
    """Time fields compare as instants; the parser hands us ISO strings (``contains``: raw)."""
    op, want = cond.op, cond.value
    if op in ("eq", "ne") and want is None:
        return f"({a} IS NOT NULL)" if op == "ne" else f"({a} IS NULL)"
    if op in ("contains", "icontains"):
        if not isinstance(want, str):
            return params.add(False)
        text = _iso_expr(a) if op == "contains" else f"toLower({_iso_expr(a)})"
        return f"coalesce({text} CONTAINS {params.add(want)}, false)"
    if op in ("in", "nin"):
        values = [w for w in want if w is not None]
        hit = f"coalesce({a} IN [_v IN {params.add(values)} | datetime(_v)], false)" if values else params.add(False)
        return hit if op == "in" else f"(NOT {hit})"
    if op in ("eq", "ne"):
        same = f"coalesce({a} = datetime({params.add(want)}), false)"
        return same if op == "eq" else f"(NOT {same})"
    return f"coalesce({a} {_ORDER_OPS[op]} datetime({params.add(want)}), false)"


# --------------------------------------------------------------------------------------------------
# Scope predicates


def _scope_hint(scope: Scope, var: str = "m") -> str:
    """Force a scope index: with ORDER BY created_at the planner may otherwise scan by time."""
    given = dict(scope.items())
    field = next(f for f in HINT_ORDER if f in given)
    return f"USING INDEX {var}:Memory({field})"


# --------------------------------------------------------------------------------------------------
# Conversions


def _to_datetime(value: Any) -> datetime | None:
    return graph.to_datetime(value)


_MEMORY_TYPES: Final = {t.value: t for t in MemoryType}
_RECORD_TIMES: Final = tuple(_MEMORY_TIMES)


def _record(row: dict[str, Any]) -> MemoryRecord:
    """A record from a :data:`_MEMORY_PROJ` row, unvalidated (it was on the way in; a search builds
    hundreds, so the lookups here are the cheap ones)."""
    data = {k: v for k, v in row.items() if v is not None}
    for name in _RECORD_TIMES:
        if name in data:
            data[name] = _to_datetime(data[name])
    meta = data.get("metadata")
    data["metadata"] = {} if meta is None or meta == "{}" else json.loads(meta)
    if "memory_type" in data:
        data["memory_type"] = _MEMORY_TYPES[data["memory_type"]]
    return build_record(data)


def _live(values: list[Any] | None) -> bool:
    """Whether a :data:`_MEMORY_ROW` list is a whole record: a memory a concurrent transaction
    deleted after this read matched it reads, in part or whole, as nulls (Neo4j reads committed
    data without holding it)."""
    return values is not None and all(values[i] is not None for i in _REQUIRED_AT)


def _live_dict(rec: dict[str, Any]) -> bool:
    """:func:`_live` for a :data:`_MEMORY_PROJ` map."""
    return all(rec.get(f) is not None for f in _REQUIRED)


def _record_row(values: list[Any]) -> MemoryRecord:
    """A record from a :data:`_MEMORY_ROW` list."""
    return _record(dict(zip(_MEMORY_FIELDS, values, strict=True)))


def _similarity(vhits: list[dict[str, Any]], fhits: list[dict[str, Any]]) -> dict[str, float]:
    """Exact cosine of each hit: a vector hit's score is one, a full-text hit carries its ``sim``."""
    out = {h["id"]: float(h["sim"]) for h in fhits if h.get("sim") is not None}
    out.update({h["id"]: max(-1.0, min(1.0, 2.0 * float(h["s"]) - 1.0)) for h in vhits})
    return out


def _add_records(sub: Subgraph, recs: list[dict[str, Any]]) -> None:
    """The subgraph's own records (rows of :func:`_graph_record_proj`), unbuilt, and their cosines."""
    for r in recs:
        if not _live(r["rec"]):
            continue
        sub.records.add_row(r["rec"][0], r["rec"], _record_row)
        if r.get("sim") is not None:
            sub.similarity[r["rec"][0]] = float(r["sim"])


def _graph_record_proj(sim: bool) -> str:
    """A record of the subgraph (``rec``), with its exact cosine (``sim``) when the search has a vector."""
    return f"{{rec: {_MEMORY_ROW}" + (f", sim: {_SIM}}}" if sim else "}")


def _history(row: dict[str, Any]) -> HistoryEvent:
    data = {k: v for k, v in row.items() if v is not None}
    data["created_at"] = _to_datetime(data.get("created_at"))
    data["details"] = json.loads(data["details"]) if "details" in data else {}
    return HistoryEvent.model_validate(data)


def _history_props(event: HistoryEvent) -> dict[str, Any]:
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
        "details": _normalize_metadata(event.details, "history details")[1],
    }
    return {k: v for k, v in props.items() if v is not None}


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --------------------------------------------------------------------------------------------------
# Queries

_INSERT_MEMORIES: Final = graph.merge_new("Memory")
_INSERT_HISTORY: Final = """
UNWIND $rows AS r
CREATE (h:HistoryEvent)
SET h = r
"""
# One DELETE event per memory, then the memory with its relationships (MENTIONS and later ones).
# The entities it mentioned come back, for the graph cleanup that follows in the same transaction.
# The memory's lock is taken before its mentions are read: a writer linking facts to it holds that
# lock from its check to its commit, so the mentions read here include what it linked.
_DELETE_BY_IDS: Final = """
UNWIND $ids AS id
MATCH (m:Memory {{id: id}})
WHERE {scope}
SET m._lock = true REMOVE m._lock
CREATE (:HistoryEvent {{id: randomUUID(), memory_id: m.id, event: 'DELETE', old_memory: m.memory,
    user_id: m.user_id, agent_id: m.agent_id, run_id: m.run_id, actor_id: m.actor_id, role: m.role,
    created_at: $at, details: '{{}}'}})
WITH m, m.id AS deleted, [(m)-[:MENTIONS]->(e:Entity) | e.id] AS entities
DETACH DELETE m
RETURN deleted, entities
"""


# Drop one memory's MENTIONS and return what it mentioned, for forget_memories (the memory stays).
_UNLINK_MEMORY: Final = """
MATCH (m:Memory {id: $id})
OPTIONAL MATCH (m)-[x:MENTIONS]->(e:Entity)
WITH collect(e.id) AS entities, collect(x) AS links
FOREACH (x IN links | DELETE x)
RETURN entities
"""

_QUERY_KIND: Final = {"rw": "read and write", "w": "write", "s": "change the schema"}
_BUILTIN_FUNCTIONS: Final = (
    "SHOW FUNCTIONS YIELD name, isBuiltIn WHERE isBuiltIn AND toLower(name) IN $names RETURN toLower(name) AS name"
)


def _analyst_failure(exc: neo4j_errors.Neo4jError, timeout: float) -> GraphmemError | None:
    """What an analyst query's server error means to the analyst: a timeout or a fault of the
    query itself get their own type (the server's message cut short); ``None``: ``_errors`` maps it."""
    code, message = exc.code or "", exc.message or str(exc)
    message = message if len(message) <= 300 else message[:299] + "…"  # it quotes the whole query
    if "TransactionTimedOut" in code:
        return QueryTimeoutError(
            f"the analyst query ran longer than store.cypher_timeout_s = {timeout:g} s, so Neo4j stopped it; "
            "narrow it (a LIMIT, a more selective MATCH) or raise store.cypher_timeout_s "
            "(GRAPHMEM_STORE__CYPHER_TIMEOUT_S)"
        )
    if code == "Neo.ClientError.Statement.AccessMode":
        return ReadOnlyError(f"graphmem's Cypher access is read-only: {message}")
    if code.startswith(("Neo.ClientError.Statement.", "Neo.ClientError.Procedure.")):
        return InvalidInputError(f"Neo4j refused the analyst query: {message}")
    return None


@contextmanager
def _conflicts() -> Iterator[None]:
    """A second memory or entity with the same identity (its uniqueness constraint): a concurrent
    writer created it first, so this write's plan is out of date."""
    try:
        yield
    except (neo4j_errors.ConstraintError, neo4j_errors.ResultFailedError) as exc:
        # the driver repeats a failed statement's error as ResultFailedError when it rolls back
        first = exc.__cause__ if isinstance(exc, neo4j_errors.ResultFailedError) else exc
        if not isinstance(first, neo4j_errors.ConstraintError) or "identity" not in (first.message or ""):
            raise
        raise ConflictError(f"a concurrent write stored the same memory or entity first ({first.message})") from exc


def _plain(value: Any) -> Any:
    """Driver values as plain Python: temporal types as ISO strings, containers recursively."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return value


@dataclass
class _CandidatePlan:
    """The first candidates query, kept for its fallbacks and for the neighbourhood appended to it."""

    parts: list[str]
    columns: list[str]
    params: dict[str, Any]
    cond: str
    """Scope and filter on ``m``."""
    hint: str
    k: int
    vector: bool
    text: bool
    scope: Scope


class Neo4jStore(Store):
    """Memories in Neo4j, with vector and full-text indexes, scoped to tenants on every query."""

    def __init__(self, config: StoreConfig) -> None:
        self._cfg = config
        self._driver: Driver | None = None
        self._dims: int | None = None
        self._exact_index = False
        """Whether the memory vector index stores float32 vectors (scores are exact cosines): read
        from the index's configuration at :meth:`open`."""
        self._big_until: dict[Scope, float] = {}
        """Scopes last found big by a search, until when (``time.monotonic``) that is trusted."""

    # ---------------------------------------------------------------------------------- plumbing

    def _unreachable(self, exc: BaseException) -> str:
        return (
            f"cannot reach Neo4j at {display_uri(self._cfg.uri)} ({exc}); start the development server with "
            "`make neo4j-start`, or point store.uri (GRAPHMEM_STORE__URI, NEO4J_URI in the tests) "
            "at a running Neo4j 5.26+"
        )

    @contextmanager
    def _errors(self, what: str, *, write: bool) -> Iterator[None]:
        """Turn driver exceptions into graphmem's, naming the server and what to do."""
        try:
            yield
        except GraphmemError:
            raise
        except neo4j_errors.AuthError as exc:
            missing = " (no password is configured)" if self._cfg.password is None else ""
            raise StoreUnavailableError(
                f"Neo4j at {display_uri(self._cfg.uri)} refused the credentials of user {self._cfg.user!r}{missing}: "
                f"{exc.message}; set store.password (GRAPHMEM_STORE__PASSWORD) to that user's password"
            ) from exc
        except neo4j_errors.IncompleteCommit as exc:  # a ServiceUnavailable, so caught before it
            raise StoreError(
                f"Neo4j {what}: the connection broke during commit, so whether it was written is "
                f"unknown ({exc}); check before retrying"
            ) from exc
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
            suffix = "; nothing was written" if write else ""
            raise StoreUnavailableError(self._unreachable(exc) + suffix) from exc
        except neo4j_errors.DatabaseUnavailable as exc:
            # What a server that is shutting down (or stopping the database) answers to the
            # transactions still running: like an unreachable server, nothing committed.
            suffix = "; nothing was written" if write else ""
            raise StoreUnavailableError(
                f"Neo4j at {display_uri(self._cfg.uri)} stopped serving the database during {what} "
                f"({exc.message}); retry once it is running again{suffix}"
            ) from exc
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
            if isinstance(exc, neo4j_errors.Neo4jError) and exc.code == "Neo.ClientError.Database.DatabaseNotFound":
                raise StoreUnavailableError(
                    f"Neo4j at {display_uri(self._cfg.uri)} has no database {self._cfg.database!r}; "
                    "set store.database to an existing one, or leave it unset for the server default "
                    "(Community has only 'neo4j')"
                ) from exc
            suffix = "; nothing was written" if write else ""
            raise StoreError(f"Neo4j {what} failed: {exc}{suffix}") from exc

    def _session(self, access_mode: str = WRITE_ACCESS) -> Session:
        if self._driver is None:
            raise StoreError("the Neo4j store is not open; call open() first")
        return self._driver.session(database=self._cfg.database, default_access_mode=access_mode)

    def _retrying(self, call: Callable[[], T]) -> T:
        """Run ``call`` (one managed transaction) again after a transient failure: a deadlock, a
        leader switch, a connection lost before commit.

        Why not the driver's own retries (off: ``max_transaction_retry_time=0``): it waits about a
        second before the first, and writers locking the same entities deadlock now and then, which
        the server resolves at once by failing one of them. A pause of milliseconds, doubling,
        jittered, within ``store.max_transaction_retry_s``, keeps such a write's cost small."""
        deadline = time.monotonic() + self._cfg.max_transaction_retry_s
        pause = 0.004
        while True:
            try:
                return call()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                # a statement after a failed one reports ResultFailedError; the first failure decides
                first = exc.__cause__ if isinstance(exc, neo4j_errors.ResultFailedError) else exc
                transient = isinstance(first, neo4j_errors.Neo4jError | neo4j_errors.DriverError) and \
                    first.is_retryable()
                if not transient or time.monotonic() + pause > deadline:
                    raise
            time.sleep(random.uniform(pause / 2, pause))
            pause = min(2 * pause, 0.5)

    def _read(self, what: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self._errors(what, write=False), self._session() as session:
            return self._retrying(lambda: session.execute_read(work))

    def _single(self, what: str, query: str, params: dict[str, Any]) -> Record | None:
        """One read query, one row, as an auto-commit READ transaction: RUN and PULL leave together,
        one network round trip, where ``execute_read`` adds a BEGIN and a COMMIT exchange (a large share
        of a search's time). The driver retries no auto-commit query, so a retryable failure (connection
        lost, transient server error) runs it again through ``execute_read``, which retries."""
        with self._errors(what, write=False):
            try:
                with self._session(READ_ACCESS) as session:
                    return session.run(query, params).single()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if not exc.is_retryable():
                    raise
            with self._session(READ_ACCESS) as session:
                return self._retrying(lambda: session.execute_read(lambda tx: tx.run(query, params).single()))

    def _write(self, what: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self._errors(what, write=True), self._session() as session, _conflicts():
            return self._retrying(lambda: session.execute_write(work))

    def cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Analysts' Cypher, safe by default, because a READ transaction alone still lets a query
        read server files and URLs (``LOAD CSV``), kill other sessions' transactions or call
        procedures that change server state. ``EXPLAIN`` first, in the same transaction: the plan
        must be a read (query type ``r``) with none of those (:mod:`.neo4j_cypher` decides from the
        operators and the statement's tokens, never from text inside literals). The transaction's
        server-side timeout is ``store.cypher_timeout_s``; reading stops past ``store.cypher_max_rows``."""
        text = analyst.check_query(query)
        args = analyst.check_params(params)
        timeout, cap = self._cfg.cypher_timeout_s, self._cfg.cypher_max_rows
        rows: list[dict[str, Any]] = []
        with self._errors("analyst query", write=False), self._session(READ_ACCESS) as session:
            try:
                with session.begin_transaction(timeout=timeout, metadata={"app": "graphmem-cypher"}) as tx:
                    summary = tx.run("EXPLAIN " + text, args).consume()
                    analyst.check_plan(summary.plan, summary.database)
                    if summary.query_type != "r":
                        would = _QUERY_KIND.get(str(summary.query_type), str(summary.query_type))
                        raise ReadOnlyError(
                            f"graphmem's Cypher access is read-only, and this query would {would}; writes "
                            "go through add/update/delete so that the ontology guard and provenance hold"
                        )
                    functions = analyst.check_statement(text)
                    if functions:
                        names = sorted(f.lower() for f in functions)
                        analyst.check_functions(functions, {r["name"] for r in tx.run(_BUILTIN_FUNCTIONS, names=names)})
                    for record in tx.run(text, args):
                        if len(rows) >= cap:
                            raise RowLimitError(
                                f"the analyst query returns more than store.cypher_max_rows = {cap} rows; add a "
                                "LIMIT (SKIP and LIMIT to page) or raise store.cypher_max_rows "
                                "(GRAPHMEM_STORE__CYPHER_MAX_ROWS)"
                            )
                        rows.append(record.data())
            except neo4j_errors.Neo4jError as exc:
                failure = _analyst_failure(exc, timeout)
                if failure is None:
                    raise
                raise failure from exc
        return [{k: _plain(v) for k, v in row.items()} for row in rows]

    def stored_vector(self, vector: Vector, what: str) -> list[float] | None:
        """An embedding to store, or ``None`` for a zero vector (a text without features, e.g. an
        emoji for the hashing embedder): Neo4j's cosine index refuses those, so the node is stored
        without one, which vector search skips, as its cosine of 0 ranks it last on SQLite."""
        arr = self._vector(vector, what)
        return arr if any(arr) else None

    def _vector(self, vector: Vector, what: str) -> list[float]:
        arr = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._dims is not None and arr.shape[0] != self._dims:
            raise InvalidInputError(
                f"{what} has {arr.shape[0]} dimensions but this store holds {self._dims}-dimensional vectors"
            )
        if not np.isfinite(arr).all():
            raise InvalidInputError(f"{what} contains NaN or infinity")
        return [float(v) for v in arr.tolist()]

    # ---------------------------------------------------------------------------------- lifecycle

    def open(self, embedder: str, dims: int) -> StoreInfo:
        """Connect, bootstrap the schema idempotently and pin the embedder (refusing another)."""
        if self._driver is None:
            scheme = self._cfg.uri.partition("://")[0].lower()
            if scheme not in _BOLT_SCHEMES:
                raise ConfigError(
                    f"store.uri {display_uri(self._cfg.uri)!r} is not a Bolt address; use bolt:// (one server) or "
                    "neo4j:// (routing: clusters, Aura), with +s or +ssc for TLS"
                )
            password = self._cfg.password
            auth = (self._cfg.user, password.get_secret_value()) if password is not None else None
            try:
                driver = GraphDatabase.driver(
                    self._cfg.uri,
                    auth=auth,
                    connection_timeout=self._cfg.connect_timeout_s,
                    # Bounds the Bolt handshake too (connection_timeout covers only the TCP connect), so
                    # a server that accepts but never answers fails within connect_timeout_s.
                    connection_acquisition_timeout=self._cfg.connect_timeout_s,
                    max_transaction_retry_time=0,  # graphmem retries, sooner (see _retrying)
                    user_agent="graphmem",
                    # Unknown-property warnings fire for every optional field absent so far; they
                    # would drown real problems in the application's log.
                    notifications_min_severity=NotificationMinimumSeverity.OFF,
                )
            except (neo4j_errors.ConfigurationError, ValueError) as exc:
                # the driver's message repeats the URI it was given: name ours without credentials
                raise ConfigError(
                    f"invalid Neo4j store.uri {display_uri(self._cfg.uri)!r}: "
                    f"{str(exc).replace(self._cfg.uri, display_uri(self._cfg.uri))}"
                ) from None
            try:
                with self._errors("connect", write=False):
                    driver.verify_connectivity()
            except BaseException:
                driver.close()
                raise
            self._driver = driver
        dims = int(dims)
        with self._errors("schema bootstrap", write=True), self._session() as session:
            self._check_meta(session, embedder, dims)
            self._check_vector_index(session, dims)
            self._check_analyzer(session)
            for statement in self._schema_statements(dims):
                try:
                    session.run(statement).consume()
                except neo4j_errors.ClientError as exc:
                    # Another process created the same rule between IF NOT EXISTS and commit.
                    if "EquivalentSchemaRuleAlreadyExists" not in (exc.code or ""):
                        raise
            session.execute_write(self._write_meta, embedder, dims)
            self._identity_schema(session)
            self._check_meta(session, embedder, dims)
            session.run("CALL db.awaitIndexes()").consume()
            self._exact_index = self._index_is_exact(session)
        self._dims = dims
        return StoreInfo(backend="neo4j", location=self._location(), embedder=embedder, dims=dims)

    def _identity_schema(self, session: Session) -> None:
        """Give nodes of stores from before identity constraints their ``identity`` (once), then create
        the constraints. Where concurrent writers of an earlier graphmem left duplicates, the oldest
        node of each gets the identity (reads already resolve a name or text to the oldest) and the
        others none: they stay as they are, and no new duplicate can be written."""
        done = session.run("MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.identity AS done").single()
        if done is None or not done["done"]:
            for label, key in (("Entity", "key"), ("Memory", "hash")):
                session.run(
                    f"MATCH (n:{label}) WHERE n.identity IS NULL AND n.{key} IS NOT NULL "
                    f"WITH {graph.identity_cypher('n', key)} AS identity, n ORDER BY n.created_at, n.seq, n.id "
                    "WITH identity, head(collect(n)) AS first "
                    "CALL (first, identity) { SET first.identity = identity } IN TRANSACTIONS OF 10000 ROWS"
                ).consume()
            session.run("MATCH (g:GraphmemMeta {key: 'schema'}) SET g.identity = 1").consume()
        for statement in graph.IDENTITY_CONSTRAINTS.values():
            try:
                session.run(statement).consume()
            except neo4j_errors.ClientError as exc:
                if "EquivalentSchemaRuleAlreadyExists" not in (exc.code or ""):
                    raise

    def _location(self) -> str:
        return display_uri(self._cfg.uri) + (f" (database {self._cfg.database})" if self._cfg.database else "")

    def _check_meta(self, session: Session, embedder: str, dims: int) -> None:
        row = session.execute_read(
            lambda tx: tx.run(
                "MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.embedder AS embedder, g.dims AS dims"
            ).single()
        )
        if row is not None and (row["embedder"] != embedder or row["dims"] != dims):
            raise SchemaMismatchError(
                f"Neo4j store {self._location()} holds vectors of embedder {row['embedder']!r} "
                f"({row['dims']} dimensions), but the configuration uses {embedder!r} ({dims} dimensions); "
                "configure the same embedder, use another database, or reset the store and re-add"
            )

    def _check_vector_index(self, session: Session, dims: int) -> None:
        """An index left from another setup would silently skip our vectors: refuse it instead."""
        record = session.run(
            "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'memory_embedding' RETURN options"
        ).single()
        if record is None:
            return
        existing = (record["options"] or {}).get("indexConfig", {}).get("vector.dimensions")
        if existing is not None and int(existing) != dims:
            raise SchemaMismatchError(
                f"Neo4j store {self._location()} has vector index memory_embedding with {existing} "
                f"dimensions, but the configured embedder has {dims}; use the same embedder or another "
                "database"
            )

    def _check_analyzer(self, session: Session) -> None:
        """Refuse an analyzer the server does not have; warn when the index was built with another."""
        wanted = self._cfg.fulltext_analyzer
        known = {r["analyzer"] for r in session.run(
            "CALL db.index.fulltext.listAvailableAnalyzers() YIELD analyzer RETURN analyzer")}
        if wanted not in known:
            raise ConfigError(f"store.fulltext_analyzer {wanted!r} is not an analyzer of this Neo4j server; "
                              f"it has: {', '.join(sorted(known))}")
        record = session.run(
            "SHOW FULLTEXT INDEXES YIELD name, options WHERE name = 'memory_text' RETURN options").single()
        have = ((record["options"] if record is not None else None) or {}).get("indexConfig", {}).get(
            "fulltext.analyzer")
        if have is not None and have != wanted:
            log.warning("Neo4j full-text index memory_text at %s uses analyzer %r, not the configured %r; "
                        "Memory.optimize() (graphmem optimize) rebuilds it with %r", self._location(), have, wanted,
                        wanted)

    def _index_is_exact(self, session: Session) -> bool:
        """Whether ``memory_embedding`` scores are exact (quantization off).

        Stores created before graphmem turned quantization off keep their int8 index: it still
        works, its hits are re-scored exactly from a larger over-fetch. It is not rebuilt here: a
        rebuild takes the index offline for every process using the database (for a time that grows
        with the store) and belongs in a maintenance window, not in every ``open``. Dropping the
        index is the whole migration; the next ``open`` creates it again, unquantized."""
        record = session.run(
            "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'memory_embedding' RETURN options"
        ).single()
        config = ((record["options"] if record is not None else None) or {}).get("indexConfig") or {}
        # Absent on servers older than 5.23, whose indexes may be quantized: treat them as such.
        exact = config.get("vector.quantization.enabled") is False
        if not exact:
            log.warning(
                "Neo4j vector index memory_embedding at %s is quantized: searches over-fetch and re-score "
                "its hits, which costs time; to rebuild it without quantization run `DROP INDEX "
                "memory_embedding` when no search runs and open the store again", self._location())
        return exact

    @staticmethod
    def _write_meta(tx: ManagedTransaction, embedder: str, dims: int) -> None:
        tx.run(
            "MERGE (g:GraphmemMeta {key: 'schema'}) "
            "ON CREATE SET g.embedder = $embedder, g.dims = $dims, g.schema_version = $version",
            embedder=embedder,
            dims=dims,
            version=SCHEMA_VERSION,
        ).consume()

    def _schema_statements(self, dims: int) -> list[str]:
        # Quantization off (Neo4j's default is int8): the index then returns exact cosines, so
        # search needs no re-scoring from the stored embeddings and a third of the over-fetch (see
        # _candidate_plan). It is also smaller: 151 MB against 188 MB at 100k x 384 dims, as the
        # quantized index keeps the float vectors beside its int8 copy.
        vector_options = (
            f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dims)}, `vector.similarity_function`: 'cosine', "
            "`vector.quantization.enabled`: false}}"
        )
        statements = [
            "CREATE CONSTRAINT graphmem_meta_key IF NOT EXISTS FOR (g:GraphmemMeta) REQUIRE g.key IS UNIQUE",
            "CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (m:Memory) REQUIRE m.id IS UNIQUE",
            "CREATE CONSTRAINT history_event_id IF NOT EXISTS FOR (h:HistoryEvent) REQUIRE h.id IS UNIQUE",
            "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
        ]
        for field in ("user_id", "agent_id", "run_id", "hash", "created_at", "event_time"):
            statements.append(f"CREATE INDEX memory_{field} IF NOT EXISTS FOR (m:Memory) ON (m.{field})")
        statements += [
            "CREATE INDEX history_event_memory_id IF NOT EXISTS FOR (h:HistoryEvent) ON (h.memory_id)",
            "CREATE INDEX entity_user_id IF NOT EXISTS FOR (e:Entity) ON (e.user_id)",
            "CREATE INDEX entity_name IF NOT EXISTS FOR (e:Entity) ON (e.name)",
            "CREATE VECTOR INDEX memory_embedding IF NOT EXISTS FOR (m:Memory) ON (m.embedding) " + vector_options,
            "CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (e:Entity) ON (e.embedding) " + vector_options,
            "CREATE FULLTEXT INDEX memory_text IF NOT EXISTS FOR (m:Memory) ON EACH [m.memory] "
            f"OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{self._cfg.fulltext_analyzer}'}}}}",  # a checked name
        ]
        return statements + graph.schema_statements()

    def optimize(self) -> dict[str, Any]:
        """Rebuild the Lucene-backed search indexes, each into as few segments as the server's build
        buffer allows, one index at a time (a quantized vector index of an older store comes back exact).

        Why: Neo4j adds index segments as transactions commit and merges them lazily, and a vector
        search walks the HNSW graph of every segment, so one segment answers ``queryNodes`` much faster
        than several. While an index rebuilds, searches that need it fail
        with :class:`StoreError` (Neo4j waits for it to come online, then gives up).
        """
        if self._dims is None:
            raise StoreError("store not opened: call open() first")
        statements = {name: stmt for stmt in self._schema_statements(self._dims)
                      for name in _REBUILT_INDEXES if stmt.startswith("CREATE ") and f" INDEX {name} " in stmt}
        rebuilt: dict[str, float] = {}
        with self._errors("optimize", write=True), self._session() as session:
            for name in _REBUILT_INDEXES:
                started = time.perf_counter()
                session.run(f"DROP INDEX {name} IF EXISTS").consume()
                session.run(statements[name]).consume()
                session.run("CALL db.awaitIndex($name, $timeout)", name=name, timeout=_REBUILD_TIMEOUT_S).consume()
                rebuilt[name] = round(time.perf_counter() - started, 3)
            self._exact_index = self._index_is_exact(session)
        return {"backend": "neo4j", "rebuilt_s": rebuilt, "seconds": round(sum(rebuilt.values()), 3)}

    def close(self) -> None:
        if self._driver is not None:
            driver, self._driver = self._driver, None
            driver.close()

    # ---------------------------------------------------------------------------------- writes

    def _memory_row(self, new: NewMemory) -> dict[str, Any]:
        rec = new.record
        metadata, metadata_json = _normalize_metadata(rec.metadata, f"metadata of memory {rec.id}")
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
        }
        props = {k: v for k, v in props.items() if v is not None}
        for name in _FOLDED_FIELDS:
            value = props.get(name)
            if isinstance(value, str) and _needs_fold(value):
                props[FOLD_PREFIX + name] = value.casefold()
        props.update(mirror_properties(metadata))
        props["identity"] = graph.identity(rec.user_id, rec.agent_id, rec.run_id, rec.hash)
        return {"props": props, "vec": self.stored_vector(new.vector, f"embedding of memory {rec.id}")}

    def insert(self, memories: Sequence[NewMemory], events: Sequence[HistoryEvent]) -> None:
        """All rows in one transaction, sent as ``UNWIND`` batches of ``write_batch_size``."""
        memory_rows = [self._memory_row(m) for m in memories]
        event_rows = [_history_props(e) for e in events]
        if not memory_rows and not event_rows:
            return
        self._write("insert", lambda tx: self._insert_rows(tx, memory_rows, event_rows))

    def _insert_rows(
        self, tx: ManagedTransaction, memory_rows: Sequence[dict[str, Any]], event_rows: Sequence[dict[str, Any]]
    ) -> None:
        batch = self._cfg.write_batch_size
        for chunk in _chunks(memory_rows, batch):
            graph.run_merge_new(tx, _INSERT_MEMORIES, chunk, "memory")
        # ``seq`` (write order) breaks ties of ``created_at``: one write's ADD and SUPERSEDE events
        # share a time, and history lists them in the order they were written.
        seq = time.time_ns()
        rows = [{**row, "seq": seq + pos} for pos, row in enumerate(event_rows)]
        for chunk in _chunks(rows, batch):
            tx.run(_INSERT_HISTORY, rows=list(chunk)).consume()

    def write(self, scope: Scope, change: GraphWrite) -> WriteResult:
        """Memories, events and the whole graph change in one write transaction.

        Names are checked and rows built before the transaction starts, so a bad name or vector
        writes nothing; any failure inside rolls everything back.
        """
        memory_rows = [self._memory_row(m) for m in change.memories]
        event_rows = [_history_props(e) for e in change.events]
        for rel in change.relations:
            graph.rel_type(rel.relation)

        def work(tx: ManagedTransaction) -> WriteResult:
            self._check(tx, scope, change.expect)
            with _conflicts():
                self._insert_rows(tx, memory_rows, event_rows)
                return graph.write_graph(
                    tx, scope, change, batch=self._cfg.write_batch_size, vector=self.stored_vector,
                )

        return self._write("write", work)

    def _check(self, tx: ManagedTransaction, scope: Scope, expect: Expectations) -> None:
        """Lock what the plan read (in id order), then compare it with what is stored now.

        Why the lock: Neo4j reads committed data without holding it, so a check alone could pass
        while another writer is about to commit a change. Every writer takes these node locks from
        its check to its commit, so writers that read the same entities or memories serialize, and
        whichever commits second sees the first's change here and plans again."""
        if expect.memories:
            params: dict[str, Any] = {"ids": sorted(expect.memories)}
            query = (f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) WHERE {scope_where(scope, 'm', params)} "
                     "SET m._lock = true REMOVE m._lock RETURN m.id AS id, m.hash AS hash")
            found = {r["id"]: r["hash"] for r in tx.run(query, params)}
            gone = stale_memories(expect, found)
            if gone:
                raise ConflictError(f"memory {gone[0]} changed or was deleted by a concurrent write")
        if expect.entities:
            ids = sorted(expect.entities)
            tx.run(graph.LOCK_ENTITIES, ids=ids).consume()
            stale = stale_entities(expect, graph.graph_context(tx, scope, ids))
            if stale:
                raise ConflictError(f"entity {stale[0]} changed or was deleted by a concurrent write")

    def update(
        self, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
    ) -> MemoryRecord | None:
        """Lock, read, merge in Python, write back and log, all in one write transaction (with the
        graph re-linked in it when ``relink`` is given)."""
        relink_rows = (
            ([self._memory_row(m) for m in relink.memories], [_history_props(e) for e in relink.events])
            if relink is not None else None
        )
        vec = self.stored_vector(patch.vector, "embedding of the update") if patch.vector is not None else None
        params: dict[str, Any] = {"id": memory_id}
        where = scope_where(scope, "m", params)
        # SET then REMOVE a dummy property takes the node's write lock before anything is read, so
        # concurrent updates of one memory serialize and each merges into the previous one's result.
        lock_and_read = (
            f"MATCH (m:Memory {{id: $id}}) WHERE {where} "
            "SET m._lock = true REMOVE m._lock "
            f"RETURN {_MEMORY_PROJ} AS rec, "
            "[k IN keys(m) WHERE " + " OR ".join(f"k STARTS WITH '{p}'" for p in _MIRROR_PREFIXES) + "] AS mirrored"
        )
        if patch.vector is None:
            vector_clause = ""
        elif vec is None:
            vector_clause = "REMOVE m.embedding "
        else:
            vector_clause = "WITH m CALL db.create.setNodeVectorProperty(m, 'embedding', $vec) "
        write_back = (
            "MATCH (m:Memory {id: $id}) SET m += $props " + vector_clause + "CREATE (h:HistoryEvent) SET h = $event"
        )

        def work(tx: ManagedTransaction) -> MemoryRecord | None:
            row = tx.run(lock_and_read, params).single()
            if row is None:
                return None
            old = _record(row["rec"])
            if relink is not None:
                self._check(tx, scope, relink.expect)
            identity = None
            if patch.hash is not None and patch.hash != old.hash:
                identity = graph.identity(old.user_id, old.agent_id, old.run_id, patch.hash)
                twin = tx.run("MATCH (t:Memory {identity: $identity}) WHERE t.id <> $id RETURN t.id AS id LIMIT 1",
                              identity=identity, id=memory_id).single()
                if twin is not None:
                    raise DuplicateMemoryError(
                        f"memory {twin['id']} of this scope already has that text; delete one of them instead")
            metadata = patched_metadata(old.metadata, patch)
            metadata, metadata_json = _normalize_metadata(metadata, "metadata of the update")
            mirror = mirror_properties(metadata)
            props: dict[str, Any] = {k: None for k in row["mirrored"] if k not in mirror}
            props.update(mirror)
            props["metadata"] = metadata_json
            props["updated_at"] = to_utc(patch.updated_at)
            if patch.text is not None:
                props["memory"] = patch.text
            if patch.hash is not None:
                props["hash"] = patch.hash
            if identity is not None:
                props["identity"] = identity
            new = old.model_copy(
                update={
                    "memory": patch.text if patch.text is not None else old.memory,
                    "hash": patch.hash if patch.hash is not None else old.hash,
                    "metadata": metadata,
                    "updated_at": to_utc(patch.updated_at),
                }
            )
            event = HistoryEvent(
                id=patch.event_id,
                memory_id=old.id,
                event=EventType.UPDATE,
                old_memory=old.memory,
                new_memory=new.memory,
                user_id=old.user_id,
                agent_id=old.agent_id,
                run_id=old.run_id,
                actor_id=old.actor_id,
                role=old.role,
                created_at=to_utc(patch.updated_at),
                details={"metadata": patch.metadata} if patch.metadata is not None else {},
            )
            with _conflicts():
                tx.run(write_back, id=memory_id, props=props, vec=vec, event=_history_props(event)).consume()
                if relink is not None and relink_rows is not None:
                    # the old text's support goes; entities left without any are dropped only after the
                    # new text's facts are written (an entity both texts name stays)
                    mentioned = tx.run(_UNLINK_MEMORY, id=memory_id).single()
                    left = graph.forget_memories(tx, scope, [memory_id], mentioned["entities"] if mentioned else [],
                                                 self._cfg.write_batch_size, drop_orphans=False)
                    self._insert_rows(tx, *relink_rows)
                    graph.write_graph(tx, scope, relink, batch=self._cfg.write_batch_size,
                                      vector=self.stored_vector)
                    graph.drop_orphans_of(tx, left, self._cfg.write_batch_size)
            return new

        return self._write("update", work)

    def delete(self, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
        """Delete the in-scope ones with a DELETE event each; ids outside the scope are ignored."""
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted:
            return []
        params: dict[str, Any] = {"at": to_utc(at)}
        query = _DELETE_BY_IDS.format(scope=scope_where(scope, "m", params))

        def work(tx: ManagedTransaction) -> list[str]:
            deleted: set[str] = set()
            for chunk in _chunks(wanted, self._cfg.write_batch_size):
                deleted.update(self._delete_chunk(tx, query, params, chunk, scope))
            return [i for i in wanted if i in deleted]

        self._big_until.clear()  # a scope that shrank is probed again
        return self._write("delete", work)

    def _delete_chunk(
        self, tx: ManagedTransaction, query: str, params: dict[str, Any], ids: Sequence[str], scope: Scope
    ) -> list[str]:
        """Delete one chunk of memories (with their DELETE events) and what only they supported."""
        deleted: list[str] = []
        entities: list[str] = []
        for row in tx.run(query, params, ids=list(ids)):
            deleted.append(row["deleted"])
            entities.extend(row["entities"])
        graph.forget_memories(tx, scope, deleted, entities, self._cfg.write_batch_size)
        return deleted

    def touch(self, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
        if not accesses:
            return
        params: dict[str, Any] = {"rows": [{"id": mid, "n": int(n), "at": to_utc(at)}
                                           for mid, (n, at) in accesses.items()]}
        query = (
            f"UNWIND $rows AS r MATCH (m:Memory {{id: r.id}}) WHERE {scope_where(scope, 'm', params)} "
            "SET m.access_count = coalesce(m.access_count, 0) + r.n, m.last_accessed_at = CASE "
            "WHEN m.last_accessed_at IS NULL OR m.last_accessed_at < r.at THEN r.at ELSE m.last_accessed_at END"
        )
        self._write("touch", lambda tx: tx.run(query, params).consume())

    def delete_scope(self, scope: Scope, at: datetime) -> int:
        """Delete the scope in one transaction when it holds at most ``_ATOMIC_DELETE_MAX`` memories.

        Bigger scopes go in transactions of ``_DELETE_CHUNK`` memories, each deleting its memories
        together with their DELETE events: one transaction's time grows faster than its size, and
        100k memories exceed the server's transaction memory limit. A failure part-way leaves a consistent store (every
        deleted memory has its event, the rest are intact) and calling again finishes the job.
        Within a transaction the ids are read first, then deleted in ``write_batch_size`` chunks,
        each lookup a unique-index seek.

        The graph follows the same rule: each transaction forgets what its memories alone supported
        (as :meth:`delete` does), so every fact left between transactions still has support; the
        transaction that deletes the last memories also deletes the scope's remaining entities,
        facts, Value nodes and quarantine entries (more transactions only if those alone exceed the
        limit).
        """
        params: dict[str, Any] = {"at": to_utc(at)}
        where = scope_where(scope, "m", params)
        list_ids = f"MATCH (m:Memory) {_scope_hint(scope)} WHERE {where} RETURN m.id AS id LIMIT $limit"
        query = _DELETE_BY_IDS.format(scope=where)

        def work(tx: ManagedTransaction, first: bool) -> tuple[int, bool]:
            limit = _ATOMIC_DELETE_MAX + 1 if first else _DELETE_CHUNK
            ids = [r["id"] for r in tx.run(list_ids, params, limit=limit)]
            more = len(ids) > _ATOMIC_DELETE_MAX if first else len(ids) == _DELETE_CHUNK
            if first and more:
                ids = ids[:_DELETE_CHUNK]
            count = 0
            for chunk in _chunks(ids, self._cfg.write_batch_size):
                count += len(self._delete_chunk(tx, query, params, chunk, scope))
            if not more:
                more = graph.delete_scope_graph(tx, scope, _ATOMIC_DELETE_MAX if first else _DELETE_CHUNK)
            return count, more

        self._big_until.clear()
        total, more = self._write("delete_scope", lambda tx: work(tx, True))
        while more:
            count, more = self._write("delete_scope", lambda tx: work(tx, False))
            total += count
        return total

    def reset(self) -> None:
        """Empty every graphmem label in batches (auto-commit ``IN TRANSACTIONS``); keep the schema."""
        with self._errors("reset", write=True), self._session() as session:
            self._big_until.clear()
            for label in DATA_LABELS:
                session.run(
                    f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF {_RESET_BATCH} ROWS"
                ).consume()

    # ---------------------------------------------------------------------------------- reads

    def find_hashes(self, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        params: dict[str, Any] = {"hashes": wanted}
        query = (
            f"MATCH (m:Memory) WHERE m.hash IN $hashes AND {exact_scope_where(scope, 'm', params)} "
            "WITH m ORDER BY m.created_at, m.id "
            "RETURN m.hash AS hash, collect(m.id)[0] AS id"
        )
        rows = self._read("find_hashes", lambda tx: tx.run(query, params).data())
        return {r["hash"]: r["id"] for r in rows}

    def get(self, memory_id: str, scope: Scope) -> MemoryRecord | None:
        params: dict[str, Any] = {"id": memory_id}
        where = scope_where(scope, "m", params)
        query = f"MATCH (m:Memory {{id: $id}}) WHERE {where} RETURN {_MEMORY_PROJ} AS rec"
        row = self._read("get", lambda tx: tx.run(query, params).single())
        return _record(row["rec"]) if row is not None and _live_dict(row["rec"]) else None

    def list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
        """Newest first (``created_at`` descending, then ``id`` ascending)."""
        if limit <= 0:
            return []
        fp = _Params("f")
        params: dict[str, Any] = {"limit": int(limit)}
        where = scope_where(scope, "m", params)
        if flt is not None:
            where += " AND " + compile_filter(flt, "m", fp)
            params.update(fp.values)
        query = (
            f"MATCH (m:Memory) {_scope_hint(scope)} WHERE {where} "
            f"RETURN {_MEMORY_PROJ} AS rec ORDER BY m.created_at DESC, m.id ASC LIMIT $limit"
        )
        rows = self._read("list", lambda tx: tx.run(query, params).data())
        return [_record(r["rec"]) for r in rows if _live_dict(r["rec"])]

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        params: dict[str, Any] = {"id": memory_id}
        query = (
            f"MATCH (h:HistoryEvent {{memory_id: $id}}) WHERE {scope_where(scope, 'h', params)} "
            f"RETURN {_HISTORY_PROJ} AS ev ORDER BY h.created_at, h.seq, h.id"
        )
        rows = self._read("history", lambda tx: tx.run(query, params).data())
        return [_history(r["ev"]) for r in rows]

    def count(self, scope: Scope | None = None) -> int:
        params: dict[str, Any] = {}
        if scope is None:
            query = "MATCH (m:Memory) RETURN count(m) AS n"
        else:
            query = f"MATCH (m:Memory) WHERE {scope_where(scope, 'm', params)} RETURN count(m) AS n"
        row = self._read("count", lambda tx: tx.run(query, params).single())
        return int(row["n"]) if row is not None else 0

    # ---------------------------------------------------------------------------------- graph reads

    def _directions(self, vectors: Vector, what: str) -> tuple[list[list[float]], list[int], int]:
        """The rows of ``vectors`` that have a direction, and their positions. Neo4j's cosine refuses a
        zero vector (a text the embedder found no features in): such a row is similar to nothing,
        as its cosine of 0 with everything says on SQLite."""
        matrix = np.asarray(vectors, dtype=np.float32)
        matrix = matrix.reshape(-1, matrix.shape[-1]) if matrix.size else matrix.reshape(0, 0)
        keep = [i for i, row in enumerate(matrix) if np.any(row)]
        return [self._vector(matrix[i], what) for i in keep], keep, len(matrix)

    def similar_entities(self, scope: Scope, vectors: Vector) -> list[tuple[Entity, float] | None]:
        rows, keep, n = self._directions(vectors, "entity query vector")
        out: list[tuple[Entity, float] | None] = [None] * n
        if rows:
            for i, hit in zip(keep, self._read("similar_entities",
                                              lambda tx: graph.similar_entities(tx, scope, rows)), strict=True):
                out[i] = hit
        return out

    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]:
        if not keys:
            return {}
        return self._read("find_entities", lambda tx: graph.find_entities(tx, scope, keys, exact=exact))

    def graph_context(self, scope: Scope, entity_ids: Sequence[str]) -> GraphContext:
        if not entity_ids:
            return GraphContext()
        return self._read("graph_context", lambda tx: graph.graph_context(tx, scope, entity_ids))

    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
        return self._read("entities", lambda tx: reads.entities(tx, scope, ids)) if ids else {}

    def entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> dict[str, tuple[int, list[str]]]:
        if not ids:
            return {}
        return self._read("entity_memories", lambda tx: reads.entity_memories(tx, scope, ids, limit, hub_degree))

    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        if not memory_ids:
            return []
        return self._read("memory_entities", lambda tx: reads.memory_entities(tx, scope, memory_ids))

    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int
    ) -> list[Relation]:
        if not entity_ids:
            return []
        return self._read("facts", lambda tx: reads.facts(tx, scope, entity_ids, as_of=as_of, limit=limit,
                                                          support=support))

    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]:
        sub = Subgraph()
        if not ids:
            return sub.records, sub.similarity
        vec = self._vector(vector, "query embedding") if vector is not None else None
        vec = vec if vec is not None and any(vec) else None
        fp = _Params("f")
        params: dict[str, Any] = {"ids": list(dict.fromkeys(ids)), "vec": vec}
        cond = scope_where(scope, "m", params)
        if flt is not None:
            cond += " AND " + compile_filter(flt, "m", fp)
            params.update(fp.values)
        query = (f"UNWIND $ids AS mid MATCH (m:Memory {{id: mid}}) WHERE {cond} "
                 f"RETURN {_graph_record_proj(vec is not None)} AS r")
        rows = self._read("records", lambda tx: [rec["r"] for rec in tx.run(query, params)])
        _add_records(sub, rows)
        return sub.records, sub.similarity

    def ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return self._read("ids_with_prefix", lambda tx: reads.ids_with_prefix(tx, scope, prefix, limit))

    def list_entities(self, scope: Scope, query: EntityQuery) -> list[Entity]:
        return self._read("list_entities", lambda tx: reads.list_entities(tx, scope, query))

    def list_facts(self, scope: Scope, query: FactQuery) -> list[Relation]:
        return self._read("list_facts", lambda tx: reads.list_facts(tx, scope, query))

    def graph_scopes(self) -> list[Scope]:
        return self._read("graph_scopes", graph.graph_scopes)

    def quarantined(self, scope: Scope, status: str | None = "quarantined") -> list[QuarantineEntry]:
        return self._read("quarantined", lambda tx: graph.quarantined(tx, scope, status))

    # ---------------------------------------------------------------------------------- search

    def candidates(
        self,
        scope: Scope,
        flt: Filter | None,
        vector: Vector | None,
        text: str | None,
        k: int,
    ) -> Candidates:
        """Vector and full-text hits in scope, in one round trip unless an index result was cut short.

        The first query counts the label (count store) and the scope (index seek, stopped after
        ``vector_exact_max`` + 1), then either scores the scope exactly (a small scope with a filter,
        or one smaller than the index over-fetch would be) or over-fetches from the vector index by
        the scope's share of all memories. Index hits carry the exact cosine (an unquantized index's
        own score, or a quantized index's hits re-scored), so scores do not depend on the path. A
        signal that ends with fewer than ``k`` hits although its index returned all it was asked for
        is redone in a further round trip: full text without a limit; vector exactly, except that a
        scope too big to count first gets one 16-fold wider index query (an exact pass over it is
        the last resort).
        """
        plan = self._candidate_plan(scope, flt, vector, text, k)
        if plan is None:
            return Candidates(round_trips=0)
        row = self._single("search", " ".join(plan.parts) + " RETURN " + ", ".join(plan.columns), plan.params)
        return self._finish_candidates(plan, row)

    def _candidate_plan(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int
    ) -> _CandidatePlan | None:
        """The first candidates query (see :meth:`candidates`), or ``None`` when nothing can match."""
        query_text = lucene_query(text) if text is not None else None
        vec = self._vector(vector, "query embedding") if vector is not None else None
        if vec is not None and not any(vec):
            vec = None  # a zero vector (no known token) has no direction: no similarity to rank by
        if k <= 0 or (vec is None and query_text is None):
            return None
        fp = _Params("f")
        params: dict[str, Any] = {"k": int(k), "vec": vec, "q": query_text}
        in_scope = scope_where(scope, "m", params)
        cond = in_scope
        if flt is not None:
            cond += " AND " + compile_filter(flt, "m", fp)
            params.update(fp.values)
        # Exact index scores: rows are fetched for the scope's share and the HNSW recall only (2k,
        # at least _KK_FLOOR). A quantized index's hits are re-scored, so the true top k must be among
        # many more rows (_QUANTIZED_OVERFETCH), and a big scope of unknown share gets twice that.
        if self._exact_index:
            base = max(2 * k, _KK_FLOOR)
            big_kk = base
        else:
            base = max(_QUANTIZED_OVERFETCH * k, _KK_FLOOR)
            big_kk = 2 * base
        if flt is not None:
            base, big_kk = base * _FILTER_OVERFETCH, big_kk * _FILTER_OVERFETCH
        params.update(
            base=base,
            big_kk=big_kk,
            kk_max=max(_KK_MAX, base),
            probe=self._cfg.vector_exact_max + 1,
            exact_max=self._cfg.vector_exact_max,
            filtered=flt is not None,
        )
        hint = _scope_hint(scope)
        # A scope past the probe is big: its share of the label is unknown (counting it would cost
        # more than the search), so it starts with a modest over-fetch and widens only if cut short.
        if self._big_until.get(scope, 0.0) > time.monotonic():
            parts = ["WITH true AS big, $big_kk AS kk, false AS exact"]
        else:
            parts = [
                "CALL () { MATCH (m:Memory) RETURN count(m) AS total }",
                f"CALL () {{ MATCH (m:Memory) {hint} WHERE {in_scope} WITH m LIMIT $probe RETURN count(m) AS sn }}",
                "WITH sn, sn > $exact_max AS big, CASE WHEN sn = 0 THEN 0 WHEN sn > $exact_max THEN $big_kk "
                "ELSE toInteger(ceil(toFloat($base) * total / sn)) END AS want",
                "WITH sn, big, CASE WHEN want < $base THEN $base WHEN want > $kk_max THEN $kk_max ELSE want END AS kk",
                "WITH big, kk, (NOT big AND ($filtered OR sn <= kk)) AS exact",
            ]
        columns = ["big", "kk"]
        if vec is not None:
            parts.append(
                "CALL (kk, exact) { WITH kk, exact WHERE exact "
                f"CALL (kk) {{ {self._exact_vector(hint, cond)} }} RETURN vh, -1 AS vraw "
                "UNION ALL WITH kk, exact WHERE NOT exact "
                f"CALL (kk) {{ {self._index_vector(cond, 'kk')} }} RETURN vh, vraw }}"
            )
            columns += ["vh", "vraw"]
        if query_text is not None:
            # with a vector, full-text hits carry their cosine, except vector hits (their score is it)
            imports = "kk, vh" if vec is not None else "kk"
            full_text = self._index_fulltext(cond, "{limit: kk}", vec is not None, skip_vh=vec is not None)
            parts.append(f"CALL ({imports}) {{ {full_text} }}")
            columns += ["fh", "fraw"]
        return _CandidatePlan(parts, columns, params, cond, hint, k, vec is not None, query_text is not None, scope)

    def _finish_candidates(self, plan: _CandidatePlan, row: Record | None) -> Candidates:
        """Candidates from the first query's row, redoing a signal its index cut short (more trips)."""
        if row is None:  # cannot happen: every subquery returns exactly one row
            raise StoreError("Neo4j search returned no row")
        k, cond, hint, params = plan.k, plan.cond, plan.hint, plan.params
        out = Candidates(round_trips=1)
        kk, big = int(row["kk"]), bool(row["big"])
        if big:
            self._big_until[plan.scope] = time.monotonic() + _BIG_SCOPE_TTL_S
        else:
            self._big_until.pop(plan.scope, None)
        vhits: list[dict[str, Any]] = row["vh"] if plan.vector else []
        first_vhits = vhits  # the full-text hits' cosines leave out these
        fhits: list[dict[str, Any]] = row["fh"] if plan.text else []
        redo_vector = plan.vector and len(vhits) < k and int(row["vraw"]) >= kk
        redo_text = plan.text and len(fhits) < k and int(row["fraw"]) >= kk
        widen = big
        while redo_vector or redo_text:
            parts, columns = [], []
            if redo_vector and widen:
                params["kk2"] = kk2 = min(kk * 16, _KK_WIDE_MAX)
                parts.append(f"CALL () {{ {self._index_vector(cond, '$kk2')} }}")
                columns += ["vh", "vraw"]
            elif redo_vector:
                parts.append(f"CALL () {{ {self._exact_vector(hint, cond)} }}")
                columns.append("vh")
            if redo_text:
                parts.append(f"CALL () {{ {self._index_fulltext(cond, '{}', plan.vector)} }}")
                columns.append("fh")
            again = self._single("search fallback", " ".join(parts) + " RETURN " + ", ".join(columns), params)
            if again is None:
                raise StoreError("Neo4j search fallback returned no row")
            out.round_trips += 1
            if redo_vector:
                vhits = again["vh"]
                redo_vector = widen and len(vhits) < k and int(again["vraw"]) >= kk2
                widen = False
            if redo_text:
                fhits, redo_text = again["fh"], False
        # A memory deleted by a concurrent transaction after the index found it reads as nulls.
        vhits = [h for h in vhits if h["id"] is not None and ("rec" not in h or _live(h["rec"]))]
        fhits = [h for h in fhits if h["id"] is not None and ("rec" not in h or _live(h["rec"]))]
        for hit in vhits:
            cosine = max(-1.0, min(1.0, 2.0 * float(hit["s"]) - 1.0))
            out.vector.append((hit["id"], cosine))
            out.records.add_row(hit["id"], hit["rec"], _record_row)
        for hit in fhits:
            out.fulltext.append((hit["id"], float(hit["s"])))
            if hit["id"] not in out.records:
                # no "rec": a first-pass vector hit (see _hit_list) that a wider vector pass dropped
                rec = hit["rec"] if "rec" in hit else next(h["rec"] for h in first_vhits if h["id"] == hit["id"])
                out.records.add_row(hit["id"], rec, _record_row)
        if plan.vector:
            sims = _similarity(first_vhits + vhits, fhits)
            out.similarity = {m: c for m, c in sims.items() if m in out.records}
        return out

    def neighbourhood(
        self, scope: Scope, query: GraphQuery, seed_memories: Sequence[str] = (), flt: Filter | None = None
    ) -> Subgraph:
        """The walk of :func:`graphmem.stores.neo4j_graph.neighbourhood_cypher`, in one query; with
        ``query.vector`` the records come with their cosine to it (``Subgraph.similarity``)."""
        vec = self._vector(query.vector, "query embedding") if query.vector is not None else None
        return self._neighbourhood(scope, query, seed_memories, flt, vec if vec is not None and any(vec) else None)

    def _neighbourhood(
        self, scope: Scope, query: GraphQuery, seed_memories: Sequence[str], flt: Filter | None,
        vec: list[float] | None,
    ) -> Subgraph:
        """:meth:`neighbourhood`, with ``vec`` the exact cosine of each record it returns."""
        fp = _Params("f")
        params: dict[str, Any] = {"g_seeds": list(dict.fromkeys(seed_memories)), "vec": vec}
        cond = scope_where(scope, "m", params)
        if flt is not None:
            cond += " AND " + compile_filter(flt, "m", fp)
            params.update(fp.values)
        body = graph.neighbourhood_cypher(scope, query, params, seeds="$g_seeds", skip="[]", records_where=cond,
                                          record_proj=_graph_record_proj(vec is not None))
        row = self._single("neighbourhood", body + " RETURN " + ", ".join(graph.SUBGRAPH_COLUMNS), params)
        if row is None:
            raise StoreError("Neo4j neighbourhood returned no row")
        sub, recs = graph.read_subgraph(row)
        _add_records(sub, recs)
        return sub

    def search(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
        graph_query: GraphQuery | None,
    ) -> tuple[Candidates, Subgraph]:
        """Candidates and neighbourhood in one Cypher query: one round trip.

        The neighbourhood clauses follow the candidates' and take their seeds from the hit lists, so
        nothing waits on the client between the two; the records of graph memories that are also
        hits are not sent twice. Only when an index cut a signal short (see :meth:`candidates`) do
        more round trips follow, and if that changed the seeds the neighbourhood is read again.
        The base class's two calls (candidates, then :meth:`neighbourhood`) are the oracle this is
        tested against (``tests/test_search_parity.py``).
        """
        if graph_query is None:
            return self.candidates(scope, flt, vector, text, k), Subgraph()
        plan = self._candidate_plan(scope, flt, vector, text, k)
        if plan is None:  # no signal to rank by: the linked entities alone
            return Candidates(round_trips=1), self.neighbourhood(scope, graph_query, (), flt)
        vec: list[float] | None = plan.params["vec"] if plan.vector else None
        n = int(graph_query.seed_memories)
        params = plan.params
        params["g_seed_n"] = n
        params["g_seed_min"] = SEED_MIN_COSINE
        vh = "vh" if plan.vector else "[]"
        fh = "fh" if plan.text else "[]"
        # seed_ids in Cypher: hits hold (1 + cos) / 2, the cosine is 2 * s - 1 (as _finish_candidates reads it)
        seeds = f"[h IN {vh} WHERE 2 * h.s - 1 > $g_seed_min | h.id][..$g_seed_n] + [h IN {fh}[..$g_seed_n] | h.id]"
        body = graph.neighbourhood_cypher(
            scope, graph_query, params, seeds=seeds,
            skip=f"[h IN {vh} | h.id] + [h IN {fh} | h.id]", records_where=plan.cond,
            record_proj=_graph_record_proj(plan.vector), carry=plan.columns,
        )
        query = " ".join(plan.parts) + " " + body + " RETURN " + ", ".join([*plan.columns, *graph.SUBGRAPH_COLUMNS])
        row = self._single("search", query, params)
        cands = self._finish_candidates(plan, row)
        assert row is not None  # _finish_candidates raised otherwise
        first = {"vh": row["vh"] if plan.vector else [], "fh": row["fh"] if plan.text else []}
        if cands.round_trips > 1:  # a fallback changed the hit lists: were the seeds the same?
            firsts = Candidates(vector=[(h["id"], 2.0 * float(h["s"]) - 1.0) for h in first["vh"]],
                                fulltext=[(h["id"], float(h["s"])) for h in first["fh"]])
            if set(seed_ids(firsts, n)) != set(seed_ids(cands, n)):
                sub = self._neighbourhood(scope, graph_query, seed_ids(cands, n), flt, vec)
                cands.round_trips += 1
                return cands, sub
        sub, recs = graph.read_subgraph(row)
        _add_records(sub, recs)
        # The records the query skipped: first-pass hits (in scope, passing the filter by construction).
        hits = cands.records
        if cands.round_trips > 1:
            hits = Records()
            for found in first.values():
                for h in found:
                    if "rec" in h and _live(h["rec"]):  # a full-text hit without one is a vector hit
                        hits.add_row(h["id"], h["rec"], _record_row)
        wanted = {m for m, _ in sub.mentions} | {m for r in sub.relations for m in r.memory_ids}
        sub.records.copy_from(hits, wanted)
        if plan.vector:
            sims = _similarity(first["vh"], first["fh"])
            sims.update(sub.similarity)
            sub.similarity = {m: sims[m] for m in sub.records if m in sims}
        return cands, sub

    @staticmethod
    def _hit_list(alias: str, sim: bool = False, known: str | None = None) -> str:
        """``sim``: with each hit's exact cosine (full-text hits, when the search has a vector). The
        ids in the list ``known`` (vector hits of the same query) come as id and score alone: their
        record and cosine are already in the reply."""
        hit = f"{{id: m.id, s: s, rec: {_MEMORY_ROW}" + (f", sim: {_SIM}}}" if sim else "}")
        if known:
            hit = f"CASE WHEN m.id IN {known} THEN {{id: m.id, s: s}} ELSE {hit} END"
        return f"RETURN collect({hit}) AS {alias}"

    def nearest(self, scope: Scope, vectors: Vector) -> list[tuple[str, float] | None]:
        """ANN over-fetch per row, kept to the scope; rows whose neighbours all lie in other scopes
        get an exact pass over the scope in a second statement."""
        rows, keep, n = self._directions(vectors, "query vector")
        out: list[tuple[str, float] | None] = [None] * n
        if not rows:
            return out
        params: dict[str, Any] = {"vecs": rows, "kk": 50}
        cond = scope_where(scope, "m", params)
        score = "s" if self._exact_index else "vector.similarity.cosine(m.embedding, $vecs[i])"
        index_query = (
            "UNWIND range(0, size($vecs) - 1) AS i "
            "CALL (i) { CALL db.index.vector.queryNodes('memory_embedding', $kk, $vecs[i]) YIELD node AS m, "
            f"score AS s WITH m, s WHERE {cond} WITH m, {score} AS s "
            "ORDER BY s DESC, m.id LIMIT 1 RETURN m.id AS id, 2 * s - 1 AS score } RETURN i, id, score"
        )
        exact_query = (
            f"UNWIND $todo AS i CALL (i) {{ MATCH (m:Memory) {_scope_hint(scope)} WHERE {cond} "
            "WITH m, vector.similarity.cosine(m.embedding, $vecs[i]) AS s WHERE s IS NOT NULL "
            "ORDER BY s DESC, m.id LIMIT 1 RETURN m.id AS id, 2 * s - 1 AS score } RETURN i, id, score"
        )

        def work(tx: ManagedTransaction) -> list[tuple[str, float] | None]:
            found: dict[int, tuple[str, float]] = {
                r["i"]: (r["id"], float(r["score"])) for r in tx.run(index_query, params)
            }
            todo = [i for i in range(len(rows)) if i not in found]
            if todo:
                found.update({r["i"]: (r["id"], float(r["score"])) for r in tx.run(exact_query, params, todo=todo)})
            return [found.get(i) for i in range(len(rows))]

        for i, hit in zip(keep, self._read("nearest", work), strict=True):
            out[i] = hit
        return out

    def _exact_vector(self, hint: str, cond: str) -> str:
        """Exact cosine over the scope (index seek on a scope field): correct whatever the filter."""
        return (
            f"MATCH (m:Memory) {hint} WHERE {cond} "
            "WITH m, vector.similarity.cosine(m.embedding, $vec) AS s WHERE s IS NOT NULL "
            f"ORDER BY s DESC, m.id ASC LIMIT $k {self._hit_list('vh')}"
        )

    def _index_vector(self, cond: str, kk: str) -> str:
        """ANN over-fetch of ``kk`` nodes, then scope/filter; a quantized index's survivors are
        re-scored exactly (an unquantized one returns the exact cosine, the same number
        ``vector.similarity.cosine`` gives, without reading the 1.5 kB embedding of each row)."""
        if self._exact_index:
            return (
                f"CALL db.index.vector.queryNodes('memory_embedding', {kk}, $vec) YIELD node, score "
                "WITH collect([node, score]) AS rows "
                "CALL (rows) { UNWIND rows AS r WITH r[0] AS m, r[1] AS s WHERE "
                f"{cond} WITH m, s ORDER BY s DESC, m.id ASC LIMIT $k {self._hit_list('vh')} }} "
                "RETURN vh, size(rows) AS vraw"
            )
        return (
            f"CALL db.index.vector.queryNodes('memory_embedding', {kk}, $vec) YIELD node "
            "WITH collect(node) AS ns "
            "CALL (ns) { UNWIND ns AS m WITH m WHERE "
            f"{cond} WITH m, vector.similarity.cosine(m.embedding, $vec) AS s WHERE s IS NOT NULL "
            f"ORDER BY s DESC, m.id ASC LIMIT $k {self._hit_list('vh')} }} "
            "RETURN vh, size(ns) AS vraw"
        )

    def _index_fulltext(self, cond: str, options: str, sim: bool, skip_vh: bool = False) -> str:
        """Lucene hits (user text escaped by ``lucene_query``), then scope/filter; ``skip_vh``: the
        vector hits ``vh`` are in scope, and their cosine is not computed again (``sim`` null)."""
        known = "vids, " if skip_vh else ""
        return (
            f"CALL db.index.fulltext.queryNodes('memory_text', $q, {options}) YIELD node, score "
            "WITH collect([node, score]) AS rows "
            f"CALL (rows{', vh' if skip_vh else ''}) {{ "
            + ("WITH rows, [h IN vh | h.id] AS vids " if skip_vh else "")
            + f"UNWIND rows AS r WITH {known}r[0] AS m, r[1] AS s WHERE "
            f"{cond} WITH {known}m, s ORDER BY s DESC, m.id ASC LIMIT $k "
            f"{self._hit_list('fh', sim, 'vids' if skip_vh else None)} }} "
            "RETURN fh, size(rows) AS fraw"
        )
