"""The read path: one store read, then scoring, fusion, validity, time rules and the optional reranker.

Every backend answers :meth:`~graphmem.stores.base.Store.search` (on Neo4j one Cypher round trip;
on SQLite one read transaction) with the vector and full-text candidates and the query's
neighbourhood; everything after that is arithmetic here, shared by all backends, which is why they
rank alike. The current truth first (:mod:`.validity`) needs the ranked memories' fact states
(:meth:`~graphmem.stores.base.Store.fact_states`): Neo4j returns them with the records; other
stores answer a second, small read. When a top hit asks a question, the memory that follows it is
its answer: Neo4j returns those of the seed hits with the candidates, other stores answer a read of
:meth:`~graphmem.stores.base.Store.followers`.
"""

from __future__ import annotations

import heapq
import math
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import DecayConfig, SearchConfig
from ..filters import And, Filter
from ..filters import parse as parse_filters
from ..models import MemoryRecord, Scope, iso, norm_name, utcnow
from ..stores.records import Records
from ..stores.text import asks
from .fusion import Fusion, fusion_rule
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
from .when import asked_spans, in_span

if TYPE_CHECKING:
    from ..embedding import Embedder
    from ..extraction.rules import StatementReader
    from ..ontology import Ontology
    from ..pipeline.steps import Steps
    from ..stores.base import Candidates, GraphQuery, Store, Subgraph, Vector
    from .rerank import Reranker


REPLY_FROM = 3
"""The best hits that, when they ask a question, pass a share of their score to the memory that follows
them (``search.reply_share``)."""

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
    label words alone tell.

    The stages, in order: plan the read, read, the text signals, the graph signal, fusion and decay,
    the answers after the best hits that ask (a read of their followers), the current truth, the
    reranker, the results."""
    from ..pipeline.steps import Call, Embed

    fusion_rule(cfg.fusion)  # an unknown rule fails before any work
    vector = (yield Embed([req.text]))[0] if req.vector is None else req.vector
    plan = plan_read(req, cfg, vector, ontology() if loaded is None else loaded())
    cands, sub = yield Call("search", (req.scope, plan.flt, plan.vector, plan.text, plan.n, plan.graph,
                                       sorted(plan.timed or ())))
    signals, records = text_signals(cands, sub)
    graph = GraphResult()
    if plan.graph is not None:
        graph = yield from graph_signal(plan, cfg, signals, records, sub, ontology)
    fusion = Fusion(signals, cfg)
    ranking = Ranking(records, req, cfg, pending_uses)
    ranking.best(fusion, needed=2 * (max(req.k, cfg.rerank.top_n) if reranker is not None else req.k))
    timed, about = ranking.add_statements(fusion, sub, plan.timed, ontology)
    asking = ranking.asking() if cfg.reply_share > 0 else {}
    unread = [mid for mid in asking if mid not in cands.followed]
    if asking:
        found = Records()
        found.copy_from(cands.followers, [i for i in cands.followers if cands.followers[i].follows in asking])
        if unread:
            found.copy_from((more := (yield Call("followers", (req.scope, unread, plan.flt)))), list(more))
            cands.fact_states = None  # the followers read alone carry no fact states: current_truth reads them
        ranking.add_replies(found, asking, fusion, cfg.reply_share)
    truth = CurrentTruth(round_trips=cands.round_trips)
    if ranking.items:
        truth = yield from current_truth(ranking.items, req, cands, sub, plan, timed, about, graph, ontology,
                                         reader)
    truth.round_trips += bool(unread)
    reranked: dict[str, float] = {}
    if reranker is not None and ranking.items:
        reranked = yield from rerank(ranking, req.text, cfg.rerank.top_n, reranker)
    return results(ranking, req, fusion, graph, truth, reranked, ontology, plan, sub, cfg)


@dataclass(frozen=True)
class ReadPlan:
    """What the store is asked, decided from the request alone."""

    vector: Vector | None
    """The query's embedding, when the vector signal is read and the text has a direction."""
    text: str | None
    """The full-text query, when that signal is read."""
    flt: Filter | None
    """The caller's filter and the time window."""
    n: int
    """Candidates per signal."""
    past: bool
    """The question asks about the past (and ``as_of`` is not set)."""
    graph: GraphQuery | None
    """The graph's read, when the graph is weighed."""
    timed: frozenset[str] | None
    """The relations whose statements go in time order; ``None`` while the ontology is not loaded."""


