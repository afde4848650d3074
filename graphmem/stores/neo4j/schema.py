"""Opening a Neo4j store: schema creation, the embedder pin and the index checks; and ``optimize``,
which rebuilds the search indexes."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Final

from neo4j import ManagedTransaction, Session
from neo4j import exceptions as neo4j_errors

from ...errors import ConfigError, SchemaMismatchError
from .cypher import SCOPE_FIELDS
from .cypher import schema as q
from .reembed import rebuild_vector_indexes
from .session import Db

log = logging.getLogger("graphmem")

SCHEMA_VERSION: Final = 1
READ_META: Final = q.READ_META
REBUILT_INDEXES: Final = ("memory_text", "entity_link", "entity_embedding", "memory_embedding")
"""What ``optimize`` rebuilds: the Lucene-backed indexes search reads."""
_REBUILD_TIMEOUT_S: Final = 3_600


@dataclass(frozen=True)
class IndexFacts:
    """What search plans need to know of the store's indexes: read when the store opens, and again
    after ``optimize`` or a re-embed rebuilt them."""

    exact_vector: bool = False
    """``memory_embedding`` keeps float32 vectors, so its scores are exact cosines (:func:`index_is_exact`)."""
    scoped_text: bool = False
    """``memory_text`` holds the scope fields beside the text, so a full-text query can ask Lucene
    for one scope's hits (:func:`text_is_scoped`)."""


def index_facts(session: Session, location: str) -> IndexFacts:
    return IndexFacts(index_is_exact(session, location), text_is_scoped(session, location))


def bootstrap(db: Db, embedder: str, dims: int) -> IndexFacts:
    """Bootstrap the schema idempotently and pin the embedder (refusing another); return what
    search needs to know of the indexes."""
    location = db.location()
    with db.errors("schema bootstrap", write=True), db.session() as session:
        pinned = _check_meta(session, location, embedder, dims)
        _check_vector_index(db, session, location, dims, pinned)
        _check_analyzer(session, location, db.cfg.fulltext_analyzer)
        for statement in q.schema_statements(dims, db.cfg.fulltext_analyzer):
            _create(session, statement)
        session.execute_write(_write_meta, embedder, dims)
        _identity_schema(session)
        if not (session.run(q.CLOSED_FACTS_DONE).single() or {"done": None})["done"]:
            session.run(q.BACKFILL_CLOSED_FACTS).consume()
            session.run(q.MARK_CLOSED_FACTS_DONE).consume()
        _check_meta(session, location, embedder, dims)
        session.run(q.AWAIT_INDEXES).consume()
        return index_facts(session, location)


def _create(session: Session, statement: str) -> None:
    try:
        session.run(statement).consume()
    except neo4j_errors.ClientError as exc:
        # Another process created the same rule between IF NOT EXISTS and commit.
        if "EquivalentSchemaRuleAlreadyExists" not in (exc.code or ""):
            raise


def _identity_schema(session: Session) -> None:
    """Give nodes of stores from before identity constraints their ``identity`` (once), then create
    the constraints. Where concurrent writers of an earlier graphmem left duplicates, the oldest
    node of each gets the identity (reads already resolve a name or text to the oldest) and the
    others none: they stay as they are, and no new duplicate can be written."""
    done = session.run(q.IDENTITY_DONE).single()
    if done is None or not done["done"]:
        for label, key in q.IDENTITY_KEYS:
            session.run(q.backfill_identity(label, key)).consume()
        session.run(q.MARK_IDENTITY_DONE).consume()
    for statement in q.IDENTITY_CONSTRAINTS.values():
        _create(session, statement)


def _check_meta(session: Session, location: str, embedder: str, dims: int) -> bool:
    """Refuse another embedder; return whether the store is pinned (to this one)."""
    row = session.execute_read(lambda tx: tx.run(q.READ_META).single())
    if row is not None and (row["embedder"] != embedder or row["dims"] != dims):
        raise SchemaMismatchError(
            f"Neo4j store {location} holds vectors of embedder {row['embedder']!r} "
            f"({row['dims']} dimensions), but the configuration uses {embedder!r} ({dims} dimensions); "
            "configure the same embedder, use another database, or move the store with `graphmem reembed`"
        )
    return row is not None


def _check_vector_index(db: Db, session: Session, location: str, dims: int, pinned: bool) -> None:
    """An index left from another setup would silently skip our vectors: refuse it instead. On a
    store pinned to this embedder it is what a re-embed that stopped before its index rebuild left:
    rebuild it."""
    record = session.run(q.MEMORY_VECTOR_INDEX).single()
    if record is None:
        return
    existing = (record["options"] or {}).get("indexConfig", {}).get("vector.dimensions")
    if existing is not None and int(existing) != dims and pinned:
        log.warning("Neo4j store %s is pinned to %d-dimensional vectors but its vector indexes have %s "
                    "(a re-embed stopped before rebuilding them): rebuilding them", location, dims, existing)
        rebuild_vector_indexes(db, dims, db.cfg.fulltext_analyzer)
    elif existing is not None and int(existing) != dims:
        raise SchemaMismatchError(
            f"Neo4j store {location} has vector index memory_embedding with {existing} "
            f"dimensions, but the configured embedder has {dims}; use the same embedder or another "
            "database"
        )


