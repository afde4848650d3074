"""``add(infer=True)`` end to end with an LLM: the local OpenAI-compatible stand-in answers over real
HTTP through the real ``openai`` client, on both backends. The stand-in reads the facts it "extracts"
from lines of the chunk written as ``FACT <source>:<Type> <relation> <target>:<Type>``, so a test
controls exactly what the model says, chunk by chunk."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem import ExtractionError, LLMError, Mem0CompatWarning, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import Scope
from graphmem.testing import Reply, StandinServer
from graphmem.testing.fake_llm import fact_responder
from tests.conftest import make_config

GM = "https://graphmem.dev/ontology#"


@pytest.fixture
def llm() -> Iterator[StandinServer]:
    with StandinServer() as server:
        server.chat_responder = fact_responder
        yield server


@pytest.fixture
def lmem(backend: str, tmp_path: Path, llm: StandinServer) -> Iterator[Memory]:
    cfg = make_config(backend, tmp_path, llm={
        "provider": "openai", "base_url": llm.base_url, "api_key": "test", "model": "standin",
        "max_retries": 1, "output_retries": 1, "timeout_s": 10, "repair": False,
    }, chunking={"max_tokens": 400})
    m = Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384))
    yield m
    m.close()


def test_conversation_becomes_a_typed_graph(lmem: Memory, uid: str) -> None:
    conversation = [
        {"role": "user", "name": "Wei", "content": "FACT Wei:Person livesIn Beijing:City @2020-01-01"},
        {"role": "user", "name": "Wei", "content": "FACT Wei:Person worksFor Acme:Company"},
        {"role": "user", "name": "Wei", "content": "FACT Wei:Person livesIn Ming:Person"},  # wrong range
    ]
    first = lmem.add(conversation, user_id=uid, timestamp="2023-06-01")
    assert first["chunks"] == 1
    assert sorted(r["target"] for r in first["relations"]["added"]) == ["Acme", "Beijing"]
    assert [r["target"] for r in first["relations"]["rejected"]] == ["Ming"]
    assert len(lmem.rejected(user_id=uid)) == 1
    moved = lmem.add([{"role": "user", "name": "Wei", "content": "FACT Wei:Person livesIn Shanghai:City @2024-03-01"}],
                     user_id=uid)
    assert len(moved["relations"]["superseded"]) == 1
    facts = lmem.store.relations(Scope(user_id=uid))
    lives = {f.target_id: f for f in facts if f.relation == GM + "livesIn"}
    assert len(lives) == 2 and sum(f.valid_to is None for f in lives.values()) == 1
    for f in facts:  # every fact names the memory that states it
        assert f.memory_ids and all(lmem.store.get(m, Scope(user_id=uid)) for m in f.memory_ids)
    if lmem.info.backend == "neo4j":
        rows = lmem.cypher(
            "MATCH (p:Entity:Person {user_id: $u})-[r:LIVES_IN]->(c:Entity:City) "
            "RETURN p.name AS p, c.name AS c, r.valid_to IS NULL AS open, size(r.memory_ids) AS n ORDER BY c",
            {"u": uid})
        assert rows == [{"p": "Wei", "c": "Beijing", "open": False, "n": 1},
                        {"p": "Wei", "c": "Shanghai", "open": True, "n": 1}]


def test_long_input_is_chunked_and_nothing_is_lost(lmem: Memory, uid: str) -> None:
    filler = " ".join(f"word{i}" for i in range(40)) + ".\n"
    text = "FACT Ada:Person livesIn London:City\n" + filler * 340 + "FACT Ada:Person worksFor Babbage:Company\n"
    out = lmem.add([{"role": "user", "name": "Ada", "content": text}], user_id=uid)
    assert out["chunks"] > 20  # under limits.max_memory_chars, which bounds a message with extraction too
    assert sorted(r["target"] for r in out["relations"]["added"]) == ["Babbage", "London"]


def test_bad_llm_output_raises_and_writes_nothing(lmem: Memory, llm: StandinServer, uid: str) -> None:
    llm.chat_script.extend([Reply(content="{not json"), Reply(content="{not json either")])
    with pytest.raises(ExtractionError):
        lmem.add("FACT Ada:Person livesIn London:City", user_id=uid)
    llm.chat_script.extend([Reply(content='{"memories": [', finish_reason="length")] * 8)
    with pytest.raises(ExtractionError):
        lmem.add("FACT Ada:Person livesIn London:City", user_id=uid)
    llm.chat_script.clear()
    llm.chat_script.extend([Reply(status=429)] * 4)
    with pytest.raises(LLMError):
        lmem.add("FACT Ada:Person livesIn London:City", user_id=uid)
    scope = Scope(user_id=uid)
    assert lmem.store.count(scope) == 0 and lmem.store.relations(scope) == [] and lmem.rejected(user_id=uid) == []
    llm.chat_script.clear()
    llm.chat_script.append(Reply(content="{not json"))  # one bad answer, then a good one: retried, stored
    assert lmem.add("FACT Ada:Person livesIn London:City", user_id=uid)["relations"]["added"]


def integrity(mem: Memory, uid: str) -> dict[str, int]:
    """Orphan entities, facts without support, provenance ids naming no memory: all must be 0."""
    if mem.info.backend == "neo4j":
        q = {
            "orphans": "MATCH (e:Entity {user_id: $u}) WHERE NOT (e)--() RETURN count(e) AS n",
            "unsupported": "MATCH (:Entity {user_id: $u})-[r]->() WHERE r.memory_ids IS NOT NULL "
                           "AND size(r.memory_ids) = 0 RETURN count(r) AS n",
            "dangling": "MATCH (:Entity {user_id: $u})-[r]->() WHERE r.memory_ids IS NOT NULL "
                        "UNWIND r.memory_ids AS mid OPTIONAL MATCH (m:Memory {id: mid}) "
                        "WITH m WHERE m IS NULL RETURN count(*) AS n",
        }
        return {k: mem.cypher(v, {"u": uid})[0]["n"] for k, v in q.items()}
    conn = mem.store._conn()  # type: ignore[attr-defined]
    return {
        "orphans": conn.execute("SELECT count(*) FROM entities e WHERE e.user_id = ? AND NOT EXISTS "
                                "(SELECT 1 FROM mentions m WHERE m.entity_id = e.id) AND NOT EXISTS "
                                "(SELECT 1 FROM relations r WHERE e.id IN (r.source_id, r.target_id))",
                                (uid,)).fetchone()[0],
        "unsupported": conn.execute("SELECT count(*) FROM relations r WHERE r.user_id = ? AND NOT EXISTS "
                                    "(SELECT 1 FROM relation_support s WHERE s.relation_id = r.id)",
                                    (uid,)).fetchone()[0],
        "dangling": conn.execute("SELECT count(*) FROM relation_support s JOIN relations r ON r.id = s.relation_id "
                                 "WHERE r.user_id = ? AND NOT EXISTS "
                                 "(SELECT 1 FROM memories m WHERE m.id = s.memory_id)", (uid,)).fetchone()[0],
    }


def test_update_relinks_and_delete_leaves_no_orphans(lmem: Memory, uid: str) -> None:
    first = lmem.add("FACT Ada:Person livesIn London:City\nFACT Ada:Person worksFor Babbage:Company", user_id=uid)
    london = next(r["id"] for r in first["results"] if "London" in r["memory"])
    other = lmem.add("FACT Bob:Person knows Ada:Person", user_id=uid)
    updated = lmem.update(london, "FACT Ada:Person livesIn Paris:City", user_id=uid)
    assert [r["target"] for r in updated["relations"]["added"]] == ["Paris"]
    facts = lmem.store.relations(Scope(user_id=uid))
    targets = {lmem.store.graph_context(Scope(user_id=uid), [f.target_id]).entities[f.target_id].name
               for f in facts if f.target_id}
    assert targets == {"Paris", "Babbage", "Ada"}  # London went with the text that alone supported it
    assert integrity(lmem, uid) == {"orphans": 0, "unsupported": 0, "dangling": 0}
    for r in first["results"] + other["results"]:
        lmem.delete(r["id"], user_id=uid)
    assert lmem.store.relations(Scope(user_id=uid)) == []
    assert integrity(lmem, uid) == {"orphans": 0, "unsupported": 0, "dangling": 0}
    assert lmem.store.find_entities(Scope(user_id=uid), ["ada", "paris", "bob"]) == {}


def test_rejected_triples_are_sent_back_once_then_quarantined(backend: str, tmp_path: Path, llm: StandinServer,
                                                             uid: str) -> None:
    cfg = make_config(backend, tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "api_key": "t",
                                              "model": "standin", "max_retries": 0, "repair": True})
    mem = Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384))
    fixed = {"triples": [{"source": "Wei", "relation": "knows", "target": "Ming", "valid_from": None, "memory": 0}]}
    llm.chat_script.extend([Reply(content=fact_responder({"messages": [
        {"role": "user", "content": "FACT Wei:Person livesIn Ming:Person\nFACT Wei:Person worksFor Acme:Company"}]})),
        Reply(content=json.dumps(fixed))])
    out = mem.add("Wei lives with Ming and works at Acme", user_id=uid)
    repair_request = llm.chat_requests[-1]
    assert "livesIn" in json.dumps(repair_request["messages"]) and "gm:Place" in json.dumps(repair_request["messages"])
    assert sorted(r["target"] for r in out["relations"]["added"]) == ["Acme", "Ming"]  # the correction was stored
    assert [r["target"] for r in out["relations"]["rejected"]] == ["Ming"]  # the original stays quarantined
    assert len(mem.rejected(user_id=uid)) == 1
    assert len(llm.chat_requests) == 2  # one extraction, one repair: never a second re-ask
    mem.close()


def test_add_prompt_reaches_the_model_and_the_rule_extractor_says_it_cannot(lmem: Memory, llm: StandinServer,
                                                                           uid: str, tmp_path: Path) -> None:
    """mem0's ``add(prompt=)``: the caller's instructions go into the extraction request beside graphmem's
    own (the ontology and the answer's shape stay); the rule extractor cannot follow them and says so."""
    lmem.add("FACT Wei:Person livesIn Beijing:City", user_id=uid, prompt="Keep only where people live.")
    system = "\n".join(str(m["content"]) for m in llm.chat_requests[-1]["messages"] if m["role"] == "system")
    assert "Keep only where people live." in system and "livesIn" in system
    lmem.add("FACT Wei:Person worksFor Acme:Company", user_id=uid)
    later = "\n".join(str(m["content"]) for m in llm.chat_requests[-1]["messages"] if m["role"] == "system")
    assert "Keep only where people live." not in later  # for that call only
    with Memory(MemoryConfig.load(make_config("sqlite", tmp_path / "rules")), embedder=HashingEmbedder(384)) as rules:
        with pytest.warns(Mem0CompatWarning, match="cannot follow"):
            rules.add("I live in Oslo.", user_id=uid, prompt="Keep only where people live.")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rules.add("I live in Bergen.", user_id=uid, infer=False, prompt="ignored: nothing is extracted")
