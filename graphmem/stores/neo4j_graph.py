"""The knowledge-graph half of the Neo4j store: entities, facts, provenance, mentions, quarantine.

Functions here run inside a transaction that :class:`~graphmem.stores.neo4j.Neo4jStore` opened, so a
memory and the graph facts it supports are written, or forgotten, together.

Graph model (documented for analysts; these names are stable):

``(:Entity:<ClassLabel>… {id, name, key, alias_keys, aliases, aliases_text, classes, user_id,
agent_id, run_id, created_at, updated_at, seq, embedding})``
    ``key`` is ``norm_name(name)``, ``alias_keys`` the normalized aliases, ``aliases_text`` the
    aliases joined by newlines (full-text index ``entity_link``), ``classes`` the ontology class
    IRIs. Each class whose local name maps (:func:`~graphmem.ontology.naming.to_label`) to a safe,
    unreserved label also becomes a label of the node; an IRI that would not is kept in ``classes``
    only.
``(:Entity)-[:<REL_TYPE> {id, relation, memory_ids, valid_from, valid_to, created_at, user_id,
agent_id, run_id, seq}]->(:Entity)``
    A fact. ``REL_TYPE`` is :func:`~graphmem.ontology.naming.to_rel_type` of the property's local
    name, ``relation`` the property IRI, ``memory_ids`` the supporting memories (provenance),
    ``valid_to`` is set when a newer fact superseded it.
``(:Entity)-[:<REL_TYPE> {…}]->(:Value {id, value, datatype, user_id, agent_id, run_id})``
    A fact with a literal object: one ``Value`` node per fact (its ``id`` is the fact's).
``(:Memory)-[:MENTIONS]->(:Entity)``
    Also written for every memory that supports a fact, to the fact's subject: deleting a memory
    finds the facts it supports through its mentions (index seeks, never a scan of the facts).
``(:Quarantine {id, triple, reasons, memory_ids, ontology, status, user_id, agent_id, run_id,
created_at, released_at, seq})``
    ``triple`` and ``reasons`` are JSON strings.

Times are native ``DATETIME`` in UTC. ``seq`` records write order (nanoseconds since the epoch at
write time plus the position in the write) and breaks ties between equal ``created_at`` values, so
"oldest first" is the order things were written in, as in the SQLite store.

A fact lives in the scope of its subject entity (the planner resolves entities in the exact write
scope), so scoped reads of facts start from an index seek on the entities' scope fields.
Labels and relationship types are inlined back-quoted only after :func:`is_safe`; every value is a
parameter.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

from neo4j import ManagedTransaction
from neo4j.time import DateTime as Neo4jDateTime
from pydantic import BaseModel

from ..errors import ConflictError, StoreError
from ..models import Entity, QuarantineEntry, Relation, Scope, build_entity, build_relation, norm_name, to_utc, utcnow
from ..ontology.naming import RESERVED_LABELS, RESERVED_TYPES, is_safe, neo4j_label, neo4j_type
from .base import GraphContext, GraphQuery, GraphWrite, Subgraph, Vector, WriteResult
from .text import STOPWORDS

__all__ = [
    "GRAPH_LABELS",
    "SUBGRAPH_COLUMNS",
    "class_labels",
    "delete_scope_graph",
    "find_entities",
    "forget_memories",
    "graph_context",
    "graph_scopes",
    "neighbourhood_cypher",
    "quarantined",
    "read_subgraph",
    "rel_type",
    "schema_statements",
    "write_graph",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

GRAPH_LABELS: Final = ("Entity", "Value", "Quarantine")
"""Labels of graph nodes (``reset`` empties them)."""
SCOPE_FIELDS: Final = ("user_id", "agent_id", "run_id")
HINT_ORDER: Final = ("run_id", "user_id", "agent_id")
"""Scope index to force, most selective first (as for memories)."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(expr: str) -> str:
    """Cypher for a ``DATETIME`` as integer microseconds since the epoch (``null`` stays ``null``).

    The Python driver builds a ``neo4j.time.DateTime`` object for every temporal value it receives,
    many times slower than an integer; a search that reads thousands of records, entities and facts
    spent most of its time on that.
    """
    return f"{expr}.epochSeconds * 1000000 + {expr}.microsecond"


def projection(var: str, fields: Sequence[str], times: Iterable[str] = ()) -> str:
    """A map projection of ``fields`` of ``var``, the ``times`` among them as :func:`epoch_us`."""
    timed = set(times)
    return var + " {" + ", ".join(f"{f}: {epoch_us(f'{var}.{f}')}" if f in timed else "." + f for f in fields) + "}"


def _entity_proj(var: str) -> str:
    return projection(var, ("id", "name", "classes", "aliases", "user_id", "agent_id", "run_id", "created_at",
                            "updated_at"), ("created_at", "updated_at"))


def _rel_proj(var: str, memory_ids: str | None = None) -> str:
    """``memory_ids``: an expression replacing the stored provenance (a search reads a cut of it)."""
    proj = projection(var, ("id", "relation", "memory_ids", "valid_from", "valid_to", "created_at", "user_id",
                            "agent_id", "run_id"), ("valid_from", "valid_to", "created_at"))
    return proj if memory_ids is None else proj.replace(".memory_ids", f"memory_ids: {memory_ids}", 1)


_QUARANTINE_PROJ: Final = (
    "q {.id, .triple, .reasons, .memory_ids, .ontology, .status, .user_id, .agent_id, .run_id, .created_at, "
    ".released_at}"
)
# One row per fact: the relationship's properties, its subject and its object (entity or literal).
_FACT_COLUMNS: Final = (
    f"{_rel_proj('r')} AS fact, s.id AS source, CASE WHEN o:Entity THEN o.id END AS target, "
    "CASE WHEN o:Value THEN o.value END AS value, CASE WHEN o:Value THEN o.datatype END AS datatype"
)
_FACT_ORDER: Final = "ORDER BY r.created_at, r.seq, r.id"


IDENTITY_CONSTRAINTS: Final = {
    "entity_identity": "CREATE CONSTRAINT entity_identity IF NOT EXISTS FOR (e:Entity) REQUIRE e.identity IS UNIQUE",
    "memory_identity": "CREATE CONSTRAINT memory_identity IF NOT EXISTS FOR (m:Memory) REQUIRE m.identity IS UNIQUE",
}
"""One entity per (exact scope, normalized name), one memory per (exact scope, text hash): a second
``CREATE`` of either blocks until the first commits, then fails, which the store reports as a
conflict (the writer plans again and finds the first one)."""
_SEP: Final = "\x1f"


