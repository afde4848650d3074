"""Cypher of the dump primitives (export, import, migration): paged reads of one exact scope with
vectors, store-wide id lookups, and the few writes :func:`..dump.restore` adds to the usual ones."""

from __future__ import annotations

from typing import Final

from . import FACT_COLUMNS, HISTORY_PROJ, MEMORY_PROJ, QUARANTINE_PROJ, entity_proj

LABELS: Final = {"memory": "Memory", "event": "HistoryEvent", "entity": "Entity", "quarantine": "Quarantine"}
"""Node labels of the dump kinds (facts are relationships between entities, or to a Value node)."""

DUMP_SCOPES: Final = (
    "CALL () { MATCH (n:Memory) RETURN n UNION ALL MATCH (n:HistoryEvent) RETURN n "
    "UNION ALL MATCH (n:Entity) RETURN n UNION ALL MATCH (n:Quarantine) RETURN n } "
    "WITH DISTINCT n.user_id AS user_id, n.agent_id AS agent_id, n.run_id AS run_id "
    "RETURN user_id, agent_id, run_id ORDER BY user_id, agent_id, run_id"
)


def count_nodes(label: str, where: str) -> str:
    return f"MATCH (n:{label}) WHERE {where} RETURN count(n) AS n"


def count_facts(where: str) -> str:
    return f"MATCH (:Entity)-[r]->(o) WHERE (o:Entity OR o:Value) AND r.id IS NOT NULL AND {where} RETURN count(r) AS n"


# Each page read seeks the scope's own index (``using``): seeking the id index from ``$after`` would
# read every scope's nodes after it, so a whole-store dump would cost scopes x nodes.


def memories(where: str, using: str) -> str:
    return (f"MATCH (m:Memory) {using} WHERE m.id > $after AND {where} "
            f"WITH m, m.id AS key ORDER BY key LIMIT $limit RETURN {MEMORY_PROJ} AS rec, m.embedding AS vec, key")


def history(where: str, using: str) -> str:
    return (f"MATCH (h:HistoryEvent) {using} WHERE h.memory_id > $after AND {where} "
            "WITH DISTINCT h.memory_id AS mid ORDER BY mid LIMIT $limit "
            f"MATCH (h:HistoryEvent {{memory_id: mid}}) WHERE {where} "
            f"RETURN {HISTORY_PROJ} AS ev ORDER BY mid, h.created_at, h.seq, h.id")


def entities(where: str, using: str) -> str:
    return (f"MATCH (e:Entity) {using} WHERE e.id > $after AND {where} WITH e, e.id AS key ORDER BY key LIMIT $limit "
            f"RETURN {entity_proj('e')} AS ent, e.embedding AS vec, "
            "[(m:Memory)-[:MENTIONS]->(e) | m.id] AS mids, key")


def facts(where: str) -> str:
    return (f"UNWIND $ids AS id MATCH (s:Entity {{id: id}})-[r]->(o) WHERE (o:Entity OR o:Value) AND {where} "
            f"RETURN {FACT_COLUMNS} ORDER BY r.id")


def quarantine(where: str, using: str) -> str:
    return (f"MATCH (q:Quarantine) {using} WHERE q.id > $after AND {where} WITH q ORDER BY q.id LIMIT $limit "
            f"RETURN {QUARANTINE_PROJ} AS entry")


def taken(label: str) -> str:
    return f"MATCH (n:{label}) WHERE n.id IN $ids RETURN n.id AS id"


TAKEN_FACTS: Final = "MATCH ()-[r]->() WHERE r.id IN $ids RETURN r.id AS id"

SET_ACCESS: Final = (
    "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) SET m.access_count = r.n, m.last_accessed_at = r.at"
)
SET_ENTITY_UPDATED: Final = "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e.updated_at = r.at"
