"""Cypher of the knowledge graph: entity, fact, mention and quarantine writes, forgetting what
deleted memories alone supported, and graph reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ....models import Scope
from . import (
    FACT_COLUMNS,
    FACT_ORDER,
    QUARANTINE_PROJ,
    STATE_COLUMNS,
    entity_proj,
    fact_states_of,
    hint,
    hint_field,
    labels_clause,
    rel_proj,
    scope_where,
    set_times,
)

# --------------------------------------------------------------------------------------------------
# Graph writes

# Classes and aliases are added to the stored lists, not replaced: two writers growing one entity
# both keep what they added (the node's write lock orders them).
UPDATE_ENTITIES: Final = """
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


def add_labels(labels: Sequence[str]) -> str:
    """Add ``labels`` (checked by :func:`.naming.class_labels`) to the ``$ids`` entities."""
    return _ADD_LABELS.format(labels=labels_clause(labels))


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


def mentions(where: str) -> str:
    """Link ``$rows`` (memory ``m``, entity ``e``); ``where``: the scope on ``m``."""
    return _MENTIONS.format(scope=where)


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
WHERE x.id = r.id OR r.open AND x.relation = r.relation AND x.valid_to IS NULL AND CASE
    WHEN r.target IS NOT NULL THEN o:Entity AND o.id = r.target
    ELSE o:Value AND o.value = r.value AND coalesce(o.datatype = r.datatype, o.datatype IS NULL AND r.datatype IS NULL)
END
RETURN r.i AS i, x.id AS id
ORDER BY x.id <> r.id, x.created_at, x.seq, x.id
"""
_CREATE_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})
MATCH (t:Entity {{id: r.target}})
CREATE (s)-[x:`{rtype}`]->(t)
SET x = r.props
{times}
{flag}
RETURN count(x) AS n
"""
_CREATE_LITERAL_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})
CREATE (s)-[x:`{rtype}`]->(v:Value)
SET x = r.props, v = r.value
{times}
{flag}
RETURN count(x) AS n
"""
_MERGE_FACTS: Final = """
UNWIND $rows AS r
MATCH (s:Entity {{id: r.source}})-[x:`{rtype}`]->()
WHERE x.id = r.id
WITH x, r, coalesce(x.memory_ids, []) AS had
SET x.memory_ids = had + [m IN r.mids WHERE NOT m IN had]
{flag}
"""


# Every memory of a closed fact is flagged ``closed_facts`` in the transaction that closes it (or
# creates it closed, or adds a memory to it), so search reads fact states only for those.
FLAG_CLOSED: Final = (
    "WITH x CALL (x) { WITH x WHERE x.valid_to IS NOT NULL UNWIND x.memory_ids AS mid "
    "MATCH (fm:Memory {id: mid}) SET fm.closed_facts = true }"
)


def find_twins(rtype: str) -> str:
    """Stored facts of type ``rtype`` (checked by :func:`.naming.rel_type`) that ``$rows`` merge into:
    the fact of the row's id, else, for an open row, an open fact of the same object."""
    return _FIND_TWINS.format(rtype=rtype)


def create_facts(rtype: str, literal: bool) -> str:
    return (_CREATE_LITERAL_FACTS if literal else _CREATE_FACTS).format(rtype=rtype, times=set_times("x"),
                                                                          flag=FLAG_CLOSED)


def merge_facts(rtype: str) -> str:
    """Add provenance ``r.mids`` to stored facts of type ``rtype``."""
    return _MERGE_FACTS.format(rtype=rtype, flag=FLAG_CLOSED)


# Closing starts from the subjects of this write's facts (the usual case: a functional property's new
# value closes the old one of the same subject), then looks through the write's scope for the rest.
_CLOSE_FROM: Final = """
UNWIND $sources AS sid
MATCH (:Entity {{id: sid}})-[x]->()
WHERE x.id IN $ids AND {scope}
SET x.valid_to = coalesce(x.valid_to, $at[x.id])
{flag}
RETURN DISTINCT x.id AS id
"""
_CLOSE_IN_SCOPE: Final = """
MATCH (s:Entity) {hint} WHERE {entity_scope}
MATCH (s)-[x]->()
WHERE x.id IN $ids AND {scope}
SET x.valid_to = coalesce(x.valid_to, $at[x.id])
{flag}
RETURN DISTINCT x.id AS id
"""


def close_from(fact_where: str) -> str:
    return _CLOSE_FROM.format(scope=fact_where, flag=FLAG_CLOSED)


def close_in_scope(hint_clause: str, entity_where: str, fact_where: str) -> str:
    return _CLOSE_IN_SCOPE.format(hint=hint_clause, entity_scope=entity_where, scope=fact_where, flag=FLAG_CLOSED)