def identity(user_id: str | None, agent_id: str | None, run_id: str | None, key: str) -> str:
    """The ``identity`` property: exact scope and key (a normalized name, or a text hash). Scope ids
    hold no control characters (``models.check_id``), so the separator cannot occur in them."""
    return _SEP.join((user_id or "", agent_id or "", run_id or "", key))


def identity_cypher(var: str, key: str) -> str:
    """:func:`identity` in Cypher, for stores written before the property existed."""
    sep = "'\\u001f'"
    return (f"coalesce({var}.user_id, '') + {sep} + coalesce({var}.agent_id, '') + {sep} + "
            f"coalesce({var}.run_id, '') + {sep} + {var}.{key}")


def schema_statements() -> list[str]:
    """Constraints and indexes of the graph half (idempotent; run by ``Neo4jStore.open``)."""
    statements = [
        "CREATE CONSTRAINT value_id IF NOT EXISTS FOR (v:Value) REQUIRE v.id IS UNIQUE",
        "CREATE CONSTRAINT quarantine_id IF NOT EXISTS FOR (q:Quarantine) REQUIRE q.id IS UNIQUE",
        "CREATE INDEX entity_key IF NOT EXISTS FOR (e:Entity) ON (e.key)",
        "CREATE INDEX entity_agent_id IF NOT EXISTS FOR (e:Entity) ON (e.agent_id)",
        "CREATE INDEX entity_run_id IF NOT EXISTS FOR (e:Entity) ON (e.run_id)",
    ]
    for name in SCOPE_FIELDS:
        statements.append(f"CREATE INDEX quarantine_{name} IF NOT EXISTS FOR (q:Quarantine) ON (q.{name})")
    # Query linking: aliases are a list, which no range index can seek into. This full-text index
    # holds the names, the aliases and the scope fields, so one Lucene query asks for alias words
    # within a scope (other tenants' hits never fill
    # the hit limit); every hit is then checked exactly in Cypher. (Stores from before it keep
    # their unused entity_<scope field>_aliased indexes.)
    statements.append(
        "CREATE FULLTEXT INDEX entity_link IF NOT EXISTS FOR (e:Entity) "
        "ON EACH [e.name, e.aliases_text, e.user_id, e.agent_id, e.run_id]"
    )
    return statements


_LUCENE_SPECIAL: Final = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')
MAX_ALIAS_WORDS: Final = 500
"""Words per alias lookup (Lucene refuses queries of more than 1024 clauses): a text with more
distinct content words links only the aliases holding one of its first 500."""


def lucene_scope(scope: Scope) -> str:
    """Lucene clauses for the scope's given fields (phrases of the analysed ids: a superset of the
    scope, which the Cypher around the index call then fences exactly)."""
    return " AND ".join(f'{name}:"{_lucene_phrase(value)}"' for name, value in scope.items())


