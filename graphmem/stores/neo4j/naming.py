"""Ontology IRIs as Neo4j labels and relationship types: the store's one entry to the naming rule.

Both functions apply :func:`~graphmem.ontology.naming.neo4j_label` /
:func:`~graphmem.ontology.naming.neo4j_type`, the rule the ontology checks its names with, so an IRI
ending in ``/`` or ``#`` gets the same name from both. What comes out of here is inlined in Cypher
back-quoted, so only a safe, unreserved name ever leaves.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import StoreError
from ...ontology.naming import RESERVED_LABELS, RESERVED_TYPES, is_safe, neo4j_label, neo4j_type

__all__ = ["class_labels", "rel_type"]


def class_labels(classes: Iterable[str]) -> list[str]:
    """Labels for class IRIs: safe, unreserved, de-duplicated; others get no label."""
    out: list[str] = []
    for iri in classes:
        label = neo4j_label(iri)
        if is_safe(label) and label not in RESERVED_LABELS and label not in out:
            out.append(label)
    return out


def rel_type(relation: str) -> str:
    """The relationship type of a property IRI; refuses one that cannot be a safe identifier."""
    name = neo4j_type(relation)
    if not is_safe(name) or name in RESERVED_TYPES:
        raise StoreError(
            f"relation {relation!r} maps to the relationship type {name!r}, which is not a safe, unreserved "
            "identifier; nothing was written (rename the property in the ontology)"
        )
    return name
