"""The primitive graph reads of the storage contract on Neo4j: what :mod:`graphmem.stores.walk` uses
when the walk is not asked for in one statement (``neighbourhood_cypher``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from neo4j import ManagedTransaction

from ..models import Entity, Relation, Scope, to_utc
from .base import EntityQuery, FactQuery
from .neo4j_graph import (
    _FACT_COLUMNS,
    _entity,
    _entity_proj,
    _gone,
    _hint,
    _rel_proj,
    _relation,
    _unique,
    scope_where,
)

_DEGREE: Final = "COUNT { (e)<-[:MENTIONS]-() }"


def entities(tx: ManagedTransaction, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
    params: dict[str, Any] = {"ids": _unique(ids)}
    query = (f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) WHERE {scope_where(scope, 'e', params)} "
             f"RETURN {_entity_proj('e')} AS e")
    found = (rec["e"] for rec in tx.run(query, params))
    return {row["id"]: _entity(row) for row in found if not _gone(row)}


def entity_memories(
    tx: ManagedTransaction, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
) -> dict[str, tuple[int, list[str]]]:
    params: dict[str, Any] = {"ids": _unique(ids), "limit": int(limit), "hub": int(hub_degree)}
    query = (
        f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) WHERE {scope_where(scope, 'e', params)} "
        f"WITH e, {_DEGREE} AS d "
        # the degree test first: a hub's mentions are never read
        "CALL (e, d) { MATCH (e)<-[:MENTIONS]-(m) WHERE d <= $hub WITH m.id AS mid ORDER BY mid LIMIT $limit "
        "RETURN collect(mid) AS mids } "
        "RETURN e.id AS id, d, mids"
    )
    return {rec["id"]: (int(rec["d"]), list(rec["mids"])) for rec in tx.run(query, params) if rec["id"] is not None}


def memory_entities(tx: ManagedTransaction, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    params: dict[str, Any] = {"mids": _unique(memory_ids)}
    query = (f"UNWIND $mids AS mid MATCH (:Memory {{id: mid}})-[:MENTIONS]->(e:Entity) "
             f"WHERE {scope_where(scope, 'e', params)} RETURN mid, e.id AS eid")
    return [(rec["mid"], rec["eid"]) for rec in tx.run(query, params) if rec["eid"] is not None]


def facts(
    tx: ManagedTransaction, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int,
    support: int,
) -> list[Relation]:
    params: dict[str, Any] = {"ids": _unique(entity_ids), "limit": int(limit), "support": int(support)}
    if as_of is not None:
        params["as_of"] = to_utc(as_of)
        valid = "(r.valid_from IS NULL OR r.valid_from <= $as_of) AND (r.valid_to IS NULL OR r.valid_to > $as_of)"
    else:
        valid = "r.valid_to IS NULL"
    in_scope = scope_where(scope, "r", params)
    query = (
        "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
        "CALL (e) { CALL (e) { "
        f"MATCH (e)-[r]->(o) WHERE (o:Entity OR o:Value) AND {valid} AND {in_scope} RETURN r, e AS s, o "
        f"UNION MATCH (s:Entity)-[r:!MENTIONS]->(e) WHERE {valid} AND {in_scope} RETURN r, s, e AS o }} "
        "WITH r, s, o ORDER BY r.id LIMIT $limit RETURN r, s, o } "
        "WITH DISTINCT r, s, o "
        "CALL (r) { UNWIND coalesce(r.memory_ids, []) AS mid WITH mid ORDER BY mid LIMIT $support "
        "RETURN collect(mid) AS prov } "
        f"RETURN {_rel_proj('r', 'prov')} AS fact, s.id AS source, CASE WHEN o:Entity THEN o.id END AS target, "
        "CASE WHEN o:Value THEN o.value END AS value, CASE WHEN o:Value THEN o.datatype END AS datatype"
    )
    rows = (rec.data() for rec in tx.run(query, params))
    return sorted((_relation(row) for row in rows if not _gone(row["fact"])), key=lambda r: r.id)


def _after(var: str, after: tuple[datetime, str] | None, where: list[str], params: dict[str, Any]) -> None:
    """Keyset pagination on (created_at, id)."""
    if after is not None:
        params.update(after_t=to_utc(after[0]), after_id=after[1])
        where.append(f"({var}.created_at > $after_t OR ({var}.created_at = $after_t AND {var}.id > $after_id))")


def list_entities(tx: ManagedTransaction, scope: Scope, q: EntityQuery) -> list[Entity]:
    params: dict[str, Any] = {}
    where = [scope_where(scope, "e", params)]
    if q.contains is not None:
        params["contains"] = q.contains
        where.append("any(k IN [e.key] + coalesce(e.alias_keys, []) WHERE k CONTAINS $contains)")
    if q.classes:
        params["classes"] = list(q.classes)
        where.append("any(c IN coalesce(e.classes, []) WHERE c IN $classes)")
    _after("e", q.after, where, params)
    limit = "" if q.limit is None else f" LIMIT {int(q.limit)}"
    query = (f"MATCH (e:Entity) {_hint(scope, 'e', 'Entity')} WHERE {' AND '.join(where)} "
             f"RETURN {_entity_proj('e')} AS e ORDER BY e.created_at, e.id{limit}")
    found = (rec["e"] for rec in tx.run(query, params))
    return [_entity(row) for row in found if not _gone(row)]


def list_facts(tx: ManagedTransaction, scope: Scope, q: FactQuery) -> list[Relation]:
    params: dict[str, Any] = {}
    where = [scope_where(scope, "r", params)]
    if q.memory_id is not None:
        params["mid"] = q.memory_id
        where.append("$mid IN coalesce(r.memory_ids, [])")
    if q.relations:
        params["rels"] = list(q.relations)
        where.append("r.relation IN $rels")
    if q.as_of is not None:
        params["as_of"] = to_utc(q.as_of)
        where.append("(r.valid_from IS NULL OR r.valid_from <= $as_of) AND (r.valid_to IS NULL OR r.valid_to > $as_of)")
    elif not q.include_closed:
        where.append("r.valid_to IS NULL")
    _after("r", q.after, where, params)
    if q.entity_ids:  # from the entities: both directions, each fact once
        params["eids"] = _unique(q.entity_ids)
        match = ("UNWIND $eids AS id MATCH (e:Entity {id: id}) CALL (e) { "
                 "MATCH (e)-[r]->(o) WHERE o:Entity OR o:Value RETURN r, e AS s, o "
                 "UNION MATCH (s:Entity)-[r:!MENTIONS]->(e) RETURN r, s, e AS o } "
                 f"WITH DISTINCT r, s, o WHERE {' AND '.join(where)} ")
    else:
        match = (f"MATCH (s:Entity) {_hint(scope, 's', 'Entity')} WHERE {scope_where(scope, 's', params)} "
                 f"MATCH (s)-[r]->(o) WHERE {' AND '.join(where)} ")
    limit = "" if q.limit is None else f" LIMIT {int(q.limit)}"
    query = match + f"RETURN {_FACT_COLUMNS} ORDER BY r.created_at, r.id{limit}"
    rows = (rec.data() for rec in tx.run(query, params))
    return [_relation(row) for row in rows if not _gone(row["fact"])]


def ids_with_prefix(tx: ManagedTransaction, scope: Scope, prefix: str, limit: int) -> list[str]:
    params: dict[str, Any] = {"prefix": prefix, "limit": int(limit)}
    query = (f"MATCH (m:Memory) WHERE m.id STARTS WITH $prefix AND {scope_where(scope, 'm', params)} "
             "RETURN m.id AS id ORDER BY id LIMIT $limit")
    return [rec["id"] for rec in tx.run(query, params)]
