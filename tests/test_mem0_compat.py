"""The mem0 drop-in: mem0 2.x calling conventions next to graphmem's, on both backends; a mem0-style
configuration translated, with one warning naming what has no equivalent; and mem0's quickstart,
written as mem0 documents it, run with only the import changed.

The LLM is the suite's local OpenAI-compatible stand-in (real HTTP, the real openai client) or
``infer=False``; embeddings come from the stand-in or the hashing embedder: nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import warnings
from collections.abc import Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from graphmem import AsyncMemory, Mem0CompatWarning, Mem0ConfigWarning, Memory, MemoryConfig
from graphmem.errors import ConfigError, InvalidFilterError, InvalidInputError, NotFoundError, ScopeError
from graphmem.mem0 import MEM0_DEFAULTS, is_mem0_config, load_config, translate_config
from graphmem.testing import StandinServer
from graphmem.testing.standin import last_user_message
from tests.conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER, make_config


def mem0_config(backend: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """A mem0-style configuration for ``backend``: a local Qdrant path (graphmem: SQLite there) or
    mem0 1.x's Neo4j graph store (graphmem: the Neo4j store); graphmem's hashing embedder."""
    if backend == "sqlite":
        store: dict[str, Any] = {"vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0", "path": str(tmp_path / "qdrant")}}}
    else:
        store = {"graph_store": {"provider": "neo4j", "config": {
            "url": NEO4J_URI, "username": NEO4J_USER, "password": NEO4J_PASSWORD}}}
    return {**store, "home": str(tmp_path), "embedder": {"provider": "hashing"}, **extra}


def quiet_from_config(config: dict[str, Any], **kwargs: Any) -> Memory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Mem0ConfigWarning)
        return Memory(config, **kwargs)


@pytest.fixture
def m0(backend: str, tmp_path: Path) -> Iterator[Memory]:
    """A Memory built from a mem0-style configuration (mem0's defaults and unscoped by-id calls)."""
    m = quiet_from_config(mem0_config(backend, tmp_path))
    yield m
    m.close()


def ids(out: dict[str, Any]) -> list[str]:
    return [r["id"] for r in out["results"]]


def add_verbatim(m: Memory, uid: str, *texts: str, **kwargs: Any) -> list[str]:
    return [m.add(t, user_id=uid, infer=False, **kwargs)["results"][0]["id"] for t in texts]


# -- the scope inside filters ----------------------------------------------------------------------
def test_scope_inside_filters_is_the_scope(mem: Memory, uid: str) -> None:
    food, work = add_verbatim(mem, uid, "Maya loves spicy ramen", "Maya works at the harbour office")
    mem.update(food, metadata={"topic": "food"}, user_id=uid)
    other = f"{uid}-other"
    add_verbatim(mem, other, "Maya loves spicy ramen")
    by_args = ids(mem.search("spicy ramen", user_id=uid))
    assert ids(mem.search("spicy ramen", filters={"user_id": uid})) == by_args
    assert ids(mem.search("spicy ramen", filters={"user_id": {"eq": uid}})) == by_args
    assert set(ids(mem.get_all(filters={"user_id": uid}))) == {food, work}
    # the rest of the filter still filters; scope ids with other metadata, and in a top-level AND
    assert ids(mem.get_all(filters={"user_id": uid, "topic": "food"})) == [food]
    assert ids(mem.search("Maya", filters={"AND": [{"user_id": uid}, {"topic": "food"}]})) == [food]
    assert ids(mem.get_all(filters={"AND": [{"user_id": uid}]})) != []
    with pytest.raises(InvalidFilterError, match="non-empty list"):  # what the scope leaves is still checked
        mem.get_all(filters={"user_id": uid, "AND": []})
    # agreeing both ways is fine; the other tenant's id sees only the other tenant
    assert ids(mem.search("spicy ramen", user_id=uid, filters={"user_id": uid})) == by_args
    assert food not in ids(mem.get_all(filters={"user_id": other}))


def test_agent_and_run_ids_in_filters(mem: Memory, uid: str) -> None:
    mine = mem.add("Prefers window seats", user_id=uid, agent_id="travel", run_id="r1", infer=False)
    mem.add("Prefers aisle seats", user_id=uid, agent_id="travel", run_id="r2", infer=False)
    got = mem.get_all(filters={"user_id": uid, "agent_id": "travel", "run_id": "r1"})
    assert ids(got) == ids(mine)
    assert len(mem.get_all(filters={"user_id": uid, "agent_id": "travel"})["results"]) == 2


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"user_id": "a", "filters": {"user_id": "b"}}, "different scopes"),
    ({"filters": {"AND": [{"user_id": "a"}, {"user_id": "b"}]}}, "two user_ids"),
    ({"filters": {"topic": "food"}}, "needs a scope"),
    ({"filters": {"OR": [{"user_id": "a"}, {"user_id": "b"}]}}, "needs a scope"),  # not a scope: either
    ({"filters": {"user_id": {"in": ["a", "b"]}}}, "needs a scope"),
    ({"filters": {"user_id": 5}}, "must be a string"),
    ({"filters": {"AND": []}}, "needs a scope"),
])
def test_a_scope_that_is_not_one_is_refused(mem: Memory, kwargs: dict[str, Any], needle: str) -> None:
    for call in (lambda: mem.search("x", **kwargs), lambda: mem.get_all(**kwargs)):
        with pytest.raises(ScopeError, match=needle) as info:
            call()
        assert isinstance(info.value, InvalidInputError) and len(str(info.value)) <= 300


