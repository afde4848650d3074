"""The graph walk of a search, written once over the store's primitive reads.

:meth:`Store.neighbourhood <graphmem.stores.base.Store.neighbourhood>` states what is reached and
cut; this is that statement as code. Every backend runs it unless it answers the same walk in one
statement (Neo4j does, and ``tests/test_search_parity.py`` holds that answer equal to this one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from ..filters import Filter
from ..models import Entity, Relation, Scope
from .records import GraphQuery, Records, Subgraph, Vector


class GraphReads(Protocol):
    """The primitive reads the walk is written over, as :class:`~graphmem.stores.base.Store` declares
    them: named here so the walk does not import the contract that calls it."""

    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]: ...

    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]: ...

    def entity_memories(
        self, scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
    ) -> dict[str, tuple[int, list[str]]]: ...

    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]: ...

    def facts(
        self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
        history: bool = False,
    ) -> list[Relation]: ...

    def records(
        self, scope: Scope, ids: Sequence[str], flt: Filter | None, vector: Vector | None
    ) -> tuple[Records, dict[str, float]]: ...


def neighbourhood(
    store: GraphReads, scope: Scope, q: GraphQuery, seed_memories: Sequence[str] = (), flt: Filter | None = None
) -> Subgraph:
    out = Subgraph()
    linked = store.find_entities(scope, list(q.keys), exact=False) if q.keys else {}
    for key in q.keys:  # one entity per key, no entity twice
        e = linked.get(key)
        if e is not None and e.id not in out.linked.values() and len(out.linked) < q.max_seeds:
            out.linked[key] = e.id
            out.entities[e.id] = e
    mentions: set[tuple[str, str]] = set()
    if seed_memories:
        pairs = store.memory_entities(scope, list(dict.fromkeys(seed_memories)))
        mentions.update(pairs)  # every entity of a seed memory is a mention of the result
        out.seeds = sorted({e for _, e in pairs})
        out.entities.update(store.entities(scope, [i for i in out.seeds if i not in out.entities]))
    reads = store.entity_memories(scope, list(out.entities), q.max_mentions, q.hub_degree)
    linked_ids = set(out.linked.values())
    rest = sorted((i for i in out.entities if i not in linked_ids),
                  key=lambda i: (reads[i][0], out.entities[i].created_at, i))
    frontier = [*out.linked.values(), *rest][: q.max_frontier]
    facts: dict[str, Relation] = {}
    for _ in range(q.depth):
        expand = [e for e in frontier if reads[e][0] <= q.hub_degree]  # a hub's facts are not read
        if not expand:
            break
        ends: dict[str, None] = {}
        # only facts new in this hop can have unreached ends: one found again joins the entity it
        # was first found from and this frontier's entity, both reached
        for rel in store.facts(scope, expand, as_of=q.as_of, limit=q.max_facts, support=q.max_mentions,
                               history=q.history):
            if rel.id in facts:
                continue
            facts[rel.id] = rel
            ends.update((end, None) for end in (rel.source_id, rel.target_id)
                        if end is not None and end not in out.entities)
        fresh = store.entities(scope, list(ends))
        reads.update(store.entity_memories(scope, list(fresh), q.max_mentions, q.hub_degree))
        frontier = sorted(fresh, key=lambda i: (reads[i][0], fresh[i].created_at, i))[: q.max_frontier]
        out.entities.update((i, fresh[i]) for i in frontier)
    out.degree = {i: reads[i][0] for i in out.entities}
    mentions.update((m, e) for e in out.entities for m in reads[e][1])
    out.mentions = sorted(mentions)
    out.relations = sorted((r for r in facts.values() if r.source_id in out.entities
                            and (r.target_id is None or r.target_id in out.entities)), key=lambda r: r.id)
    ids = sorted({m for m, _ in out.mentions} | {m for r in out.relations for m in r.memory_ids})
    out.records, out.similarity = store.records(scope, ids, flt, q.vector)
    return out
