"""Extractors: turning a chunk of conversation into memories, entities and triples."""

from typing import TYPE_CHECKING, Any

from .schema import (
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

if TYPE_CHECKING:
    from .rules import RuleExtractor

__all__ = [
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractedTriple",
    "Extraction",
    "ExtractionContext",
    "Extractor",
    "KnownEntity",
    "KnownMemory",
    "Rejection",
    "RuleExtractor",
    "Skipped",
]


def __getattr__(name: str) -> Any:
    # The rule extractor on demand: importing it is cheap, but an extractor-free program need not.
    if name == "RuleExtractor":
        from .rules import RuleExtractor

        return RuleExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
