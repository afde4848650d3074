"""The shapes that cross the store contract (:mod:`.base`): what a write is given and reports, what a
read is asked and returns, below both the contract and the walk (:mod:`.walk`) that answers graph
reads by default (the contract calls the walk, so neither may hold what the other needs).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidInputError
from ..models import Entity, HistoryEvent, Keep, MemoryRecord, QuarantineEntry, Relation, iso

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class _Row:
    build: Callable[[Any], MemoryRecord]
    row: Any


class Records(MutableMapping[str, MemoryRecord]):
    """Memory records by id, each built from its store row on first access.

    Why: a search reads a few hundred rows (every candidate and graph memory, for scoring) but
    returns about ten, and building a :class:`MemoryRecord` costs more than scoring one.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[str, MemoryRecord | _Row] = {}

    def add_row(self, memory_id: str, row: Any, build: Callable[[Any], MemoryRecord]) -> None:
        """Keep ``row`` unbuilt until the record is read (``build(row)`` then makes it)."""
        self._items[memory_id] = _Row(build, row)

    def copy_from(self, other: Records, ids: Iterable[str]) -> None:
        """Take ``other``'s entries for ``ids`` (those it has), built or not."""
        for i in ids:
            if i in other._items:
                self._items[i] = other._items[i]

    def __getitem__(self, memory_id: str) -> MemoryRecord:
        item = self._items[memory_id]
        if isinstance(item, _Row):
            item = self._items[memory_id] = item.build(item.row)
        return item

    def __setitem__(self, memory_id: str, record: MemoryRecord) -> None:
        self._items[memory_id] = record

    def __delitem__(self, memory_id: str) -> None:
        del self._items[memory_id]

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Records({len(self._items)})"


@dataclass(frozen=True)
class GraphQuery:
    """What the graph signal needs fetched around a query, in the same read as the candidates.

    The walk is fixed by these numbers alone (never by scores), so every backend fetches the same
    subgraph and the scorer (:mod:`graphmem.search.graph`) gives the same ranking on all of them.
    """

    keys: tuple[str, ...]
    """Normalized query n-grams, longest first: each is looked up as an entity name or alias."""
    max_seeds: int = 16
    """Entities linked, in key order (one entity per key, the oldest when several share it)."""
    seed_memories: int = 0
    """The best this-many vector hits and full-text hits also seed the walk with their entities."""
    depth: int = 2
    """Fact hops from the seeds."""
    max_frontier: int = 8
    """Entities expanded per hop: linked ones first, then the least mentioned (rare names are the
    specific ones), then the oldest. Also how many new entities a hop reaches, in that order."""
    max_facts: int = 16
    """Facts read per expanded entity at each hop (both directions, the newest first)."""
    max_mentions: int = 4
    """Memories fetched per reached entity and per fact (its provenance), the newest first: a hub, or a
    fact many memories repeat, cannot flood the result."""
    hub_degree: int = 64
    """An entity more memories than this mention is a hub: its degree is read, its memories and facts
    are not fetched (a sample of a name that common says nothing; reading it cost most of the walk)."""
    as_of: datetime | None = None
    """Facts valid at this instant (``valid_from <= as_of < valid_to``); ``None``: the open facts."""
    history: bool = False
    """Every fact, open or closed, whatever ``as_of`` says: a question about the past without a time
    ("where did she live before Porto?")."""
    vector: Vector | None = field(default=None, compare=False)
    """The query vector: the records come back with their cosine to it (``Subgraph.similarity``)."""


@dataclass
class FactStates:
    """The validity of the facts one memory supports: what search needs to put the current truth first."""

    open: list[str] = field(default_factory=list)
    """The relations (IRIs) of the facts it supports that still hold."""
    ended: list[str] = field(default_factory=list)
    """Those of its closed facts with no newer value ("I left Acme in May": still true as said)."""
    superseded: list[tuple[Relation, Relation]] = field(default_factory=list)
    """(closed fact, the open fact of the same subject and relation that replaced it)."""

    def add(self, fact: Relation, later: Relation | None) -> None:
        """Count one fact the memory supports; ``later``: the newest open fact of its subject and relation."""
        if fact.valid_to is None:
            self.open.append(fact.relation)
        elif later is None:
            self.ended.append(fact.relation)
        else:
            self.superseded.append((fact, later))


@dataclass
class Subgraph:
    """The neighbourhood of a query: what :meth:`Store.neighbourhood` returns."""

    linked: dict[str, str] = field(default_factory=dict)
    """Query key -> entity id linked by its exact name or alias, in key order."""
    seeds: list[str] = field(default_factory=list)
    """Entities the seed memories mention (ids, sorted)."""
    entities: dict[str, Entity] = field(default_factory=dict)
    """Every reached entity (linked, seeded, through facts)."""
    relations: list[Relation] = field(default_factory=list)
    """Facts touching the expanded entities, sorted by id; ``memory_ids`` holds each one's newest
    ``max_mentions`` supporting memories, not all of them."""
    mentions: list[tuple[str, str]] = field(default_factory=list)
    """(memory id, entity id): up to ``max_mentions`` memories of each reached entity that is not a
    hub (``hub_degree``), and every entity of the seed memories; sorted, no repeats."""
    degree: dict[str, int] = field(default_factory=dict)
    """Reached entity id -> how many memories mention it."""
    records: Records = field(default_factory=Records)
    """The memories of ``mentions`` and of the facts' provenance that pass the scope and the filter:
    fetched in the same read so that a memory only the graph found costs no extra round trip."""
    similarity: dict[str, float] = field(default_factory=dict)
    """Cosine of each record to ``GraphQuery.vector`` (empty without one)."""
    fact_states: dict[str, FactStates] | None = field(default=None, compare=False)
    """As :attr:`Candidates.fact_states`, for :attr:`records`."""


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


ThreadScope = tuple[str | None, str | None, str | None]
"""An exact scope as (user_id, agent_id, run_id): a thread's, cheaper to make than a :class:`Scope`."""


def thread_scope(record: MemoryRecord) -> ThreadScope:
    return (record.user_id, record.agent_id, record.run_id)


def thread_key(scope: ThreadScope) -> str:
    """The key of an exact scope's thread (scope ids hold no control characters)."""
    return "\x1f".join(v or "" for v in scope)


def threaded(memories: Iterable[NewMemory], tails: Mapping[ThreadScope, str | None]) -> list[str | None]:
    """What each of ``memories`` follows, in write order: the one before it in its scope, a scope's
    first the last memory written there before (``tails``)."""
    last, out = dict(tails), []
    for m in memories:
        scope = thread_scope(m.record)
        out.append(last.get(scope))
        last[scope] = m.record.id
    return out


def new_tails(memories: Iterable[NewMemory]) -> dict[ThreadScope, str]:
    """Each scope's last memory of a write: its thread's tail once the write commits."""
    return {thread_scope(m.record): m.record.id for m in memories}


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
    followed: frozenset[str] = frozenset()
    """Hits whose followers were read with the candidates: those of them that ask (:func:`~.text.asks`)
    have theirs in :attr:`followers`. Search reads the followers of the others when it needs them."""
    followers: Records = field(default_factory=Records, compare=False)
    """The memories in scope passing the filter that follow an asking hit of :attr:`followed`; their
    fact states are in :attr:`fact_states` when that is read."""


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
