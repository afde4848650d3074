"""The storage contract on both built-in backends: the backend kit's tests
(:mod:`graphmem.testing.store_contract`, run here on SQLite and Neo4j through the ``graphmem_*``
fixtures of conftest.py), and what only these two stores promise: their ``optimize`` reports, Cypher
for analysts, Neo4j's indexes."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem import Memory
from graphmem.config import SearchConfig
from graphmem.testing.store_contract import *  # noqa: F403 - the kit's tests, collected here
from graphmem.testing.store_contract import ids


def test_optimize_reports_what_it_compacted(mem: Memory, backend: str, uid: str) -> None:
    mem.add("Ana moved to Lisbon in May", infer=False, user_id=uid)
    done = mem.optimize()
    assert done["backend"] == backend
    if backend == "neo4j":
        assert set(done["rebuilt_s"]) == {"memory_text", "entity_link", "entity_embedding", "memory_embedding"}
    else:
        assert "memories_fts" in done["fulltext_merged"]
    assert [r["memory"] for r in mem.get_all(user_id=uid)["results"]] == ["Ana moved to Lisbon in May"]


@pytest.mark.parametrize("backend", [pytest.param("neo4j", marks=pytest.mark.neo4j)], indirect=True)
def test_neo4j_cypher_reads_for_analysts(mem: Memory, uid: str) -> None:
    """Reads return plain values (times as strings); writes are refused by the kit's own test."""
    mem.add("analysts can read this", infer=False, user_id=uid)
    rows = mem.cypher("MATCH (m:Memory {user_id: $u}) RETURN m.memory AS text, m.created_at AS at", {"u": uid})
    assert rows[0]["text"] == "analysts can read this" and isinstance(rows[0]["at"], str)


@pytest.mark.parametrize("backend", [pytest.param("neo4j", marks=pytest.mark.neo4j)], indirect=True)
def test_neo4j_reads_the_answer_after_a_question_in_the_search_round_trip(mem: Memory, uid: str) -> None:
    said = [mem.add([{"role": "user", "content": t}], infer=False, user_id=uid)["results"][0]["id"]
            for t in ("Which trail did you take on Saturday?", "The Ridge Loop, about twelve kilometres.")]
    for weights in ({}, {"graph": 0.0}, {"fulltext": 0.0, "graph": 0.0}):  # with the graph's read, and without
        mem.config.search = SearchConfig(weights={**SearchConfig().weights, **weights})
        out = mem.search("Which trail did you take on Saturday?", user_id=uid, top_k=5, explain=True)
        assert out["round_trips"] == 1, weights
        reply = next(h for h in out["results"] if h["id"] == said[1])
        assert reply["score_details"]["reply"]["follows"] == said[0]


def test_optimize_turns_a_quantized_neo4j_index_exact(neo4j_available: bool, tmp_path: Any, uid: str) -> None:
    """An older store's quantized vector index is rebuilt with the current (exact) options."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    backend = "neo4j"
    from graphmem import MemoryConfig
    from graphmem.embedding import HashingEmbedder

    from .conftest import make_config

    show = "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'memory_embedding' RETURN options"
    with Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384)) as m:
        driver = m.store._driver  # type: ignore[attr-defined]
        driver.execute_query("DROP INDEX memory_embedding")
        driver.execute_query(
            "CREATE VECTOR INDEX memory_embedding FOR (m:Memory) ON (m.embedding) OPTIONS {indexConfig: "
            "{`vector.dimensions`: 384, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: true}}")
    with Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384)) as m:
        m.add("Rita lives in Porto", infer=False, user_id=uid)
        assert m.store._indexes.exact_vector is False  # type: ignore[attr-defined]
        assert ids(m.search("Porto", user_id=uid, top_k=1))
        m.optimize()
        assert m.store._indexes.exact_vector is True  # type: ignore[attr-defined]
        options = m.cypher(show)[0]["options"]
        assert options["indexConfig"]["vector.quantization.enabled"] is False
        assert m.search("Porto", user_id=uid, top_k=1)["results"][0]["memory"] == "Rita lives in Porto"


def test_neo4j_full_text_is_asked_for_the_scope(neo4j_available: bool, tmp_path: Any, uid: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """``memory_text`` holds the scope fields, so Lucene returns one scope's hits with the text's
    own BM25 scores. A store from before (text alone) is warned about and still answers; after
    ``optimize`` the same query ranks the same hits with the same scores in one round trip, also for
    a tenant whose id is a stop word (its Lucene clause drops out; the Cypher fence keeps it exact)."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    from graphmem import MemoryConfig
    from graphmem.config import SearchConfig
    from graphmem.embedding import HashingEmbedder

    from .conftest import make_config

    cfg = MemoryConfig.load(make_config("neo4j", tmp_path))
    stop_word_tenant = "the"
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        m.delete_all(user_id=stop_word_tenant)  # from an earlier run that stopped midway
        m.store._driver.execute_query("DROP INDEX memory_text")  # type: ignore[attr-defined]
        m.store._driver.execute_query(  # type: ignore[attr-defined]
            "CREATE FULLTEXT INDEX memory_text FOR (m:Memory) ON EACH [m.memory] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}")
    try:
        with Memory(cfg, embedder=HashingEmbedder(384)) as m:
            assert "indexes the text alone" in caplog.text
            assert m.store._indexes.scoped_text is False  # type: ignore[attr-defined]
            crowd = [f"zebra zebra zebra herd number {i}" for i in range(40)]
            m.add_many(crowd, user_id=uid + "-crowd", infer=False)
            ours = ["a zebra was painted on the long wall of the old station building",
                    "the zebra crossing near the school got new paint last week", "nothing striped here"]
            m.add_many(ours, user_id=uid, infer=False)
            m.add_many(["one zebra in the zoo of the tenant whose id is a stop word"], user_id=stop_word_tenant,
                       infer=False)
            m.config.search = SearchConfig(weights={"vector": 0.0, "fulltext": 1.0})

            def ranked(user: str) -> list[tuple[str, float]]:
                out = m.search("zebra", user_id=user, top_k=5, explain=True)
                return [(r["id"], r["score_details"]["fulltext"]["raw"]) for r in out["results"]]

            before, before_stop = ranked(uid), ranked(stop_word_tenant)
            assert len(before) == 2 and len(before_stop) == 1
            m.optimize()
            assert m.store._indexes.scoped_text is True  # type: ignore[attr-defined]
            after = m.search("zebra", user_id=uid, top_k=5, explain=True)
            assert after["round_trips"] == 1  # fact states come with the records
            assert [r[0] for r in ranked(uid)] == [r[0] for r in before]
            assert [r[1] for r in ranked(uid)] == pytest.approx([r[1] for r in before], abs=1e-6)
            assert ranked(stop_word_tenant) == [(before_stop[0][0], pytest.approx(before_stop[0][1], abs=1e-6))]
    finally:
        with Memory(cfg, embedder=HashingEmbedder(384)) as m:
            m.delete_all(user_id=stop_word_tenant)
            if not m.store._indexes.scoped_text:  # type: ignore[attr-defined]
                m.optimize()  # the database is shared by the whole session


