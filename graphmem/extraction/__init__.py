"""Extractors: turning a chunk of conversation into memories, entities and triples."""

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
)

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
]