def test_scope_ids_under_or_narrow_a_given_scope(mem: Memory, uid: str) -> None:
    first = mem.add("Likes jazz", user_id=uid, agent_id="a1", infer=False)
    mem.add("Likes blues", user_id=uid, agent_id="a2", infer=False)
    got = mem.get_all(filters={"user_id": uid, "OR": [{"agent_id": "a1"}, {"agent_id": "a3"}]})
    assert ids(got) == ids(first)


# -- counts, threshold, rerank ---------------------------------------------------------------------
def test_top_k_and_limit_name_one_count(mem: Memory, uid: str) -> None:
    add_verbatim(mem, uid, "Plays chess on Sundays", "Plays chess online", "Plays chess with Ana")
    assert len(mem.search("chess", user_id=uid, limit=2)["results"]) == 2
    assert len(mem.search("chess", user_id=uid, top_k=1, limit=1)["results"]) == 1
    assert len(mem.get_all(user_id=uid, top_k=1)["results"]) == 1
    assert len(mem.get_all(filters={"user_id": uid}, limit=2)["results"]) == 2
    for call in (lambda: mem.search("chess", user_id=uid, top_k=1, limit=2),
                 lambda: mem.get_all(user_id=uid, top_k=3, limit=2)):
        with pytest.raises(InvalidInputError, match=r"top_k=.* and limit=.* differ"):
            call()
    with pytest.raises(InvalidInputError, match="positive integer"):
        mem.search("chess", user_id=uid, limit=0)


def test_mem0_defaults_apply_to_a_mem0_config_only(m0: Memory, mem: Memory, uid: str) -> None:
    assert (m0.config.search.top_k, m0.config.search.threshold, m0.config.limits.get_all_limit) == (20, 0.1, 20)
    assert (mem.config.search.top_k, mem.config.search.threshold, mem.config.limits.get_all_limit) == (10, None, 100)
    for m in (m0, mem):
        add_verbatim(m, uid, *[f"Note number {i} about gardening" for i in range(25)], "Bought a violin")
    assert len(m0.get_all(filters={"user_id": uid})["results"]) == 20
    assert len(mem.get_all(user_id=uid)["results"]) == 26
    # mem0's threshold 0.1 drops what has nothing to do with the query; threshold=0.0 keeps it, like mem0
    strict = m0.search("violin", filters={"user_id": uid})["results"]
    assert [r["memory"] for r in strict] == ["Bought a violin"]
    assert len(m0.search("violin", filters={"user_id": uid}, threshold=0.0)["results"]) == 20
    assert len(mem.search("violin", user_id=uid)["results"]) == 10
    with pytest.raises(InvalidInputError):
        m0.search("violin", filters={"user_id": uid}, threshold="high")


class Shortest:
    """A reranker preferring short texts, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls += 1
        return [-float(len(t)) for t in texts]


def test_rerank_flag(backend: str, tmp_path: Path, uid: str) -> None:
    ranker = Shortest()
    with quiet_from_config(mem0_config(backend, tmp_path), reranker=ranker) as m:
        add_verbatim(m, uid, "Ana runs every single morning along the river", "Ana runs")
        default = m.search("Ana runs every single morning", filters={"user_id": uid})
        assert ranker.calls == 1 and default["results"][0]["memory"] == "Ana runs"
        m.search("Ana runs every single morning", filters={"user_id": uid}, rerank=True)
        assert ranker.calls == 2
        off = m.search("Ana runs every single morning", filters={"user_id": uid}, rerank=False)
        assert ranker.calls == 2 and off["results"][0]["memory"].startswith("Ana runs every")
        with pytest.raises(InvalidInputError, match="rerank must be True or False"):
            m.search("Ana", filters={"user_id": uid}, rerank="yes")


def test_rerank_true_without_a_reranker_warns_and_keeps_the_order(mem: Memory, uid: str) -> None:
    add_verbatim(mem, uid, "Ana runs every morning", "Ana swims")
    plain = mem.search("Ana runs", user_id=uid)
    with pytest.warns(Mem0CompatWarning, match="no reranker is configured") as caught:
        asked = mem.search("Ana runs", user_id=uid, rerank=True)
    assert caught[0].filename == __file__  # points at the caller's line
    assert ids(asked) == ids(plain)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ids(mem.search("Ana runs", user_id=uid, rerank=False)) == ids(plain)


# -- add: infer, metadata, memory_type ------------------------------------------------------------
class Mem0MemoryType(Enum):
    """mem0's MemoryType enum, as mem0 code imports it (a plain Enum of strings)."""

    PROCEDURAL = "procedural_memory"