def _lucene_phrase(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def lucene_words(words: Sequence[str], fields: Sequence[str]) -> str:
    """``(f1:(w1 OR w2) OR f2:(w1 OR w2))`` with every word escaped."""
    terms = " OR ".join(_LUCENE_SPECIAL.sub(r"\\\1", w) for w in words)
    return "(" + " OR ".join(f"{f}:({terms})" for f in fields) + ")"




# --------------------------------------------------------------------------------------------------
# Names


def class_labels(classes: Iterable[str]) -> list[str]:
    """Labels for class IRIs: safe, unreserved, de-duplicated; others get no label."""
    out: list[str] = []
    for iri in classes:
        label = neo4j_label(iri)
        if is_safe(label) and label not in RESERVED_LABELS and label not in out:
            out.append(label)
    return out


def rel_type(relation: str) -> str:
    """The relationship type of a property IRI; refuses one that cannot be a safe identifier."""
    name = neo4j_type(relation)
    if not is_safe(name) or name in RESERVED_TYPES:
        raise StoreError(
            f"relation {relation!r} maps to the relationship type {name!r}, which is not a safe, unreserved "
            "identifier; nothing was written (rename the property in the ontology)"
        )
    return name


def _labels_clause(labels: Sequence[str]) -> str:
    return "".join(f":`{label}`" for label in labels)


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


def _hint_field(scope: Scope) -> str:
    given = dict(scope.items())
    return next(f for f in HINT_ORDER if f in given)


def _hint(scope: Scope, var: str, label: str) -> str:
    """Force the scope index on ``label`` (every scope field of Entity and Quarantine is indexed)."""
    return f"USING INDEX {var}:{label}({_hint_field(scope)})"


def _scope_props(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, Any]:
    return {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v is not None}


# --------------------------------------------------------------------------------------------------
# Conversions


def to_datetime(value: Any) -> datetime | None:
    """A time read from Neo4j (:func:`epoch_us` integers, or driver temporals) as an aware UTC datetime."""
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


def _gone(row: dict[str, Any]) -> bool:
    """A node or fact a concurrent transaction deleted after this read matched it: Neo4j reads
    committed data without holding it, and a deleted element's properties read as null."""
    return any(row.get(k) is None for k in ("id", "created_at")) or any(
        k in row and row[k] is None for k in ("name", "relation"))


def _utc(value: datetime | None) -> datetime | None:
    return to_utc(value) if value is not None else None


def _entity(row: dict[str, Any]) -> Entity:
    return build_entity({  # validated on the way in; a search builds hundreds
        "id": row["id"], "name": row["name"], "classes": list(row.get("classes") or []),
        "aliases": list(row.get("aliases") or []), "user_id": row.get("user_id"), "agent_id": row.get("agent_id"),
        "run_id": row.get("run_id"), "created_at": _required_dt(row["created_at"]),
        "updated_at": to_datetime(row.get("updated_at")),
    })


def _relation(row: dict[str, Any]) -> Relation:
    r = row["fact"]
    return build_relation({  # validated on the way in; a search builds hundreds
        "id": r["id"], "source_id": row["source"], "relation": r["relation"], "target_id": row["target"],
        "value": row["value"], "datatype": row["datatype"], "memory_ids": sorted(r.get("memory_ids") or []),
        "valid_from": to_datetime(r.get("valid_from")), "valid_to": to_datetime(r.get("valid_to")),
        "created_at": _required_dt(r["created_at"]), "user_id": r.get("user_id"), "agent_id": r.get("agent_id"),
        "run_id": r.get("run_id"),
    })


def _quarantine(row: dict[str, Any]) -> QuarantineEntry:
    return QuarantineEntry(
        id=row["id"], triple=json.loads(row["triple"]), reasons=json.loads(row["reasons"]),
        memory_ids=list(row.get("memory_ids") or []), ontology=row["ontology"], status=row["status"],
        user_id=row.get("user_id"), agent_id=row.get("agent_id"), run_id=row.get("run_id"),
        created_at=to_datetime(row["created_at"]), released_at=to_datetime(row.get("released_at")),
    )


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def _chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _aliases_props(aliases: Sequence[str]) -> dict[str, Any]:
    return {
        "aliases": list(aliases),
        "alias_keys": _unique(norm_name(a) for a in aliases),
        "aliases_text": "\n".join(aliases) if aliases else None,
    }


# --------------------------------------------------------------------------------------------------
# Writes

def merge_new(label: str, labels: Sequence[str] = ()) -> str:
    """``UNWIND $rows`` of new nodes (``r.props``, ``r.vec``), each MERGEd on its constrained
    ``identity``; returns ``lost``: the ids of rows whose identity another writer holds already.

    Why MERGE rather than CREATE: both wait for a concurrent writer of the same identity to commit,
    but CREATE then fails the statement (and the driver reports that failure again while rolling
    back), where MERGE finds the other node, so the write can tell what it lost and plan again.
    Embeddings go through ``db.create.setNodeVectorProperty``: a float32 array, half the store and
    page-cache footprint of a float64 list."""
    extra = f", n{_labels_clause(labels)}" if labels else ""
    vector = ("CALL (n, r, ours) { WITH n, r WHERE ours AND r.vec IS NOT NULL "
              "CALL db.create.setNodeVectorProperty(n, 'embedding', r.vec) } ")
    return (f"UNWIND $rows AS r MERGE (n:{label} {{identity: r.props.identity}}) ON CREATE SET n = r.props{extra} "
            f"WITH n, r, n.id = r.props.id AS ours {vector}"
            "WITH r, ours WHERE NOT ours RETURN collect(r.props.id) AS lost")


def run_merge_new(tx: ManagedTransaction, query: str, rows: Sequence[dict[str, Any]], what: str) -> None:
    """Run a :func:`merge_new` query; a lost identity is a :class:`ConflictError` (the caller plans again)."""
    identities = [r["props"]["identity"] for r in rows]
    if len(set(identities)) != len(identities) or len({r["props"]["id"] for r in rows}) != len(rows):
        raise StoreError(f"one write holds two {what} rows with the same id or identity; nothing was written")
    row = tx.run(query, rows=list(rows)).single()
    if row is not None and row["lost"]:
        raise ConflictError(f"a concurrent write stored {what} {row['lost'][0]} first (same scope and "
                            f"{'name' if what == 'entity' else 'text'})")


# Classes and aliases are added to the stored lists, not replaced: two writers growing one entity
# both keep what they added (the node's write lock orders them).
_UPDATE_ENTITIES: Final = """
UNWIND $rows AS r
MATCH (e:Entity {id: r.id})
WITH e, r, coalesce(e.classes, []) AS cs, coalesce(e.aliases, []) AS al, coalesce(e.alias_keys, []) AS ak
WITH e, r, cs + [c IN r.classes WHERE NOT c IN cs] AS classes, al + [a IN r.aliases WHERE NOT a IN al] AS aliases,
     ak + [k IN r.alias_keys WHERE NOT k IN ak] AS keys
SET e.classes = classes, e.aliases = aliases, e.alias_keys = keys,
    e.aliases_text = CASE WHEN size(aliases) = 0 THEN null
                     ELSE reduce(t = head(aliases), a IN tail(aliases) | t + '\\n' + a) END,
    e.updated_at = r.updated_at
RETURN count(e) AS n
"""
_ADD_LABELS: Final = """
UNWIND $ids AS id
MATCH (e:Entity {{id: id}})
SET e{labels}
"""
# Missing entities are an error (as a foreign key would be); a memory outside the write's scope is
# never linked (no edge across tenants), an unknown one cannot be.
_MENTIONS: Final = """
UNWIND $rows AS r
OPTIONAL MATCH (e:Entity {{id: r.e}})
OPTIONAL MATCH (m:Memory {{id: r.m}}) WHERE {scope}
FOREACH (_ IN CASE WHEN e IS NOT NULL AND m IS NOT NULL THEN [1] ELSE [] END | MERGE (m)-[:MENTIONS]->(e))
WITH r, e WHERE e IS NULL
RETURN collect(DISTINCT r.e) AS missing
"""
# SET then REMOVE a dummy property takes each subject's write lock before its facts are read, so
# concurrent writers of facts about one entity serialize and the second one sees the first's edge.
LOCK_ENTITIES: Final = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e._lock = true REMOVE e._lock
"""
_FIND_TWINS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})-[x:`{rtype}`]->(o)
WHERE x.relation = r.relation AND x.valid_to IS NULL AND CASE
    WHEN r.target IS NOT NULL THEN o:Entity AND o.id = r.target
    ELSE o:Value AND o.value = r.value AND coalesce(o.datatype = r.datatype, o.datatype IS NULL AND r.datatype IS NULL)
END
RETURN r.i AS i, x.id AS id
ORDER BY x.created_at, x.seq, x.id
"""
_CREATE_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})
MATCH (t:Entity {{id: r.target}})
CREATE (s)-[x:`{rtype}`]->(t)
SET x = r.props
RETURN count(x) AS n
"""
_CREATE_LITERAL_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})
CREATE (s)-[x:`{rtype}`]->(v:Value)
SET x = r.props, v = r.value
RETURN count(x) AS n
"""
_MERGE_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})-[x:`{rtype}`]->()
WHERE x.id = r.id
WITH x, r, coalesce(x.memory_ids, []) AS had
SET x.memory_ids = had + [m IN r.mids WHERE NOT m IN had]
"""
# Closing starts from the subjects of this write's facts (the usual case: a functional property's new
# value closes the old one of the same subject), then looks through the write's scope for the rest.
_CLOSE_FROM: Final = """
UNWIND $sources AS sid
MATCH (:Entity {{id: sid}})-[x]->()
WHERE x.id IN $ids AND {scope}
SET x.valid_to = coalesce(x.valid_to, $at[x.id])
RETURN DISTINCT x.id AS id
"""
_CLOSE_IN_SCOPE: Final = """
MATCH (s:Entity) {hint} WHERE {entity_scope}
MATCH (s)-[x]->()
WHERE x.id IN $ids AND {scope}
SET x.valid_to = coalesce(x.valid_to, $at[x.id])
RETURN DISTINCT x.id AS id
"""
_CREATE_QUARANTINE: Final = """
UNWIND $rows AS r
CREATE (q:Quarantine)
SET q = r
"""
_RELEASE: Final = """
UNWIND $ids AS id
MATCH (q:Quarantine {{id: id}})
WHERE {scope} AND q.status = 'quarantined'
SET q.status = 'released', q.released_at = $at
RETURN count(q) AS n
"""


@dataclass
class _NewFact:
    rel: Relation
    rtype: str
    mids: list[str]


@dataclass
class _Merge:
    id: str
    source: str
    rtype: str
    mids: list[str] = field(default_factory=list)


def write_graph(
    tx: ManagedTransaction,
    scope: Scope,
    change: GraphWrite,
    *,
    batch: int,
    vector: Callable[[Vector, str], list[float] | None],
) -> WriteResult:
    """Apply the graph part of ``change`` (the caller has written its memories and events in ``tx``).

    Order: entities, entity updates, facts (twin merge), mentions, closes, quarantine, releases.
    Every name check happens before the first statement, so a bad name writes nothing.
    """
    types = {rel.relation: rel_type(rel.relation) for rel in change.relations}
    seq = time.time_ns()

    # Entities, one UNWIND per label set.
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for pos, item in enumerate(change.entities):
        e = item.entity
        props: dict[str, Any] = {
            "id": e.id, "name": e.name, "key": norm_name(e.name), "classes": list(e.classes),
            "identity": identity(e.user_id, e.agent_id, e.run_id, norm_name(e.name)),
            **_aliases_props(e.aliases), **_scope_props(e.user_id, e.agent_id, e.run_id),
            "created_at": to_utc(e.created_at), "seq": seq + pos,
        }
        row = {"props": {k: v for k, v in props.items() if v is not None},
               "vec": vector(item.vector, f"embedding of entity {e.id}")}
        groups.setdefault(tuple(class_labels(e.classes)), []).append(row)
    for labels, rows in groups.items():
        query = merge_new("Entity", labels)
        for chunk in _chunks(rows, batch):
            run_merge_new(tx, query, chunk, "entity")

    # Entity updates: classes and aliases replaced, labels of new classes added.
    if change.entity_updates:
        rows = [
            {"id": e.id, "classes": list(e.classes), **_aliases_props(e.aliases), "updated_at": _utc(e.updated_at)}
            for e in change.entity_updates
        ]
        for chunk in _chunks(rows, batch):
            found = tx.run(_UPDATE_ENTITIES, rows=chunk).single()
            if found is None or found["n"] != len(chunk):
                raise StoreError("an entity update names an entity that does not exist; nothing was written")
        by_labels: dict[tuple[str, ...], list[str]] = {}
        for e in change.entity_updates:
            labels = tuple(class_labels(e.classes))
            if labels:
                by_labels.setdefault(labels, []).append(e.id)
        for labels, ids in by_labels.items():
            query = _ADD_LABELS.format(labels=_labels_clause(labels))
            for part in _chunks(ids, batch):
                tx.run(query, ids=part).consume()

    result = _write_facts(tx, change, types, seq + len(change.entities), batch)

    # Mentions: the given ones, plus supporting memory -> subject for every fact written or merged.
    pairs = _unique([*change.mentions, *((m, rel.source_id) for rel in change.relations for m in rel.memory_ids)])
    if pairs:
        params: dict[str, Any] = {}
        query = _MENTIONS.format(scope=scope_where(scope, "m", params))
        for chunk in _chunks([{"m": m, "e": e} for m, e in pairs], batch):
            linked = tx.run(query, params, rows=chunk).single()
            if linked is not None and linked["missing"]:
                raise StoreError(f"mentions name unknown entities {linked['missing'][:5]}; nothing was written")

    if change.closes:
        _close(tx, scope, change, batch)

    if change.quarantine:
        rows = [
            {k: v for k, v in {
                "id": q.id, "triple": json.dumps(q.triple, ensure_ascii=False, default=str),
                "reasons": json.dumps(q.reasons, ensure_ascii=False, default=str),
                "memory_ids": _unique(q.memory_ids), "ontology": q.ontology, "status": q.status,
                **_scope_props(q.user_id, q.agent_id, q.run_id), "created_at": to_utc(q.created_at),
                "released_at": _utc(q.released_at), "seq": seq + len(change.entities) + len(change.relations) + pos,
            }.items() if v is not None}
            for pos, q in enumerate(change.quarantine)
        ]
        for chunk in _chunks(rows, batch):
            tx.run(_CREATE_QUARANTINE, rows=chunk).consume()

    if change.released:
        at = max((to_utc(e.created_at) for e in change.events), default=None) or utcnow()
        params = {"at": at}
        query = _RELEASE.format(scope=scope_where(scope, "q", params))
        for part in _chunks(_unique(change.released), batch):
            done = tx.run(query, params, ids=part).single()
            if done is None or done["n"] != len(part):
                raise ConflictError("a quarantine entry was released by a concurrent recheck")
    return result


def _write_facts(
    tx: ManagedTransaction, change: GraphWrite, types: dict[str, str], seq: int, batch: int
) -> WriteResult:
    """Create facts, or add provenance to an open twin (same subject, relation and object).

    Twins stored before this write are found after locking the subjects; twins within the write
    are resolved here in order, as the SQLite store's row-by-row inserts would.
    """
    result = WriteResult()
    if not change.relations:
        return result
    tx.run(LOCK_ENTITIES, ids=sorted({rel.source_id for rel in change.relations})).consume()
    lookup: dict[str, list[dict[str, Any]]] = {}
    for i, rel in enumerate(change.relations):
        lookup.setdefault(types[rel.relation], []).append(
            {"i": i, "source": rel.source_id, "relation": rel.relation, "target": rel.target_id,
             "value": rel.value, "datatype": rel.datatype}
        )
    stored: dict[int, str] = {}
    for rtype, rows in lookup.items():
        query = _FIND_TWINS.format(rtype=rtype)
        for chunk in _chunks(rows, batch):
            for rec in tx.run(query, rows=chunk):
                stored.setdefault(rec["i"], rec["id"])

    open_now: dict[tuple[str, str, str | None, str | None, str | None], _NewFact | _Merge] = {}
    merges: dict[str, _Merge] = {}
    new: list[_NewFact] = []
    for i, rel in enumerate(change.relations):
        key = (rel.source_id, rel.relation, rel.target_id, rel.value, rel.datatype)
        twin = open_now.get(key)
        if twin is None and i in stored:
            twin = merges.setdefault(stored[i], _Merge(stored[i], rel.source_id, types[rel.relation]))
            open_now[key] = twin
        if twin is not None:
            twin.mids.extend(m for m in rel.memory_ids if m not in twin.mids)
            result.merged.append(twin.id if isinstance(twin, _Merge) else twin.rel.id)
            continue
        fact = _NewFact(rel, types[rel.relation], _unique(rel.memory_ids))
        new.append(fact)
        result.added.append(rel.id)
        if rel.valid_to is None:
            open_now[key] = fact

    creates: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for pos, fact in enumerate(new):
        rel = fact.rel
        props = {
            "id": rel.id, "relation": rel.relation, "memory_ids": fact.mids, "valid_from": _utc(rel.valid_from),
            "valid_to": _utc(rel.valid_to), "created_at": to_utc(rel.created_at), "seq": seq + pos,
            **_scope_props(rel.user_id, rel.agent_id, rel.run_id),
        }
        row: dict[str, Any] = {"source": rel.source_id, "target": rel.target_id,
                               "props": {k: v for k, v in props.items() if v is not None}}
        literal = rel.target_id is None
        if literal:
            row["value"] = {"id": rel.id, "value": rel.value,
                            **({"datatype": rel.datatype} if rel.datatype is not None else {}),
                            **_scope_props(rel.user_id, rel.agent_id, rel.run_id)}
        creates.setdefault((fact.rtype, literal), []).append(row)
    for (rtype, literal), rows in creates.items():
        query = (_CREATE_LITERAL_FACTS if literal else _CREATE_FACTS).format(rtype=rtype)
        for chunk in _chunks(rows, batch):
            done = tx.run(query, rows=chunk).single()
            if done is None or done["n"] != len(chunk):
                raise StoreError("a fact names an entity that does not exist; nothing was written")

    by_type: dict[str, list[dict[str, Any]]] = {}
    for m in merges.values():
        by_type.setdefault(m.rtype, []).append({"id": m.id, "source": m.source, "mids": m.mids})
    for rtype, rows in by_type.items():
        query = _MERGE_FACTS.format(rtype=rtype)
        for chunk in _chunks(rows, batch):
            tx.run(query, rows=chunk).consume()
    return result


def _close(tx: ManagedTransaction, scope: Scope, change: GraphWrite, batch: int) -> None:
    """Set ``valid_to`` on still-open facts in scope (the first close of an id wins; unknown ids: no-op)."""
    at: dict[str, datetime] = {}
    for rid, when in change.closes:
        at.setdefault(rid, to_utc(when))
    left = set(at)
    sources = sorted({rel.source_id for rel in change.relations})
    for part in _chunks(sorted(left), batch):
        params: dict[str, Any] = {"ids": part, "at": {k: at[k] for k in part}}
        if sources:
            query = _CLOSE_FROM.format(scope=scope_where(scope, "x", params))
            for chunk in _chunks(sources, batch):
                left.difference_update(r["id"] for r in tx.run(query, params, sources=chunk))
    if left:
        for part in _chunks(sorted(left), batch):
            params = {"ids": part, "at": {k: at[k] for k in part}}
            query = _CLOSE_IN_SCOPE.format(hint=_hint(scope, "s", "Entity"),
                                           entity_scope=scope_where(scope, "s", params),
                                           scope=scope_where(scope, "x", params))
            tx.run(query, params).consume()


# --------------------------------------------------------------------------------------------------
# Forgetting (delete, delete_scope, reset)

# The facts the deleted memories supported, reached from the entities they mentioned (every
# supporting memory mentions the fact's subject): strip their ids; a fact left without support goes,
# with its Value node. Returns the entities at the other end of deleted facts.
_FORGET_FACTS: Final = """
UNWIND $entities AS eid
MATCH (:Entity {id: eid})-[r]->(o)
WHERE any(x IN coalesce(r.memory_ids, []) WHERE x IN $mids)
SET r.memory_ids = [x IN r.memory_ids WHERE NOT x IN $mids]
WITH r, o WHERE size(r.memory_ids) = 0
WITH r, o, CASE WHEN o:Entity THEN o.id END AS other
DELETE r
WITH o, other
FOREACH (_ IN CASE WHEN o:Value THEN [1] ELSE [] END | DETACH DELETE o)
RETURN collect(DISTINCT other) AS others
"""
# The lock comes first: a writer linking to the entity holds it from its check to its commit, so the
# emptiness seen here is the committed state, not one a concurrent link is about to change.
_DROP_ORPHANS: Final = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e._lock = true REMOVE e._lock
WITH e WHERE NOT EXISTS { (e)--() }
DELETE e
"""
_FORGET_QUARANTINE: Final = """
MATCH (q:Quarantine) {hint}
WHERE {scope} AND any(x IN coalesce(q.memory_ids, []) WHERE x IN $mids)
SET q.memory_ids = [x IN q.memory_ids WHERE NOT x IN $mids]
"""


