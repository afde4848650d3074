"""Score fusion shared by every backend, so the same candidates always give the same ranking.

A fusion rule (``search.fusion``) gives each of one signal's hits a share in [0, 1]; a memory's fused
score is the weighted mean (``search.weights``) of its shares, a signal that did not return it adding
0. Why this shape: the three signals score on unlike scales (cosine, unbounded BM25, graph scores in
[0, 1]), and a rule only has to decide how one scale maps to [0, 1], from scores or from ranks; the
weights, the bounded top and ``explain`` stay the same for every rule. Built in:

- ``weighted``: cosine clipped at 0, graph scores as they are, BM25 divided by the query's best;
- ``minmax``: each signal stretched over the query's candidates, its worst 0 and its best 1;
- ``rrf``: reciprocal rank, ``(k + 1) / (k + rank)`` with ``k = search.rrf_k`` (the usual
  ``1 / (k + rank)`` scaled so a signal's first hit has 1, which keeps thresholds meaningful).

:func:`register` adds a rule by name, which ``search.fusion`` can then choose.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import SearchConfig

Hits = Sequence[tuple[str, float]]
"""One signal's hits: (memory id, raw score), best first."""


class FusionRule(Protocol):
    """Maps one signal's hits to shares in [0, 1] (``signal``: ``vector``, ``fulltext`` or ``graph``)."""

    def __call__(self, signal: str, hits: Hits, cfg: SearchConfig) -> dict[str, float]: ...


def weighted(signal: str, hits: Hits, cfg: SearchConfig) -> dict[str, float]:
    """Scores kept where they are comparable across queries: a strong hit counts as strong."""
    if signal in ("vector", "graph"):  # cosine; graph scores are already in [0, 1]
        return {i: max(0.0, min(1.0, s)) for i, s in hits}
    best = max((s for _, s in hits), default=0.0)
    return {i: (s / best if best > 0 else 0.0) for i, s in hits}


def minmax(signal: str, hits: Hits, cfg: SearchConfig) -> dict[str, float]:
    """A signal whose scores lie close together (cosines of one topic) still separates its hits."""
    if not hits:
        return {}
    hi, lo = max(s for _, s in hits), min(s for _, s in hits)
    return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in hits}


def rrf(signal: str, hits: Hits, cfg: SearchConfig) -> dict[str, float]:
    """Ranks only: no signal's scale can dominate, at the price of how far apart the scores are."""
    k = cfg.rrf_k
    return {i: (k + 1) / (k + rank) for rank, (i, _) in enumerate(hits, start=1)}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""The form ``search.fusion`` accepts on load."""
_RULES: dict[str, FusionRule] = {"weighted": weighted, "minmax": minmax, "rrf": rrf}


def register(name: str, rule: FusionRule, *, replace: bool = False) -> None:
    """Make ``rule`` choosable as ``search.fusion: name``; a built-in or taken name needs ``replace``."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"a fusion rule's name is a letter or _ then up to 63 letters, digits or _, not {name!r}")
    if name in _RULES and not replace:
        raise ValueError(f"fusion rule {name!r} exists; pass replace=True to replace it")
    _RULES[name] = rule


def rules() -> list[str]:
    """The names ``search.fusion`` accepts."""
    return sorted(_RULES)


def fusion_rule(name: str) -> FusionRule:
    try:
        return _RULES[name]
    except KeyError:
        raise ConfigError(f"search.fusion: no fusion rule {name!r}; available: {', '.join(rules())} "
                          "(graphmem.search.fusion.register adds one)") from None


class Fusion:
    """One query's fused scores under ``cfg.fusion`` (or ``rule``).

    The per-signal breakdown is built only for the hits asked about (:meth:`details`): a search
    fuses a few hundred candidates and shows about ten.
    """

    def __init__(self, signals: dict[str, list[tuple[str, float]]], cfg: SearchConfig, rule: str | None = None) -> None:
        self.rule = cfg.fusion if rule is None else rule
        share = fusion_rule(self.rule)
        self._weights = {s: cfg.weights.get(s, 0.0) for s in signals if cfg.weights.get(s, 0.0) > 0}
        self._total = sum(self._weights.values()) or 1.0
        self._signals = {s: hits for s, hits in signals.items() if s in self._weights}  # weight 0: ignored
        self._norms = {s: share(s, hits, cfg) for s, hits in self._signals.items()}
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
