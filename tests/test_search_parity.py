"""Search parity on both built-in backends: the backend kit's tests
(:mod:`graphmem.testing.walk_parity`: each store's search equals its two calls and the walk, and
equals the reference SQLite store, full-text hits included), collected here and run on SQLite and
Neo4j; and what only Neo4j promises: one round trip per search, and fallbacks that change nothing
when its indexes cut the hits short.
"""

from __future__ import annotations

import itertools
from types import MethodType
from typing import Any

import pytest

from graphmem.config import GraphSearchConfig
from graphmem.models import Scope
from graphmem.search.graph import graph_query
from graphmem.stores.base import Store
from graphmem.stores.neo4j import Neo4jStore
from graphmem.testing.walk_parity import *  # noqa: F403 - the kit's tests, collected here
from graphmem.testing.walk_parity import (
    EMBEDDER,
    MAX_MENTIONS,
    NO_FULLTEXT,
    QUERIES,
    World,
    cands_shape,
    graph_config,
    read,
    search_config,
    sub_shape,
)

NEO4J = [pytest.param("neo4j", marks=pytest.mark.neo4j)]


@pytest.mark.slow
@pytest.mark.parametrize("backend", NEO4J, indirect=True)
def test_neo4j_answers_in_one_round_trip(worlds: tuple[World, World]) -> None:
    """Candidates, the walk and the fact states of the records in one statement."""
    _, neo = worlds
    assert isinstance(neo.mem.store, Neo4jStore)
    scope = Scope(user_id=neo.uid)
    for text, opts in QUERIES:
        kw: dict[str, Any] = {"filters": opts.get("filters")}
        if opts.get("as_of"):
            kw["as_of"] = neo.as_of
        where = f"query {text!r} {opts}"
        assert read(neo.mem.store, scope, text, graph_config(opts), **kw)[0].round_trips == 1, where
        neo.mem.config.search = search_config(opts, weights=NO_FULLTEXT)
        assert neo.mem.search(text, user_id=neo.uid, top_k=20, explain=True, **kw)["round_trips"] == 1, where
        with pytest.MonkeyPatch.context() as mp:  # the base class's two calls: the fact states still come along
            mp.setattr(neo.mem.store, "search", MethodType(Store.search, neo.mem.store))
            assert neo.mem.search(text, user_id=neo.uid, top_k=20, explain=True, **kw)["round_trips"] == 2, where
    gq = graph_query("Bruno and Ana", GraphSearchConfig(max_mentions=MAX_MENTIONS))
    assert neo.mem.store.search(scope, None, None, None, 40, gq)[0].round_trips == 1


@pytest.mark.parametrize("backend", NEO4J, indirect=True)
@pytest.mark.slow
def test_cut_short_hits(worlds: tuple[World, World], monkeypatch: pytest.MonkeyPatch) -> None:
    """When the indexes cut the hits short, fallbacks add round trips but change nothing else.

    Forced with a tiny index over-fetch and no exact scoring: a filter that nothing matches always
    falls back (its seeds cannot change, so the first read's subgraph stands); the others fall back
    when the database holds enough other memories, and then their seeds usually change (the
    neighbourhood is read again)."""
    lite, neo = worlds
    assert isinstance(neo.mem.store, Neo4jStore)
    monkeypatch.setattr("graphmem.stores.neo4j.search._KK_FLOOR", 1)
    monkeypatch.setattr("graphmem.stores.neo4j.search._QUANTIZED_OVERFETCH", 1)
    indexed = Neo4jStore(neo.mem.config.store.model_copy(update={"vector_exact_max": 0}))
    indexed.open(EMBEDDER.name, EMBEDDER.dims)
    scope = Scope(user_id=neo.uid)
    text = "Where does Bruno live"
    try:
        for filters, seeds in itertools.product(
                ({"topic": "nothing"}, {"topic": "home"}, {"topic": {"in": ["work", "chat"]}}), (8, 0)):
            cfg = GraphSearchConfig(max_mentions=MAX_MENTIONS, seed_memories=seeds)
            one_c, one_s = read(indexed, scope, text, cfg, filters=filters, k=1)
            two_c, two_s = read(indexed, scope, text, cfg, filters=filters, k=1, two_calls=True)
            sql_c, sql_s = read(lite.mem.store, scope, text, cfg, filters=filters, k=1)
            where = (filters, seeds)
            assert one_c.round_trips <= two_c.round_trips, where
            if filters["topic"] == "nothing":
                assert one_c.round_trips == two_c.round_trips - 1 >= 2, where
            assert cands_shape(one_c) == cands_shape(two_c) == cands_shape(sql_c), where
            assert sub_shape(one_s) == sub_shape(two_s) == sub_shape(sql_s), where
            assert one_s.entities, where
    finally:
        indexed.close()