def forget_memories(
    tx: ManagedTransaction, scope: Scope, memory_ids: Sequence[str], entity_ids: Iterable[str], batch: int,
    *, drop_orphans: bool = True,
) -> list[str]:
    """After ``memory_ids`` (in ``scope``) were deleted in ``tx``: drop what only they supported.

    ``entity_ids`` are the entities those memories mentioned (read before they were deleted).
    Their ids leave the provenance of facts and quarantine entries; facts left without support are
    deleted, then entities left with no mention and no fact. Returns the entities touched;
    ``drop_orphans=False`` leaves the last step to the caller (an update, after its new facts).
    """
    mids = _unique(memory_ids)
    if not mids:
        return []
    touched = _unique(entity_ids)
    for part in _chunks(touched, batch):
        row = tx.run(_FORGET_FACTS, entities=part, mids=mids).single()
        if row is not None:
            touched.extend(o for o in row["others"] if o is not None)
    if drop_orphans:
        drop_orphans_of(tx, touched, batch)
    params: dict[str, Any] = {"mids": mids}
    query = _FORGET_QUARANTINE.format(hint=_hint(scope, "q", "Quarantine"), scope=scope_where(scope, "q", params))
    tx.run(query, params).consume()
    return _unique(touched)


def drop_orphans_of(tx: ManagedTransaction, entity_ids: Iterable[str], batch: int) -> None:
    """Delete those of the entities that no memory mentions and no fact uses."""
    for part in _chunks(sorted(set(entity_ids)), batch):
        tx.run(_DROP_ORPHANS, ids=part).consume()


