"""The shapes a graph read returns, below both the store contract (:mod:`.base`) and the walk
(:mod:`.walk`) that answers it by default: the contract calls the walk, so neither may hold what the
other needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from ..models import Entity, MemoryRecord, Relation

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
    specific ones), then by id. Also how many new entities a hop reaches, in that order."""
    max_facts: int = 16
    """Facts read per expanded entity at each hop (both directions, the first by fact id)."""
    max_mentions: int = 4
    """Memories fetched per reached entity and per fact (its provenance), the first by memory id: a
    hub, or a fact many memories repeat, cannot flood the result."""
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
    """Facts touching the expanded entities, sorted by id; ``memory_ids`` holds each one's first
    ``max_mentions`` supporting memories by id, not all of them."""
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
