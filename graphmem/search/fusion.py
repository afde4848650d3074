"""Score fusion shared by every backend, so the same candidates always give the same ranking.

Each signal's raw scores are first mapped to [0, 1] (``search.normalize``: cosine clipped at 0,
graph scores as they are, BM25 divided by the query's best score; or each signal stretched over the
query's candidates), then combined by a weighted sum.
"""

from __future__ import annotations

import heapq
from typing import Any

from ..config import SearchConfig


def _normalize(signal: str, hits: list[tuple[str, float]], cfg: SearchConfig) -> dict[str, float]:
    if cfg.normalize == "minmax" and hits:  # each signal spans [0, 1] over this query's candidates
        hi, lo = max(s for _, s in hits), min(s for _, s in hits)
        return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in hits}
    if signal in ("vector", "graph"):  # cosine; graph scores are already in [0, 1]
        return {i: max(0.0, min(1.0, s)) for i, s in hits}
    best = max((s for _, s in hits), default=0.0)
    return {i: (s / best if best > 0 else 0.0) for i, s in hits}


class Fusion:
    """One query's fused scores (weighted sum of the normalized signals).

    The per-signal breakdown is built only for the hits asked about (:meth:`details`): a search
    fuses a few hundred candidates and shows about ten.
    """

    def __init__(self, signals: dict[str, list[tuple[str, float]]], cfg: SearchConfig) -> None:
        self._weights = {s: cfg.weights.get(s, 0.0) for s in signals if cfg.weights.get(s, 0.0) > 0}
        self._total = sum(self._weights.values()) or 1.0
        self._signals = {s: hits for s, hits in signals.items() if s in self._weights}  # weight 0: ignored
        self._norms = {s: _normalize(s, hits, cfg) for s, hits in self._signals.items()}
        self._ranks: dict[str, dict[str, int]] = {}
        self.scores: dict[str, float] = {}
        scores, total = self.scores, self._total
        for signal, hits in self._signals.items():  # _part, inlined: this loop sees every candidate
            weight, norm = self._weights[signal], self._norms[signal]
            for mid, _ in hits:
                scores[mid] = scores.get(mid, 0.0) + weight * norm[mid] / total

    def _part(self, signal: str, mid: str) -> float:
        return self._weights[signal] * self._norms[signal][mid] / self._total

    def ranked(self) -> list[tuple[str, float]]:
        """(id, fused score), best first, ties by id."""
        return sorted(self.scores.items(), key=lambda kv: (-kv[1], kv[0]))

    def top(self, n: int) -> list[tuple[str, float]]:
        """The first ``n`` of :meth:`ranked`, without sorting the rest."""
        return heapq.nsmallest(n, self.scores.items(), key=lambda kv: (-kv[1], kv[0]))

    def details(self, mid: str) -> dict[str, Any]:
        """Each signal's share of ``mid``'s score: raw and normalized score, rank, contribution."""
        out: dict[str, Any] = {}
        for signal, hits in self._signals.items():
            ranks = self._ranks.get(signal)
            if ranks is None:
                ranks = self._ranks[signal] = {m: r for r, (m, _) in enumerate(hits, start=1)}
            rank = ranks.get(mid)
            if rank is not None:
                out[signal] = {"raw": hits[rank - 1][1], "normalized": self._norms[signal][mid], "rank": rank,
                               "contribution": self._part(signal, mid)}
        return out
