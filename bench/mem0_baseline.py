"""mem0 2.x search scoring, re-implemented over graphmem's stored data as a benchmark baseline.

Re-implemented from mem0's documented behaviour (2.0.x release notes: ``explain=True`` returns a
``score_breakdown`` with semantic, keyword (normalized BM25) and entity-boost parts; mem0 issue #5742:
candidates come from the semantic top-k only, BM25 and entity hits outside that pool are scored but
never ranked; the threshold gates on the semantic score). No mem0 code is used. What it does:

1. candidates = the semantic (vector) top ``n`` of the scope; nothing else can enter;
2. ``keyword = sigmoid((bm25 - mid) / steep)`` for candidates that the full-text index also found
   (0 otherwise); ``mid`` and ``steep`` grow with the number of query terms, because a longer query
   sums more BM25 terms;
3. ``entity = ENTITY_WEIGHT * max cosine`` over the query's linked entities that the memory mentions
   (linked: exact normalized name/alias match of a query n-gram, or the nearest stored entity of a
   capitalised query span with cosine >= ``ENTITY_MIN_SIM``);
4. ``score = (semantic + keyword + entity) / (1 + 1 + ENTITY_WEIGHT)``, sorted descending.

The constants are ours (mem0 does not document its numbers); they are stated in the benchmark JSON.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

from graphmem import Memory
from graphmem.models import Scope, norm_name

ENTITY_WEIGHT = 0.5
ENTITY_MIN_SIM = 0.8
_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")
_CAPS = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


@dataclass
class Mem0Scorer:
    """Scores one query like mem0 2.x would, using only the store's candidates and stored entities."""

    memory: Memory
    entity_weight: float = ENTITY_WEIGHT
    entity_min_sim: float = ENTITY_MIN_SIM

    def params(self) -> dict[str, Any]:
        return {"entity_weight": self.entity_weight, "entity_min_sim": self.entity_min_sim,
                "bm25_sigmoid": "mid = 1.5 * n_terms, steep = max(1, 0.5 * n_terms)",
                "score": "(semantic + keyword + entity) / (2 + entity_weight)"}

    def search(self, query: str, user_id: str, top_k: int) -> list[dict[str, Any]]:
        scope = Scope.of(user_id, None, None)
        vector = self.memory.embedder.embed_one(query)
        cands = self.memory.store.candidates(scope, None, vector, query, top_k)
        bm25 = dict(cands.fulltext)
        terms = _WORD.findall(query)
        mid, steep = 1.5 * len(terms), max(1.0, 0.5 * len(terms))
        linked = self._link(scope, query, terms)
        scored = []
        for mid_id, cos in cands.vector:
            rec = cands.records[mid_id]
            keyword = 1.0 / (1.0 + math.exp(-(bm25[mid_id] - mid) / steep)) if mid_id in bm25 else 0.0
            text = f" {norm_name(rec.memory)} "
            ent = max((sim for names, sim in linked if any(f" {n} " in text for n in names)), default=0.0)
            score = (max(0.0, cos) + keyword + self.entity_weight * ent) / (2.0 + self.entity_weight)
            scored.append((score, mid_id))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [{**cands.records[i].public(), "score": s} for s, i in scored]

    def _link(self, scope: Scope, query: str, terms: list[str]) -> list[tuple[list[str], float]]:
        """Query entities -> (mention keys, similarity): exact names first, then vector neighbours."""
        grams = {norm_name(" ".join(terms[i : i + n])) for n in (1, 2, 3) for i in range(len(terms) - n + 1)}
        found = self.memory.store.find_entities(scope, sorted(grams))
        out = [([e.key, *(norm_name(a) for a in e.aliases)], 1.0) for e in found.values()]
        spans = [s for s in _CAPS.findall(query) if norm_name(s) not in found]
        if spans:
            vecs = self.memory.embedder.embed(spans)
            for hit in self.memory.store.similar_entities(scope, vecs):
                if hit is not None and hit[1] >= self.entity_min_sim:
                    out.append(([hit[0].key, *(norm_name(a) for a in hit[0].aliases)], float(hit[1])))
        return out


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000.0