def test_infer_metadata_and_procedural_memory(m0: Memory, uid: str) -> None:
    steps = [{"role": "assistant", "content": "Opened the invoice page, then filtered by the last month."}]
    bot = f"{uid}-billing-bot"
    added = m0.add(steps, user_id=uid, agent_id=bot, infer=False, memory_type="procedural_memory",
                   metadata={"task": "invoices"})
    assert [(r["memory"], r["event"]) for r in added["results"]] == [(steps[0]["content"], "ADD")]
    stored = m0.get(added["results"][0]["id"])
    assert (stored["memory_type"], stored["metadata"], stored["role"]) == ("procedural", {"task": "invoices"},
                                                                           "assistant")
    also = m0.add("Export the report as PDF first", agent_id=bot, infer=False,
                  memory_type=Mem0MemoryType.PROCEDURAL)
    assert m0.get(also["results"][0]["id"])["memory_type"] == "procedural"
    got = m0.get_all(filters={"agent_id": bot, "memory_type": "procedural", "task": "invoices"})
    assert ids(got) == ids(added)
    for bad in ("dream", "dream_memory"):
        with pytest.raises(InvalidInputError, match="memory_type"):
            m0.add("x", user_id=uid, infer=False, memory_type=bad)


def test_metadata_reaches_every_read(m0: Memory, uid: str) -> None:
    mid = m0.add("Allergic to peanuts", user_id=uid, infer=False, metadata={"category": "health", "level": 3})
    memory_id = mid["results"][0]["id"]
    hit = m0.search("peanuts", filters={"user_id": uid, "category": "health", "level": {"gte": 2}})
    assert hit["results"][0]["metadata"] == {"category": "health", "level": 3}
    m0.update(memory_id, metadata={"level": None, "checked": True})
    assert m0.get_all(filters={"user_id": uid})["results"][0]["metadata"] == {"category": "health", "checked": True}


# -- by-id calls and what each call returns -------------------------------------------------------
def test_mem0_return_shapes(m0: Memory, uid: str) -> None:
    added = m0.add([{"role": "user", "content": "I moved to Lisbon", "name": "Maya"}], user_id=uid, infer=False)
    item = added["results"][0]
    assert {"id", "memory", "event"} <= set(item) and item["event"] == "ADD"
    found = m0.search("Lisbon", filters={"user_id": uid}, top_k=5)["results"][0]
    assert {"id", "memory", "score", "metadata", "created_at", "user_id", "hash"} <= set(found)
    listed = m0.get_all(filters={"user_id": uid})["results"][0]
    assert {"id", "memory", "metadata", "created_at", "user_id"} <= set(listed) and "score" not in listed
    assert m0.get(item["id"])["actor_id"] == "Maya"
    updated = m0.update(memory_id=item["id"], data="I moved to Porto")
    assert isinstance(updated["message"], str) and updated["event"] == "UPDATE"
    assert updated["memory"] == "I moved to Porto"
    deleted = m0.delete(memory_id=item["id"])
    assert isinstance(deleted["message"], str) and deleted["event"] == "DELETE"
    rows = m0.history(memory_id=item["id"])
    assert [(r["event"], r["old_memory"], r["new_memory"], r["is_deleted"]) for r in rows] == [
        ("ADD", None, "I moved to Lisbon", False),
        ("UPDATE", "I moved to Lisbon", "I moved to Porto", False),
        ("DELETE", "I moved to Porto", None, True),
    ]
    assert all({"id", "memory_id", "created_at", "actor_id", "role"} <= set(r) for r in rows)
    add_verbatim(m0, uid, "Has a cat")
    cleared = m0.delete_all(user_id=uid)
    assert cleared["deleted"] == 1 and isinstance(cleared["message"], str)


def test_update_takes_text_as_mem0_2_names_data(m0: Memory, uid: str) -> None:
    (mid,) = add_verbatim(m0, uid, "Drinks coffee")
    assert m0.update(mid, text="Drinks decaf")["memory"] == "Drinks decaf"
    assert m0.update(mid, "Drinks tea", text="Drinks tea")["memory"] == "Drinks tea"
    with pytest.raises(InvalidInputError, match="both data and text"):
        m0.update(mid, "Drinks water", text="Drinks juice")