CREATE_QUARANTINE: Final = """
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


def release(where: str) -> str:
    return _RELEASE.format(scope=where)


# --------------------------------------------------------------------------------------------------
# Forgetting (delete, delete_scope)

# The facts the deleted memories supported, reached from the entities they mentioned (every
# supporting memory mentions the fact's subject): strip their ids; a fact left without support goes,
# with its Value node. Returns the entities at the other end of deleted facts.
FORGET_FACTS: Final = """
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
DROP_ORPHANS: Final = """
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


def forget_quarantine(scope: Scope, params: dict[str, Any]) -> str:
    """Strip ``$mids`` from the provenance of the scope's quarantine entries."""
    return _FORGET_QUARANTINE.format(hint=hint(scope, "q", "Quarantine"), scope=scope_where(scope, "q", params))


def delete_scope_entities(scope: Scope, params: dict[str, Any]) -> str:
    """Up to ``$limit`` of the scope's entities no memory mentions, with their facts and Value nodes."""
    return _DELETE_ENTITIES.format(hint=hint(scope, "e", "Entity"), scope=scope_where(scope, "e", params))


def delete_scope_quarantine(scope: Scope, params: dict[str, Any]) -> str:
    """Up to ``$limit`` of the scope's quarantine entries."""
    return _DELETE_QUARANTINE.format(hint=hint(scope, "q", "Quarantine"), scope=scope_where(scope, "q", params))


# --------------------------------------------------------------------------------------------------
# Graph reads


def find_entities(scope: Scope, fence: str) -> str:
    """By key (index seek on ``Entity.key``) or alias key (the scope through its index) in ``$keys``,
    then ``fence``; with the keys each entity has among them, oldest first."""
    given = hint_field(scope)
    return (
        "CALL () { MATCH (e:Entity) WHERE e.key IN $keys RETURN e "
        f"UNION MATCH (e:Entity) {hint(scope, 'e', 'Entity')} WHERE e.{given} = $s_{given} "
        "AND any(k IN coalesce(e.alias_keys, []) WHERE k IN $keys) RETURN e } "
        f"WITH e WHERE {fence} "
        f"RETURN {entity_proj('e')} AS ent, [k IN [e.key] + coalesce(e.alias_keys, []) WHERE k IN $keys] AS hits "
        "ORDER BY e.created_at, e.seq, e.id"
    )


def similar_entities(scope: Scope, exact_fence: str) -> str:
    """Per ``$vecs[i]`` the entity of exactly the scope with the highest cosine (``score``)."""
    given = hint_field(scope)
    return (
        f"UNWIND range(0, size($vecs) - 1) AS i "
        f"CALL (i) {{ MATCH (e:Entity) {hint(scope, 'e', 'Entity')} WHERE e.{given} = $s_{given} AND {exact_fence} "
        "AND e.embedding IS NOT NULL "
        "WITH e, vector.similarity.cosine(e.embedding, $vecs[i]) AS s ORDER BY s DESC, e.id LIMIT 1 "
        f"RETURN {entity_proj('e')} AS ent, 2 * s - 1 AS score }} "
        "RETURN i, ent, score"
    )


def entities_by_id(where: str) -> str:
    return f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) WHERE {where} RETURN {entity_proj('e')} AS e"


# Every open fact touching the entities $found, with the entities at the other ends not among them.
OPEN_FACTS_OF: Final = (
    "UNWIND $found AS id MATCH (e:Entity {id: id}) "
    "CALL (e) { MATCH (e)-[r]->(o) WHERE r.valid_to IS NULL AND (o:Entity OR o:Value) RETURN r, e AS s, o "
    "UNION ALL MATCH (s:Entity)-[r]->(e) WHERE r.valid_to IS NULL RETURN r, s, e AS o } "
    f"WITH DISTINCT r, s, o RETURN {FACT_COLUMNS}, "
    f"CASE WHEN NOT s.id IN $found THEN {entity_proj('s')} END AS s_ent, "
    f"CASE WHEN o:Entity AND NOT o.id IN $found THEN {entity_proj('o')} END AS o_ent "
    f"{FACT_ORDER}"
)


def list_facts(scope: Scope, entity_where: str, fact_where: str, limit: str) -> str:
    """A page of the scope's facts (through its entities' scope index), oldest first."""
    return (
        f"MATCH (s:Entity) {hint(scope, 's', 'Entity')} WHERE {entity_where} "
        f"MATCH (s)-[r]->(o) WHERE {fact_where} "
        f"RETURN {FACT_COLUMNS} {PAGE_ORDER}{limit}"
    )


def list_facts_of(fact_where: str, limit: str) -> str:
    """A page of the facts with one of the entities ``$eids`` at either end, each once."""
    return (
        f"UNWIND $eids AS id MATCH (e:Entity {{id: id}}) CALL (e) {{ {_EITHER_END} }} "
        f"WITH DISTINCT r, s, o WHERE {fact_where} RETURN {FACT_COLUMNS} {PAGE_ORDER}{limit}"
    )


def list_entities(scope: Scope, where: str, limit: str) -> str:
    return (f"MATCH (e:Entity) {hint(scope, 'e', 'Entity')} WHERE {where} "
            f"RETURN {entity_proj('e')} AS e ORDER BY e.created_at, e.id{limit}")


