"""The storage contract every backend implements, and the shapes that cross it.

Stores know nothing of extraction, embedding models or fusion: they persist records and answer
candidate queries. Every method takes the caller's :class:`~graphmem.models.Scope` and must never
read, change or delete a record outside it. Every write method is one transaction: it happens
entirely or not at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError, UnsupportedError
from ..filters import Filter
from ..models import Entity, HistoryEvent, Keep, MemoryRecord, QuarantineEntry, Relation, Scope, iso
from . import walk
from .records import FactStates as FactStates
from .records import GraphQuery as GraphQuery
from .records import Records as Records
from .records import Subgraph as Subgraph
from .records import Vector as Vector


def patched_metadata(current: dict[str, Any], patch: MemoryPatch) -> dict[str, Any]:
    """``current`` with ``patch.metadata`` merged in, refused when the result outgrows
    ``patch.max_metadata_bytes`` (each patch is bounded, but patches add up)."""
    if patch.metadata is None:
        return current
    merged = merge_patch(current, patch.metadata)
    if patch.max_metadata_bytes is not None:
        size = len(json.dumps(merged, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > patch.max_metadata_bytes:
            raise InvalidInputError(f"the merged metadata would be {size:,} bytes, more than "
                                    f"limits.max_metadata_bytes ({patch.max_metadata_bytes:,}); nothing was changed")
    return merged


def merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7396 JSON merge patch: ``None`` deletes a key, mappings merge recursively."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_patch(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class NewMemory:
    record: MemoryRecord
    vector: Vector
    """L2-normalized float32 embedding of ``record.memory``."""


@dataclass(frozen=True)
class MemoryPatch:
    """A change to one memory. ``None`` fields are left as they are."""

    updated_at: datetime
    event_id: str
    text: str | None = None
    hash: str | None = None
    vector: Vector | None = None
    metadata: dict[str, Any] | None = None
    """Merged into the stored metadata as a JSON merge patch (RFC 7396): a ``None`` value removes the
    key. Merging happens inside the write transaction, so concurrent patches never lose each other."""
    max_metadata_bytes: int | None = None
    """The merged metadata's bound (``limits.max_metadata_bytes``), checked inside the transaction."""
    expires_at: datetime | Keep | None = Keep.KEEP
    """The new expiry; ``None`` clears it."""

    def details(self) -> dict[str, Any]:
        """What the UPDATE event records beside the texts."""
        out: dict[str, Any] = {} if self.metadata is None else {"metadata": self.metadata}
        if self.expires_at is not Keep.KEEP:
            out["expires_at"] = iso(self.expires_at) if self.expires_at else None
        return out


@dataclass
class Candidates:
    """What one search round trip returns: per-signal ranked ids with raw scores, and the records."""

    vector: list[tuple[str, float]] = field(default_factory=list)
    """Cosine similarity in [-1, 1], best first."""
    fulltext: list[tuple[str, float]] = field(default_factory=list)
    """BM25 relevance (higher is better, unbounded), best first."""
    records: Records = field(default_factory=Records)
    similarity: dict[str, float] = field(default_factory=dict)
    """Exact cosine of every record, full-text hits included, so that a hit the vector top-k missed
    is still scored on the vector signal instead of counting 0 there. Empty without a query vector."""
    round_trips: int = 1
    fact_states: dict[str, FactStates] | None = field(default=None, compare=False)
    """The records' fact states (:meth:`Store.fact_states`) when read with them: every record with a
    closed fact has its entry. ``None``: not read; search asks for them afterwards."""


@dataclass(frozen=True)
class NewEntity:
    entity: Entity
    vector: Vector
    """Embedding of the entity's name, for resolution and query linking."""


@dataclass
class Expectations:
    """What a plan read from the store and relied on, checked again inside the write transaction.

    Why: a write is planned (dedup, entity resolution, conflict resolution, the SHACL guard) from
    reads made before its transaction, and a concurrent writer may change that state in between.
    The store checks these inside the transaction, after locking what they name, and raises
    :class:`~graphmem.errors.ConflictError` when anything moved; the pipeline then plans again. New
    identities (an entity's scope and name, a memory's scope and text) need no entry: the store's
    uniqueness constraints refuse a second one, which is a conflict too.
    """

    entities: dict[str, str] = field(default_factory=dict)
    """Stored entity id -> its :func:`entity_state` when planned (``""``: it only has to exist)."""
    memories: dict[str, str] = field(default_factory=dict)
    """Stored memory id -> its text hash: memories the write links to (a duplicate's, provenance)."""

    def merge(self, other: Expectations) -> None:
        for eid, state in other.entities.items():
            if state or eid not in self.entities:
                self.entities[eid] = state
        self.memories.update(other.memories)


