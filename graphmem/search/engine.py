"""The read path: one store read, then scoring, fusion, validity, time rules and the optional reranker.

Every backend answers :meth:`~graphmem.stores.base.Store.search` (on Neo4j one Cypher round trip;
on SQLite one read transaction) with the vector and full-text candidates and the query's
neighbourhood; everything after that is arithmetic here, shared by all backends, which is why they
rank alike. The current truth first (:mod:`.validity`) needs the ranked memories' fact states
(:meth:`~graphmem.stores.base.Store.fact_states`): Neo4j returns them with the records; other
stores answer a second, small read.
"""

from __future__ import annotations

import heapq
import math
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import DecayConfig, SearchConfig
from ..filters import And, Filter
from ..filters import parse as parse_filters
from ..models import MemoryRecord, Scope, iso, norm_name, utcnow
from .fusion import Fusion
from .graph import GraphResult, graph_candidates, graph_query
from .validity import (
    Superseded,
    asks_about_past,
    by_time,
    demote,
    question_time,
    said_apart,
    stating,
    superseded,
    timed_relations,
    to_read,
)

if TYPE_CHECKING:
    from ..embedding import Embedder
    from ..extraction.rules import StatementReader
    from ..ontology import Ontology
    from ..pipeline.steps import Steps
    from ..stores.base import Store, Vector
    from .rerank import Reranker


_TEXT_ONLY = SearchConfig(weights={**SearchConfig().weights, "graph": 0.0})
"""Seeds a graph-only search: the default text weights, so it walks from the seeds hybrid search would."""


@dataclass(frozen=True)
class SearchRequest:
    scope: Scope
    text: str
    k: int
    flt: Filter | None = None
    threshold: float | None = None
    explain: bool = False
    as_of: datetime | None = None
    """Rank what was known then: memories created by then and not yet expired, facts valid then."""
    since: datetime | None = None
    until: datetime | None = None
    """Time window on the memory's time: ``event_time``, else ``created_at``."""
    now: datetime | None = None
    vector: Vector | None = None
    """The query's embedding when the caller has it (L2-normalized); else the embedder makes it."""
    show_expired: bool = False
    """Rank expired memories too (mem0's ``show_expired``)."""


def time_window(since: datetime | None, until: datetime | None) -> Filter | None:
    """The filter of a time window: an event inside it, or no event time and created inside it."""
    if since is None and until is None:
        return None

    def inside(field: str) -> dict[str, Any]:
        bounds = {op: iso(t) for op, t in (("gte", since), ("lt", until)) if t is not None}
        return {field: bounds}

    return parse_filters({"OR": [inside("event_time"), {"AND": [{"event_time": None}, inside("created_at")]}]})


def decay_factor(record: MemoryRecord, now: datetime, cfg: DecayConfig, uses: int = 0) -> float:
    """``0.5 ** (age / half-life)`` for the memory's type, floored at ``cfg.floor``; 1 when its type
    has no half-life (procedural knowledge usually should not fade). ``uses`` (times search returned
    it) lengthen the half-life by ``1 + cfg.access_boost * log2(1 + uses)``."""
    half_life = cfg.half_life_days.get(record.memory_type.value)
    if not half_life:
        return 1.0
    half_life *= 1.0 + cfg.access_boost * math.log2(1 + uses)
    age_days = max(0.0, (now - (record.event_time or record.created_at)).total_seconds() / 86_400)
    return max(cfg.floor, math.pow(0.5, age_days / half_life))


def run_search(
    store: Store,
    embedder: Embedder,
    ontology: Callable[[], Ontology],
    cfg: SearchConfig,
    req: SearchRequest,
    reranker: Reranker | None = None,
    pending_uses: Callable[[str], int] | None = None,
) -> dict[str, Any]:
    """Rank the scope's memories for ``req`` (see ``Memory.search``); ``pending_uses``: a memory's uses
    by search not yet stored (:mod:`graphmem.search.access`), when decay counts uses."""
    from ..pipeline.steps import Engines, run

    return run(search_steps(ontology, cfg, req, reranker, pending_uses), Engines(store, embedder, _no_extractor))


def _no_extractor() -> Any:
    raise AssertionError("search extracts nothing")