def _check_analyzer(session: Session, location: str, wanted: str) -> None:
    """Refuse an analyzer the server does not have; warn when the index was built with another."""
    known = {r["analyzer"] for r in session.run(q.ANALYZERS)}
    if wanted not in known:
        raise ConfigError(f"store.fulltext_analyzer {wanted!r} is not an analyzer of this Neo4j server; "
                          f"it has: {', '.join(sorted(known))}")
    record = session.run(q.MEMORY_TEXT_INDEX).single()
    have = ((record["options"] if record is not None else None) or {}).get("indexConfig", {}).get(
        "fulltext.analyzer")
    if have is not None and have != wanted:
        log.warning("Neo4j full-text index memory_text at %s uses analyzer %r, not the configured %r; "
                    "Memory.optimize() (graphmem optimize) rebuilds it with %r", location, have, wanted,
                    wanted)


def index_is_exact(session: Session, location: str) -> bool:
    """Whether ``memory_embedding`` scores are exact (quantization off).

    Stores created before graphmem turned quantization off keep their int8 index: it still
    works, its hits are re-scored exactly from a larger over-fetch. It is not rebuilt here: a
    rebuild takes the index offline for every process using the database (for a time that grows
    with the store) and belongs in a maintenance window, not in every ``open``. Dropping the
    index is the whole migration; the next ``open`` creates it again, unquantized."""
    record = session.run(q.MEMORY_VECTOR_INDEX).single()
    config = ((record["options"] if record is not None else None) or {}).get("indexConfig") or {}
    # Absent on servers older than 5.23, whose indexes may be quantized: treat them as such.
    exact = config.get("vector.quantization.enabled") is False
    if not exact:
        log.warning(
            "Neo4j vector index memory_embedding at %s is quantized: searches over-fetch and re-score "
            "its hits, which costs time; to rebuild it without quantization run `DROP INDEX "
            "memory_embedding` when no search runs and open the store again", location)
    return exact


def text_is_scoped(session: Session, location: str) -> bool:
    """Whether ``memory_text`` indexes the scope fields too.

    An index of a store from before it has the text alone: a query then takes the top hits of all
    scopes and keeps the scope's, and when those are too few it reads every hit of the query, which
    for a small scope of a big store and common words is most of the index. It still answers
    correctly; ``optimize`` rebuilds it with the scope fields."""
    record = session.run(q.MEMORY_TEXT_INDEX).single()
    if record is None:
        return False
    scoped = set(SCOPE_FIELDS) <= set(record["properties"] or ())
    if not scoped:
        log.warning("Neo4j full-text index memory_text at %s indexes the text alone: full-text searches in a "
                    "small share of the store read the other scopes' hits too; Memory.optimize() (graphmem "
                    "optimize) rebuilds it with the scope fields", location)
    return scoped


def _write_meta(tx: ManagedTransaction, embedder: str, dims: int) -> None:
    tx.run(q.WRITE_META, embedder=embedder, dims=dims, version=SCHEMA_VERSION).consume()


def optimize(db: Db, dims: int) -> tuple[dict[str, Any], IndexFacts]:
    """Rebuild the Lucene-backed search indexes, each into as few segments as the server's build
    buffer allows, one index at a time, with the current definitions (a quantized vector index or
    a text-only full-text index of an older store comes back exact, or scoped). Returns the report
    and the indexes' facts now.

    Why: Neo4j adds index segments as transactions commit and merges them lazily, and a vector
    search walks the HNSW graph of every segment, so one segment answers ``queryNodes`` much faster
    than several. While an index rebuilds, searches that need it fail
    with :class:`StoreError` (Neo4j waits for it to come online, then gives up).
    """
    statements = {name: stmt for stmt in q.schema_statements(dims, db.cfg.fulltext_analyzer)
                  for name in REBUILT_INDEXES if stmt.startswith("CREATE ") and f" INDEX {name} " in stmt}
    rebuilt: dict[str, float] = {}
    with db.errors("optimize", write=True), db.session() as session:
        for name in REBUILT_INDEXES:
            started = time.perf_counter()
            session.run(q.drop_index(name)).consume()
            session.run(statements[name]).consume()
            session.run(q.AWAIT_INDEX, name=name, timeout=_REBUILD_TIMEOUT_S).consume()
            rebuilt[name] = round(time.perf_counter() - started, 3)
        facts = index_facts(session, db.location())
    return {"backend": "neo4j", "rebuilt_s": rebuilt, "seconds": round(sum(rebuilt.values()), 3)}, facts