def entity_state(ctx: GraphContext, entity_id: str) -> str:
    """A digest of what the guard and the conflict resolver read about one entity: its classes and
    aliases, and each open fact touching it with the classes of the fact's other end."""
    ent = ctx.entities.get(entity_id)
    if ent is None:
        return "missing"
    parts = [",".join(sorted(ent.classes)), "\x1f".join(sorted(ent.aliases))]
    for r in sorted(ctx.relations, key=lambda r: r.id):
        if entity_id not in (r.source_id, r.target_id):
            continue
        other = r.target_id if r.source_id == entity_id else r.source_id
        peer = ctx.entities.get(other) if other else None
        parts.append(f"{r.id}:{','.join(sorted(peer.classes)) if peer else ''}")
    return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def stale_memories(expect: Expectations, found: Mapping[str, str]) -> list[str]:
    """Memories of ``expect`` missing from ``found`` (id -> hash, read inside the write) or changed."""
    return [i for i, h in expect.memories.items() if i not in found or (h and found[i] != h)]


def stale_entities(expect: Expectations, ctx: GraphContext) -> list[str]:
    """Entities of ``expect`` whose state in ``ctx`` (read inside the write) is not the planned one."""
    return [eid for eid, state in expect.entities.items()
            if (eid not in ctx.entities) or (state and entity_state(ctx, eid) != state)]


@dataclass
class GraphWrite:
    """Everything one logical write changes, applied by :meth:`Store.write` in one transaction."""

    memories: list[NewMemory] = field(default_factory=list)
    entities: list[NewEntity] = field(default_factory=list)
    """New entity nodes."""
    entity_updates: list[Entity] = field(default_factory=list)
    """Existing entities whose ``classes``/``aliases`` grew (the lists given replace the stored ones)."""
    mentions: list[tuple[str, str]] = field(default_factory=list)
    """(memory id, entity id) pairs."""
    relations: list[Relation] = field(default_factory=list)
    """Facts to add. When an open fact with the same source, relation and object exists, the store
    adds the new memory ids to its provenance instead of creating a second edge (inside the
    transaction, so concurrent writers cannot create twins)."""
    closes: list[tuple[str, datetime]] = field(default_factory=list)
    """(relation id, valid_to): superseded facts, kept for history and ``as_of`` queries."""
    quarantine: list[QuarantineEntry] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    """Quarantine entries whose triples this write stores after a passing recheck."""
    events: list[HistoryEvent] = field(default_factory=list)
    expect: Expectations = field(default_factory=Expectations)
    """Checked inside the transaction before anything is written (see :class:`Expectations`)."""


@dataclass
class WriteResult:
    added: list[str] = field(default_factory=list)
    """Ids of relations created."""
    merged: list[str] = field(default_factory=list)
    """Ids of existing open relations that gained provenance instead."""


@dataclass
class GraphContext:
    """What the guard needs to judge new facts about some entities: their stored types and facts."""

    entities: dict[str, Entity] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    """Open facts whose source or target is one of the entities."""


@dataclass(frozen=True)
class EntityQuery:
    """A page of a scope's entities, oldest first (``created_at``, then id)."""

    contains: str | None = None
    """A normalized fragment (:func:`~graphmem.models.norm_name`) of the entity's name or an alias."""
    classes: tuple[str, ...] = ()
    """Class IRIs: entities typed with any of them (the caller expands subclasses)."""
    after: tuple[datetime, str] | None = None
    """The (created_at, id) of the previous page's last entity: this page starts after it."""
    limit: int | None = None