# After the scope's memories are gone, its entities go, except those a memory added meanwhile (by a
# write that committed during this one) mentions: that memory keeps its graph, as if it came after.
_DELETE_ENTITIES: Final = """
MATCH (e:Entity) {hint} WHERE {scope} AND NOT EXISTS {{ (:Memory)-[:MENTIONS]->(e) }}
WITH e LIMIT $limit
SET e._lock = true REMOVE e._lock
WITH e, NOT EXISTS {{ (:Memory)-[:MENTIONS]->(e) }} AS orphan
CALL (e, orphan) {{ WITH e WHERE orphan MATCH (e)-->(v:Value) DETACH DELETE v }}
CALL (e, orphan) {{ WITH e WHERE orphan DETACH DELETE e }}
RETURN count(*) AS n
"""
_DELETE_QUARANTINE: Final = """
MATCH (q:Quarantine) {hint} WHERE {scope}
WITH q LIMIT $limit
DELETE q
RETURN count(*) AS n
"""


def delete_scope_graph(tx: ManagedTransaction, scope: Scope, limit: int) -> bool:
    """Delete up to ``limit`` entities (with their facts and Value nodes) and quarantine entries in
    scope; return whether any may remain."""
    more = False
    for template, var, label in ((_DELETE_ENTITIES, "e", "Entity"), (_DELETE_QUARANTINE, "q", "Quarantine")):
        params: dict[str, Any] = {"limit": limit}
        query = template.format(hint=_hint(scope, var, label), scope=scope_where(scope, var, params))
        row = tx.run(query, params).single()
        more = more or (row is not None and row["n"] >= limit)
    return more


