"""Every Cypher text of the Neo4j backend: fixed queries, and the functions that build query text.

The other modules of the backend run these and write no Cypher of their own (the filter compiler,
:func:`..filters.compile_filter`, builds the boolean expression of a user's filter, whose values
are parameters). What reaches the text is only ever a scope's field names, labels and relationship
types checked by :mod:`..naming`, generated parameter names and this package's constants: every
value a caller gives travels as a parameter.

Here: what many queries share (labels, fields, projections, the scope fence). By subject:
:mod:`.schema` (open, optimize, reset, the analyst runner), :mod:`.memories`, :mod:`.graph` (the
knowledge graph) and :mod:`.search` (candidates, nearest, the neighbourhood walk).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from ....errors import StoreError
from ....filters import TIME_FIELDS
from ....models import Scope

# --------------------------------------------------------------------------------------------------
# Labels, fields, projections

GRAPH_LABELS: Final = ("Entity", "Value", "Quarantine")
"""Labels of graph nodes."""
THREAD_LABEL: Final = "GraphmemThread"
"""One node per exact scope that holds memories: ``last``, the memory written there last (what the
next one follows); a write locks it, so a scope's writers serialize on it."""
DATA_LABELS: Final = ("Memory", "HistoryEvent", *GRAPH_LABELS, THREAD_LABEL)
"""Every label graphmem writes data under; ``Neo4jStore.reset`` empties all of them."""
SCOPE_FIELDS: Final = ("user_id", "agent_id", "run_id")
HINT_ORDER: Final = ("run_id", "user_id", "agent_id")
"""Scope index to force, most selective first."""

