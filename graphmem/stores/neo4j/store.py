"""The Neo4j store: the :class:`~graphmem.stores.base.Store` contract over the functions of this
package. The class holds the state (the server, the vector size, what search knows of its index);
each method passes it on explicitly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from neo4j import READ_ACCESS, Driver, ManagedTransaction

from ...config import StoreConfig
from ...errors import StoreError
from ...filters import Filter
from ...models import Entity, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope
from ..base import (
    AsyncStore,
    Candidates,
    EntityQuery,
    FactQuery,
    FactStates,
    GraphContext,
    GraphQuery,
    GraphWrite,
    MemoryPatch,
    Records,
    ReembedRow,
    Restore,
    Store,
    StoreInfo,
    Subgraph,
    Vector,
    WriteResult,
)
from . import analyst, dump, graph, reads, reembed, schema, search, writes
from .records import directions, stored_vector
from .session import Db
from .statements import Job, Statements

T = TypeVar("T")


class Neo4jStore(Store):
    """Memories in Neo4j, with vector and full-text indexes, scoped to tenants on every query."""

    def __init__(self, config: StoreConfig) -> None:
        self._db = Db(config)
        self._dims: int | None = None
        self._reembed_dims: int | None = None
        self._indexes = schema.IndexFacts()
        """What search plans need to know of the indexes: read from their configuration at :meth:`open`."""
        self._big_until: dict[Scope, float] = {}
        """Scopes last found big by a search, until when (``time.monotonic``) that is trusted."""

    # ---------------------------------------------------------------------------------- plumbing

    @property
    def _driver(self) -> Driver | None:
        return self._db.driver

    @contextmanager
    def _errors(self, what: str, *, write: bool) -> Iterator[None]:
        """Driver exceptions as graphmem's (:meth:`.session.Db.errors`)."""
        with self._db.errors(what, write=write):
            yield

    def _write(self, what: str, work: Callable[[ManagedTransaction], T]) -> T:
        """``work`` in a write transaction, retried and error-mapped (:meth:`.session.Db.write`)."""
        return self._db.write(what, work)

    def stored_vector(self, vector: Vector, what: str) -> list[float] | None:
        """An embedding to store, or ``None`` for a zero vector (see :func:`.records.stored_vector`)."""
        return stored_vector(vector, self._dims, what)

    def cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Analysts' Cypher, checked read-only (see :func:`.analyst.run`)."""
        return analyst.run(self._db, query, params)

    # ---------------------------------------------------------------------------------- lifecycle

    def open(self, embedder: str, dims: int) -> StoreInfo:
        """Connect, bootstrap the schema idempotently and pin the embedder (refusing another)."""
        self._db.connect()
        dims = int(dims)
        self._indexes = schema.bootstrap(self._db, embedder, dims)
        self._dims = dims
        return StoreInfo(backend="neo4j", location=self._db.location(), embedder=embedder, dims=dims)

    def recorded_embedder(self) -> tuple[str, int] | None:
        self._db.connect()
        row = self._db.single("reading the embedder pin", schema.READ_META, {})
        if row is None or row["embedder"] is None or row["dims"] is None:
            return None
        return str(row["embedder"]), int(row["dims"])

    # -- re-embedding (see Store.reembed_start) ----------------------------------------------------
    def reembed_start(self, embedder: str, dims: int) -> None:
        reembed.start(self._db, embedder, int(dims))
        self._reembed_dims = int(dims)

    def reembed_pending(self, kind: str, scope: Scope | None, after: str | None, limit: int) -> list[ReembedRow]:
        return reembed.pending(self._db, kind, scope, after, limit)

    def reembed_count(self, kind: str, scope: Scope | None) -> int:
        return reembed.count(self._db, kind, scope)

    def reembed_stage(self, kind: str, rows: Sequence[ReembedRow], vectors: Vector) -> None:
        if self._reembed_dims is None:
            raise StoreError("reembed_stage before reembed_start")
        reembed.stage(self._db, kind, rows, vectors, self._reembed_dims)

    def reembed_finish(self, embedder: str, dims: int) -> int:
        missing = reembed.finish(self._db, embedder, int(dims), self._dims, self._db.cfg.fulltext_analyzer)
        if not missing:
            self._dims = int(dims)
            with self._db.errors("re-embed", write=False), self._db.session(READ_ACCESS) as session:
                self._indexes = schema.index_facts(session, self._db.location())
        return missing

    def optimize(self) -> dict[str, Any]:
        """Rebuild the search indexes into few segments (see :func:`.schema.optimize`)."""
        if self._dims is None:
            raise StoreError("store not opened: call open() first")
        report, self._indexes = schema.optimize(self._db, self._dims)
        return report

    def bookmarks(self) -> list[str]:
        return sorted(self._db.bookmarks.get_bookmarks())

    def read_after(self, bookmarks: Sequence[str]) -> None:
        """Checked by one read that waits for them (the server parses a bookmark; a malformed one
        kept would fail every later read), then kept for every later session."""
        if bookmarks:
            self._db.wait_for(bookmarks)
            self._db.bookmarks.add(bookmarks)

    def close(self) -> None:
        self._db.close()

    def asynchronous(self) -> AsyncStore:
        """Reads and the committing write on ``neo4j.AsyncGraphDatabase`` (see :mod:`.aio`)."""
        from .aio import AsyncNeo4jStore

        return AsyncNeo4jStore(self, self._db)

    # ---------------------------------------------------------------------------------- writes

    def write(self, scope: Scope, change: GraphWrite) -> WriteResult:
        """Memories, events and the whole graph change in one write transaction."""
        return self._db.perform(self.job_write(scope, change))

    def job_write(self, scope: Scope, change: GraphWrite) -> Job[WriteResult]:
        return Job("write", "write", writes.write_steps(self._db.cfg.write_batch_size, self._dims, scope, change))

    def update(
        self, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
    ) -> MemoryRecord | None:
        return writes.update(self._db, self._dims, memory_id, scope, patch, relink)

    def delete(self, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
        if not memory_ids:
            return []
        self._big_until.clear()  # a scope that shrank is probed again
        return writes.delete(self._db, memory_ids, scope, at)

    def touch(self, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
        writes.touch(self._db, scope, accesses)

    def delete_scope(self, scope: Scope, at: datetime) -> int:
        self._big_until.clear()
        return writes.delete_scope(self._db, scope, at)

    def reset(self) -> None:
        self._big_until.clear()
        writes.reset(self._db)

    # ---------------------------------------------------------------------------------- reads

    # Each method AsyncMemory awaits natively has its work as a Job (``job_<method>``), which this
    # store performs on the sync driver and :class:`.aio.AsyncNeo4jStore` on the async one.

    def find_hashes(self, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
        return self._db.read_steps("find_hashes", lambda: reads.find_hashes(scope, hashes))

    def get(self, memory_id: str, scope: Scope) -> MemoryRecord | None:
        return self._db.perform(self.job_get(memory_id, scope))

    def job_get(self, memory_id: str, scope: Scope) -> Job[MemoryRecord | None]:
        return Job("read", "get", lambda: reads.get(memory_id, scope))

    def ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return self._db.read_steps("ids_with_prefix", lambda: reads.ids_with_prefix(scope, prefix, limit))

    def history_ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return self._db.read_steps("history_ids_with_prefix",
                                   lambda: reads.history_ids_with_prefix(scope, prefix, limit))

    def list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
        return self._db.perform(self.job_list_memories(scope, flt, limit))

    def job_list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> Job[list[MemoryRecord]]:
        return Job("read", "list_memories", lambda: reads.list_memories(scope, flt, limit))

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        return self._db.perform(self.job_history(memory_id, scope))

    def job_history(self, memory_id: str, scope: Scope) -> Job[list[HistoryEvent]]:
        return Job("read", "history", lambda: reads.history(memory_id, scope))

    def scope_of(self, memory_id: str) -> Scope | None:
        return self._db.read_steps("scope_of", lambda: reads.scope_of(memory_id))

    def count(self, scope: Scope | None = None) -> int:
        return self._db.read_steps("count", lambda: reads.count(scope))

    # ---------------------------------------------------------------------------------- graph reads

    def similar_entities(self, scope: Scope, vectors: Vector) -> list[tuple[Entity, float] | None]:
        rows, keep, n = directions(vectors, self._dims, "entity query vector")
        out: list[tuple[Entity, float] | None] = [None] * n
        if rows:
            found = self._db.read_steps("similar_entities", lambda: graph.similar_entities(scope, rows))
            for i, hit in zip(keep, found, strict=True):
                out[i] = hit
        return out

    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]:
        return self._db.perform(self.job_find_entities(scope, keys, exact=exact))

    def job_find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> Job[dict[str, Entity]]:
        if not keys:
            return Job.done({})
        return Job("read", "find_entities", lambda: graph.find_entities(scope, keys, exact=exact))

    def graph_context(self, scope: Scope, entity_ids: Sequence[str]) -> GraphContext:
        if not entity_ids:
            return GraphContext()
        return self._db.read_steps("graph_context", lambda: graph.graph_context(scope, entity_ids))

    def list_entities(self, scope: Scope, query: EntityQuery) -> list[Entity]:
        return self._db.perform(self.job_list_entities(scope, query))

    def job_list_entities(self, scope: Scope, query: EntityQuery) -> Job[list[Entity]]:
        return Job("read", "list_entities", lambda: graph.list_entities(scope, query))

    def list_facts(self, scope: Scope, query: FactQuery) -> list[Relation]:
        return self._db.perform(self.job_list_facts(scope, query))

    def job_list_facts(self, scope: Scope, query: FactQuery) -> Job[list[Relation]]:
        return Job("read", "list_facts", lambda: graph.list_facts(scope, query))

    def fact_states(self, scope: Scope, memory_ids: Sequence[str]) -> dict[str, FactStates]:
        return self._db.perform(self.job_fact_states(scope, memory_ids))

    def job_fact_states(self, scope: Scope, memory_ids: Sequence[str]) -> Job[dict[str, FactStates]]:
        return Job("read", "fact_states", lambda: graph.fact_states(scope, memory_ids)) if memory_ids \
            else Job.done({})

    # the primitive reads of the walk (stores/walk.py): the Neo4j search does the walk in one
    # statement instead, and the parity test holds the two equal

    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
        return self._db.perform(self.job_entities(scope, ids))

    def job_entities(self, scope: Scope, ids: Sequence[str]) -> Job[dict[str, Entity]]:
        return Job("read", "entities", lambda: graph.entities(scope, ids)) if ids else Job.done({})

    def entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> dict[str, tuple[int, list[str]]]:
        return self._db.perform(self.job_entity_memories(scope, ids, limit, hub_degree))

    def job_entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> Job[dict[str, tuple[int, list[str]]]]:
        if not ids:
            return Job.done({})
        return Job("read", "entity_memories", lambda: graph.entity_memories(scope, ids, limit, hub_degree))

    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        if not memory_ids:
            return []
        return self._db.read_steps("memory_entities", lambda: graph.memory_entities(scope, memory_ids))

    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
        history: bool = False,
    ) -> list[Relation]:
        if not entity_ids:
            return []
        return self._db.read_steps("facts", lambda: graph.facts(scope, entity_ids, as_of=as_of, limit=limit,
                                                             support=support, history=history))

    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]:
        return self._db.perform(self.job_records(scope, ids, flt, vector))

    def job_records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> Job[tuple[Records, dict[str, float]]]:
        vec = search.query_vector(vector, self._dims)
        return Job("read", "records", lambda: search.records(scope, ids, flt, vec))

    def followers(self, scope: Scope, ids: Sequence[str], flt: Filter | None) -> Records:
        return self._db.perform(self.job_followers(scope, ids, flt))

    def job_followers(self, scope: Scope, ids: Sequence[str], flt: Filter | None) -> Job[Records]:
        return Job("read", "followers", lambda: search.followers(scope, ids, flt))

    def graph_scopes(self) -> list[Scope]:
        return self._db.read_steps("graph_scopes", graph.graph_scopes)

    def quarantined(self, scope: Scope, status: str | None = "quarantined") -> list[QuarantineEntry]:
        return self._db.read_steps("quarantined", lambda: graph.quarantined(scope, status))

    # ---------------------------------------------------------------------------------- search

    def candidates(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int
    ) -> Candidates:
        """Vector and full-text hits in scope (see :func:`.search.candidates`)."""
        return self._db.perform(self.job_candidates(scope, flt, vector, text, k))

    def job_candidates(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int
    ) -> Job[Candidates]:
        return Job("alone", "search", lambda: search.candidates_steps(
            self._db.cfg, scope, flt, vector, text, k, dims=self._dims, indexes=self._indexes,
            big_until=self._big_until))

    def neighbourhood(
        self, scope: Scope, query: GraphQuery, seed_memories: Sequence[str] = (), flt: Filter | None = None
    ) -> Subgraph:
        """The walk of :func:`.cypher.search.neighbourhood_cypher`, in one query; with
        ``query.vector`` the records come with their cosine to it (``Subgraph.similarity``)."""
        return search.neighbourhood(self._db, scope, query, seed_memories, flt,
                                    search.query_vector(query.vector, self._dims))

    def search(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
        graph_query: GraphQuery | None, timed: Sequence[str] = (),
    ) -> tuple[Candidates, Subgraph]:
        """Candidates and neighbourhood in one Cypher query (see :func:`.search.search`)."""
        return self._db.perform(self.job_search(scope, flt, vector, text, k, graph_query, timed))

    def job_search(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
        graph_query: GraphQuery | None, timed: Sequence[str] = (),
    ) -> Job[tuple[Candidates, Subgraph]]:
        def alone() -> Statements[tuple[Candidates, Subgraph]]:
            if graph_query is None:
                cands = yield from search.candidates_steps(self._db.cfg, scope, flt, vector, text, k, dims=self._dims,
                                                           indexes=self._indexes, big_until=self._big_until,
                                                           timed=timed, follow=True)
                return cands, Subgraph()
            return (yield from search.search_steps(self._db.cfg, scope, flt, vector, text, k, graph_query,
                                                   dims=self._dims, indexes=self._indexes,
                                                   big_until=self._big_until, timed=timed))

        return Job("alone", "search", alone)

    def nearest(self, scope: Scope, vectors: Vector) -> list[tuple[str, float] | None]:
        """Best memory in scope per query vector (see :func:`.search.nearest`)."""
        return search.nearest(self._db, scope, vectors, dims=self._dims, exact_index=self._indexes.exact_vector)

    # ---------------------------------------------------------------------------------- dump (see dump.py)

    def dump_scopes(self) -> list[Scope]:
        return dump.dump_scopes(self._db)

    def dump_counts(self, scope: Scope | None) -> dict[str, int]:
        return dump.dump_counts(self._db, scope)

    def dump_memories(self, scope: Scope, after: str | None, limit: int) -> list[tuple[MemoryRecord, Vector]]:
        return dump.dump_memories(self._db, self._dims, scope, after, limit)

    def dump_history(self, scope: Scope, after: str | None, limit: int) -> list[HistoryEvent]:
        return dump.dump_history(self._db, scope, after, limit)

    def dump_entities(
        self, scope: Scope, after: str | None, limit: int
    ) -> list[tuple[Entity, Vector | None, list[str]]]:
        return dump.dump_entities(self._db, scope, after, limit)

    def dump_facts(self, scope: Scope, entity_ids: Sequence[str]) -> list[Relation]:
        return dump.dump_facts(self._db, scope, entity_ids)

    def dump_quarantine(self, scope: Scope, after: str | None, limit: int) -> list[QuarantineEntry]:
        return dump.dump_quarantine(self._db, scope, after, limit)

    def taken_ids(self, kind: str, ids: Sequence[str]) -> set[str]:
        return dump.taken_ids(self._db, kind, ids)

    def restore(self, scope: Scope, rows: Restore) -> None:
        dump.restore(self._db, self._dims, scope, rows)