def test_unscoped_by_id_calls_find_the_memory_scope_in_the_store(m0: Memory, mem: Memory, uid: str) -> None:
    """mem0 does not scope by-id calls; neither does the Python API (the caller holds the whole store),
    with or without a mem0-style configuration, in any process. REST and MCP keys stay scoped."""
    other = f"{uid}-b"
    (mine,) = add_verbatim(m0, uid, "Speaks Portuguese")
    (theirs,) = add_verbatim(m0, other, "Speaks Italian")
    assert m0.get(mine)["user_id"] == uid and m0.get(theirs)["user_id"] == other
    # an explicit scope is still checked by the store: another tenant's id is missing there
    with pytest.raises(NotFoundError):
        m0.get(theirs, user_id=uid)
    with pytest.raises(NotFoundError, match="no memory"):
        m0.get(str(uuid.uuid4()))
    # a fresh Memory on the same store, graphmem's own configuration: no id was returned to it
    fresh = Memory(m0.config)
    try:
        assert fresh.get(mine)["memory"] == "Speaks Portuguese"
        assert [r["event"] for r in fresh.history(mine)] == ["ADD"]
        assert fresh.update(mine, "Speaks Portuguese and Spanish")["memory"] == "Speaks Portuguese and Spanish"
        fresh.delete(mine)
        assert [r["event"] for r in fresh.history(mine)] == ["ADD", "UPDATE", "DELETE"]  # history outlives it
        with pytest.raises(NotFoundError):
            fresh.get(mine)
    finally:
        fresh.close()


def test_async_memory_takes_the_same_conventions(tmp_path: Path) -> None:
    async def run() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Mem0ConfigWarning)
            m = AsyncMemory.from_config(mem0_config("sqlite", tmp_path))
        async with m:
            added = await m.add("Collects vinyl records", user_id="al", infer=False, memory_type="procedural_memory")
            mid = added["results"][0]["id"]
            found = await m.search("vinyl", filters={"user_id": "al"}, limit=1, rerank=False)
            assert ids(found) == [mid] and found["results"][0]["memory_type"] == "procedural"
            assert ids(await m.get_all(filters={"user_id": "al"}, top_k=5)) == [mid]
            assert (await m.update(mid, text="Collects tapes"))["memory"] == "Collects tapes"
            assert (await m.delete(mid))["event"] == "DELETE"
            assert [r["event"] for r in await m.history(mid)] == ["ADD", "UPDATE", "DELETE"]

    asyncio.run(run())


# -- the configuration -----------------------------------------------------------------------------
def translated(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    native, notes = translate_config(config)
    return native, "\n".join(notes)


@pytest.mark.parametrize("native", [
    {},
    {"store": {"provider": "sqlite", "path": "x.db"}, "embedder": {"provider": "hashing"}},
    {"llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:1/v1"}},
    {"embedder": {"provider": "sentence-transformers", "model": "m"}, "search": {"top_k": 3}, "version": "v1"},
])
def test_a_native_config_loads_exactly_as_before(native: dict[str, Any]) -> None:
    assert not is_mem0_config(native)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_config(native) == MemoryConfig.load(native)


@pytest.mark.parametrize("bad", [
    {"store": {"provider": "sqlite"}, "stor": {}},
    {"llm": {"provider": "openai", "modle": "x"}},
    {"search": {"top_k": 3, "treshold": 0.2}},
])
def test_unknown_keys_in_a_native_config_still_fail(tmp_path: Path, bad: dict[str, Any]) -> None:
    assert not is_mem0_config(bad)
    with pytest.raises(ConfigError, match="Extra inputs are not permitted"):
        Memory.from_config({"home": str(tmp_path), **bad})


