"""Ranking: fusing per-signal candidates into one ordered result list."""

from .fusion import Fused, Fusion, fuse
from .graph import GraphResult, graph_candidates

__all__ = ["Fused", "Fusion", "GraphResult", "fuse", "graph_candidates"]