# --------------------------------------------------------------------------------------------------
# Reads


def find_entities(
    tx: ManagedTransaction, scope: Scope, keys: Sequence[str], *, exact: bool = True
) -> dict[str, Entity]:
    """By key (index seek on ``Entity.key``) or alias key (scan of the scope through its index);
    ``exact``: in exactly ``scope``, else in every scope it contains."""
    wanted = _unique(keys)
    if not wanted:
        return {}
    params: dict[str, Any] = {"keys": wanted}
    fence = exact_scope_where(scope, "e", params) if exact else scope_where(scope, "e", params)
    given = _hint_field(scope)
    query = (
        "CALL () { MATCH (e:Entity) WHERE e.key IN $keys RETURN e "
        f"UNION MATCH (e:Entity) {_hint(scope, 'e', 'Entity')} WHERE e.{given} = $s_{given} "
        "AND any(k IN coalesce(e.alias_keys, []) WHERE k IN $keys) RETURN e } "
        f"WITH e WHERE {fence} "
        f"RETURN {_entity_proj('e')} AS ent, [k IN [e.key] + coalesce(e.alias_keys, []) WHERE k IN $keys] AS hits "
        "ORDER BY e.created_at, e.seq, e.id"
    )
    out: dict[str, Entity] = {}
    for rec in tx.run(query, params):
        if _gone(rec["ent"]):
            continue
        entity: Entity | None = None
        for key in rec["hits"]:
            if key not in out:
                entity = entity or _entity(rec["ent"])
                out[key] = entity
    return out


def similar_entities(
    tx: ManagedTransaction, scope: Scope, vectors: list[list[float]]
) -> list[tuple[Entity, float] | None]:
    """Exact cosine over the scope's entities (found through the scope index), best per query.

    ``vector.similarity.cosine`` returns (1 + cos) / 2, mapped back to cos here."""
    params: dict[str, Any] = {"vecs": vectors}
    exact = exact_scope_where(scope, "e", params)
    given = _hint_field(scope)
    query = (
        f"UNWIND range(0, size($vecs) - 1) AS i "
        f"CALL (i) {{ MATCH (e:Entity) {_hint(scope, 'e', 'Entity')} WHERE e.{given} = $s_{given} AND {exact} "
        "AND e.embedding IS NOT NULL "
        "WITH e, vector.similarity.cosine(e.embedding, $vecs[i]) AS s ORDER BY s DESC, e.id LIMIT 1 "
        f"RETURN {_entity_proj('e')} AS ent, 2 * s - 1 AS score }} "
        "RETURN i, ent, score"
    )
    found: dict[int, tuple[Entity, float]] = {
        rec["i"]: (_entity(rec["ent"]), float(rec["score"])) for rec in tx.run(query, params) if not _gone(rec["ent"])
    }
    return [found.get(i) for i in range(len(vectors))]


def graph_context(tx: ManagedTransaction, scope: Scope, entity_ids: Sequence[str]) -> GraphContext:
    """The entities in scope, every open fact touching them, and the entities at the other ends."""
    ctx = GraphContext()
    ids = _unique(entity_ids)
    if not ids:
        return ctx
    params: dict[str, Any] = {"ids": ids}
    query = (
        f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) WHERE {scope_where(scope, 'e', params)} "
        f"RETURN {_entity_proj('e')} AS e"
    )
    for rec in tx.run(query, params):
        if not _gone(rec["e"]):
            ctx.entities[rec["e"]["id"]] = _entity(rec["e"])
    if not ctx.entities:
        return ctx
    found = list(ctx.entities)
    facts = (
        "UNWIND $found AS id MATCH (e:Entity {id: id}) "
        "CALL (e) { MATCH (e)-[r]->(o) WHERE r.valid_to IS NULL AND (o:Entity OR o:Value) RETURN r, e AS s, o "
        "UNION ALL MATCH (s:Entity)-[r]->(e) WHERE r.valid_to IS NULL RETURN r, s, e AS o } "
        f"WITH DISTINCT r, s, o RETURN {_FACT_COLUMNS}, "
        f"CASE WHEN NOT s.id IN $found THEN {_entity_proj('s')} END AS s_ent, "
        f"CASE WHEN o:Entity AND NOT o.id IN $found THEN {_entity_proj('o')} END AS o_ent "
        f"{_FACT_ORDER}"
    )
    seen: set[str] = set()
    for rec in tx.run(facts, found=found):
        row = rec.data()
        if _gone(row["fact"]) or row["fact"]["id"] in seen:
            continue
        rel = _relation(row)
        seen.add(rel.id)
        ctx.relations.append(rel)
        for other in (row["s_ent"], row["o_ent"]):
            if other is not None and not _gone(other) and other["id"] not in ctx.entities:
                ctx.entities[other["id"]] = _entity(other)
    return ctx