LLM_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"provider": "openai", "config": {"model": "gpt-4.1-nano", "temperature": 0.2, "max_tokens": 1500,
                                       "api_key": "sk-1", "openai_base_url": "https://proxy.example/v1"}},
     {"provider": "openai", "model": "gpt-4.1-nano", "temperature": 0.2, "max_output_tokens": 1500,
      "api_key": "sk-1", "base_url": "https://proxy.example/v1"}),
    ({"provider": "openai", "config": {"model": "m", "base_url": "http://127.0.0.1:8080/v1"}},
     {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:8080/v1"}),
    ({"provider": "openai_structured", "config": {"model": "m"}}, {"provider": "openai", "model": "m"}),
    ({"provider": "ollama", "config": {"model": "llama3.1:8b"}},
     {"provider": "openai", "model": "llama3.1:8b", "base_url": "http://localhost:11434/v1", "api_key": "ollama"}),
    ({"provider": "ollama", "config": {"ollama_base_url": "http://gpu:11434/v1"}},
     {"provider": "openai", "model": "llama3.1:70b", "base_url": "http://gpu:11434/v1", "api_key": "ollama"}),
    ({"provider": "lmstudio", "config": {"model": "qwen"}},
     {"provider": "openai", "model": "qwen", "base_url": "http://localhost:1234/v1", "api_key": "lm-studio"}),
    ({"provider": "vllm", "config": {"model": "q", "vllm_base_url": "http://gpu:8000/v1", "api_key": "k"}},
     {"provider": "openai", "model": "q", "base_url": "http://gpu:8000/v1", "api_key": "k"}),
    ({"provider": "deepseek", "config": {"model": "deepseek-chat", "api_key": "k"}},
     {"provider": "openai", "model": "deepseek-chat", "base_url": "https://api.deepseek.com", "api_key": "k"}),
    ({"provider": "xai", "config": {"model": "grok", "api_key": "k"}},
     {"provider": "openai", "model": "grok", "base_url": "https://api.x.ai/v1", "api_key": "k"}),
    ({"provider": "anthropic", "config": {"model": "claude", "api_key": "k"}}, {"provider": "none"}),
]


@pytest.mark.parametrize(("section", "expected"), LLM_CASES, ids=[c[0]["provider"] for c in LLM_CASES])
def test_llm_providers(section: dict[str, Any], expected: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VLLM_BASE_URL", "VLLM_API_KEY", "DEEPSEEK_API_BASE", "XAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    native, notes = translated({"llm": section})
    assert native["llm"] == expected
    MemoryConfig.load(native)  # it validates
    if section["provider"] == "anthropic":
        assert "llm.provider 'anthropic'" in notes and "rule-based extractor" in notes and "k" not in notes.split()


def test_llm_keys_without_an_equivalent_and_api_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    native, notes = translated({"llm": {"provider": "openai", "config": {
        "model": "m", "top_p": 0.3, "top_k": 5, "enable_vision": True, "max_tokens": 100, "api_key": None}}})
    assert native["llm"] == {"provider": "openai", "model": "m", "max_output_tokens": 256}
    assert "llm.config: enable_vision, top_k, top_p: no graphmem equivalent; ignored" in notes
    assert "max_tokens 100: raised to 256" in notes
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"needs an API key: llm\.config\.api_key or DEEPSEEK_API_KEY"):
        translate_config({"llm": {"provider": "deepseek", "config": {}}})
    monkeypatch.setenv("DEEPSEEK_API_KEY", "from-env")
    assert translate_config({"llm": {"provider": "deepseek"}})[0]["llm"]["api_key"] == "from-env"


EMBEDDER_CASES: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"provider": "openai", "config": {"model": "text-embedding-3-large", "embedding_dims": 256, "api_key": "k",
                                       "openai_base_url": "https://proxy.example/v1"}},
     {"provider": "openai", "model": "text-embedding-3-large", "dims": 256, "api_key": "k",
      "base_url": "https://proxy.example/v1"}),
    ({"provider": "ollama", "config": {}},
     {"provider": "openai", "model": "nomic-embed-text", "base_url": "http://localhost:11434/v1", "api_key": "ollama"}),
    ({"provider": "lmstudio", "config": {"model": "nomic"}},
     {"provider": "openai", "model": "nomic", "base_url": "http://localhost:1234/v1", "api_key": "lm-studio"}),
    ({"provider": "huggingface", "config": {"model": "multi-qa-MiniLM-L6-cos-v1"}},
     {"provider": "sentence-transformers", "model": "multi-qa-MiniLM-L6-cos-v1"}),
    ({"provider": "huggingface", "config": {"huggingface_base_url": "http://tei:8080/v1", "model": "tei"}},
     {"provider": "openai", "model": "tei", "base_url": "http://tei:8080/v1", "api_key": "hf"}),
    ({"provider": "fastembed", "config": {"model": "BAAI/bge-small-en-v1.5"}},
     {"provider": "sentence-transformers", "model": "BAAI/bge-small-en-v1.5"}),
    ({"provider": "gemini", "config": {"model": "text-embedding-004"}}, None),
]


@pytest.mark.parametrize(("section", "expected"), EMBEDDER_CASES, ids=[c[0]["provider"] + str(i)
                                                                      for i, c in enumerate(EMBEDDER_CASES)])
