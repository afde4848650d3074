"""The storage contract every backend implements, and the shapes that cross it.

Stores know nothing of extraction, embedding models or fusion: they persist records and answer
candidate queries. Every method takes the caller's :class:`~graphmem.models.Scope` and must never
read, change or delete a record outside it. Every write method is one transaction: it happens
entirely or not at all.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, UnsupportedError
from ..filters import Filter
from ..models import Entity, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope
from . import walk
from .records import DUMP_KINDS as DUMP_KINDS
from .records import REEMBED_KINDS as REEMBED_KINDS
from .records import SEED_MIN_COSINE as SEED_MIN_COSINE
from .records import Candidates as Candidates
from .records import EntityQuery as EntityQuery
from .records import Expectations as Expectations
from .records import FactQuery as FactQuery
from .records import FactStates as FactStates
from .records import GraphContext as GraphContext
from .records import GraphQuery as GraphQuery
from .records import GraphWrite as GraphWrite
from .records import MemoryPatch as MemoryPatch
from .records import NewEntity as NewEntity
from .records import NewMemory as NewMemory
from .records import Records as Records
from .records import ReembedRow as ReembedRow
from .records import Restore as Restore
from .records import StoreInfo as StoreInfo
from .records import Subgraph as Subgraph
from .records import ThreadScope as ThreadScope
from .records import Vector as Vector
from .records import WriteResult as WriteResult
from .records import entity_state as entity_state
from .records import merge_patch as merge_patch
from .records import new_tails as new_tails
from .records import patched_metadata as patched_metadata
from .records import seed_ids as seed_ids
from .records import stale_entities as stale_entities
from .records import stale_memories as stale_memories
from .records import successor_order as successor_order
from .records import thread_key as thread_key
from .records import thread_scope as thread_scope
from .records import threaded as threaded


class Store(ABC):
    """A memory store. Implementations: :mod:`graphmem.stores.sqlite`, :mod:`graphmem.stores.neo4j`."""

    @abstractmethod
    def open(self, embedder: str, dims: int) -> StoreInfo:
        """Create the schema if missing and check it matches ``embedder``/``dims``.

        Raises ``SchemaMismatchError`` when the store holds vectors of another model or size.
        """

    def recorded_embedder(self) -> tuple[str, int] | None:
        """The embedder name and size the store was created with, read without creating anything;
        ``None`` for a store not created yet (or one that records none)."""
        return None

    # -- re-embedding (graphmem.embedding.reembed drives these) ------------------------------------
    # New vectors are staged beside the live ones, where no read looks, batch by batch; the switch
    # (vectors and pin) is one transaction that happens only when every row is staged. A failure
    # midway leaves the store on its old embedder, and a later run with the same target resumes.
    def reembed_start(self, embedder: str, dims: int) -> None:
        """Prepare staging for ``embedder``; staged vectors of another target are dropped."""
        raise UnsupportedError(f"{type(self).__name__} cannot re-embed its vectors")

    def reembed_pending(self, kind: str, scope: Scope | None, after: str | None, limit: int) -> list[ReembedRow]:
        """Up to ``limit`` rows of ``kind`` (``REEMBED_KINDS``) in ``scope`` (every scope it contains;
        ``None``: the whole store) without a current staged vector, keys after ``after``, in key order."""
        raise UnsupportedError(f"{type(self).__name__} cannot re-embed its vectors")

    def reembed_count(self, kind: str, scope: Scope | None) -> int:
        """How many rows :meth:`reembed_pending` would return without a limit."""
        raise UnsupportedError(f"{type(self).__name__} cannot re-embed its vectors")

    def reembed_stage(self, kind: str, rows: Sequence[ReembedRow], vectors: Vector) -> None:
        """Stage one vector per row (one transaction); rows changed since they were read are skipped."""
        raise UnsupportedError(f"{type(self).__name__} cannot re-embed its vectors")

    def reembed_finish(self, embedder: str, dims: int) -> int:
        """Switch to the staged vectors and pin ``embedder`` in one transaction, if no row in the
        whole store lacks a current staged vector; return how many do (0: switched)."""
        raise UnsupportedError(f"{type(self).__name__} cannot re-embed its vectors")

    def close(self) -> None:  # noqa: B027 - optional: a store that holds no connection has nothing to release
        """Release connections and caches."""

    def asynchronous(self) -> AsyncStore:
        """This store's methods, awaitable (``AsyncMemory`` uses it): in worker threads unless the
        backend has a native async client (Neo4j)."""
        return AsyncStore(self)

    def insert(self, memories: Sequence[NewMemory], events: Sequence[HistoryEvent]) -> None:
        """Write memories of one exact scope and their history events in one transaction (bulk
        loads): a :meth:`write` that carries nothing else."""
        scopes = {(m.record.user_id, m.record.agent_id, m.record.run_id) for m in memories}
        scopes |= {(e.user_id, e.agent_id, e.run_id) for e in events}
        if len(scopes) > 1:
            raise InvalidInputError(f"insert writes one exact scope at a time, got {len(scopes)}")
        if scopes:
            user_id, agent_id, run_id = scopes.pop()
            scope = Scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
            self.write(scope, GraphWrite(memories=list(memories), events=list(events)))

    @abstractmethod
    def find_hashes(self, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
        """Map each given text hash to the id of a memory in exactly this scope that has it."""

    @abstractmethod
    def ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids of memories in scope that start with ``prefix``, in id order: the
        short ids tables show (an index range scan, not a scan of the scope)."""

    def history_ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix`` that have history in scope, deleted memories'
        included, in id order: so the short id a table showed still reaches a memory's history after
        it is deleted. A backend without it returns none (full ids still work)."""
        return []

    def get(self, memory_id: str, scope: Scope) -> MemoryRecord | None:
        """The memory, or ``None`` when it does not exist *or* lies outside ``scope``."""
        return self.records(scope, [memory_id], None, None)[0].get(memory_id)

    @abstractmethod
    def list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
        """Memories in scope matching ``flt``, newest first."""

    @abstractmethod
    def update(
        self, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
    ) -> MemoryRecord | None:
        """Apply ``patch`` and record an UPDATE event with old and new text, atomically.

        With ``relink``, in the same transaction the memory's old graph support is dropped (its
        mentions and provenance, then facts and entities left unsupported, as on delete) and
        ``relink`` is written in its place: the facts re-extracted from the new text.
        Returns the new record, or ``None`` when the memory is not in scope (nothing written).
        """

    @abstractmethod
    def delete(self, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
        """Delete the given memories that are in scope, with a DELETE event each; return their ids.

        In the same transaction the graph forgets what only they supported: their mentions, their
        ids in relation provenance, relations left without support, and entities left with no
        mention and no relation.
        """

    @abstractmethod
    def touch(self, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
        """Record that search returned these memories: per id, how many times and when last. Counts
        add up and the latest time wins, so writers that buffered apart merge; ids outside ``scope``
        (or deleted since) are skipped. History and ``updated_at`` are left alone: nothing changed."""

    @abstractmethod
    def delete_scope(self, scope: Scope, at: datetime) -> int:
        """Delete every memory, entity, relation and quarantine entry in scope (and only those),
        with DELETE events for the memories; return how many memories."""

    @abstractmethod
    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        """Events of one memory in scope, oldest first; kept after the memory is deleted."""

    @abstractmethod
    def candidates(
        self,
        scope: Scope,
        flt: Filter | None,
        vector: Vector | None,
        text: str | None,
        k: int,
    ) -> Candidates:
        """Top-``k`` ids by vector similarity and by full-text relevance, in one round trip."""

    # -- the knowledge graph ----------------------------------------------------------------------
    @abstractmethod
    def write(self, scope: Scope, change: GraphWrite) -> WriteResult:
        """Apply a whole logical write atomically. ``scope`` is the exact scope of everything new.

        Each new memory records in ``follows`` the memory written just before it in its exact
        scope (the previous one of this write, else the scope's last; for a scope without a record
        of its last, or whose last was deleted, its newest memory that none follows), decided inside the
        transaction so that concurrent writers to one scope each follow what committed before
        them (:func:`~graphmem.stores.records.threaded`)."""

    @abstractmethod
    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]:
        """Entities whose normalized name or alias is one of ``keys``, by key (the oldest entity when
        several share one). ``exact=True`` (writes: entity resolution): entities in exactly this
        scope. ``exact=False`` (reads: query linking): every entity the scope contains, as for
        memories: the given scope fields match and absent ones are free."""

    @abstractmethod
    def similar_entities(self, scope: Scope, vectors: Vector) -> list[tuple[Entity, float] | None]:
        """For each row of ``vectors``, the entity in exactly this scope whose name embedding is most
        similar (cosine), or ``None`` when the scope has no entity."""

    def graph_context(self, scope: Scope, entity_ids: Sequence[str]) -> GraphContext:
        """The given entities (in scope), every open fact touching them, and the entities at their
        other ends (for their types): what the guard and the conflict resolver judge a write by."""
        ctx = GraphContext()
        if entity_ids:
            ctx.entities = self.entities(scope, list(dict.fromkeys(entity_ids)))
        if ctx.entities:
            ctx.relations = self.list_facts(scope, FactQuery(entity_ids=tuple(ctx.entities), include_closed=False))
            ends = {i for r in ctx.relations for i in (r.source_id, r.target_id) if i and i not in ctx.entities}
            ctx.entities.update(self.entities(scope, sorted(ends)))
        return ctx

    def neighbourhood(
        self, scope: Scope, query: GraphQuery, seed_memories: Sequence[str] = (), flt: Filter | None = None
    ) -> Subgraph:
        """The subgraph around a query (see :class:`GraphQuery` for the walk).

        Expansion: the linked entities and those ``seed_memories`` mention are reached and form the
        first frontier (cut to ``max_frontier`` in the stated order). Each hop reads, per frontier
        entity, its newest ``max_facts`` facts (valid at ``as_of``, or open; either direction); their
        unseen in-scope ends, ordered by (mentions, created_at, id) and cut to ``max_frontier``, are reached
        and form the next frontier. Facts are kept when both ends (a datatype fact: its source) are
        reached. Degrees are read for every reached entity, mentions for those that are not hubs.

        The walk (:func:`graphmem.stores.walk.neighbourhood`) is written once, over the primitive reads
        below; a store may answer it in one statement instead, proven equal by the parity test.
        """
        return walk.neighbourhood(self, scope, query, seed_memories, flt)

    # -- primitive graph reads: all the walk needs -------------------------------------------------
    @abstractmethod
    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
        """The given entities that ``scope`` contains (absent scope fields are free), by id."""

    @abstractmethod
    def entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> dict[str, tuple[int, list[str]]]:
        """Per given entity in scope: how many memories mention it (its degree) and the ids of the newest
        ``limit`` of them (by ``created_at``, then the last written), or none when the degree exceeds
        ``hub_degree`` (a hub's mentions are never read). An entity nothing mentions gets ``(0, [])``.
        Newest first, not by id: two stores of the same writes then read the same memories."""

    @abstractmethod
    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(memory id, entity id) for each entity in scope that one of the memories mentions."""

    @abstractmethod
    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
        history: bool = False,
    ) -> list[Relation]:
        """Per given entity, its newest ``limit`` facts in scope (by ``created_at``, then the last
        written), either direction, valid at ``as_of`` (``None``: open; ``history``: any time); each
        fact once, sorted by id, its ``memory_ids`` cut to the newest ``support`` (as
        :meth:`entity_memories` cuts mentions), listed by id. An entity given twice counts once."""

    @abstractmethod
    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]:
        """The memories among ``ids`` that are in scope and pass ``flt``, and the cosine of each to
        ``vector`` (empty without one)."""

    def followers(self, scope: Scope, ids: Sequence[str], flt: Filter | None) -> Records:
        """The memories in scope that pass ``flt`` and follow one of ``ids`` (``MemoryRecord.follows``):
        the replies search lifts after a hit. This default finds none (a store that keeps no
        order ranks without the reply link)."""
        return Records()

    def search(
        self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None, k: int,
        graph: GraphQuery | None, timed: Sequence[str] = (),
    ) -> tuple[Candidates, Subgraph]:
        """Candidates and, with ``graph``, the neighbourhood seeded by the best of them.

        ``timed``: relations (IRIs) the question orders by time; a store whose records carry
        their fact states (:attr:`Candidates.fact_states`) includes every fact of these relations.
        This default makes two calls and reads no states; a server store overrides it with one
        round trip.
        """
        cands = self.candidates(scope, flt, vector, text, k)
        if graph is None:
            return cands, Subgraph()
        sub = self.neighbourhood(scope, graph, seed_ids(cands, graph.seed_memories), flt)
        cands.round_trips += 1
        return cands, sub

    @abstractmethod
    def list_entities(self, scope: Scope, query: EntityQuery) -> list[Entity]:
        """The entities ``scope`` contains that match ``query``, one page of them."""

    @abstractmethod
    def list_facts(self, scope: Scope, query: FactQuery) -> list[Relation]:
        """The facts in ``scope`` that match ``query``, one page of them, with all their provenance."""

    def relations(self, scope: Scope, *, memory_id: str | None = None, include_closed: bool = True) -> list[Relation]:
        """Facts in scope (optionally only those a memory supports), oldest first."""
        return self.list_facts(scope, FactQuery(memory_id=memory_id, include_closed=include_closed))

    @abstractmethod
    def scope_of(self, memory_id: str) -> Scope | None:
        """The exact scope of a memory, or of a deleted one's history; ``None`` when the id is unknown.
        Only the Python API's by-id calls use it (the caller holds the whole store, as with mem0);
        REST and MCP keys stay bound to their scopes."""

    def fact_states(self, scope: Scope, memory_ids: Sequence[str]) -> dict[str, FactStates]:
        """For each memory of ``memory_ids`` that supports a fact: how its facts stand now (see
        :class:`FactStates`); a fact's successor is the newest open fact with its source and relation.
        This default reads fact by fact; the built-in stores answer in one read."""
        out: dict[str, FactStates] = {}
        for mid in dict.fromkeys(memory_ids):
            for fact in self.list_facts(scope, FactQuery(memory_id=mid)):
                later = [] if fact.valid_to is None else [
                    f for f in self.list_facts(scope, FactQuery(entity_ids=(fact.source_id,), relations=(
                        fact.relation,), include_closed=False)) if f.source_id == fact.source_id and f.id != fact.id]
                out.setdefault(mid, FactStates()).add(fact, max(later, key=successor_order, default=None))
        return out

    @abstractmethod
    def graph_scopes(self) -> list[Scope]:
        """Every exact scope that holds facts (administration: ontology dry runs, migration)."""

    @abstractmethod
    def quarantined(self, scope: Scope, status: str | None = "quarantined") -> list[QuarantineEntry]:
        """Quarantine entries in scope, oldest first (``status=None``: all)."""

    def cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only Cypher query for an analyst. Only graph databases have it."""
        raise UnsupportedError(
            f"Cypher queries need the Neo4j store; this store is {type(self).__name__} "
            "(use get_all/search, or set store.provider='neo4j' for a store analysts can query; "
            "`graphmem migrate --to bolt://HOST:7687` copies this store into Neo4j)"
        )

    def nearest(self, scope: Scope, vectors: Vector) -> list[tuple[str, float] | None]:
        """For each row of ``vectors``, the most similar memory in scope (id, cosine): the
        near-duplicate check of a whole ``add``. May be approximate on large stores. This default
        asks :meth:`candidates` per row; the built-in stores answer all rows in one round trip."""
        rows = np.asarray(vectors, dtype=np.float32)
        found: list[tuple[str, float] | None] = []
        for row in rows.reshape(-1, rows.shape[-1]):
            hits = self.candidates(scope, None, row, None, 1).vector
            found.append(hits[0] if hits else None)
        return found

    # -- dump primitives: export, import and migration (graphmem.transfer) ---------------------------
    # Each reads one *exact* scope (absent fields are absent, not free), so the scopes of a store
    # partition its rows and a dump of several scopes holds every row once. Both built-in stores
    # implement them; a store of your own without them still runs everything else, and export,
    # import and migration raise UnsupportedError naming what it lacks.
    def dump_scopes(self) -> list[Scope]:
        """Every exact scope holding a memory, history event, entity or quarantine entry, sorted by
        (user_id, agent_id, run_id) with absent fields first. Administration: it spans tenants."""
        raise self._no_dump("dump_scopes")

    def dump_counts(self, scope: Scope | None) -> dict[str, int]:
        """Rows per :data:`DUMP_KINDS` kind in exactly ``scope`` (``None``: the whole store), so a
        copy can be verified and its progress shown."""
        raise self._no_dump("dump_counts")

    def dump_memories(self, scope: Scope, after: str | None, limit: int) -> list[tuple[MemoryRecord, Vector]]:
        """Up to ``limit`` memories of exactly ``scope`` with ids after ``after``, in id order, each
        with its stored vector (zeros when none is stored) and its access counts."""
        raise self._no_dump("dump_memories")

    def dump_history(self, scope: Scope, after: str | None, limit: int) -> list[HistoryEvent]:
        """The history events of exactly ``scope`` for its next ``limit`` memory ids after ``after``
        (deleted memories too), by memory id, each memory's events in :meth:`history` order."""
        raise self._no_dump("dump_history")

    def dump_entities(
        self, scope: Scope, after: str | None, limit: int
    ) -> list[tuple[Entity, Vector | None, list[str]]]:
        """Up to ``limit`` entities of exactly ``scope`` with ids after ``after``, in id order, with
        their name embedding (``None`` when none is stored) and the ids of the memories that
        mention them (sorted)."""
        raise self._no_dump("dump_entities")

    def dump_facts(self, scope: Scope, entity_ids: Sequence[str]) -> list[Relation]:
        """Every fact of exactly ``scope`` whose subject is one of ``entity_ids``, closed ones too,
        with all its provenance, sorted by id."""
        raise self._no_dump("dump_facts")

    def dump_quarantine(self, scope: Scope, after: str | None, limit: int) -> list[QuarantineEntry]:
        """Up to ``limit`` quarantine entries of exactly ``scope`` (any status) after ``after``, by id."""
        raise self._no_dump("dump_quarantine")

    def taken_ids(self, kind: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` (of a :data:`DUMP_KINDS` kind) this store already holds, in any scope:
        ids are unique store-wide, so an import refuses them before writing anything."""
        raise self._no_dump("taken_ids")

    def restore(self, scope: Scope, rows: Restore) -> None:
        """Write dumped rows of exactly ``scope`` as they are, in one transaction. An id or an
        identity (a scope's text hash, entity name) the store holds already fails it whole."""
        raise self._no_dump("restore")

    def _no_dump(self, method: str) -> UnsupportedError:
        return UnsupportedError(f"{type(self).__name__} has no {method}(): export, import and migration need the "
                                "dump primitives of graphmem.stores.base.Store (the SQLite and Neo4j stores have them)")

    @abstractmethod
    def count(self, scope: Scope | None = None) -> int:
        """Memories in scope (``None``: all tenants, for administration and benchmarks)."""

    @abstractmethod
    def reset(self) -> None:
        """Delete everything of every tenant, including history and the graph; keep the schema."""

    def optimize(self) -> dict[str, Any]:
        """Compact the search indexes after many small writes (what was done, and how long it took).

        Why: index structures written a transaction at a time split into many parts, and a search
        visits each part. Data is not changed; run it when the store is quiet. A store whose indexes
        need no compaction does nothing.
        """
        return {}

    def backup(self, target: Path) -> dict[str, Any] | None:
        """Copy the whole store to the new file ``target`` as one consistent snapshot while writers
        go on (what was committed when the copy began, and nothing after), in a form this backend
        opens as a store. ``None``: the backend has no such copy, so ``Memory.backup`` writes a dump."""
        return None

    def bookmarks(self) -> list[str]:
        """Tokens naming the writes this client has made, for a store whose replicas may lag behind
        (a Neo4j cluster): another client passes them to :meth:`read_after`. ``[]`` where every
        read sees every commit."""
        return []

    def read_after(self, bookmarks: Sequence[str]) -> None:
        """Make this client's later reads wait until the writes ``bookmarks`` name are visible."""
        return None


class AsyncStore:
    """A :class:`Store`'s methods by name, awaited. This default runs each in a worker thread,
    where a write is still one transaction: once it started, it finishes (commits or rolls back)
    even if the awaiting task is cancelled."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.store, name), *args, **kwargs)

    async def close(self) -> None:
        """Release what the async side holds (nothing here: the store's own ``close`` does the rest)."""