def plan_read(req: SearchRequest, cfg: SearchConfig, vector: Vector, known: Ontology | None) -> ReadPlan:
    """Which signals to read, how many candidates, which facts' time (the graph reads the facts of the
    time asked about, "where did she work in 2021?", every fact for another question about the past,
    "before Porto?", else those of ``as_of`` or now)."""
    usable = vector if float(vector @ vector) > 0 else None  # a text with no features has no direction
    window = time_window(req.since, req.until)
    past = req.as_of is None and asks_about_past(req.text)
    then = req.as_of or (question_time(req.text) if past else None)
    gq = graph_query(req.text, cfg.graph, then, usable, history=past and then is None) \
        if cfg.weights.get("graph", 0.0) > 0 else None
    # a signal is read when it is weighed, or when the graph ranks its seeds by it
    wanted = {s for s in ("vector", "fulltext") if gq is not None or cfg.weights.get(s, 0.0) > 0}
    return ReadPlan(
        vector=usable if "vector" in wanted else None, text=req.text if "fulltext" in wanted else None,
        flt=req.flt if window is None else window if req.flt is None else And((req.flt, window)),
        n=max(req.k * cfg.overfetch, cfg.min_candidates), past=past, graph=gq,
        # a store of text alone never needs the ontology: without it loaded, decided once the store answered
        timed=None if known is None else timed_relations(req.text, known),
    )


Signals = dict[str, list[tuple[str, float]]]
Ranked = list[tuple[float, tuple[str, float, MemoryRecord, float]]]
"""(decayed score, (memory id, fused score, record, decay factor)), as :mod:`.validity` reads it."""


def text_signals(cands: Candidates, sub: Subgraph) -> tuple[Signals, ChainMap[str, MemoryRecord]]:
    """The vector and full-text hits, and every record read. Every memory returned is scored on the
    vector signal by its exact cosine, not only the index's top ``n``."""
    similarity = {**sub.similarity, **cands.similarity}
    signals = {"vector": sorted(similarity.items(), key=lambda kv: (-kv[1], kv[0])), "fulltext": cands.fulltext}
    return signals, ChainMap(cands.records, sub.records)  # records are built only for the memories ranked


def graph_signal(plan: ReadPlan, cfg: SearchConfig, signals: Signals, records: ChainMap[str, MemoryRecord],
                 sub: Subgraph, ontology: Callable[[], Ontology]) -> Steps[GraphResult]:
    """Adds ``signals["graph"]``: the walk from the linked entities and from the best text hits (the
    seeds). Seeds rank by the text signals even when their fusion weights are 0 (graph-only search),
    and by the ``weighted`` rule whatever ``search.fusion`` says: the bridge passes on a seed's score
    cubed, a scale that min-max or rank shares flatten (they seeded worse, ``bench/results/fusion.json``)."""
    from ..pipeline.steps import Work

    assert plan.graph is not None
    text_cfg = cfg if any(cfg.weights.get(s, 0.0) > 0 for s in signals) else _TEXT_ONLY
    seeds = dict(Fusion(signals, text_cfg, rule="weighted").top(cfg.graph.seed_memories))
    top = max(seeds.values(), default=0.0)
    seeds = {i: s / top for i, s in seeds.items()} if top > 0 else {}
    speakers = frozenset(norm_name(a) for a in (records[i].actor_id for i in seeds if i in records) if a)
    gq = plan.graph
    graph: GraphResult = yield Work(lambda: graph_candidates(sub, gq, ontology, plan.n, cfg.graph, seeds, speakers,
                                                             records))
    signals["graph"] = [(mid, score) for mid, score in graph.hits if mid in records]
    return graph


