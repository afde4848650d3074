"""The graph signal: memories reached from the query's entities over mentions and typed facts.

The store fetches the query's neighbourhood in one read (:meth:`~graphmem.stores.base.Store.neighbourhood`,
whose walk depends on counts only, never on scores); everything here is arithmetic on that
:class:`~graphmem.stores.base.Subgraph`, so every backend gives the same ranking.

The graph score of a memory is ``bridge_weight * bridge + traversal_weight * traversal``
(``search.graph``), clipped to 1.

``bridge``: the second hop of a multi-hop question. The best text hits (the seeds) pass their
normalized score, cubed, times the specificity ``(1 + d) ** -specificity`` of an entity they
mention, to the other memories that mention it too (``d`` memories mention it). Names the query
carries are skipped, since the text signals weigh them already, and so are names more than
``bridge_max_degree`` memories carry, and the scope's own user and the seeds' speakers (what they
say is about them, however few memories there are). This is what lifts hybrid search on multi-hop questions above
the dense signal: the question names the first hop, and the answer's memory shares an entity with it.
What a memory receives is multiplied by ``1 + c``, ``c`` the share of the question's words *left
over* by the seed (its content words the seed's text lacks) that the memory's text holds: of the
several memories sharing a name with "Big Eyes" (the film, whose text says who directed it), the one
that continues "who is the spouse of Big Eyes' director" holds "spouse". Its cosine to the whole
question would not tell: the second hop's memory shares little with the words of the first.

Linking (the store's part, the same on every backend): each query n-gram (:func:`query_ngrams`) is
looked up as an entity name or alias, exactly, through indexes.

The traversal score is one of two (``search.graph.scoring``):

``ppr`` (default): Personalized PageRank over the local graph of memories and entities, the idea of
HippoRAG. Edges: memory <-> entity for each mention, and entity -> entity for each fact, also
backwards when the relation is symmetric, has an inverse or is transitive (the ontology read at
query time). A fact's weight is its relation weight (``relation_weights``; a sub-property inherits
its super-property's), times ``relation_boost`` when the query names the relation. The walk
restarts (probability :data:`RESTART`) at the linked query entities, each weighted by its
specificity so a name every memory carries counts for little, and at the seed memories (the best
vector and full-text hits), weighted by their normalized scores. A memory's graph score is its
PageRank over the best memory's, in [0, 1].

``walk``: the best path from a linked entity over typed facts only (the explainable part):

1. Let ``w(f)`` be the relation weight. Crossing ``f`` from a reached entity ``u`` gives::

       step(f, u) = s(u) * w(f) * decay       (decay = search.graph.decay)
       step(f, u) = s(u) * w(f)                when f continues a chain of the same transitive
                                               relation in the same direction (no extra decay)

   Every fact is traversable from its source; from its target too when the relation is symmetric,
   has an inverse or is transitive (reading a transitive chain backwards computes the entailed
   facts that end at the entity we stand on).
2. An entity's score ``s`` is the best ``step`` that reached it (seeds: 1), kept from the hop it
   was first reached. A fact's score is the best ``step`` from either reached end, except that a
   fact joining two entities reached independently of it scores ``max(s(u), s(v)) * w(f)``. A fact
   whose relation the query names is multiplied by ``relation_boost`` (not carried beyond).
3. A memory scores the best of the facts it supports, clipped to [0, 1]. Ties: memory id.

Both scorings give each reached memory its best walk path for ``explain=True``; with ``ppr``, a
memory reached only through a mention is explained by the entity it mentions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from rdflib.namespace import OWL, RDFS

from ..models import Entity, MemoryRecord, Relation, norm_name
from ..stores.base import GraphQuery, Subgraph, Vector
from ..stores.text import STOPWORDS, content_words

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from ..config import GraphSearchConfig
    from ..ontology import Ontology

__all__ = ["GraphResult", "GraphStep", "graph_candidates", "graph_query", "query_ngrams"]

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_SEEDS: Final = 16
"""Query entities linked at most (longest names first): more n-grams than this that name stored
entities are rare, and each one widens the walk's first frontier."""
BRIDGE_SEEDS: Final = 5
"""Best text hits that pass their score on through the bridge."""
SEED_WEIGHT: Final = 1.0
"""PageRank restart weight of the seed memories relative to a linked entity."""
RESTART: Final = 0.5
"""PageRank restart probability (HippoRAG's)."""


