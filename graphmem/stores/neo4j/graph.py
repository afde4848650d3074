"""Reads of the knowledge graph: entities by key or vector, an entity's context, facts, the scopes
that hold a graph, quarantine entries, and the subgraph a search's neighbourhood query returns.

Each function is a series of statements (:mod:`.statements`) run in a transaction the caller
opened (a read, or a write's check, on either driver), so a write can read the graph it is about
to change under its own locks. The primitive reads the graph walk of
:mod:`graphmem.stores.walk` runs on are here too (the records of a walk are search's).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...models import Entity, QuarantineEntry, Relation, Scope, to_utc
from ..base import EntityQuery, FactQuery, FactStates, GraphContext, Subgraph
from .cypher import conjunction, exact_scope_where, scope_where
from .cypher import graph as q
from .records import fact_states as read_states
from .records import gone, to_entity, to_quarantine, to_relation, unique
from .statements import Statements, run


def find_entities(scope: Scope, keys: Sequence[str], *, exact: bool = True) -> Statements[dict[str, Entity]]:
    """By key (index seek on ``Entity.key``) or alias key (scan of the scope through its index);
    ``exact``: in exactly ``scope``, else in every scope it contains."""
    wanted = unique(keys)
    if not wanted:
        return {}
    params: dict[str, Any] = {"keys": wanted}
    fence = exact_scope_where(scope, "e", params) if exact else scope_where(scope, "e", params)
    out: dict[str, Entity] = {}
    for rec in (yield run(q.find_entities(scope, fence), params)):
        if gone(rec["ent"]):
            continue
        entity: Entity | None = None
        for key in rec["hits"]:
            if key not in out:
                entity = entity or to_entity(rec["ent"])
                out[key] = entity
    return out


def similar_entities(scope: Scope, vectors: list[list[float]]) -> Statements[list[tuple[Entity, float] | None]]:
    """Exact cosine over the scope's entities (found through the scope index), best per query.

    ``vector.similarity.cosine`` returns (1 + cos) / 2, mapped back to cos in the query."""
    params: dict[str, Any] = {"vecs": vectors}
    query = q.similar_entities(scope, exact_scope_where(scope, "e", params))
    found: dict[int, tuple[Entity, float]] = {
        rec["i"]: (to_entity(rec["ent"]), float(rec["score"])) for rec in (yield run(query, params))
        if not gone(rec["ent"])
    }
    return [found.get(i) for i in range(len(vectors))]


def graph_context(scope: Scope, entity_ids: Sequence[str]) -> Statements[GraphContext]:
    """The entities in scope, every open fact touching them, and the entities at the other ends."""
    ctx = GraphContext()
    ids = unique(entity_ids)
    if not ids:
        return ctx
    params: dict[str, Any] = {"ids": ids}
    for rec in (yield run(q.entities_by_id(scope_where(scope, "e", params)), params)):
        if not gone(rec["e"]):
            ctx.entities[rec["e"]["id"]] = to_entity(rec["e"])
    if not ctx.entities:
        return ctx
    found = list(ctx.entities)
    seen: set[str] = set()
    for rec in (yield run(q.OPEN_FACTS_OF, found=found)):
        row = rec.data()
        if gone(row["fact"]) or row["fact"]["id"] in seen:
            continue
        rel = to_relation(row)
        seen.add(rel.id)
        ctx.relations.append(rel)
        for other in (row["s_ent"], row["o_ent"]):
            if other is not None and not gone(other) and other["id"] not in ctx.entities:
                ctx.entities[other["id"]] = to_entity(other)
    return ctx


def _page(params: dict[str, Any], var: str, after: tuple[datetime, str] | None, limit: int | None) -> tuple[str, str]:
    """The keyset condition (or ``"true"``) and the LIMIT clause of a page."""
    cond = "true"
    if after is not None:
        params.update(after_t=to_utc(after[0]), after_id=after[1])
        cond = q.after(var)
    return cond, "" if limit is None else f" LIMIT {int(limit)}"


def list_entities(scope: Scope, query: EntityQuery) -> Statements[list[Entity]]:
    params: dict[str, Any] = {}
    where = [scope_where(scope, "e", params)]
    if query.contains is not None:
        params["contains"] = query.contains
        where.append(q.ENTITY_CONTAINS)
    if query.classes:
        params["classes"] = list(query.classes)
        where.append(q.ENTITY_CLASSES)
    cond, limit = _page(params, "e", query.after, query.limit)
    rows = (rec["e"] for rec in (yield run(q.list_entities(scope, conjunction(*where, cond), limit), params)))
    return [to_entity(row) for row in rows if not gone(row)]


def list_facts(scope: Scope, query: FactQuery) -> Statements[list[Relation]]:
    params: dict[str, Any] = {}
    where = [scope_where(scope, "r", params)]
    if query.memory_id is not None:
        params["mid"] = query.memory_id
        where.append(q.FACT_OF_MEMORY)
    if query.relations:
        params["rels"] = list(query.relations)
        where.append(q.FACT_RELATIONS)
    if query.as_of is not None:
        params["as_of"] = to_utc(query.as_of)
        where.append(q.FACT_VALID_AT)
    elif not query.include_closed:
        where.append(q.FACT_OPEN)
    cond, limit = _page(params, "r", query.after, query.limit)
    if query.entity_ids:
        params["eids"] = unique(query.entity_ids)
        text = q.list_facts_of(conjunction(*where, cond), limit)
    else:
        text = q.list_facts(scope, scope_where(scope, "s", params), conjunction(*where, cond), limit)
    return [to_relation(row) for row in (rec.data() for rec in (yield run(text, params))) if not gone(row["fact"])]


def fact_states(scope: Scope, memory_ids: Sequence[str]) -> Statements[dict[str, FactStates]]:
    """See :meth:`Store.fact_states`: one statement."""
    params: dict[str, Any] = {"mids": unique(memory_ids)}
    text = q.fact_states(scope_where(scope, "m", params), scope_where(scope, "sr", params),
                         scope_where(scope, "sn", params))
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in (rec.data() for rec in (yield run(text, params))):
        rows.setdefault(row["mid"], []).append(row)
    return {mid: states for mid, found in rows.items() if (states := read_states(found)) != FactStates()}


# -- the primitive reads of the walk (stores/walk.py) ---------------------------------------------


def entities(scope: Scope, ids: Sequence[str]) -> Statements[dict[str, Entity]]:
    params: dict[str, Any] = {"ids": unique(ids)}
    rows = (rec["e"] for rec in (yield run(q.entities_by_id(scope_where(scope, "e", params)), params)))
    return {row["id"]: to_entity(row) for row in rows if not gone(row)}


def entity_memories(
    scope: Scope, ids: Sequence[str], limit: int, hub_degree: int
) -> Statements[dict[str, tuple[int, list[str]]]]:
    params: dict[str, Any] = {"ids": unique(ids), "limit": int(limit), "hub": int(hub_degree)}
    found = yield run(q.entity_memories(scope_where(scope, "e", params)), params)
    return {rec["id"]: (int(rec["d"]), list(rec["mids"])) for rec in found if rec["id"] is not None}


def memory_entities(scope: Scope, memory_ids: Sequence[str]) -> Statements[list[tuple[str, str]]]:
    params: dict[str, Any] = {"mids": unique(memory_ids)}
    found = yield run(q.memory_entities(scope_where(scope, "e", params)), params)
    return [(rec["mid"], rec["eid"]) for rec in found if rec["eid"] is not None]


def facts(
    scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
    history: bool = False,
) -> Statements[list[Relation]]:
    params: dict[str, Any] = {"ids": unique(entity_ids), "limit": int(limit), "support": int(support)}
    if as_of is not None and not history:
        params["as_of"] = to_utc(as_of)
    valid = "true" if history else q.FACT_OPEN if as_of is None else q.FACT_VALID_AT
    rows = (rec.data() for rec in (yield run(q.facts(conjunction(valid, scope_where(scope, "r", params))), params)))
    return sorted((to_relation(row) for row in rows if not gone(row["fact"])), key=lambda r: r.id)


def graph_scopes() -> Statements[list[Scope]]:
    rows = [rec.data() for rec in (yield run(q.GRAPH_SCOPES))]
    found = {(r["user_id"], r["agent_id"], r["run_id"]) for r in rows}
    found.discard((None, None, None))

    def order(s: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
        return tuple((v is not None, v or "") for v in s)  # NULL first, as SQL sorts it

    return [Scope(user_id=u, agent_id=a, run_id=r) for u, a, r in sorted(found, key=order)]


def quarantined(scope: Scope, status: str | None) -> Statements[list[QuarantineEntry]]:
    params: dict[str, Any] = {}
    where = scope_where(scope, "q", params)
    if status is not None:
        params["status"] = status
    return [to_quarantine(rec["entry"]) for rec in (yield run(q.quarantined(scope, where, status is not None), params))]


def read_subgraph(row: Any) -> tuple[Subgraph, list[dict[str, Any]]]:
    """The :class:`Subgraph` of a row with ``SUBGRAPH_COLUMNS`` (records left to the caller, raw).

    A node a concurrent transaction deleted after the query matched it reads as nulls: its entity is
    left out, and so is everything that names it (a link, a mention, a fact), so the subgraph holds
    only ids it can resolve.
    """
    sub = Subgraph()
    mids: set[tuple[str, str]] = set()
    for item in row["g_ents"]:
        if gone(item["e"]):
            continue
        ent = to_entity(item["e"])
        sub.entities[ent.id] = ent
        sub.degree[ent.id] = int(item["deg"])
        mids.update((mid, ent.id) for mid in item["mids"] if mid is not None)
    sub.linked = {key: eid for key, eid in row["g_linked"] if eid in sub.entities}
    seeded = {(mid, eid) for mid, eid in row["g_seed_pairs"] if mid is not None and eid in sub.entities}
    sub.seeds = sorted({eid for _, eid in seeded})
    sub.mentions = sorted(seeded | mids)
    sub.relations = sorted((to_relation(r) for r in row["g_rels"] if not gone(r["fact"]) and r["source"] is not None
                            and (r["target"] is not None or r["value"] is not None)), key=lambda r: r.id)
    return sub, list(row["g_recs"])
