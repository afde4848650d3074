"""The LLM extractor: any OpenAI-compatible chat model, adapted to what its server accepts."""

from .extractor import LLMExtractor, LLMStats

__all__ = ["LLMExtractor", "LLMStats"]
