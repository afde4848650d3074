"""Optional second-stage reranking of the best fused results.

A cross-encoder reads the query and a memory together, which a bi-encoder cannot, so it orders a
short list better than any fused score; it is also far slower per item, hence only the top
``search.rerank.top_n``. Any object with ``score(query, texts)`` can serve (``Memory(reranker=...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import ConfigError


class Reranker(Protocol):
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to ``query``; higher is better, any scale."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` (model name on the hub, or a local folder)."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError(
                "search.rerank.model needs sentence-transformers: pip install 'graphmem[local]'") from exc
        try:
            self._model: Any = CrossEncoder(model)
        except Exception as exc:  # the library raises many types for a missing model
            raise ConfigError(f"cannot load the cross-encoder {model!r}: {exc}") from exc
        self.name = model

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return [float(s) for s in self._model.predict([(query, t) for t in texts])]