def test_embedder_providers(section: dict[str, Any], expected: dict[str, Any] | None,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUGGINGFACE_API_KEY", raising=False)
    native, notes = translated({"embedder": section})
    assert native.get("embedder") == expected
    config = MemoryConfig.load(native)  # validated, not loaded: no model is fetched here
    if expected is None:
        assert config.embedder.provider == MemoryConfig().embedder.provider
        assert "embedder.provider 'gemini': no graphmem equivalent" in notes
    if section["provider"] == "fastembed":
        assert "loaded with sentence-transformers instead" in notes


def test_sentence_transformer_embedder_keys() -> None:
    _, notes = translated({"embedder": {"provider": "huggingface", "config": {
        "model": "m", "embedding_dims": 384, "model_kwargs": {"device": "cpu"}}}})
    assert "embedder.config: embedding_dims, model_kwargs: no graphmem equivalent; ignored (a sentence-transformers " \
           "model reports its own size)" in notes


def test_vector_and_graph_stores(tmp_path: Path) -> None:
    qdrant, notes = translated({"vector_store": {"provider": "qdrant", "config": {
        "collection_name": "c", "path": str(tmp_path / "q"), "embedding_model_dims": 1536, "on_disk": True}}})
    assert qdrant["store"] == {"provider": "sqlite", "path": str(tmp_path / "q" / "graphmem.db")}
    assert "vector_store.provider 'qdrant'" in notes and "embedded SQLite store" in notes
    assert "vector_store.config: collection_name, embedding_model_dims, on_disk: no graphmem equivalent" in notes
    chroma, notes = translated({"vector_store": {"provider": "chroma", "config": {"collection_name": "c"}}})
    assert chroma["store"] == {"provider": "sqlite"} and "graphmem.db in the graphmem home" in notes
    remote, notes = translated({"vector_store": {"provider": "pgvector", "config": {
        "host": "db", "port": 5432, "password": "pg-secret"}}})
    assert remote["store"] == {"provider": "sqlite"} and "host, password, port" in notes and "pg-secret" not in notes
    graph = {"provider": "neo4j", "config": {"url": "neo4j://graph:7687", "username": "neo4j",
                                             "password": "n-secret", "database": "mem", "base_label": True}}
    both, notes = translated({"graph_store": graph, "vector_store": {"provider": "qdrant", "config": {}}})
    assert both["store"] == {"provider": "neo4j", "uri": "neo4j://graph:7687", "user": "neo4j",
                             "password": "n-secret", "database": "mem"}
    assert "graph_store.config: base_label" in notes and "vector_store.provider 'qdrant': graphmem keeps " \
           "memories and vectors in the Neo4j store of graph_store" in notes and "n-secret" not in notes
    assert MemoryConfig.load(both).store.password.get_secret_value() == "n-secret"  # type: ignore[union-attr]
    alone, _ = translated({"vector_store": {"provider": "neo4j", "config": {"url": "bolt://h:7687"}}})
    assert alone["store"] == {"provider": "neo4j", "uri": "bolt://h:7687"}
    memgraph, notes = translated({"graph_store": {"provider": "memgraph", "config": {"url": "bolt://m"}},
                                  "vector_store": {"provider": "faiss", "config": {"path": str(tmp_path)}}})
    assert memgraph["store"]["provider"] == "sqlite" and "graph_store.provider 'memgraph'" in notes


def test_rerankers_and_top_level_keys() -> None:
    native, notes = translated({"reranker": {"provider": "sentence_transformer", "config": {"top_k": 5}}})
    assert native["search"]["rerank"] == {"model": "cross-encoder/ms-marco-MiniLM-L-6-v2"}
    assert "reranker.config: top_k: no graphmem equivalent" in notes
    native, _ = translated({"reranker": {"provider": "huggingface", "config": {"model": "BAAI/bge-reranker-v2-m3"}}})
    assert native["search"]["rerank"] == {"model": "BAAI/bge-reranker-v2-m3"}
    native, notes = translated({"reranker": {"provider": "cohere", "config": {"api_key": "c-secret"}}})
    assert "rerank" not in native["search"] and "reranker.provider 'cohere'" in notes and "c-secret" not in notes
    native, notes = translated({
        "history_db_path": "/tmp/h.db", "custom_instructions": "Only food", "version": "v1.0",
        "enable_graph": False, "custom_fact_extraction_prompt": None, "telemetry": True,
    })
    lines = notes.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "history_db_path", "custom_instructions", "version 'v1.0'", "enable_graph False", "'telemetry'"]
    assert native == {key: dict(value) for key, value in MEM0_DEFAULTS.items()}
    assert translated({"history_db_path": "h", "version": "v1.1", "enable_graph": True})[1].count("\n") == 0


def test_graphmem_sections_next_to_mem0_ones_win(tmp_path: Path) -> None:
    native, notes = translated({
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path)}},
        "store": {"provider": "sqlite", "path": str(tmp_path / "mine.db")},
        "embedder": {"provider": "hashing", "dims": 64},
        "search": {"top_k": 5, "weights": {"vector": 1.0, "fulltext": 0.0, "graph": 0.0}},
        "limits": {"max_top_k": 50},
    })
    assert native["store"] == {"provider": "sqlite", "path": str(tmp_path / "mine.db")}
    assert native["embedder"] == {"provider": "hashing", "dims": 64}
    assert native["search"] == {"top_k": 5, "threshold": 0.1, "weights": {"vector": 1.0, "fulltext": 0.0, "graph": 0.0}}
    assert native["limits"] == {"get_all_limit": 20, "max_top_k": 50}
    assert "replaced by the graphmem store section" in notes


