"""Cypher of opening a store: schema statements, meta and index checks; of ``optimize`` and
``reset``; and the analyst runner's own statements."""

from __future__ import annotations

from typing import Final

from . import SCOPE_FIELDS, identity_cypher

# --------------------------------------------------------------------------------------------------
# Schema and open checks

READ_META: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.embedder AS embedder, g.dims AS dims"
WRITE_META: Final = (
    "MERGE (g:GraphmemMeta {key: 'schema'}) "
    "ON CREATE SET g.embedder = $embedder, g.dims = $dims, g.schema_version = $version"
)
MEMORY_VECTOR_INDEX: Final = "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'memory_embedding' RETURN options"
MEMORY_TEXT_INDEX: Final = (
    "SHOW FULLTEXT INDEXES YIELD name, options, properties WHERE name = 'memory_text' RETURN options, properties"
)
ANALYZERS: Final = "CALL db.index.fulltext.listAvailableAnalyzers() YIELD analyzer RETURN analyzer"
AWAIT_INDEXES: Final = "CALL db.awaitIndexes()"
AWAIT_INDEX: Final = "CALL db.awaitIndex($name, $timeout)"
IDENTITY_DONE: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.identity AS done"
MARK_IDENTITY_DONE: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) SET g.identity = 1"
CLOSED_FACTS_DONE: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.closed_facts AS done"
MARK_CLOSED_FACTS_DONE: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) SET g.closed_facts = 1"
BACKFILL_CLOSED_FACTS: Final = (
    "MATCH (:Entity)-[x]->() WHERE x.valid_to IS NOT NULL WITH DISTINCT x "
    "CALL (x) { UNWIND coalesce(x.memory_ids, []) AS mid MATCH (m:Memory {id: mid}) SET m.closed_facts = true } "
    "IN TRANSACTIONS OF 10000 ROWS"
)
"""Stores written before ``closed_facts`` (see ``cypher.graph.FLAG_CLOSED``): flag them once."""
IDENTITY_KEYS: Final = (("Entity", "key"), ("Memory", "hash"))
"""Each label with an ``identity`` and the property it is made from (besides the exact scope)."""


def backfill_identity(label: str, key: str) -> str:
    """The oldest node of each identity (reads resolve a name or text to the oldest) gets it."""
    return (
        f"MATCH (n:{label}) WHERE n.identity IS NULL AND n.{key} IS NOT NULL "
        f"WITH {identity_cypher('n', key)} AS identity, n ORDER BY n.created_at, n.seq, n.id "
        "WITH identity, head(collect(n)) AS first "
        "CALL (first, identity) { SET first.identity = identity } IN TRANSACTIONS OF 10000 ROWS"
    )


IDENTITY_CONSTRAINTS: Final = {
    "entity_identity": "CREATE CONSTRAINT entity_identity IF NOT EXISTS FOR (e:Entity) REQUIRE e.identity IS UNIQUE",
    "memory_identity": "CREATE CONSTRAINT memory_identity IF NOT EXISTS FOR (m:Memory) REQUIRE m.identity IS UNIQUE",
}
"""One entity per (exact scope, normalized name), one memory per (exact scope, text hash): a second
``CREATE`` of either blocks until the first commits, then fails, which the store reports as a
conflict (the writer plans again and finds the first one)."""