class Ranking:
    """The fused hits, each times its decay factor, best first once :meth:`add_statements` ran; expired
    memories and, under ``as_of``, later ones are left out."""

    def __init__(self, records: ChainMap[str, MemoryRecord], req: SearchRequest, cfg: SearchConfig,
                 pending_uses: Callable[[str], int] | None) -> None:
        self.items: Ranked = []
        self._records, self._req, self._decay, self._uses = records, req, cfg.decay, pending_uses
        self._at = req.as_of or req.now or utcnow()
        self._spans = asked_spans(req.text, req.now or req.as_of or utcnow()) if cfg.outside_asked_time < 1 else []
        self._outside = cfg.outside_asked_time
        self.outside: set[str] = set()
        """Memories neither dated nor said in the time the question names (their factor holds it)."""
        self.replies: dict[str, tuple[str, float]] = {}
        """Memories lifted by the hit they follow: (that hit's id, the score it passed on)."""

    def admit(self, mid: str, fused: float) -> float | None:
        """Ranks ``mid``; its decayed score, or ``None`` when it is left out."""
        rec, req = self._records[mid], self._req
        if rec.expires_at is not None and rec.expires_at <= self._at and not req.show_expired:
            return None
        if req.as_of is not None and min(rec.created_at, rec.event_time or rec.created_at) > req.as_of:
            return None
        uses = 0 if self._uses is None or req.as_of is not None else rec.access_count + self._uses(mid)
        factor = decay_factor(rec, self._at, self._decay, uses)
        if self._spans and not in_span(rec, self._spans):
            factor *= self._outside
            self.outside.add(mid)
        self.items.append((fused * factor, (mid, fused, rec, factor)))
        return fused * factor

    def best(self, fusion: Fusion, needed: int) -> None:
        """Admits the best ``needed`` by decayed score (twice what is returned: a superseded hit moved
        down leaves room for the next). Decay only lowers a fused score, so once the next fused score
        is below the worst of the best ``needed`` decayed ones, no later hit can enter them: the rest
        are neither built nor decayed."""
        floor: list[float] = []  # min-heap of the best `needed` decayed scores
        for mid, fused in fusion.ranked():
            if len(floor) >= needed and fused < floor[0]:
                break
            score = self.admit(mid, fused)
            if score is None:
                continue
            if len(floor) < needed:
                heapq.heappush(floor, score)
            else:
                heapq.heappushpop(floor, score)

    def add_statements(self, fusion: Fusion, sub: Subgraph, timed: frozenset[str] | None,
                   ontology: Callable[[], Ontology]) -> tuple[frozenset[str], frozenset[str]]:
        """Admits the statements of a relation asked in time order however they scored, then sorts.
        Returns those relations (decided here when the ontology was not loaded before the read and
        the answer shows it matters) and the memories stating them."""
        late = timed is None and bool(self.items) and (
            bool(sub.relations) or said_apart([i[2] for _, i in self.items]))
        timed = timed_relations(self._req.text, ontology()) if late else timed or frozenset()
        about = stating(sub, timed)
        missing = about - {item[0] for _, item in self.items}
        if missing:
            fused_of = dict(fusion.ranked())
            for mid in sorted(m for m in missing if m in self._records):
                self.admit(mid, fused_of.get(mid, 0.0))
        self.items.sort(key=lambda item: (-item[0], item[1][0]))
        return timed, about

    def asking(self) -> dict[str, float]:
        """The best ``REPLY_FROM`` hits that ask a question, with their scores."""
        return {item[0]: score for score, item in self.items[:REPLY_FROM] if asks(item[2].memory)}

    def add_replies(self, found: Records, head: dict[str, float], fusion: Fusion, share: float) -> None:
        """Adds to each memory in ``found`` ``share`` of the score of the ``head`` hit it follows, the
        question it answers (admitted first if it was not ranked), then sorts again."""
        if not found:
            return
        self._records.maps.append(found)
        at = {item[0]: pos for pos, (_, item) in enumerate(self.items)}
        fused_of: dict[str, float] | None = None
        for mid in sorted(found):
            rec = self._records[mid]
            if rec.follows not in head:
                continue
            if mid not in at:
                fused_of = dict(fusion.ranked()) if fused_of is None else fused_of
                if self.admit(mid, fused_of.get(mid, 0.0)) is None:
                    continue
                at[mid] = len(self.items) - 1
            bonus = share * head[rec.follows]
            score, item = self.items[at[mid]]
            self.items[at[mid]] = (score + bonus, item)
            self.replies[mid] = (rec.follows, bonus)
        self.items.sort(key=lambda item: (-item[0], item[1][0]))


@dataclass
class CurrentTruth:
    """What :func:`current_truth` changed, for ``explain``."""

    replaced: dict[str, Superseded] = field(default_factory=dict)
    moved: dict[str, float] = field(default_factory=dict)
    """Superseded memories moved down: their score factor."""
    in_time: dict[str, float] = field(default_factory=dict)
    """Statements put in time order: their place's score."""
    round_trips: int = 1