def test_one_warning_names_everything_without_an_equivalent(tmp_path: Path) -> None:
    config = {
        "llm": {"provider": "openai", "config": {"model": "standin-model", "api_key": "sk-very-secret", "top_p": 0.2}},
        "embedder": {"provider": "hashing"},
        "vector_store": {"provider": "qdrant", "config": {"collection_name": "mem0", "path": str(tmp_path / "q")}},
        "history_db_path": str(tmp_path / "history.db"),
        "custom_instructions": "Remember food preferences only",
        "version": "v1.1",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = Memory.from_config(config)
    m.close()
    assert [w.category for w in caught] == [Mem0ConfigWarning]
    warning = caught[0]
    assert issubclass(warning.category, Mem0CompatWarning) and issubclass(warning.category, UserWarning)
    assert warning.filename == __file__  # at the caller's from_config line, not inside graphmem
    text = str(warning.message)
    assert text.startswith("graphmem read a mem0-style configuration; 5 setting(s) have no graphmem equivalent:")
    for name in ("llm.config: top_p", "history_db_path", "custom_instructions", "vector_store.provider 'qdrant'",
                 "vector_store.config: collection_name"):
        assert f"  - {name}" in text
    assert "sk-very-secret" not in text and "Remember food" not in text
    assert m.config.llm.api_key is not None and m.config.llm.api_key.get_secret_value() == "sk-very-secret"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything maps: no warning at all
        Memory.from_config({"llm": {"provider": "openai", "config": {"model": "m", "api_key": "k"}},
                            "embedder": {"provider": "hashing"}, "home": str(tmp_path)}).close()


def test_an_invalid_translation_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mem0-style configuration, translated to graphmem's, is invalid"):
        Memory.from_config({"embedder": {"provider": "openai", "config": {"embedding_dims": 2}},
                            "home": str(tmp_path)})
    with pytest.raises(ConfigError, match=r"llm\.config must be a mapping"):
        Memory.from_config({"llm": {"provider": "openai", "config": "gpt-4o"}})


# -- mem0's quickstart, with only the import changed ------------------------------------------------
def third_person(body: dict[str, Any]) -> str:
    """The stand-in model for the quickstart: each fact the user states, in the third person
    (greetings skipped), as graphmem's extraction JSON."""
    memories: list[str] = []
    for line in last_user_message(body).splitlines():
        speaker, _, said = line.partition(": ")
        if speaker != "user":
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", said):
            fact = re.sub(r"^(Hi|Hello), ", "", sentence.strip()).rstrip(".!")
            if name := re.fullmatch(r"I'm (\w+)", fact):
                memories.append(f"Name is {name[1]}")
            elif fact.startswith("I love "):
                memories.append(f"Loves {fact.removeprefix('I love ')}")
            elif fact:
                memories.append(fact)
    return json.dumps({"memories": [{"text": t, "memory_type": "semantic", "event_time": None,
                                     "attributed_to": None, "replaces": None} for t in memories],
                       "entities": [], "triples": []})


def test_mem0_quickstart_with_only_the_import_changed(backend: str, tmp_path: Path) -> None:
    with StandinServer() as llm:
        llm.chat_responder = third_person
        user = f"alex-{uuid.uuid4().hex[:8]}"  # the suite's tenants never meet on the shared Neo4j
        # where mem0 keeps it: a local Qdrant folder (graphmem: SQLite there), or mem0 1.x's Neo4j graph
        # store, whose shared test server holds the hashing embedder's vectors (a store keeps one embedder)
        embedder: dict[str, Any] = {"provider": "openai", "config": {
            "model": "text-embedding-3-small", "embedding_dims": 64, "api_key": "sk-test",
            "openai_base_url": llm.base_url}}
        store: dict[str, Any] = {"vector_store": {"provider": "qdrant", "config": {
            "collection_name": "mem0", "path": str(tmp_path / "qdrant"), "embedding_model_dims": 64}}}
        if backend == "neo4j":
            embedder = {"provider": "hashing"}
            store = {"graph_store": {"provider": "neo4j", "config": {
                "url": NEO4J_URI, "username": NEO4J_USER, "password": NEO4J_PASSWORD}}}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # ---- from here on, mem0's documented quickstart; only the import is changed ----
            from graphmem import Memory  # was: from mem0 import Memory

            config = {
                "llm": {"provider": "openai", "config": {
                    "model": "standin-model", "temperature": 0.1, "max_tokens": 2000,
                    "api_key": "sk-test", "openai_base_url": llm.base_url}},
                "embedder": embedder,
                **store,
                "history_db_path": str(tmp_path / "history.db"),
                "version": "v1.1",
            }
            m = Memory.from_config(config)

            messages = [
                {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
                {"role": "assistant", "content": "Hey Alex! I'll remember your interests."},
            ]
            result = m.add(messages, user_id=user, metadata={"category": "hobbies"})
            added = [r["memory"] for r in result["results"] if r["event"] == "ADD"]

            related = m.search("What does Alex love?", filters={"user_id": user}, top_k=3)
            found = [(r["memory"], r["score"]) for r in related["results"]]

            all_memories = m.get_all(filters={"user_id": user})
            memory_id = next(r["id"] for r in all_memories["results"] if "basketball" in r["memory"])
            specific = m.get(memory_id)

            m.update(memory_id=memory_id, data="Loves basketball, gaming and weekend hikes")
            history = m.history(memory_id=memory_id)

            m.delete(memory_id=memory_id)
            remaining = m.get_all(filters={"user_id": user})
            m.delete_all(user_id=user)
            # ---- end of the quickstart ----
        try:
            assert sorted(added) == ["Loves basketball and gaming", "Name is Alex"]
            assert "Loves basketball and gaming" in [text for text, _ in found]
            assert all(score >= 0.1 for _, score in found)  # mem0's default threshold
            assert specific["metadata"] == {"category": "hobbies"} and specific["user_id"] == user
            assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
                ("ADD", None, "Loves basketball and gaming"),
                ("UPDATE", "Loves basketball and gaming", "Loves basketball, gaming and weekend hikes")]
            assert [r["memory"] for r in remaining["results"]] == ["Name is Alex"]
            assert m.get_all(filters={"user_id": user})["results"] == []
            assert m.info.backend == backend
            assert m.embedder.name == ("openai:text-embedding-3-small:64" if backend == "sqlite" else "hashing-v1-384")
            assert m.extractor.name == "llm:standin-model"
            assert len(llm.chat_requests) == 2  # the add, and the update's new text
            translated_away = [w for w in caught if w.category is Mem0ConfigWarning]
            assert len(translated_away) == 1 and "history_db_path" in str(translated_away[0].message)
            assert not [w for w in caught if w.category is not Mem0ConfigWarning]
        finally:
            m.close()


def test_a_mem0_config_on_neo4j_reaches_the_neo4j_store(neo4j_available: bool, tmp_path: Path, uid: str) -> None:
    if not neo4j_available:
        pytest.skip(f"no Neo4j at {NEO4J_URI}")
    with quiet_from_config(mem0_config("neo4j", tmp_path)) as m:
        assert m.info.backend == "neo4j"
        (mid,) = add_verbatim(m, uid, "Keeps bees")
        assert m.cypher("MATCH (x:Memory {id: $id}) RETURN x.user_id AS u", {"id": mid}) == [{"u": uid}]
    native = make_config("neo4j", tmp_path)
    assert not is_mem0_config(native)


def test_every_result_has_updated_at(mem: Memory, uid: str) -> None:
    """mem0 returns ``updated_at`` on every memory, ``None`` until an update."""
    (mid,) = add_verbatim(mem, uid, "Rides a red bicycle")
    assert mem.search("bicycle", user_id=uid)["results"][0]["updated_at"] is None
    assert mem.get(mid)["updated_at"] is None and mem.get_all(user_id=uid)["results"][0]["updated_at"] is None
    mem.update(mid, "Rides a blue bicycle")
    assert mem.get(mid)["updated_at"] is not None


def test_expiration_date_hides_from_search_and_get_all_not_from_get(mem: Memory, uid: str) -> None:
    """mem0's ``expiration_date``: a YYYY-MM-DD day, inclusive, in UTC; list-shaped reads hide the
    memory once it passed, ``get`` by id still returns it."""
    from datetime import timedelta

    from graphmem.models import utcnow

    today = utcnow().date()
    (kept,) = add_verbatim(mem, uid, "Trial plan ends today", expiration_date=today.isoformat())
    assert ids(mem.get_all(user_id=uid)) == [kept]
    assert mem.get(kept)["expires_at"].startswith((today + timedelta(days=1)).isoformat())
    with pytest.raises(InvalidInputError, match="YYYY-MM-DD"):
        mem.add("x", user_id=uid, infer=False, expiration_date="next week")
    with pytest.raises(InvalidInputError, match="not in the future"):
        mem.add("x", user_id=uid, infer=False, expiration_date=(today - timedelta(days=1)).isoformat())
    with pytest.raises(InvalidInputError, match="not both"):
        mem.add("x", user_id=uid, infer=False, expiration_date=today.isoformat(), expires_at="2099-01-01")
    # a memory past its time: hidden from get_all and search, still there by id
    (gone,) = add_verbatim(mem, uid, "Seasonal menu is on", expires_at=utcnow() + timedelta(seconds=1))
    import time

    time.sleep(1.2)
    assert gone not in ids(mem.get_all(user_id=uid)) and gone not in ids(mem.search("seasonal menu", user_id=uid))
    assert mem.get(gone)["memory"] == "Seasonal menu is on"