PAGE_ORDER: Final = "ORDER BY r.created_at, r.id"
"""Pages of facts: (created_at, id) is the cursor, the same order on every backend."""
ENTITY_CONTAINS: Final = "any(k IN [e.key] + coalesce(e.alias_keys, []) WHERE k CONTAINS $contains)"
ENTITY_CLASSES: Final = "any(c IN coalesce(e.classes, []) WHERE c IN $classes)"
FACT_RELATIONS: Final = "r.relation IN $rels"
FACT_VALID_AT: Final = (
    "(r.valid_from IS NULL OR r.valid_from <= $as_of) AND (r.valid_to IS NULL OR r.valid_to > $as_of)")


def after(var: str) -> str:
    """Keyset pagination: past the (created_at, id) ``$after_t``, ``$after_id``."""
    return f"({var}.created_at > $after_t OR ({var}.created_at = $after_t AND {var}.id > $after_id))"


# --------------------------------------------------------------------------------------------------
# The primitive reads of the walk (stores/walk.py)

_EITHER_END: Final = (
    "MATCH (e)-[r]->(o) WHERE o:Entity OR o:Value RETURN r, e AS s, o "
    "UNION MATCH (s:Entity)-[r:!MENTIONS]->(e) RETURN r, s, e AS o"
)
"""Facts of ``e`` in both directions (MENTIONS are not facts: skipped by type)."""


NEWEST_FIRST: Final = "m.created_at DESC, m.seq DESC"
"""How a search's walk cuts an entity's mentions and a fact's support (memories ``m``): the newest
written first, as the SQLite store does, so two stores of the same writes read the same memories."""


def newest_support(limit: str) -> str:
    """A subquery over fact ``r``: the ids of its newest ``limit`` supporting memories, in id order, as
    ``prov``."""
    return (f"UNWIND coalesce(r.memory_ids, []) AS mid MATCH (m:Memory {{id: mid}}) WITH m ORDER BY {NEWEST_FIRST} "
            f"LIMIT {limit} WITH m.id AS mid ORDER BY mid RETURN collect(mid) AS prov")


def entity_memories(where: str) -> str:
    """Per entity ``$ids`` in ``where``: its degree and, unless more than ``$hub``, its newest ``$limit``
    memory ids (the degree test comes first: a hub's mentions are never read)."""
    return (
        f"UNWIND $ids AS id MATCH (e:Entity {{id: id}}) WHERE {where} "
        "WITH e, COUNT { (e)<-[:MENTIONS]-() } AS d "
        f"CALL (e, d) {{ MATCH (e)<-[:MENTIONS]-(m) WHERE d <= $hub WITH m ORDER BY {NEWEST_FIRST} LIMIT $limit "
        "RETURN collect(m.id) AS mids } "
        "RETURN e.id AS id, d, mids"
    )


def memory_entities(where: str) -> str:
    return (f"UNWIND $mids AS mid MATCH (:Memory {{id: mid}})-[:MENTIONS]->(e:Entity) WHERE {where} "
            "RETURN mid, e.id AS eid")


def facts(fact_where: str) -> str:
    """Per entity ``$ids``, its newest ``$limit`` facts in ``fact_where``, each once, with the newest
    ``$support`` memories of its provenance."""
    return (
        "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
        f"CALL (e) {{ CALL (e) {{ {_EITHER_END} }} WITH r, s, o WHERE {fact_where} "
        "WITH r, s, o ORDER BY r.created_at DESC, r.seq DESC LIMIT $limit RETURN r, s, o } "
        "WITH DISTINCT r, s, o "
        f"CALL (r) {{ {newest_support('$support')} }} "
        f"RETURN {rel_proj('r', 'prov')} AS fact, s.id AS source, CASE WHEN o:Entity THEN o.id END AS target, "
        "CASE WHEN o:Value THEN o.value END AS value, CASE WHEN o:Value THEN o.datatype END AS datatype"
    )


def fact_states(memory_where: str, fact_where: str, next_where: str) -> str:
    """:func:`fact_states_of` for each memory of ``$mids`` in ``memory_where``."""
    return (f"UNWIND $mids AS mid MATCH (m:Memory {{id: mid}}) WHERE {memory_where} "
            f"{fact_states_of(fact_where, next_where)}RETURN mid, {STATE_COLUMNS}")


FACT_OF_MEMORY: Final = "$mid IN coalesce(r.memory_ids, [])"
FACT_OPEN: Final = "r.valid_to IS NULL"
GRAPH_SCOPES: Final = (
    "MATCH (:Entity)-[r]->() RETURN DISTINCT r.user_id AS user_id, r.agent_id AS agent_id, r.run_id AS run_id"
)


def quarantined(scope: Scope, where: str, status: bool) -> str:
    """``status``: only entries of ``$status``."""
    where += " AND q.status = $status" if status else ""
    return (f"MATCH (q:Quarantine) {hint(scope, 'q', 'Quarantine')} WHERE {where} "
            f"RETURN {QUARANTINE_PROJ} AS entry ORDER BY q.created_at, q.seq, q.id")