def graph_scopes(tx: ManagedTransaction) -> list[Scope]:
    rows = tx.run(
        "MATCH (:Entity)-[r]->() RETURN DISTINCT r.user_id AS user_id, r.agent_id AS agent_id, r.run_id AS run_id"
    ).data()
    found = {(r["user_id"], r["agent_id"], r["run_id"]) for r in rows}
    found.discard((None, None, None))

    def order(s: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
        return tuple((v is not None, v or "") for v in s)  # NULL first, as SQL sorts it

    return [Scope(user_id=u, agent_id=a, run_id=r) for u, a, r in sorted(found, key=order)]


def quarantined(tx: ManagedTransaction, scope: Scope, status: str | None) -> list[QuarantineEntry]:
    params: dict[str, Any] = {}
    where = scope_where(scope, "q", params)
    if status is not None:
        params["status"] = status
        where += " AND q.status = $status"
    query = (
        f"MATCH (q:Quarantine) {_hint(scope, 'q', 'Quarantine')} WHERE {where} "
        f"RETURN {_QUARANTINE_PROJ} AS entry ORDER BY q.created_at, q.seq, q.id"
    )
    return [_quarantine(rec["entry"]) for rec in tx.run(query, params)]


# --------------------------------------------------------------------------------------------------
# The neighbourhood of a query (the graph half of search), as Cypher clauses

SUBGRAPH_COLUMNS: Final = ("g_linked", "g_seed_pairs", "g_ents", "g_rels", "g_recs")
"""Columns :func:`neighbourhood_cypher` leaves for the caller's ``RETURN`` (read by :func:`read_subgraph`)."""

LINK_POOL: Final = 256
"""Alias links: entity full-text hits read per query before the exact alias test. Only a scope
holding more candidates than this for one query could link differently from SQLite, whose
``entity_keys`` lookup has no such cut."""

_DEGREE: Final = "COUNT {{ ({v})<-[:MENTIONS]-() }}"
"""Mentions of an entity: a degree lookup (no relationship is read), as only memories mention."""


def _linking_cypher(q: GraphQuery, params: dict[str, Any], in_scope: str, scope_q: str) -> str:
    """Query linking (``sqlite_graph.neighbourhood`` does the same), leaving ``g_linked``:
    ``[key, entity]`` per link, in key order.

    Per key the oldest entity having it as name (index seek on ``Entity.key``) or alias (the
    ``entity_link`` full-text index, asked for the keys' content words in the scope, then an exact
    test of ``alias_keys``), no entity twice. Words, not the keys as phrases: a phrase per n-gram
    made the lookup several times slower than the key seek alone.
    """
    aliases = ""
    alias_words = list(dict.fromkeys(w for k in q.keys for w in k.split(" ") if w not in STOPWORDS and len(w) > 1))
    if alias_words:  # every key has one (query_ngrams drops n-grams of stopwords only)
        params["g_alias_query"] = f"{lucene_words(alias_words[:MAX_ALIAS_WORDS], ('aliases_text',))} AND {scope_q}"
        params["g_link_pool"] = LINK_POOL
        aliases = (
            "UNION CALL db.index.fulltext.queryNodes('entity_link', $g_alias_query, {limit: $g_link_pool}) "
            f"YIELD node AS e WITH e WHERE any(k IN coalesce(e.alias_keys, []) WHERE k IN $g_keys) AND {in_scope} "
            "RETURN e "
        )
    return (
        "CALL () { CALL () { "
        f"MATCH (e:Entity) WHERE e.key IN $g_keys AND {in_scope} RETURN e {aliases}}} "
        "WITH e ORDER BY e.created_at, e.seq, e.id WITH collect(e) AS found "
        "WITH [k IN $g_keys | [k, head([e IN found WHERE e.key = k OR k IN coalesce(e.alias_keys, [])])]] AS per_key "
        "RETURN reduce(acc = [], p IN per_key | CASE WHEN p[1] IS NULL OR size(acc) >= $g_max_seeds "
        "OR p[1] IN [y IN acc | y[1]] THEN acc ELSE acc + [p] END) AS g_linked }"
    )


def neighbourhood_cypher(
    scope: Scope,
    q: GraphQuery,
    params: dict[str, Any],
    *,
    seeds: str,
    skip: str,
    records_where: str,
    record_proj: str,
    carry: Sequence[str] = (),
) -> str:
    """Cypher clauses computing :meth:`Store.neighbourhood <graphmem.stores.base.Store.neighbourhood>`.

    Appended to a query (the candidates, in ``Neo4jStore.search``) so the whole read is one round
    trip: ``seeds`` is an expression of the seed memory ids, ``skip`` of memory ids whose records the
    caller has already (they are not fetched twice), ``records_where`` the scope and filter on ``m``
    (``record_proj`` projects it), ``carry`` the caller's variables to keep. The walk is the SQLite
    store's, step for step (see ``sqlite_graph.neighbourhood``): the same linking, frontier order and
    cuts, so both stores return the same subgraph. The text depends only on the scope's fields,
    ``q.depth`` and ``q.as_of`` being set; every value goes into ``params``.
    """
    params.update(g_keys=list(q.keys), g_max_seeds=int(q.max_seeds), g_max_frontier=int(q.max_frontier),
                  g_max_facts=int(q.max_facts), g_max_mentions=int(q.max_mentions), g_hub_degree=int(q.hub_degree))
    if q.as_of is not None:
        params["g_as_of"] = to_utc(q.as_of)
        valid = "(r.valid_from IS NULL OR r.valid_from <= $g_as_of) AND (r.valid_to IS NULL OR r.valid_to > $g_as_of)"
    else:
        valid = "r.valid_to IS NULL"
    keep = "".join(f"{c}, " for c in carry)
    state = f"{keep}g_skip, g_linked, g_seed_pairs"
    in_scope = {v: scope_where(scope, v, params) for v in ("e", "r", "x")}
    parts = [f"WITH {keep}{seeds} AS g_seed_mids, {skip} AS g_skip",
             _linking_cypher(q, params, in_scope["e"], lucene_scope(scope))]
    parts += [
        # The entities the seed memories mention (every pair is a mention of the result).
        "CALL (g_seed_mids) { UNWIND g_seed_mids AS mid "
        f"MATCH (:Memory {{id: mid}})-[:MENTIONS]->(e:Entity) WHERE {in_scope['e']} "
        "RETURN collect([mid, e.id]) AS g_seed_pairs, collect(DISTINCT e) AS g_seed_ents }",
        f"WITH {state}, g_seed_ents, [p IN g_linked | p[1]] AS g_linked_ents",
        # First frontier: linked entities in key order, then the seeded ones, least mentioned first.
        "CALL (g_seed_ents, g_linked_ents) { UNWIND g_seed_ents AS e WITH e WHERE NOT e IN g_linked_ents "
        f"WITH e, {_DEGREE.format(v='e')} AS d ORDER BY d, e.id RETURN collect(e) AS g_rest }}",
        f"WITH {state}, g_linked_ents + g_rest AS g_seen, (g_linked_ents + g_rest)[..$g_max_frontier] AS g_frontier, "
        "[] AS g_facts",
    ]
    for _ in range(q.depth):
        parts += [
            # Per frontier entity that is not a hub, its first max_facts facts by id, both directions
            # counted together (MENTIONS are not facts: skipped by type).
            "CALL (g_frontier) { UNWIND g_frontier AS e "
            f"WITH e WHERE {_DEGREE.format(v='e')} <= $g_hub_degree CALL (e) {{ CALL (e) {{ "
            f"MATCH (e)-[r]->(o) WHERE (o:Entity OR o:Value) AND {valid} AND {in_scope['r']} RETURN r, e AS s, o "
            f"UNION MATCH (s:Entity)-[r:!MENTIONS]->(e) WHERE {valid} AND {in_scope['r']} RETURN r, s, e AS o }} "
            "WITH r, s, o ORDER BY r.id LIMIT $g_max_facts RETURN r, s, o } "
            "RETURN collect(DISTINCT [r, s, o]) AS g_found }",
            # Their unseen ends in scope, least mentioned first, cut to max_frontier: those are reached
            # and are the next frontier.
            "CALL (g_found, g_seen) { UNWIND g_found AS f UNWIND [f[1], f[2]] AS x "
            f"WITH DISTINCT x WHERE x:Entity AND NOT x IN g_seen AND {in_scope['x']} "
            f"WITH x, {_DEGREE.format(v='x')} AS d ORDER BY d, x.id LIMIT $g_max_frontier "
            "RETURN collect(x) AS g_fresh }",
            f"WITH {state}, g_seen + g_fresh AS g_seen, g_fresh AS g_frontier, g_facts + g_found AS g_facts",
        ]
    parts += [
        # Facts whose ends were both reached (a literal's subject alone), each with its first
        # max_mentions supporting memories by id, as an entity's mentions are cut.
        "CALL (g_facts, g_seen) { UNWIND g_facts AS f WITH DISTINCT f[0] AS r, f[1] AS s, f[2] AS o "
        "WHERE s IN g_seen AND (o:Value OR o IN g_seen) "
        "CALL (r) { UNWIND coalesce(r.memory_ids, []) AS mid WITH mid ORDER BY mid LIMIT $g_max_mentions "
        "RETURN collect(mid) AS prov } "
        f"RETURN collect({{fact: {_rel_proj('r', 'prov')}, source: s.id, target: CASE WHEN o:Entity THEN o.id END, "
        "value: CASE WHEN o:Value THEN o.value END, datatype: CASE WHEN o:Value THEN o.datatype END}) AS g_rels, "
        "collect(prov) AS g_prov }",
        # Per reached entity: its degree and, unless it is a hub, its first memories by id (the degree
        # test comes first, so a hub's mentions are never read).
        f"CALL (g_seen) {{ UNWIND g_seen AS e WITH e, {_DEGREE.format(v='e')} AS d "
        "CALL (e, d) { MATCH (e)<-[:MENTIONS]-(m) WHERE d <= $g_hub_degree WITH m.id AS mid ORDER BY mid "
        "LIMIT $g_max_mentions RETURN collect(mid) AS mids } "
        f"RETURN collect({{e: {_entity_proj('e')}, deg: d, mids: mids}}) AS g_ents }}",
        # The records of every memory in the result that passes the scope and the filter.
        "CALL (g_ents, g_prov, g_seed_pairs, g_skip) { "
        "UNWIND [y IN g_ents | y.mids] + g_prov + [[p IN g_seed_pairs | p[0]]] AS ids UNWIND ids AS mid "
        f"WITH DISTINCT mid WHERE NOT mid IN g_skip MATCH (m:Memory {{id: mid}}) WHERE {records_where} "
        f"RETURN collect({record_proj}) AS g_recs }}",
        f"WITH {keep}[p IN g_linked | [p[0], p[1].id]] AS g_linked, g_seed_pairs, g_ents, g_rels, g_recs",
    ]
    return " ".join(parts)


def read_subgraph(row: Any) -> tuple[Subgraph, list[dict[str, Any]]]:
    """The :class:`Subgraph` of a row with :data:`SUBGRAPH_COLUMNS` (records left to the caller, raw)."""
    sub = Subgraph()
    for key, eid in row["g_linked"]:
        sub.linked[key] = eid
    pairs = {(mid, eid) for mid, eid in row["g_seed_pairs"]}
    sub.seeds = sorted({eid for _, eid in pairs})
    for item in row["g_ents"]:
        if _gone(item["e"]):
            continue
        ent = _entity(item["e"])
        sub.entities[ent.id] = ent
        sub.degree[ent.id] = int(item["deg"])
        pairs.update((mid, ent.id) for mid in item["mids"])
    sub.mentions = sorted(pairs)
    sub.relations = sorted((_relation(r) for r in row["g_rels"] if not _gone(r["fact"])), key=lambda r: r.id)
    return sub, list(row["g_recs"])
