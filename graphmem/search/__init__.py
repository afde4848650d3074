"""Ranking: fusing per-signal candidates into one ordered result list."""

from .fusion import Fusion
from .graph import GraphResult, graph_candidates

__all__ = ["Fusion", "GraphResult", "graph_candidates"]