MEMORY_FIELDS: Final = (
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
    "follows",
)
MEMORY_TIMES: Final = TIME_FIELDS | {"last_accessed_at"}
HISTORY_FIELDS: Final = (
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


def epoch_us(expr: str) -> str:
    """Cypher for a ``DATETIME`` as integer microseconds since the epoch (``null`` stays ``null``).

    The Python driver builds a ``neo4j.time.DateTime`` object for every temporal value it receives,
    many times slower than an integer; a search that reads thousands of records, entities and facts
    spent most of its time on that. ``epochMillis`` floors (Java's ``Instant.toEpochMilli``), where
    ``epochSeconds`` truncates a negative one toward zero: built on it, every time before 1970 with
    a fraction of a second read one second late.
    """
    return f"{expr}.epochMillis * 1000 + {expr}.microsecond % 1000"


def projection(var: str, fields: Sequence[str], times: Iterable[str] = ()) -> str:
    """A map projection of ``fields`` of ``var``, the ``times`` among them as :func:`epoch_us`."""
    timed = set(times)
    return var + " {" + ", ".join(f"{f}: {epoch_us(f'{var}.{f}')}" if f in timed else "." + f for f in fields) + "}"


# Map projections naming each field, so the embedding never crosses the wire.
MEMORY_PROJ: Final = projection("m", MEMORY_FIELDS, MEMORY_TIMES)
SIM: Final = "2 * vector.similarity.cosine(m.embedding, $vec) - 1"
"""Exact cosine of ``m`` with the query (``Candidates.similarity``), for memories that are not vector hits."""
HISTORY_PROJ: Final = projection("h", HISTORY_FIELDS, ("created_at",))


def entity_proj(var: str) -> str:
    return projection(var, ("id", "name", "classes", "aliases", "user_id", "agent_id", "run_id", "created_at",
                            "updated_at"), ("created_at", "updated_at"))


def rel_proj(var: str, memory_ids: str | None = None) -> str:
    """``memory_ids``: an expression replacing the stored provenance (a search reads a cut of it)."""
    proj = projection(var, ("id", "relation", "memory_ids", "valid_from", "valid_to", "created_at", "user_id",
                            "agent_id", "run_id"), ("valid_from", "valid_to", "created_at"))
    return proj if memory_ids is None else proj.replace(".memory_ids", f"memory_ids: {memory_ids}", 1)


QUARANTINE_PROJ: Final = (
    "q {.id, .triple, .reasons, .memory_ids, .ontology, .status, .user_id, .agent_id, .run_id, .created_at, "
    ".released_at}"
)
# One row per fact: the relationship's properties, its subject and its object (entity or literal).
FACT_COLUMNS: Final = (
    f"{rel_proj('r')} AS fact, s.id AS source, CASE WHEN o:Entity THEN o.id END AS target, "
    "CASE WHEN o:Value THEN o.value END AS value, CASE WHEN o:Value THEN o.datatype END AS datatype"
)
FACT_ORDER: Final = "ORDER BY r.created_at, r.seq, r.id"


def same_scope(a: str, b: str) -> str:
    """``a`` and ``b`` in the same exact scope (an absent field equals only an absent one)."""
    return " AND ".join(f"coalesce({a}.{f}, '') = coalesce({b}.{f}, '')" for f in SCOPE_FIELDS)


_STATE_COLUMNS: Final = (
    ("fact", rel_proj("sr")), ("source", "ss.id"), ("target", "CASE WHEN so:Entity THEN so.id END"),
    ("value", "CASE WHEN so:Value THEN so.value END"), ("datatype", "CASE WHEN so:Value THEN so.datatype END"),
    ("next", f"CASE WHEN sn IS NULL THEN null ELSE {rel_proj('sn')} END"),
    ("next_target", "CASE WHEN sno:Entity THEN sno.id END"), ("next_value", "CASE WHEN sno:Value THEN sno.value END"),
    ("next_datatype", "CASE WHEN sno:Value THEN sno.datatype END"),
)


def fact_states_of(fact_where: str, next_where: str) -> str:
    """The facts memory ``m`` supports (a memory mentions every fact's subject, so they are found
    from its mentions), each with the newest open fact of its subject and relation when it is
    closed (``successor_order``: valid_from, created_at, id, latest first); ``fact_where`` and
    ``next_where`` fence the fact ``sr`` and its successor ``sn`` to the scope (names no outer
    query of search uses). Rows of :data:`STATE_COLUMNS`."""
    return (
        "MATCH (m)-[:MENTIONS]->(ss:Entity)-[sr:!MENTIONS]->(so) WHERE m.id IN coalesce(sr.memory_ids, []) AND "
        + fact_where + " "
        "CALL (ss, sr, m) { OPTIONAL MATCH (ss)-[sn:!MENTIONS]->(sno) WHERE sr.valid_to IS NOT NULL AND "
        "sn.relation = sr.relation AND sn.valid_to IS NULL AND sn.id <> sr.id AND " + next_where + " "
        "RETURN sn, sno ORDER BY coalesce(toString(sn.valid_from), '') DESC, toString(sn.created_at) DESC, sn.id DESC "
        "LIMIT 1 } "
    )


STATE_COLUMNS: Final = ", ".join(f"{expr} AS {name}" for name, expr in _STATE_COLUMNS)
# A memory's fact states ride along with its search row when a fact it supports was ever closed
# (``closed_facts``, set in the transaction that closes it): most memories never are, and for them
# the row costs one property read; the others need no second round trip. The facts of the relations
# the question orders by time (``$timed``, see ``search/validity.by_time``) come with every row: for
# a memory never flagged they are all open.
_STATE_MAP: Final = "RETURN {" + ", ".join(f"{name}: {expr}" for name, expr in _STATE_COLUMNS) + "} } "
_ROW_STATES: Final = (
    "CASE WHEN m.closed_facts THEN COLLECT { " + fact_states_of(same_scope("sr", "m"), same_scope("sn", "m"))
    + _STATE_MAP + "WHEN $timed <> [] THEN COLLECT { "
    + fact_states_of(same_scope("sr", "m") + " AND sr.relation IN $timed", same_scope("sn", "m")) + _STATE_MAP + "END"
)
MEMORY_ROW: Final = ("[" + ", ".join(epoch_us(f"m.{f}") if f in MEMORY_TIMES else f"m.{f}" for f in MEMORY_FIELDS)
                     + ", " + _ROW_STATES + "]")
"""A record as a list in :data:`MEMORY_FIELDS` order, then its fact states (``null`` when none of
its facts was ever closed), for search: it reads hundreds, and a list carries no field names (less
server time and fewer Bolt bytes than the map)."""


def graph_record_proj(sim: bool) -> str:
    """A record of the subgraph (``rec``), with its exact cosine (``sim``) when the search has a vector."""
    return f"{{rec: {MEMORY_ROW}" + (f", sim: {SIM}}}" if sim else "}")


def labels_clause(labels: Sequence[str]) -> str:
    """``:`A`:`B```: labels already checked by :func:`.naming.class_labels`."""
    return "".join(f":`{label}`" for label in labels)


def conjunction(*conditions: str) -> str:
    """All of ``conditions`` (Cypher boolean expressions)."""
    return " AND ".join(conditions)


def statement(parts: Sequence[str], columns: Sequence[str]) -> str:
    """Clauses and the columns they leave, as one statement."""
    return " ".join(parts) + " RETURN " + ", ".join(columns)


# --------------------------------------------------------------------------------------------------
# Scope predicates (the tenant fence of every query)


def scope_where(scope: Scope, var: str, params: dict[str, Any]) -> str:
    """Equality on every given scope field."""
    parts = []
    for name, value in scope.items():
        params[f"s_{name}"] = value
        parts.append(f"{var}.{name} = $s_{name}")
    if not parts:  # Scope's validator forbids this; an unscoped query must never be built
        raise StoreError("refusing to build a query without a scope")
    return " AND ".join(parts)


def exact_scope_where(scope: Scope, var: str, params: dict[str, Any]) -> str:
    """All three fields equal; ``None`` means the property is absent."""
    parts = []
    for name in SCOPE_FIELDS:
        value = getattr(scope, name)
        if value is None:
            parts.append(f"{var}.{name} IS NULL")
        else:
            params[f"s_{name}"] = value
            parts.append(f"{var}.{name} = $s_{name}")
    return " AND ".join(parts)


def hint_field(scope: Scope) -> str:
    given = dict(scope.items())
    return next(f for f in HINT_ORDER if f in given)


def hint(scope: Scope, var: str = "m", label: str = "Memory") -> str:
    """Force the scope index on ``label`` (every scope field of Memory, Entity, Quarantine and
    HistoryEvent is indexed): with ORDER BY created_at the planner may otherwise scan memories by time."""
    return f"USING INDEX {var}:{label}({hint_field(scope)})"


def identity_cypher(var: str, key: str) -> str:
    """:func:`.records.identity` in Cypher, for stores written before the property existed."""
    sep = "'\\u001f'"
    return (f"coalesce({var}.user_id, '') + {sep} + coalesce({var}.agent_id, '') + {sep} + "
            f"coalesce({var}.run_id, '') + {sep} + {var}.{key}")


def set_times(var: str, when: str | None = None) -> str:
    """Each ``r.t[k]`` (``[epoch seconds, microseconds]``, see ``records.wire``) set as the UTC
    ``DATETIME`` property ``k`` of ``var``; only when ``when`` holds, if given."""
    keys = "keys(coalesce(r.t, {}))"
    if when is not None:
        keys = f"CASE WHEN {when} THEN {keys} ELSE [] END"
    return f"FOREACH (k IN {keys} | SET {var}[k] = datetime({{epochSeconds: r.t[k][0], nanosecond: r.t[k][1] * 1000}}))"


def merge_new(label: str, labels: Sequence[str] = ()) -> str:
    """``UNWIND $rows`` of new nodes (``r.props``, ``r.t``, ``r.vec``), each MERGEd on its constrained
    ``identity``; returns ``lost``: the ids of rows whose identity another writer holds already.

    Why MERGE rather than CREATE: both wait for a concurrent writer of the same identity to commit,
    but CREATE then fails the statement (and the driver reports that failure again while rolling
    back), where MERGE finds the other node, so the write can tell what it lost and plan again.
    Embeddings go through ``db.create.setNodeVectorProperty``: a float32 array, half the store and
    page-cache footprint of a float64 list."""
    extra = f", n{labels_clause(labels)}" if labels else ""
    vector = ("CALL (n, r, ours) { WITH n, r WHERE ours AND r.vec IS NOT NULL "
              "CALL db.create.setNodeVectorProperty(n, 'embedding', r.vec) } ")
    return (f"UNWIND $rows AS r MERGE (n:{label} {{identity: r.props.identity}}) ON CREATE SET n = r.props{extra} "
            f"WITH n, r, n.id = r.props.id AS ours {set_times('n', 'ours')} WITH n, r, ours {vector}"
            "WITH r, ours WHERE NOT ours RETURN collect(r.props.id) AS lost")
