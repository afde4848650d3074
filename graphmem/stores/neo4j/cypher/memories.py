"""Cypher of memories and their history: writes, updates, deletes and reads."""

from __future__ import annotations

from typing import Final, Literal

from ..filters import MIRROR_PREFIXES
from . import HISTORY_PROJ, MEMORY_PROJ, merge_new, set_times

# --------------------------------------------------------------------------------------------------
# Memory writes


INSERT_MEMORIES: Final = merge_new("Memory")
INSERT_HISTORY: Final = "UNWIND $rows AS r CREATE (h:HistoryEvent) SET h = r.props " + set_times("h")
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


def delete_by_ids(where: str) -> str:
    """:data:`_DELETE_BY_IDS` fenced by ``where`` (the scope on ``m``)."""
    return _DELETE_BY_IDS.format(scope=where)


def scope_ids(hint_clause: str, where: str) -> str:
    """Ids of the scope's memories, up to ``$limit`` (``delete_scope`` deletes them)."""
    return f"MATCH (m:Memory) {hint_clause} WHERE {where} RETURN m.id AS id LIMIT $limit"


# Drop one memory's MENTIONS and return what it mentioned, for forget_memories (the memory stays).
UNLINK_MEMORY: Final = """
MATCH (m:Memory {id: $id})
OPTIONAL MATCH (m)-[x:MENTIONS]->(e:Entity)
WITH collect(e.id) AS entities, collect(x) AS links
FOREACH (x IN links | DELETE x)
RETURN entities
"""


def lock_memories(where: str) -> str:
    """Lock the ``$ids`` memories in scope and read their hashes (a write's check)."""
    return (f"UNWIND $ids AS id MATCH (m:Memory {{id: id}}) WHERE {where} "
            "SET m._lock = true REMOVE m._lock RETURN m.id AS id, m.hash AS hash")


def lock_and_read_memory(where: str) -> str:
    """SET then REMOVE a dummy property takes the node's write lock before anything is read, so
    concurrent updates of one memory serialize and each merges into the previous one's result.
    ``mirrored``: its metadata mirror properties (an update nulls those it no longer has)."""
    return (
        f"MATCH (m:Memory {{id: $id}}) WHERE {where} "
        "SET m._lock = true REMOVE m._lock "
        f"RETURN {MEMORY_PROJ} AS rec, "
        "[k IN keys(m) WHERE " + " OR ".join(f"k STARTS WITH '{p}'" for p in MIRROR_PREFIXES) + "] AS mirrored"
    )


MEMORY_TWIN: Final = "MATCH (t:Memory {identity: $identity}) WHERE t.id <> $id RETURN t.id AS id LIMIT 1"


def write_back_memory(vector: Literal["keep", "remove", "set"]) -> str:
    """An update's write: ``$props`` onto the memory, its vector kept, removed or set to ``$vec``,
    and its UPDATE event ``$event``."""
    clause = {"keep": "", "remove": "REMOVE m.embedding ",
              "set": "WITH m CALL db.create.setNodeVectorProperty(m, 'embedding', $vec) "}[vector]
    return "MATCH (m:Memory {id: $id}) SET m += $props " + clause + "CREATE (h:HistoryEvent) SET h = $event"


def touch(where: str) -> str:
    return (
        f"UNWIND $rows AS r MATCH (m:Memory {{id: r.id}}) WHERE {where} "
        "SET m.access_count = coalesce(m.access_count, 0) + r.n, m.last_accessed_at = CASE "
        "WHEN m.last_accessed_at IS NULL OR m.last_accessed_at < r.at THEN r.at ELSE m.last_accessed_at END"
    )


# --------------------------------------------------------------------------------------------------
# Memory reads


FIND_IDENTITIES: Final = "MATCH (m:Memory) WHERE m.identity IN $identities RETURN m.hash AS hash, m.id AS id"
"""The memories holding ``$identities`` (exact scope and text hash): a seek on the unique constraint's
index, which every insert updates anyway; a range index on ``hash`` would cost each insert more."""


def get_memory(where: str) -> str:
    return f"MATCH (m:Memory {{id: $id}}) WHERE {where} RETURN {MEMORY_PROJ} AS rec"


def list_memories(hint_clause: str, where: str) -> str:
    """Newest first (``created_at`` descending, then ``id`` ascending), up to ``$limit``."""
    return (f"MATCH (m:Memory) {hint_clause} WHERE {where} "
            f"RETURN {MEMORY_PROJ} AS rec ORDER BY m.created_at DESC, m.id ASC LIMIT $limit")


def history(where: str) -> str:
    return (f"MATCH (h:HistoryEvent {{memory_id: $id}}) WHERE {where} "
            f"RETURN {HISTORY_PROJ} AS ev ORDER BY h.created_at, h.seq, h.id")


SCOPE_OF: Final = (
    "OPTIONAL MATCH (m:Memory {id: $id}) "
    "CALL () { OPTIONAL MATCH (h:HistoryEvent {memory_id: $id}) RETURN h ORDER BY h.created_at LIMIT 1 } "
    "WITH coalesce(m, h) AS x RETURN x.user_id AS user_id, x.agent_id AS agent_id, x.run_id AS run_id"
)
"""The scope of a memory, else of its first history event (a deleted memory's)."""
COUNT_ALL: Final = "MATCH (m:Memory) RETURN count(m) AS n"


def count(where: str) -> str:
    return f"MATCH (m:Memory) WHERE {where} RETURN count(m) AS n"


def ids_with_prefix(where: str) -> str:
    """Memory ids starting with ``$prefix`` (a range seek on the id index), in id order."""
    return f"MATCH (m:Memory) WHERE m.id STARTS WITH $prefix AND {where} RETURN m.id AS id ORDER BY id LIMIT $limit"


def history_ids_with_prefix(where: str) -> str:
    """Ids with history events starting with ``$prefix`` (deleted memories' too; the memory_id index)."""
    return (f"MATCH (h:HistoryEvent) WHERE h.memory_id STARTS WITH $prefix AND {where} "
            "RETURN DISTINCT h.memory_id AS id ORDER BY id LIMIT $limit")


ADVANCE_THREADS: Final = (
    "UNWIND $rows AS r MERGE (t:GraphmemThread {key: r.key}) ON CREATE SET t += r.scope "
    "SET t._lock = true REMOVE t._lock "
    "WITH r, t OPTIONAL MATCH (m:Memory {id: t.last}) WITH r, t, m.id AS last "
    "SET t.last = r.last RETURN r.key AS key, last"
)
"""Lock each scope's thread (created on its first write), read its last memory (``null`` when deleted
since) and point it at this write's last: concurrent writers to one scope serialize on the lock, and
each follows what the one before it wrote."""


def newest_unfollowed(hint: str, where: str) -> str:
    """The scope's newest memory that none follows: the thread's last for a scope without a thread
    node (restored, or written before threads) or whose last memory was deleted."""
    return (f"MATCH (m:Memory) {hint} WHERE {where} AND NOT EXISTS {{ MATCH (:Memory {{follows: m.id}}) }} "
            "RETURN m.id AS id ORDER BY m.created_at DESC, m.id DESC LIMIT 1")


def delete_threads(where: str) -> str:
    """Up to ``$limit`` of the scope's thread nodes."""
    return f"MATCH (t:GraphmemThread) WHERE {where} WITH t LIMIT $limit DELETE t RETURN count(*) AS n"
