"""Cypher of re-embedding (see :mod:`..reembed`): staged vectors live in ``reembed_vec`` beside the
``reembed_check`` they were computed for (the memory's hash, the entity's name); an empty list
stands for a zero vector, which the cosine index refuses (the node is then stored without one)."""

from __future__ import annotations

from typing import Final

SOURCES: Final = {
    # kind: (label, text property, check property, rows that carry a vector)
    "memory": ("Memory", "memory", "hash", "true"),
    "entity": ("Entity", "name", "name", "n.embedding IS NOT NULL"),
}
READ_TARGET: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.reembed_target AS target"
WRITE_TARGET: Final = "MATCH (g:GraphmemMeta {key: 'schema'}) SET g.reembed_target = $target"


def unstaged(kind: str) -> str:
    label, _, check, has = SOURCES[kind]
    return (f"MATCH (n:{label}) WHERE {has} AND "
            f"(n.reembed_check IS NULL OR n.reembed_check <> n.{check})")


def clear(kind: str, batch: int) -> str:
    """Forget staged vectors (of another target): in batches, as an implicit transaction."""
    label = SOURCES[kind][0]
    return (f"MATCH (n:{label}) WHERE n.reembed_check IS NOT NULL "
            f"CALL (n) {{ REMOVE n.reembed_check, n.reembed_vec }} IN TRANSACTIONS OF {batch} ROWS")


def pending(kind: str, scope_where: str) -> str:
    _, text, check, _ = SOURCES[kind]
    return (f"{unstaged(kind)} AND {scope_where} AND ($after IS NULL OR n.id > $after) "
            f"RETURN n.id AS key, n.{text} AS text, n.{check} AS check ORDER BY n.id LIMIT $limit")


def count(kind: str, scope_where: str) -> str:
    return f"{unstaged(kind)} AND {scope_where} RETURN count(n) AS n"


def stage(kind: str) -> str:
    label, _, check, _ = SOURCES[kind]
    return (f"UNWIND $rows AS r MATCH (n:{label} {{id: r.key}}) WHERE n.{check} = r.check "
            "SET n.reembed_check = r.check, n.reembed_vec = r.vec")


def swap(kind: str) -> str:
    """Staged vectors become the live ones (one statement per kind, inside the switch transaction)."""
    label = SOURCES[kind][0]
    has = "" if kind == "memory" else " AND n.embedding IS NOT NULL"
    return (f"MATCH (n:{label}) WHERE n.reembed_check IS NOT NULL{has} "
            "CALL (n) { WITH n WHERE size(n.reembed_vec) > 0 "
            "CALL db.create.setNodeVectorProperty(n, 'embedding', n.reembed_vec) } "
            "CALL (n) { WITH n WHERE size(n.reembed_vec) = 0 REMOVE n.embedding } "
            "REMOVE n.reembed_check, n.reembed_vec")


def drop_staged(kind: str) -> str:
    """Staged vectors of rows that carry none any more (an entity stored without): removed."""
    label = SOURCES[kind][0]
    return f"MATCH (n:{label}) WHERE n.reembed_check IS NOT NULL REMOVE n.reembed_check, n.reembed_vec"


PIN: Final = ("MATCH (g:GraphmemMeta {key: 'schema'}) SET g.embedder = $embedder, g.dims = $dims "
              "REMOVE g.reembed_target")