def current_truth(ranked: Ranked, req: SearchRequest, cands: Candidates, sub: Subgraph, plan: ReadPlan,
                  timed: frozenset[str], about: frozenset[str], graph: GraphResult,
                  ontology: Callable[[], Ontology], reader: Callable[[], StatementReader] | None,
                  ) -> Steps[CurrentTruth]:
    """The current truth first in a question about the present, the asked relation's statements in
    time order (see :mod:`.validity`); ``ranked`` is changed in place. The facts' states come with
    the records (Neo4j), else in a read of their own."""
    from ..pipeline.steps import Call, Work

    out = CurrentTruth(round_trips=cands.round_trips)
    carried = cands.fact_states is not None and (sub.fact_states is not None or not sub.records)
    if carried and not (plan.timed is None and timed):
        states = {**(sub.fact_states or {}), **(cands.fact_states or {})}
    else:
        states = yield Call("fact_states", (req.scope, [r[1][0] for r in ranked]))
        out.round_trips += 1
    out.replaced = superseded(states, ontology, req.text, frozenset(graph.relations))
    if req.as_of is None and not plan.past and out.replaced:
        out.moved = demote(ranked, out.replaced)
    readings = {}
    unread = to_read(ranked, req.text, timed, states) if reader is not None else []
    if unread and reader is not None:
        read = reader()
        readings = yield Work(lambda: dict(zip([rec.id for rec in unread],
                                                read([(rec.memory, rec.actor_id) for rec in unread]), strict=True)))
    out.in_time = by_time(ranked, req.text, timed, ontology, states, past=plan.past, about=about, readings=readings)
    return out


def rerank(ranking: Ranking, text: str, top_n: int, reranker: Reranker) -> Steps[dict[str, float]]:
    """The cross-encoder re-orders the best ``top_n``; returns their scores."""
    from ..pipeline.steps import Work

    head = ranking.items[:top_n]
    scores = yield Work(lambda: reranker.score(text, [h[1][2].memory for h in head]))
    reranked = dict(zip((h[1][0] for h in head), scores, strict=True))
    ranking.items = sorted(head, key=lambda h: (-reranked[h[1][0]], -h[0], h[1][0])) + ranking.items[top_n:]
    return reranked


def results(ranking: Ranking, req: SearchRequest, fusion: Fusion, graph: GraphResult, truth: CurrentTruth,
            reranked: dict[str, float], ontology: Callable[[], Ontology], plan: ReadPlan,
            sub: Subgraph, cfg: SearchConfig) -> dict[str, Any]:
    """The first ``req.k`` over the threshold, as records; with ``explain``, why each ranks where it does."""
    hits = []
    for score, (mid, fused, rec, factor) in ranking.items:
        if req.threshold is not None and score < req.threshold:
            continue
        item = {**rec.public(), "score": score}
        if mid in truth.replaced:
            item.update(truth.replaced[mid].public(ontology()))
        if req.explain:
            outside = cfg.outside_asked_time if mid in ranking.outside else None
            item["score_details"] = explain(mid, fused, factor, fusion, graph, truth, reranked, plan.past, outside)
            if mid in ranking.replies:
                follows, bonus = ranking.replies[mid]
                item["score_details"]["reply"] = {"follows": follows, "added": bonus}
        hits.append(item)
        if len(hits) == req.k:
            break
    out: dict[str, Any] = {"results": hits, "relations": []}
    if req.explain:
        out["round_trips"] = truth.round_trips
        if plan.graph is not None:
            out["graph"] = {"linked": graph.linked, "relations": graph.relations, "classes": graph.classes,
                            "entities": len(sub.entities), "facts": len(sub.relations), "mentions": len(sub.mentions)}
    return out


def explain(mid: str, fused: float, factor: float, fusion: Fusion, graph: GraphResult, truth: CurrentTruth,
            reranked: dict[str, float], past: bool, outside: float | None) -> dict[str, Any]:
    """One hit's score: each signal's share, the rule that fused them, and what moved it after
    (``outside``: the factor of a memory outside the time the question names)."""
    details: dict[str, Any] = {**fusion.details(mid), "fused": fused, "fusion": fusion.rule}
    if outside is not None:
        details["outside_asked_time"] = outside
        factor = factor / outside if outside > 0 else 1.0
    if factor != 1.0:
        details["decay"] = factor
    if mid in truth.moved:
        details["superseded"] = truth.moved[mid]
    if mid in truth.in_time:
        details["past" if past else "newest_first"] = truth.in_time[mid]
    if mid in reranked:
        details["rerank"] = reranked[mid]
    if "graph" in details and mid in graph.paths:
        details["graph"]["path"] = graph.paths[mid]
    return details
