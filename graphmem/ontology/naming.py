"""The one naming policy from ontology IRIs to Neo4j identifiers.

Class local names become labels in ``PascalCase``; object-property local names become relationship
types in ``UPPER_SNAKE_CASE`` (``worksFor`` -> ``WORKS_FOR``). Every produced name matches
:data:`SAFE_NAME`, so Cypher can inline it between back-quotes without escaping; a local name that
cannot be turned into such a name is refused when the ontology loads, never at query time.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Final

SAFE_NAME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
RESERVED_LABELS: Final = frozenset(
    {"Memory", "Entity", "HistoryEvent", "GraphmemMeta", "GraphmemThread", "Quarantine", "Value"})
"""Labels graphmem writes its own nodes under; an ontology class with one of these names would mix
entity nodes with engine nodes."""
RESERVED_TYPES: Final = frozenset({"MENTIONS"})
"""Relationship types graphmem writes itself (memory -> entity links)."""

_WORD_SPLIT: Final = re.compile(r"[\s_\-.]+")
_CAMEL_1: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")  # "URLOf" -> "URL_Of"
_CAMEL_2: Final = re.compile(r"([a-z0-9])([A-Z])")  # "worksFor" -> "works_For"


def local_name(iri: str) -> str:
    """The part after the last ``#``, ``/`` or ``:`` (the name a person wrote in the ontology); an
    IRI ending in a separator (``…/Person/``) is named by the part before it."""
    iri = iri.rstrip("/#") or iri
    for sep in ("#", "/", ":"):
        _head, found, tail = iri.rpartition(sep)
        if found and tail:
            return tail
    return iri


def to_label(name: str) -> str:
    """``research_organization`` / ``research-organization`` / ``ResearchOrganization`` -> ``ResearchOrganization``."""
    words = [w for w in _WORD_SPLIT.split(name) if w]
    return "".join(w[0].upper() + w[1:] for w in words)


def to_rel_type(name: str) -> str:
    """``worksFor`` / ``works_for`` / ``works-for`` / ``WORKS_FOR`` -> ``WORKS_FOR``; ``hasURL`` -> ``HAS_URL``."""
    spaced = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", name))
    return "_".join(w for w in _WORD_SPLIT.split(spaced) if w).upper()


def neo4j_label(iri: str) -> str:
    """The Neo4j label of a class IRI: the one naming rule the ontology and the store share."""
    return to_label(local_name(iri))


def neo4j_type(iri: str) -> str:
    """The Neo4j relationship type of an object property IRI (same rule as :func:`neo4j_label`)."""
    return to_rel_type(local_name(iri))


def is_safe(name: str) -> bool:
    return SAFE_NAME.fullmatch(name) is not None


@functools.lru_cache(maxsize=8192)
def normalize_surface(text: str) -> str:
    """Case-, width- and separator-insensitive key: ``works for`` == ``worksFor`` == ``WORKS_FOR``.
    Cached: every search resolves each of its n-grams as a class and a relation."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not (ch.isspace() or ch in "_-"))