def search_steps(
    ontology: Callable[[], Ontology],
    cfg: SearchConfig,
    req: SearchRequest,
    reranker: Reranker | None = None,
    pending_uses: Callable[[str], int] | None = None,
    loaded: Callable[[], Ontology | None] | None = None,
    reader: Callable[[], StatementReader] | None = None,
) -> Steps[dict[str, Any]]:
    """:func:`run_search` as steps (:mod:`graphmem.pipeline.steps`): the embedding and the store's
    search are waited on, the graph scoring, the reading of memories and the reranker are CPU work;
    ``AsyncMemory`` runs them. ``loaded``: the ontology if it is already loaded, else ``None``
    (``ontology`` loads it). ``reader``: what a memory's text states, for the memories without facts
    of a relation the question asks in time order (:func:`~.validity.by_time`); without it, their
    label words alone tell."""
    from ..pipeline.steps import Call, Embed, Work

    vector = (yield Embed([req.text]))[0] if req.vector is None else req.vector
    usable = vector if float(vector @ vector) > 0 else None  # a text with no features has no direction
    window = time_window(req.since, req.until)
    flt = req.flt if window is None else window if req.flt is None else And((req.flt, window))
    n = max(req.k * cfg.overfetch, cfg.min_candidates)
    past = req.as_of is None and asks_about_past(req.text)
    # the graph reads the facts of the time asked about ("where did she work in 2021?"), every fact for
    # another question about the past ("before Porto?"), else those of as_of or now
    then = req.as_of or (question_time(req.text) if past else None)
    gq = graph_query(req.text, cfg.graph, then, usable, history=past and then is None) \
        if cfg.weights.get("graph", 0.0) > 0 else None
    # a signal is retrieved when it is weighed, or when the graph ranks its seeds by it
    wanted = {s for s in ("vector", "fulltext") if gq is not None or cfg.weights.get(s, 0.0) > 0}
    # the relations whose statements go in time order, when the ontology is at hand (a store of text
    # alone never needs it); else decided below, once the store's answer shows it is needed
    known = ontology() if loaded is None else loaded()
    timed = None if known is None else timed_relations(req.text, known)
    cands, sub = yield Call("search", (req.scope, flt, usable if "vector" in wanted else None,
                                       req.text if "fulltext" in wanted else None, n, gq, sorted(timed or ())))
    # every memory returned is scored on the vector signal (its exact cosine), not only the index's top n
    similarity = {**sub.similarity, **cands.similarity}
    signals = {"vector": sorted(similarity.items(), key=lambda kv: (-kv[1], kv[0])), "fulltext": cands.fulltext}
    records = ChainMap(cands.records, sub.records)  # built only for the memories ranked below
    graph = GraphResult()
    if gq is not None:
        # seeds rank by the text signals even when their fusion weights are 0 (graph-only search)
        text_cfg = cfg if any(cfg.weights.get(s, 0.0) > 0 for s in signals) else _TEXT_ONLY
        seeds = dict(Fusion(signals, text_cfg).top(cfg.graph.seed_memories))
        top = max(seeds.values(), default=0.0)
        seeds = {i: s / top for i, s in seeds.items()} if top > 0 else {}
        speakers = frozenset(norm_name(a) for a in (records[i].actor_id for i in seeds if i in records) if a)
        graph = yield Work(lambda: graph_candidates(sub, gq, ontology, n, cfg.graph, seeds, speakers))
        signals["graph"] = [(mid, score) for mid, score in graph.hits if mid in records]
    now = req.now or utcnow()
    # Decay only lowers a fused score, so once the next fused score is below the worst of the best
    # `needed` decayed ones, no later hit can enter them: the rest are neither built nor decayed.
    # twice what is returned: a superseded hit moved down leaves room for the next
    needed = 2 * (max(req.k, cfg.rerank.top_n) if reranker is not None else req.k)
    ranked: list[tuple[float, Any]] = []
    floor: list[float] = []  # min-heap of the best `needed` decayed scores

    def admit(mid: str, fused: float) -> float | None:
        rec = records[mid]
        if rec.expires_at is not None and rec.expires_at <= (req.as_of or now) and not req.show_expired:
            return None
        if req.as_of is not None and min(rec.created_at, rec.event_time or rec.created_at) > req.as_of:
            return None
        uses = 0 if pending_uses is None or req.as_of is not None else rec.access_count + pending_uses(mid)
        factor = decay_factor(rec, req.as_of or now, cfg.decay, uses)
        ranked.append((fused * factor, (mid, fused, rec, factor)))
        return fused * factor

    fusion = Fusion(signals, cfg)
    for mid, fused in fusion.ranked():
        if len(floor) >= needed and fused < floor[0]:
            break
        score = admit(mid, fused)
        if score is None:
            continue
        if len(floor) < needed:
            heapq.heappush(floor, score)
        else:
            heapq.heappushpop(floor, score)
    late = timed is None and bool(ranked) and (bool(sub.relations) or said_apart([i[2] for _, i in ranked]))
    timed = timed_relations(req.text, ontology()) if late else timed or frozenset()
    about = stating(sub, timed)
    missing = about - {item[0] for _, item in ranked}
    if missing:  # a statement of the asked relation is ranked however it scored
        fused_of = dict(fusion.ranked())
        for mid in sorted(m for m in missing if m in records):
            admit(mid, fused_of.get(mid, 0.0))
    ranked.sort(key=lambda item: (-item[0], item[1][0]))
    replaced: dict[str, Superseded] = {}
    moved: dict[str, float] = {}
    in_time: dict[str, float] = {}
    reads = cands.round_trips
    if ranked:  # the current truth first (see search/validity.py), in a question about the present
        carried = cands.fact_states is not None and (sub.fact_states is not None or not sub.records)
        if carried and not (late and timed):
            states = {**(sub.fact_states or {}), **(cands.fact_states or {})}  # read with the records
        else:  # a read of its own
            states = yield Call("fact_states", (req.scope, [r[1][0] for r in ranked]))
            reads += 1
        replaced = superseded(states, ontology, req.text, frozenset(graph.relations))
        if req.as_of is None and not past:
            moved = demote(ranked, replaced) if replaced else {}
        readings = {}
        unread = to_read(ranked, req.text, timed, states) if reader is not None else []
        if unread and reader is not None:
            read = reader()
            readings = yield Work(lambda: dict(zip([rec.id for rec in unread],
                                                    read([(rec.memory, rec.actor_id) for rec in unread]),
                                                    strict=True)))
        in_time = by_time(ranked, req.text, timed, ontology, states, past=past, about=about, readings=readings)
    reranked: dict[str, float] = {}
    if reranker is not None and ranked:
        head = ranked[: cfg.rerank.top_n]
        scores = yield Work(lambda: reranker.score(req.text, [h[1][2].memory for h in head]))
        reranked = dict(zip((h[1][0] for h in head), scores, strict=True))
        order = sorted(head, key=lambda h: (-reranked[h[1][0]], -h[0], h[1][0]))
        ranked = order + ranked[cfg.rerank.top_n :]
    results = []
    for score, (mid, fused, rec, factor) in ranked:
        if req.threshold is not None and score < req.threshold:
            continue
        item = {**rec.public(), "score": score}
        if mid in replaced:
            item.update(replaced[mid].public(ontology()))
        if req.explain:
            details: dict[str, Any] = {**fusion.details(mid), "fused": fused}
            if factor != 1.0:
                details["decay"] = factor
            if mid in moved:
                details["superseded"] = moved[mid]
            if mid in in_time:
                details["past" if past else "newest_first"] = in_time[mid]
            if mid in reranked:
                details["rerank"] = reranked[mid]
            if "graph" in details and mid in graph.paths:
                details["graph"]["path"] = graph.paths[mid]
            item["score_details"] = details
        results.append(item)
        if len(results) == req.k:
            break
    out: dict[str, Any] = {"results": results, "relations": []}
    if req.explain:
        out["round_trips"] = reads
        if gq is not None:
            out["graph"] = {"linked": graph.linked, "relations": graph.relations, "classes": graph.classes,
                            "entities": len(sub.entities), "facts": len(sub.relations), "mentions": len(sub.mentions)}
    return out