def test_neo4j_finds_text_hashes_by_identity(neo4j_available: bool, tmp_path: Any, uid: str) -> None:
    """An older store's range index on ``Memory.hash`` is dropped on open (hashes are found through
    the identity constraint), and a text is found again in exactly its scope, not a wider or a narrower one."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    from graphmem import MemoryConfig
    from graphmem.embedding import HashingEmbedder
    from graphmem.models import Scope

    from .conftest import make_config

    with Memory(MemoryConfig.load(make_config("neo4j", tmp_path)), embedder=HashingEmbedder(384)) as m:
        m.store._driver.execute_query(  # type: ignore[attr-defined]
            "CREATE INDEX memory_hash IF NOT EXISTS FOR (m:Memory) ON (m.hash)")
    with Memory(MemoryConfig.load(make_config("neo4j", tmp_path)), embedder=HashingEmbedder(384)) as m:
        assert not m.cypher("SHOW INDEXES YIELD name WHERE name = 'memory_hash' RETURN name")
        a = m.add("Rita keeps bees", infer=False, user_id=uid)["results"][0]
        b = m.add("Rita keeps bees", infer=False, user_id=uid, agent_id="helper")["results"][0]
        assert b["event"] == "ADD" and b["id"] != a["id"]
        stored = m.get(a["id"], user_id=uid)
        assert stored is not None
        h = stored["hash"]
        assert m.store.find_hashes(Scope(user_id=uid), [h, "no-such-hash"]) == {h: a["id"]}
        assert m.store.find_hashes(Scope(user_id=uid, agent_id="helper"), [h]) == {h: b["id"]}
        assert m.store.find_hashes(Scope(user_id=uid, run_id="r1"), [h]) == {}


def test_neo4j_fulltext_analyzer_is_configurable(neo4j_available: bool, tmp_path: Any, uid: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """``store.fulltext_analyzer``: an unknown one is refused; a store built with another one warns
    until ``optimize()`` rebuilds its index; ``standard-folding`` finds a name written without accents."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    from graphmem import MemoryConfig
    from graphmem.config import SearchConfig
    from graphmem.embedding import HashingEmbedder
    from graphmem.errors import ConfigError

    from .conftest import make_config

    def config(analyzer: str) -> MemoryConfig:
        cfg = make_config("neo4j", tmp_path)
        return MemoryConfig.load({**cfg, "store": {**cfg["store"], "fulltext_analyzer": analyzer}})

    show = "SHOW FULLTEXT INDEXES YIELD name, options WHERE name = 'memory_text' RETURN options"
    text_only = SearchConfig(weights={"vector": 0.0, "fulltext": 1.0})
    with pytest.raises(ConfigError, match="not an analyzer"):
        Memory(config("no-such-analyzer"), embedder=HashingEmbedder(384))
    with Memory(config("standard-folding"), embedder=HashingEmbedder(384)) as m:
        assert "uses analyzer 'english'" in caplog.text  # the shared test database's index
        home = m.add("Kurt Fischer composed Aschenbrödel", infer=False, user_id=uid)["results"][0]["id"]
        m.config.search = text_only
        assert ids(m.search("Aschenbrodel", user_id=uid)) == []  # english keeps the accent
        try:
            m.optimize()
            assert m.cypher(show)[0]["options"]["indexConfig"]["fulltext.analyzer"] == "standard-folding"
            assert ids(m.search("Aschenbrodel", user_id=uid)) == [home]
        finally:  # the database is shared by the whole session: back to the default
            with Memory(config("english"), embedder=HashingEmbedder(384)) as default:
                default.optimize()
    with Memory(config("english"), embedder=HashingEmbedder(384)) as m:
        assert m.cypher(show)[0]["options"]["indexConfig"]["fulltext.analyzer"] == "english"
