"""Chunking by token budget (write path step 2): long input is split, never truncated.

>>> from graphmem.chunking import chunk_text, token_counter
>>> chunks = chunk_text(text, strategy="recursive", max_tokens=2000, counter=token_counter("gpt-4o-mini"))

``token_counter`` uses tiktoken when the encoding can be loaded and otherwise a conservative offline
estimate; every :class:`Chunk` names the counter that measured it. :func:`from_config` binds a
:class:`~graphmem.config.ChunkingConfig` to a :class:`Chunker`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import ChunkingConfig
from .chunker import STRATEGIES, Chunk, EmbedFn, Strategy, check_params, chunk_messages, chunk_text
from .sentences import sentence_starts, splitter_name
from .tokens import ESTIMATE, EstimateCounter, TiktokenCounter, TokenCounter, token_counter

__all__ = [
    "ESTIMATE",
    "STRATEGIES",
    "Chunk",
    "Chunker",
    "EmbedFn",
    "EstimateCounter",
    "Strategy",
    "TiktokenCounter",
    "TokenCounter",
    "chunk_messages",
    "chunk_text",
    "from_config",
    "sentence_starts",
    "splitter_name",
    "token_counter",
]


class Chunker:
    """Chunking settings checked once and bound to a counter (and embedder for ``semantic``)."""

    def __init__(
        self,
        *,
        strategy: Strategy = "recursive",
        max_tokens: int = 2000,
        overlap_tokens: int = 0,
        counter: TokenCounter | None = None,
        embed: EmbedFn | None = None,
        semantic_threshold: float = 0.5,
    ) -> None:
        check_params(strategy, max_tokens, overlap_tokens, embed, semantic_threshold)
        self.strategy: Strategy = strategy
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.counter: TokenCounter = counter if counter is not None else ESTIMATE
        self.embed = embed
        self.semantic_threshold = semantic_threshold

    def _options(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "max_tokens": self.max_tokens, "overlap_tokens": self.overlap_tokens,
                "counter": self.counter, "embed": self.embed, "semantic_threshold": self.semantic_threshold}

    def chunk(self, text: str) -> list[Chunk]:
        return chunk_text(text, **self._options())

    __call__ = chunk

    def chunk_messages(self, messages: Sequence[str]) -> list[Chunk]:
        return chunk_messages(messages, **self._options())

    def __repr__(self) -> str:
        return (
            f"Chunker(strategy={self.strategy!r}, max_tokens={self.max_tokens}, "
            f"overlap_tokens={self.overlap_tokens}, counter={self.counter.name!r})"
        )


def from_config(config: ChunkingConfig, model: str | None = None, embed: EmbedFn | None = None) -> Chunker:
    """A :class:`Chunker` for ``config``; tokens are counted with ``config.tokenizer`` (``estimate``:
    the offline estimate), else the extracting LLM ``model``'s tiktoken encoding, else the estimate.
    Raises ``ConfigError`` for settings that cannot work (``overlap_tokens >= max_tokens``,
    ``semantic`` without ``embed``)."""
    tokenizer = config.tokenizer or model
    return Chunker(
        strategy=config.strategy,
        max_tokens=config.max_tokens,
        overlap_tokens=config.overlap_tokens,
        counter=ESTIMATE if tokenizer == "estimate" else token_counter(tokenizer),
        embed=embed,
        semantic_threshold=config.semantic_threshold,
    )
