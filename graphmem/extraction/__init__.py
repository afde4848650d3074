"""Extractors: turning a chunk of conversation into memories, entities and triples.

``extraction.provider`` picks one by name (:mod:`.registry`): ``rules``, ``llm`` or one registered
with :func:`register_extractor` or installed as a ``graphmem.extractors`` entry point.
"""

from typing import TYPE_CHECKING, Any

from .contract import (
    ExtractedEntity,
    ExtractedMemory,
    ExtractedTriple,
    Extraction,
    ExtractionContext,
    Extractor,
    KnownEntity,
    KnownMemory,
    Rejection,
    Skipped,
)
from .registry import ExtractorFactory, extractors, register_extractor

if TYPE_CHECKING:
    from .rules import RuleExtractor

__all__ = [
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractedTriple",
    "Extraction",
    "ExtractionContext",
    "Extractor",
    "ExtractorFactory",
    "KnownEntity",
    "KnownMemory",
    "Rejection",
    "RuleExtractor",
    "Skipped",
    "extractors",
    "register_extractor",
]


def __getattr__(name: str) -> Any:
    # The rule extractor on demand: importing it is cheap, but an extractor-free program need not.
    if name == "RuleExtractor":
        from .rules import RuleExtractor

        return RuleExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