@dataclass(frozen=True)
class FactQuery:
    """A page of a scope's facts, oldest first (``created_at``, then id). Conditions add up."""

    entity_ids: tuple[str, ...] = ()
    """Facts with one of these entities at either end."""
    relations: tuple[str, ...] = ()
    """Relation IRIs, as stored (the caller expands sub-properties and inverses)."""
    memory_id: str | None = None
    """Facts this memory supports."""
    as_of: datetime | None = None
    """Facts valid at this instant; ``None``: as ``include_closed`` says."""
    include_closed: bool = True
    """With ``as_of`` unset: also the superseded facts (history)."""
    after: tuple[datetime, str] | None = None
    """The (created_at, id) of the previous page's last fact."""
    limit: int | None = None


def successor_order(fact: Relation) -> tuple[str, str, str]:
    """Which open fact of a subject and relation is its newest value: latest ``valid_from``, then
    ``created_at``, then id (every backend picks the same)."""
    return (iso(fact.valid_from) if fact.valid_from else "", iso(fact.created_at), fact.id)


@dataclass(frozen=True)
class StoreInfo:
    """Facts about an opened store, recorded at creation so a mismatched embedder is caught."""

    backend: str
    location: str
    embedder: str
    dims: int


REEMBED_KINDS: tuple[str, ...] = ("memory", "entity")
"""What holds vectors: memory texts, and entity names (only the entities stored with one)."""


@dataclass(frozen=True)
class ReembedRow:
    """A row whose vector a re-embed still has to compute: ``text`` is what gets embedded, and the
    staged vector stands only while ``check`` (a memory's text hash, an entity's name) is unchanged."""

    key: str
    text: str
    check: str


SEED_MIN_COSINE = 1e-6
"""Vector hits at or below this similarity never seed the graph walk: their order is float noise."""


def seed_ids(cands: Candidates, n: int) -> list[str]:
    """The best ``n`` vector hits with a real similarity (cosine > 1e-6: below that the order is float
    noise, which differs between backends), then the best ``n`` full-text hits not among them."""
    vector = [i for i, s in cands.vector if s > SEED_MIN_COSINE][:n]
    return list(dict.fromkeys(vector + [i for i, _ in cands.fulltext[:n]]))


@dataclass
class Restore:
    """Dumped rows of one exact scope, written as they were by :meth:`Store.restore` (export,
    import and migration, :mod:`graphmem.transfer`): ids, times, access counts, closed facts and
    released quarantine entries included. Nothing in it is planned, merged or checked against the
    ontology: it was, when it was first written."""

    memories: list[NewMemory] = field(default_factory=list)
    access: dict[str, tuple[int, datetime | None]] = field(default_factory=dict)
    """Memory id -> (access_count, last_accessed_at), for those searched before."""
    events: list[HistoryEvent] = field(default_factory=list)
    """In history order: events of one memory keep the order they were written in."""
    entities: list[tuple[Entity, Vector | None]] = field(default_factory=list)
    """Each with its name embedding, ``None`` for one stored without."""
    mentions: list[tuple[str, str]] = field(default_factory=list)
    """(memory id, entity id)."""
    facts: list[Relation] = field(default_factory=list)
    """Created as given, never merged into a twin (a closed fact and an open one may share an object)."""
    quarantine: list[QuarantineEntry] = field(default_factory=list)


DUMP_KINDS: tuple[str, ...] = ("memory", "event", "entity", "fact", "quarantine")
"""The kinds of rows a dump holds, in the order they are written (each depends on earlier ones)."""


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
        """Apply a whole logical write atomically. ``scope`` is the exact scope of everything new."""

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
        entity, its first ``max_facts`` facts by id (valid at ``as_of``, or open; either direction);
        their unseen in-scope ends, ordered by (mentions, id) and cut to ``max_frontier``, are reached
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
        """Per given entity in scope: how many memories mention it (its degree) and the first
        ``limit`` of their ids in id order, or none when the degree exceeds ``hub_degree`` (a hub's
        mentions are never read). An entity nothing mentions gets ``(0, [])``."""

    @abstractmethod
    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(memory id, entity id) for each entity in scope that one of the memories mentions."""

    @abstractmethod
    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
        history: bool = False,
    ) -> list[Relation]:
        """Per given entity, its first ``limit`` facts in scope by fact id, either direction, valid at
        ``as_of`` (``None``: open; ``history``: any time); each fact once, sorted by id, its
        ``memory_ids`` cut to the first ``support`` by id. An entity given twice counts once."""

    @abstractmethod
    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]:
        """The memories among ``ids`` that are in scope and pass ``flt``, and the cosine of each to
        ``vector`` (empty without one)."""

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
