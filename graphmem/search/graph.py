"""The graph candidate generator: memories reached from the query's entities over typed facts.

Application side, through the :class:`~graphmem.stores.base.Store` interface only, so both backends
give the same ranking (a later single-Cypher version on Neo4j must reproduce it).

Steps
-----
1. **Linking.** The query's 1-4 word n-grams are looked up as normalized entity names and aliases
   (``find_entities(..., exact=False)``: every entity the read scope contains). At most
   ``graph_max_seeds`` entities, longest n-grams first. Seeds score 1.
2. **Relations named in the query.** The same n-grams are resolved with
   :meth:`~graphmem.ontology.Ontology.resolve_relation` (labels, synonyms); a fact whose relation is
   one of them, their inverse, or a sub-property of these is *boosted*.
3. **Expansion**, one ``graph_context`` call per hop, up to ``graph_depth`` hops. Every fact is
   traversable from its source; from its target too when the relation is symmetric, has an inverse
   (the inverse is the same edge read backwards) or is transitive (reading a transitive chain
   backwards computes the entailed facts that end at the entity we stand on).
4. **Scoring.** Let ``w(f)`` be the relation weight (``graph_relation_weights``, default 1; a
   relation without its own weight takes the first weighted super-property's; 0 ignores the
   relation). Crossing ``f`` from a reached entity ``u`` gives::

       step(f, u) = s(u) * w(f) * decay       (decay = graph_decay, default 0.5)
       step(f, u) = s(u) * w(f)                when f continues a chain of the same transitive
                                               relation in the same direction (no extra decay)

   An entity's score ``s`` is the best ``step`` that reached it (seeds: 1), kept from the hop it was
   first reached. A fact's score is the best ``step`` from either reached end (also from an end it
   cannot be traversed from: the fact is still *about* that entity), except that a fact joining two
   entities reached independently of it (neither one's best path ends with it) scores
   ``max(s(u), s(v)) * w(f)``, without decay: such a fact connects two things the query is about.
   A fact whose relation is named in the query (or is a sub-property of one, or the inverse of one)
   has its score multiplied by ``graph_relation_boost``; the boost ranks facts, it does not carry
   on to the entities beyond them. A memory's graph score is the best score of the facts it
   supports (provenance ``memory_ids``), clipped to [0, 1]. Ties: memory id. Each hop expands at
   most ``graph_max_frontier`` newly reached entities (the best-scored), so a hub cannot blow a
   search up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models import Entity, Relation, Scope, norm_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SearchConfig
    from ..ontology import Ontology
    from ..stores.base import Store

__all__ = ["GraphResult", "GraphStep", "graph_candidates", "query_ngrams"]

_WORD = re.compile(r"\w+", re.UNICODE)


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
    """Per memory: its best path, from a linked query entity to the fact the memory supports."""
    linked: list[str] = field(default_factory=list)
    """Names of the linked query entities."""
    relations: list[str] = field(default_factory=list)
    """Relations named in the query (IRIs; sub-properties are boosted too)."""
    round_trips: int = 0


def query_ngrams(text: str, longest: int = 4) -> list[str]:
    """Normalized 1..``longest`` word n-grams of ``text``, longest first, then in reading order."""
    words = [w.casefold() for w in _WORD.findall(text)]
    out: dict[str, None] = {}
    for n in range(longest, 0, -1):
        for i in range(len(words) - n + 1):
            out.setdefault(norm_name(" ".join(words[i : i + n])), None)
    return [k for k in out if k]


def _short(ontology: Ontology | None, iri: str) -> str:
    info = ontology.relations.get(iri) if ontology is not None else None
    return info.name if info is not None else iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def graph_candidates(
    store: Store,
    ontology: Ontology | Callable[[], Ontology],
    scope: Scope,
    query: str,
    k: int,
    cfg: SearchConfig,
) -> GraphResult:
    """Top-``k`` memories by graph score (see the module docstring). ``ontology`` may be a callable
    that loads it: it is only needed once some query entity is linked."""
    out = GraphResult()
    grams = query_ngrams(query)
    if not grams:
        return out
    found = store.find_entities(scope, grams, exact=False)
    out.round_trips += 1
    seeds: dict[str, Entity] = {}
    for key in grams:  # longest first: "new york city" before "york"
        e = found.get(key)
        if e is not None and e.id not in seeds and len(seeds) < cfg.graph_max_seeds:
            seeds[e.id] = e
    if not seeds:
        return out
    onto = ontology if not callable(ontology) else ontology()
    named: set[str] = set()
    for key in grams:
        iri = onto.resolve_relation(key)
        info = onto.relations.get(iri) if iri is not None else None
        if info is not None:  # "employs" also names worksFor facts read backwards
            for p in (info.iri, info.inverse):
                if p is not None:
                    named.add(p)
                    named.update(onto.sub_properties(p))
    out.linked = [e.name for e in seeds.values()]
    out.relations = sorted(named)
    names: dict[str, str] = {e.id: e.name for e in seeds.values()}
    reached: dict[str, _Reach] = {eid: _Reach(1.0, ()) for eid in seeds}
    facts: dict[str, tuple[float, tuple[GraphStep, ...], Relation]] = {}
    weights = _weights(onto, cfg)

    def boost(rel: Relation) -> float:
        return cfg.graph_relation_boost if rel.relation in named else 1.0

    frontier = list(seeds)
    for _hop in range(cfg.graph_depth):
        if not frontier:
            break
        ctx = store.graph_context(scope, frontier)
        out.round_trips += 1
        names.update({eid: e.name for eid, e in ctx.entities.items()})
        here = set(frontier)
        nxt: dict[str, _Reach] = {}
        for rel in ctx.relations:
            info = onto.relations.get(rel.relation)
            both_ways = info is not None and (info.symmetric or info.inverse is not None or info.transitive)
            transitive = info is not None and info.transitive
            w = weights(rel.relation)
            if w <= 0:  # weight 0: the relation is ignored
                continue
            b = boost(rel)
            src, tgt = rel.source_id, rel.target_id
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
                s = r.score * w * (1.0 if chained else cfg.graph_decay)
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
        frontier = sorted(nxt, key=lambda eid: (-nxt[eid].score, eid))[: cfg.graph_max_frontier]

    memories: dict[str, tuple[float, tuple[GraphStep, ...]]] = {}
    for score, path, rel in facts.values():
        for mid in rel.memory_ids:
            have = memories.get(mid)
            if have is None or _better(min(1.0, score), path, *have):
                memories[mid] = (min(1.0, score), path)
    ranked = sorted(memories.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    out.hits = [(mid, score) for mid, (score, _) in ranked]
    for mid, (score, path) in ranked:
        out.paths[mid] = {
            "score": score,
            "hops": len(path),
            "path": [s.as_dict() for s in path],
            "text": _render(path),
        }
    return out


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


def _weights(onto: Ontology, cfg: SearchConfig) -> Callable[[str], float]:
    """Relation IRI -> weight: its own configured weight, else the first weighted super-property's, else 1."""
    table: dict[str, float] = {}
    for key, value in cfg.graph_relation_weights.items():
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