@dataclass(frozen=True)
class GraphStep:
    """One fact crossed on a path: ``source -[relation]-> target`` walked ``forward`` or ``backward``."""

    fact_id: str
    source: str
    relation: str
    target: str
    direction: str

    def as_dict(self) -> dict[str, str]:
        return {"fact": self.fact_id, "source": self.source, "relation": self.relation, "target": self.target,
                "direction": self.direction}


@dataclass
class _Reach:
    score: float
    path: tuple[GraphStep, ...]
    via: str | None = None
    """The last fact of the best path (``None`` for a seed)."""
    chain: tuple[str, str] | None = None
    """(relation IRI, direction) when the last step crossed a transitive relation."""


@dataclass
class GraphResult:
    hits: list[tuple[str, float]] = field(default_factory=list)
    """Memory id and graph score in [0, 1], best first."""
    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per memory: how the graph reached it: the text hit it shares an entity with (``bridge``), or
    its best path from a linked query entity to the fact it supports, or the linked entity it mentions."""
    linked: list[dict[str, Any]] = field(default_factory=list)
    """The linked query entities: ``name`` and the query ``key`` (the n-gram matching its name or alias)."""
    relations: list[str] = field(default_factory=list)
    """Relations named in the query (IRIs; sub-properties are boosted too)."""
    classes: list[str] = field(default_factory=list)
    """Classes named in the query (IRIs); entities of these or their subclasses are boosted."""


def query_ngrams(text: str, longest: int = 4) -> list[str]:
    """Normalized 1..``longest`` word n-grams of ``text``, longest first, then in reading order."""
    words = [w.casefold() for w in _WORD.findall(text)]
    out: dict[str, None] = {}
    for n in range(longest, 0, -1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if all(w in STOPWORDS or len(w) < 2 for w in gram):  # "of the", "'s": never a name
                continue
            out.setdefault(norm_name(" ".join(gram)), None)
    return [k for k in out if k]


def _outermost(keys: list[str]) -> set[str]:
    """Keys not inside a longer key: "journal" is dropped when "journal of physics" was linked."""
    padded = [f" {k} " for k in keys]
    return {k for k in keys if not any(len(o) > len(k) + 2 and f" {k} " in o for o in padded)}


def _short(ontology: Ontology | None, iri: str) -> str:
    info = ontology.relations.get(iri) if ontology is not None else None
    return info.name if info is not None else iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def graph_query(query: str, cfg: GraphSearchConfig, as_of: datetime | None = None,
                vector: Vector | None = None, history: bool = False) -> GraphQuery:
    """What to fetch for ``query``: its n-grams to link, how far to walk, and the vector to score by;
    the facts valid at ``as_of`` (else the open ones), or every fact (``history``)."""
    # the best text hits seed PageRank and the bridge; the walk starts from the linked entities only
    seeded = cfg.scoring == "ppr" or cfg.bridge_weight > 0
    return GraphQuery(
        keys=tuple(query_ngrams(query)), max_seeds=MAX_SEEDS, seed_memories=cfg.seed_memories if seeded else 0,
        depth=cfg.depth, max_frontier=cfg.max_frontier, max_facts=cfg.max_facts, max_mentions=cfg.max_mentions,
        hub_degree=cfg.hub_degree, as_of=as_of, history=history, vector=vector,
    )


def graph_candidates(
    sub: Subgraph,
    query: GraphQuery,
    ontology: Ontology | Callable[[], Ontology],
    k: int,
    cfg: GraphSearchConfig,
    seeds: dict[str, float] | None = None,
    speakers: frozenset[str] = frozenset(),
    texts: Mapping[str, MemoryRecord] | None = None,
) -> GraphResult:
    """Top-``k`` memories of ``sub`` by graph score (see the module docstring). ``seeds``: memory id ->
    score in [0, 1] of the seed memories; ``speakers``: the normalized names of who said them (no
    bridge); ``texts``: the records read (seeds and neighbours), else ``sub.records``. ``ontology``
    may be a callable that loads it: it is only needed once something was reached."""
    out = GraphResult()
    if not sub.entities:
        return out
    onto = ontology if not callable(ontology) else ontology()
    named: set[str] = set()
    for key in query.keys:
        iri = onto.resolve_relation(key)
        info = onto.relations.get(iri) if iri is not None else None
        if info is not None:  # "employs" also names worksFor facts read backwards
            for p in (info.iri, info.inverse):
                if p is not None:
                    named.add(p)
                    named.update(onto.sub_properties(p))
    out.linked = [{"name": sub.entities[eid].name, "key": key} for key, eid in sub.linked.items()]
    out.relations = sorted(named)
    out.classes = _named_classes(onto, query.keys)
    widened = {eid for eid, e in sub.entities.items()
               if any(onto.is_subclass(c, named_class) for c in e.classes for named_class in out.classes)}
    weights = _weights(onto, cfg)
    walked = _walk(sub, onto, cfg, weights, named, widened)
    if cfg.scoring == "ppr":
        traversal = _ppr(sub, onto, cfg, weights, named, seeds or {}, widened)
    else:
        traversal = {mid: score for mid, (score, _) in walked.items()}
    words = frozenset(k for k in query.keys if " " not in k)  # the query's content words, normalized
    bridged = _bridge(sub, cfg, seeds or {}, speakers, words, texts if texts is not None else sub.records)
    scores: dict[str, float] = {}
    for mid in traversal.keys() | bridged.keys():
        b = bridged[mid][0] if mid in bridged else 0.0
        scores[mid] = min(1.0, cfg.traversal_weight * traversal.get(mid, 0.0) + cfg.bridge_weight * b)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    out.hits = [(mid, score) for mid, score in ranked if score > 0]
    names = {eid: e.name for eid, e in sub.entities.items()}
    mentioned: dict[str, str] = {}
    for mid, eid in sub.mentions:
        if eid in sub.linked.values() and mid not in mentioned:
            mentioned[mid] = names[eid]
    for mid, score in out.hits:
        if mid in bridged and (mid not in walked or bridged[mid][0] * cfg.bridge_weight
                               >= walked[mid][0] * cfg.traversal_weight):
            _, seed, eid, cont = bridged[mid]
            out.paths[mid] = {"score": score, "hops": 1, "path": [],
                              "bridge": {"memory": seed, "entity": names[eid], "continues": cont},
                              "text": f"shares {names[eid]} with memory {seed}"}
        elif mid in walked:
            path = walked[mid][1]
            out.paths[mid] = {"score": score, "hops": len(path), "path": [s.as_dict() for s in path],
                              "text": _render(path)}
        elif mid in mentioned:
            out.paths[mid] = {"score": score, "hops": 0, "path": [], "text": f"mentions {mentioned[mid]}"}
    return out


def _named_classes(onto: Ontology, keys: tuple[str, ...]) -> list[str]:
    """Classes the query names by label or synonym ("which *places*"), except the top classes that
    would match everything."""
    top = {str(OWL.Thing), str(RDFS.Resource), onto.resolve_class("Thing")}
    found: set[str] = set()
    for key in keys:
        for form in (key, *_singulars(key)):
            iri = onto.resolve_class(form)
            if iri is not None:
                if iri not in top:
                    found.add(iri)
                break
    return sorted(found)


def _singulars(word: str) -> list[str]:
    """English plural -> singular candidates for class labels ("cities", "places", "churches")."""
    if word.endswith("ies"):
        return [word[:-3] + "y"]
    if word.endswith("es"):
        return [word[:-1], word[:-2]]
    return [word[:-1]] if word.endswith("s") and not word.endswith("ss") else []


def _both_ways(onto: Ontology, iri: str) -> tuple[bool, bool]:
    info = onto.relations.get(iri)
    if info is None:
        return False, False
    return info.symmetric or info.inverse is not None or info.transitive, info.transitive


def _walk(
    sub: Subgraph, onto: Ontology, cfg: GraphSearchConfig, weights: Callable[[str], float], named: set[str],
    widened: set[str],
) -> dict[str, tuple[float, tuple[GraphStep, ...]]]:
    """Memory id -> (best path score, path) over typed facts, from the linked entities."""
    by_entity: dict[str, list[Relation]] = {}
    for rel in sub.relations:
        by_entity.setdefault(rel.source_id, []).append(rel)
        if rel.target_id is not None and rel.target_id != rel.source_id:
            by_entity.setdefault(rel.target_id, []).append(rel)
    names = {eid: e.name for eid, e in sub.entities.items()}
    reached: dict[str, _Reach] = {eid: _Reach(1.0, ()) for eid in sub.linked.values()}
    facts: dict[str, tuple[float, tuple[GraphStep, ...], Relation]] = {}
    frontier = list(sub.linked.values())
    for _hop in range(cfg.depth):
        if not frontier:
            break
        here = set(frontier)
        touching = {r.id: r for eid in frontier for r in by_entity.get(eid, ())}
        nxt: dict[str, _Reach] = {}
        for rel in sorted(touching.values(), key=lambda r: r.id):
            both_ways, transitive = _both_ways(onto, rel.relation)
            w = weights(rel.relation)
            if w <= 0:  # weight 0: the relation is ignored
                continue
            src, tgt = rel.source_id, rel.target_id
            b = cfg.relation_boost if rel.relation in named else 1.0
            if src in widened or tgt in widened:  # "which places": a fact reaching a place counts more
                b *= cfg.relation_boost
            ends = [(src, tgt, "forward", True)]
            if tgt is not None:
                ends.append((tgt, src, "backward", both_ways))
            best: tuple[float, tuple[GraphStep, ...]] | None = None
            u_reach = reached.get(src)
            v_reach = reached.get(tgt) if tgt is not None else None
            if (u_reach is not None and v_reach is not None and u_reach.via != rel.id and v_reach.via != rel.id
                    and src != tgt):
                hi = u_reach if u_reach.score >= v_reach.score else v_reach
                step = _step(rel, names, "forward" if hi is u_reach else "backward", onto)
                best = (max(u_reach.score, v_reach.score) * w * b, (*hi.path, step))
            for here_id, there, direction, traversable in ends:
                r = reached.get(here_id)
                if r is None or here_id not in here:
                    continue
                chained = transitive and r.chain == (rel.relation, direction)
                s = r.score * w * (1.0 if chained else cfg.decay)
                path = (*r.path, _step(rel, names, direction, onto))
                if best is None or _better(s * b, path, *best):
                    best = (s * b, path)
                if traversable and there is not None and there not in reached:
                    cand = nxt.get(there)
                    if cand is None or _better(min(1.0, s), path, cand.score, cand.path):
                        chain = (rel.relation, direction) if transitive else None
                        nxt[there] = _Reach(min(1.0, s), path, rel.id, chain)
            if best is not None:
                old = facts.get(rel.id)
                if old is None or _better(*best, old[0], old[1]):
                    facts[rel.id] = (best[0], best[1], rel)
        reached.update(nxt)
        frontier = sorted(nxt, key=lambda eid: (-nxt[eid].score, eid))[: cfg.max_frontier]
    memories: dict[str, tuple[float, tuple[GraphStep, ...]]] = {}
    for score, path, rel in facts.values():
        for mid in rel.memory_ids:
            have = memories.get(mid)
            if have is None or _better(min(1.0, score), path, *have):
                memories[mid] = (min(1.0, score), path)
    return memories


def _ppr(
    sub: Subgraph, onto: Ontology, cfg: GraphSearchConfig, weights: Callable[[str], float], named: set[str],
    seeds: dict[str, float], widened: set[str],
) -> dict[str, float]:
    """Memory id -> Personalized PageRank over the subgraph, divided by the best memory's."""
    entity_ids = sorted(sub.entities)
    memory_ids = sorted({m for m, _ in sub.mentions} | {m for r in sub.relations for m in r.memory_ids}
                        | set(seeds))
    index = {eid: i for i, eid in enumerate(entity_ids)}
    first_memory = len(entity_ids)
    index.update({mid: first_memory + i for i, mid in enumerate(memory_ids)})
    n = len(index)
    # a name few memories carry says more (HippoRAG: 1 / |passages|)
    specific = {eid: float((1 + sub.degree.get(eid, 0)) ** -cfg.specificity) for eid in entity_ids}
    mentions = [(index[mid], index[eid], specific[eid]) for mid, eid in sub.mentions if eid in index]
    src = [m for m, _, _ in mentions] + [e for _, e, _ in mentions]
    dst = [e for _, e, _ in mentions] + [m for m, _, _ in mentions]
    wts = [w for _, _, w in mentions] + [1.0] * len(mentions)
    for rel in sub.relations:
        if rel.target_id is None or rel.target_id not in index or rel.source_id not in index:
            continue
        w = weights(rel.relation) * (cfg.relation_boost if rel.relation in named else 1.0)
        if w <= 0:
            continue
        a, b = index[rel.source_id], index[rel.target_id]
        src.append(a)
        dst.append(b)
        wts.append(w)
        if _both_ways(onto, rel.relation)[0]:
            src.append(b)
            dst.append(a)
            wts.append(w)
    restart = np.zeros(n)
    outer = _outermost(list(sub.linked))
    for key, eid in sub.linked.items():
        if key in outer:
            restart[index[eid]] += specific[eid]
    for eid in widened:  # entities of a class the query names restart the walk too, at half weight
        restart[index[eid]] += 0.5 * specific[eid]
    for mid, score in seeds.items():
        if score > 0:
            restart[index[mid]] += SEED_WEIGHT * score
    if restart.sum() <= 0 or not memory_ids:
        return {}
    restart /= restart.sum()
    s_idx, d_idx, w_arr = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(wts)
    out_weight = np.bincount(s_idx, weights=w_arr, minlength=n)
    share = w_arr / out_weight[s_idx] if len(w_arr) else w_arr
    dangling = out_weight == 0  # their rank goes back to the restart distribution
    alpha = RESTART
    base, keep = alpha * restart, 1.0 - alpha
    rank = restart.copy()
    for _ in range(50):
        new = base + keep * (np.bincount(d_idx, weights=rank[s_idx] * share, minlength=n)
                             + restart * float(rank[dangling].sum()))
        done = float(np.abs(new - rank).sum()) < 1e-9
        rank = new
        if done:
            break
    mem_rank = rank[first_memory:]
    top = float(mem_rank.max())
    if top <= 0:
        return {}
    return {mid: float(r / top) for mid, r in zip(memory_ids, mem_rank, strict=True) if r > 0}


