"""Ranking: fusing per-signal candidates into one ordered result list."""

from .fusion import Fused, fuse

__all__ = ["Fused", "fuse"]
