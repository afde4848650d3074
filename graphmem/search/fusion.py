"""Score fusion shared by every backend, so the same candidates always give the same ranking.

Each signal's raw scores are first mapped to [0, 1] (cosine clipped at 0; graph scores as they are;
BM25 divided by the query's best score, or squashed by a logistic curve), then combined by a weighted sum, or by
reciprocal-rank fusion which ignores score scales altogether.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..config import SearchConfig


@dataclass
class Fused:
    id: str
    score: float
    details: dict[str, Any] = field(default_factory=dict)


def _normalize(signal: str, hits: list[tuple[str, float]], cfg: SearchConfig) -> dict[str, float]:
    if cfg.normalize == "minmax" and hits:  # each signal spans [0, 1] over this query's candidates
        hi, lo = max(s for _, s in hits), min(s for _, s in hits)
        return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in hits}
    if cfg.normalize == "zscore" and hits:  # how far a hit stands out of this signal's candidates
        values = [s for _, s in hits]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if std == 0:
            return {i: 0.5 for i, _ in hits}
        return {i: 1.0 / (1.0 + math.exp(-(s - mean) / std)) for i, s in hits}
    if signal in ("vector", "graph"):  # cosine; graph scores are already in [0, 1]
        return {i: max(0.0, min(1.0, s)) for i, s in hits}
    if cfg.fulltext_norm == "sigmoid":
        return {i: 1.0 / (1.0 + math.exp(-(s - cfg.fulltext_sigmoid_mid))) for i, s in hits}
    best = max((s for _, s in hits), default=0.0)
    return {i: (s / best if best > 0 else 0.0) for i, s in hits}


def fuse(signals: dict[str, list[tuple[str, float]]], cfg: SearchConfig, *, details: bool = True) -> list[Fused]:
    """Combine ranked per-signal hits (best first) into one list, best first, ties by id.
    ``details=False`` skips the per-signal breakdown (for scores only, e.g. choosing graph seeds)."""
    weights = {s: cfg.weights.get(s, 0.0) for s in signals if cfg.weights.get(s, 0.0) > 0}
    total = sum(weights.values()) or 1.0
    rrf = cfg.fusion == "rrf"
    results: dict[str, Fused] = {}
    for signal, hits in signals.items():
        if signal not in weights:  # weight 0: the signal neither scores nor brings candidates
            continue
        norm = _normalize(signal, hits, cfg)
        for rank, (mid, raw) in enumerate(hits, start=1):
            part = weights[signal] / (cfg.rrf_k + rank) if rrf else weights[signal] * norm[mid] / total
            entry = results.get(mid)
            if entry is None:
                entry = results[mid] = Fused(mid, 0.0)
            entry.score += part
            if details:
                entry.details[signal] = {"raw": raw, "normalized": norm[mid], "rank": rank, "contribution": part}
    return sorted(results.values(), key=lambda f: (-f.score, f.id))