def _bridge(sub: Subgraph, cfg: GraphSearchConfig, seeds: dict[str, float], speakers: frozenset[str],
            words: frozenset[str], texts: Mapping[str, MemoryRecord]) -> dict[str, tuple[float, str, str, float]]:
    """Memory id -> (bridge score, seed memory, shared entity, share of the leftover question words it
    holds), see the module docstring. E.g. "the county *Johnnycake* is in": text finds the Johnnycake
    memory, which names McDowell County, and the answer's memory mentions McDowell County too. A
    seed's score is cubed so runner-up hits pass little. ``texts``: the records of seeds and
    neighbours (a memory without one continues nothing)."""
    if cfg.bridge_weight <= 0 or not seeds:
        return {}
    linked = set(sub.linked.values())
    by_entity: dict[str, list[str]] = {}
    of_memory: dict[str, list[str]] = {}
    for mid, eid in sub.mentions:
        by_entity.setdefault(eid, []).append(mid)
        of_memory.setdefault(mid, []).append(eid)
    best = sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))[:BRIDGE_SEEDS]
    out: dict[str, tuple[float, str, str, float]] = {}
    terms: dict[str, frozenset[str]] = {}

    def said(mid: str) -> frozenset[str]:
        if mid not in terms:
            terms[mid] = content_words(texts[mid].memory) if mid in texts else frozenset()
        return terms[mid]

    for seed, t in best:
        left = words - said(seed)
        for eid in of_memory.get(seed, ()):
            degree = sub.degree.get(eid, 0)
            if eid in linked or not 2 <= degree <= cfg.bridge_max_degree or _who(sub.entities.get(eid), speakers):
                continue
            score = t**3 * (1 + degree) ** -cfg.specificity
            for mid in by_entity[eid]:
                if mid == seed:
                    continue
                cont = len(left & said(mid)) / len(left) if left else 0.0
                if mid not in out or score * (1 + cont) > out[mid][0]:
                    out[mid] = (score * (1 + cont), seed, eid, cont)
    return out