def schema_statements(dims: int, analyzer: str) -> list[str]:
    """Constraints and indexes (idempotent; run by ``open``). ``analyzer`` is a name the server
    listed (checked before)."""
    # Quantization off (Neo4j's default is int8): the index then returns exact cosines, so
    # search needs no re-scoring from the stored embeddings and a third of the over-fetch (see
    # search.candidate_plan). It is also smaller: the quantized index keeps the float vectors
    # beside its int8 copy.
    vector_options = (
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dims)}, `vector.similarity_function`: 'cosine', "
        "`vector.quantization.enabled`: false}}"
    )
    statements = [
        "CREATE CONSTRAINT graphmem_meta_key IF NOT EXISTS FOR (g:GraphmemMeta) REQUIRE g.key IS UNIQUE",
        "CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (m:Memory) REQUIRE m.id IS UNIQUE",
        "CREATE CONSTRAINT history_event_id IF NOT EXISTS FOR (h:HistoryEvent) REQUIRE h.id IS UNIQUE",
        "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
        "CREATE CONSTRAINT thread_key IF NOT EXISTS FOR (t:GraphmemThread) REQUIRE t.key IS UNIQUE",
        "CREATE INDEX memory_follows IF NOT EXISTS FOR (m:Memory) ON (m.follows)",
    ]
    for field in ("user_id", "agent_id", "run_id", "created_at", "event_time"):
        statements.append(f"CREATE INDEX memory_{field} IF NOT EXISTS FOR (m:Memory) ON (m.{field})")
    # Text hashes are found through memory_identity (scope + hash); an index on hash alone, which
    # stores made before this one have, cost every insert an index update and served no query.
    statements.append("DROP INDEX memory_hash IF EXISTS")
    statements += [
        "CREATE INDEX history_event_memory_id IF NOT EXISTS FOR (h:HistoryEvent) ON (h.memory_id)",
        "CREATE INDEX entity_user_id IF NOT EXISTS FOR (e:Entity) ON (e.user_id)",
        "CREATE INDEX entity_name IF NOT EXISTS FOR (e:Entity) ON (e.name)",
        "CREATE VECTOR INDEX memory_embedding IF NOT EXISTS FOR (m:Memory) ON (m.embedding) " + vector_options,
        "CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (e:Entity) ON (e.embedding) " + vector_options,
        # The scope fields too, so a query asks Lucene for one scope's hits (cypher.search.scoped_text_query).
        "CREATE FULLTEXT INDEX memory_text IF NOT EXISTS FOR (m:Memory) ON EACH [m.memory, "
        + ", ".join(f"m.{f}" for f in SCOPE_FIELDS)
        + f"] OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{analyzer}'}}}}",
        # the graph half
        "CREATE CONSTRAINT value_id IF NOT EXISTS FOR (v:Value) REQUIRE v.id IS UNIQUE",
        "CREATE CONSTRAINT quarantine_id IF NOT EXISTS FOR (q:Quarantine) REQUIRE q.id IS UNIQUE",
        "CREATE INDEX entity_key IF NOT EXISTS FOR (e:Entity) ON (e.key)",
        "CREATE INDEX entity_agent_id IF NOT EXISTS FOR (e:Entity) ON (e.agent_id)",
        "CREATE INDEX entity_run_id IF NOT EXISTS FOR (e:Entity) ON (e.run_id)",
    ]
    for name in SCOPE_FIELDS:
        statements.append(f"CREATE INDEX quarantine_{name} IF NOT EXISTS FOR (q:Quarantine) ON (q.{name})")
        # a dump reads one scope's events at a time (cypher.dump.history)
        statements.append(f"CREATE INDEX history_event_{name} IF NOT EXISTS FOR (h:HistoryEvent) ON (h.{name})")
    # Query linking: aliases are a list, which no range index can seek into. This full-text index
    # holds the names, the aliases and the scope fields, so one Lucene query asks for alias words
    # within a scope (other tenants' hits never fill the hit limit); every hit is then checked
    # exactly in Cypher. (Stores from before it keep their unused entity_<scope field>_aliased indexes.)
    statements.append(
        "CREATE FULLTEXT INDEX entity_link IF NOT EXISTS FOR (e:Entity) "
        "ON EACH [e.name, e.aliases_text, e.user_id, e.agent_id, e.run_id]"
    )
    return statements


def drop_index(name: str) -> str:
    """``name``: one of this package's index names (``schema.REBUILT_INDEXES``)."""
    return f"DROP INDEX {name} IF EXISTS"


def reset_label(label: str, batch: int) -> str:
    return f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF {batch} ROWS"


# --------------------------------------------------------------------------------------------------
# Analyst Cypher

EXPLAIN: Final = "EXPLAIN "
"""Prefix of the analyst's query for its plan check (``analyst.run``)."""
BUILTIN_FUNCTIONS: Final = (
    "SHOW FUNCTIONS YIELD name, isBuiltIn WHERE isBuiltIn AND toLower(name) IN $names RETURN toLower(name) AS name"
)