def _who(ent: Entity | None, speakers: frozenset[str]) -> bool:
    """Whether the entity is the scope's own user (named, or aliased, by its ``user_id``) or a speaker
    of the seeds: what they say is about them, so sharing them is no second hop."""
    if ent is None:
        return False
    names = {norm_name(ent.name), *(norm_name(a) for a in ent.aliases)}
    return bool(names & speakers) or (ent.user_id is not None and norm_name(ent.user_id) in names)


def _better(score: float, path: tuple[GraphStep, ...], other: float, other_path: tuple[GraphStep, ...]) -> bool:
    """Higher score, then the shorter path, then the smaller fact ids: the same choice on every backend,
    whatever order the store returns facts in."""
    if score != other:
        return score > other
    return (len(path), [s.fact_id for s in path]) < (len(other_path), [s.fact_id for s in other_path])


def _step(rel: Relation, names: dict[str, str], direction: str, onto: Ontology) -> GraphStep:
    target = names.get(rel.target_id, rel.target_id) if rel.target_id is not None else str(rel.value)
    return GraphStep(rel.id, names.get(rel.source_id, rel.source_id), _short(onto, rel.relation), target, direction)


def _render(path: tuple[GraphStep, ...]) -> str:
    """``Ana -[livesIn]-> Niterói <-[locatedIn]- Icaraí``: entity, relation, entity… in walking order."""
    if not path:
        return ""
    first = path[0]
    parts = [first.source if first.direction == "forward" else first.target]
    for s in path:
        if s.direction == "forward":
            parts.append(f"-[{s.relation}]-> {s.target}")
        else:
            parts.append(f"<-[{s.relation}]- {s.source}")
    return " ".join(parts)


def _weights(onto: Ontology, cfg: GraphSearchConfig) -> Callable[[str], float]:
    """Relation IRI -> weight: its own configured weight, else the first weighted super-property's, else 1."""
    table: dict[str, float] = {}
    for key, value in cfg.relation_weights.items():
        iri = onto.resolve_relation(key) or key
        table[iri] = value
    cache: dict[str, float] = {}

    def weight(iri: str) -> float:
        if iri not in cache:
            w = table.get(iri)
            info = onto.relations.get(iri)
            if w is None and info is not None:
                w = next((table[p] for p in info.super_properties if p in table), None)
            cache[iri] = 1.0 if w is None else w
        return cache[iri]

    return weight
