"""Framework adapters against the real packages: the LangGraph store (on SQLite, one case also on
Neo4j), a LangGraph graph that reads and writes it, and the LangChain and OpenAI Agents SDK tools.

Outside CI a test skips when its extra is not installed; under ``CI=true`` a missing extra fails
(``make venv`` installs them all)."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypedDict

import pytest

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import DuplicateMemoryError, InvalidFilterError, InvalidInputError, ScopeError, UnsupportedError

from .conftest import IN_CI, make_config


def need(module: str) -> ModuleType:
    """The framework module, or a skip outside CI when its extra is absent."""
    if IN_CI:
        return importlib.import_module(module)
    return pytest.importorskip(module)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(384))
    yield m
    m.close()


@pytest.fixture
def store(memory: Memory) -> Any:
    need("langgraph.store.base")
    from graphmem.adapters.langgraph import GraphmemStore

    return GraphmemStore(memory)


NS = ("users", "maya", "memories")


def items_of(memory: Memory, user_id: str) -> list[dict[str, Any]]:
    return memory.get_all(user_id=user_id)["results"]


# -- the store ------------------------------------------------------------------------------------
def test_importing_graphmem_imports_no_framework() -> None:
    code = ("import sys, graphmem, graphmem.adapters, graphmem.adapters.namespaces, graphmem.adapters.tools\n"
            "loaded = [m for m in ('langgraph', 'langchain_core', 'agents') if m in sys.modules]\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(("adapter", "framework", "extra"), [
    ("langgraph", "langgraph", "langgraph"), ("langchain", "langchain_core", "langchain"),
    ("openai_agents", "agents", "agents")])
def test_an_adapter_without_its_extra_names_the_extra(adapter: str, framework: str, extra: str) -> None:
    code = (f"import sys; sys.modules[{framework!r}] = None\n"  # as if the package were not installed
            f"try:\n    import graphmem.adapters.{adapter}\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert f"pip install 'graphmem[{extra}]'" in out.stdout


def test_put_get_round_trip_and_update_by_key(store: Any, memory: Memory) -> None:
    value = {"content": "Maya is allergic to peanuts", "tags": ["health", "food"], "severity": 3,
             "nested": {"a": [1, {"b": None}]}, "note": None, "ok": True}
    store.put(NS, "allergy", value)
    item = store.get(NS, "allergy")
    assert (item.namespace, item.key, item.value) == (NS, "allergy", value)
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    [record] = items_of(memory, "maya")
    assert record["memory"] == "Maya is allergic to peanuts"  # the content is the memory's text

    store.put(NS, "allergy", {"content": "Maya is allergic to peanuts and shellfish", "severity": 4})
    again = store.get(NS, "allergy")
    assert again.value == {"content": "Maya is allergic to peanuts and shellfish", "severity": 4}  # keys dropped
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    [updated] = items_of(memory, "maya")  # updated in place, not a second memory
    assert updated["id"] == record["id"] and updated["memory"].endswith("shellfish")
    assert [h["event"] for h in memory.history(record["id"], user_id="maya")] == ["ADD", "UPDATE"]

    store.put(NS, "allergy", {"content": "Maya is allergic to peanuts and shellfish", "severity": 5})  # same text
    assert store.get(NS, "allergy").value["severity"] == 5
    assert len(items_of(memory, "maya")) == 1
    assert store.get(NS, "missing") is None


def test_value_without_a_text_key_is_stored_as_json_and_index_fields_pick_the_text(store: Any,
                                                                                 memory: Memory) -> None:
    store.put(NS, "prefs", {"food": "ramen", "drink": "green tea"})
    store.put(NS, "doc", {"title": "Trip to Porto", "body": "ignored", "n": 1}, index=["title"])
    texts = {r["memory"] for r in items_of(memory, "maya")}
    assert texts == {'{"drink": "green tea", "food": "ramen"}', "Trip to Porto"}
    assert store.get(NS, "doc").value == {"title": "Trip to Porto", "body": "ignored", "n": 1}


def test_search_ranks_the_right_item_first_with_scores(store: Any) -> None:
    facts = {
        "allergy": "Maya is allergic to peanuts",
        "home": "Maya lives in Lisbon near the river",
        "job": "Maya works as a nurse at the city hospital",
        "pet": "Maya has a grey cat called Miso",
    }
    for key, text in facts.items():
        store.put(NS, key, {"content": text})
    for query, key in (("where does Maya live?", "home"), ("what is her cat called", "pet"),
                       ("peanuts allergy", "allergy"), ("which hospital does she work at", "job")):
        hits = store.search(("users", "maya"), query=query, limit=4)
        assert hits[0].key == key, (query, [(h.key, h.score) for h in hits])
        assert all(h.score is not None for h in hits) and hits[0].score >= hits[-1].score
        assert hits[0].value == {"content": facts[key]} and hits[0].namespace == NS
    page = [h.key for h in store.search(("users", "maya"), query="Maya", limit=2, offset=1)]
    everything = [h.key for h in store.search(("users", "maya"), query="Maya", limit=4)]
    assert page == everything[1:3]


def test_filter_maps_to_metadata_filters(store: Any) -> None:
    store.put(NS, "a", {"content": "likes jazz", "kind": "music", "stars": 5})
    store.put(NS, "b", {"content": "likes techno", "kind": "music", "stars": 2})
    store.put(NS, "c", {"content": "likes hiking", "kind": "sport", "stars": 4, "role": "admin"})
    keys = lambda **kw: sorted(i.key for i in store.search(("users", "maya"), **kw))  # noqa: E731
    assert keys(filter={"kind": "music"}) == ["a", "b"]
    assert keys(filter={"stars": {"$gte": 4}}) == ["a", "c"]
    assert keys(filter={"kind": {"$ne": "music"}, "stars": {"$lt": 5}}) == ["c"]
    assert keys(filter={"role": "admin"}) == ["c"]  # a value key named like a record field
    assert keys(query="jazz music", filter={"stars": {"$lt": 5}}) == ["b", "c"]
    with pytest.raises(InvalidFilterError, match="nested-object"):
        store.search(("users", "maya"), filter={"kind": {"name": "x"}})
    with pytest.raises(InvalidFilterError, match="unknown operator"):
        store.search(("users", "maya"), filter={"stars": {"$regex": "5"}})


def test_search_without_query_pages_newest_first(store: Any) -> None:
    for i in range(5):
        store.put(NS, f"k{i}", {"content": f"note number {i}"})
    assert [i.key for i in store.search(NS, limit=2)] == ["k4", "k3"]
    assert [i.key for i in store.search(NS, limit=2, offset=2)] == ["k2", "k1"]
    assert store.search(NS, limit=0) == []


def test_delete_removes_only_that_item(store: Any, memory: Memory) -> None:
    store.put(NS, "a", {"content": "first"})
    store.put(NS, "b", {"content": "second"})
    store.delete(NS, "a")
    store.delete(NS, "never-there")  # deleting a missing key is not an error (LangGraph's contract)
    assert store.get(NS, "a") is None and store.get(NS, "b").value == {"content": "second"}
    assert [r["memory"] for r in items_of(memory, "maya")] == ["second"]


def test_namespaces_are_isolated(store: Any, memory: Memory) -> None:
    store.put(("users", "maya", "memories"), "k", {"content": "Maya loves the sea"})
    store.put(("users", "bob", "memories"), "k", {"content": "Bob loves the mountains"})
    store.put(("users", "maya", "work"), "k", {"content": "Maya's project is due Friday"})
    assert store.get(("users", "bob", "memories"), "k").value["content"] == "Bob loves the mountains"
    assert store.get(("users", "maya", "memories"), "k").value["content"] == "Maya loves the sea"
    for query in ("who loves the mountains", "Bob", "mountains"):
        assert {i.namespace[1] for i in store.search(("users", "maya"), query=query)} == {"maya"}
    assert [i.key for i in store.search(("users", "maya", "work"))] == ["k"]
    assert store.search(("users", "maya", "work"))[0].namespace == ("users", "maya", "work")
    assert {r["memory"] for r in items_of(memory, "bob")} == {"Bob loves the mountains"}
    store.delete(("users", "maya", "memories"), "k")  # the same key elsewhere stays
    assert store.get(("users", "bob", "memories"), "k") is not None
    assert store.get(("users", "maya", "work"), "k") is not None
    # memories written to the scope outside the store are not items
    memory.add("Maya drinks coffee", user_id="maya", infer=False)
    assert [i.key for i in store.search(("users", "maya"))] == ["k"]


def test_a_namespace_that_names_no_scope_is_refused(store: Any, memory: Memory) -> None:
    for call in (lambda: store.put(("memories",), "k", {"content": "x"}),
                 lambda: store.get(("docs", "x"), "k"),
                 lambda: store.search(("users",), query="x"),
                 lambda: store.search((), query="x"),
                 lambda: store.list_namespaces(),
                 lambda: store.list_namespaces(prefix=("users", "*"))):
        with pytest.raises(ScopeError, match="scope"):
            call()
    with pytest.raises(ScopeError):
        store.put(("users", "bad\x01id"), "k", {"content": "x"})
    assert memory.get_all(user_id="memories")["results"] == []


def test_custom_scope_mapping(memory: Memory) -> None:
    need("langgraph.store.base")
    from graphmem.adapters.langgraph import GraphmemStore, NamespaceScope

    def layout(namespace: tuple[str, ...]) -> NamespaceScope | None:  # LangGraph's ("memories", user_id)
        return NamespaceScope(2, user_id=namespace[1]) if namespace[:1] == ("memories",) and len(namespace) > 1 \
            else None

    store = GraphmemStore(memory, scope=layout)
    store.put(("memories", "ana"), "k", {"content": "Ana speaks Portuguese"})
    assert [r["memory"] for r in items_of(memory, "ana")] == ["Ana speaks Portuguese"]
    with pytest.raises(ScopeError):
        store.put(("users", "ana"), "k", {"content": "x"})


def test_list_namespaces(store: Any) -> None:
    for namespace in (("users", "maya", "a"), ("users", "maya", "a", "x"), ("users", "maya", "b", "x"),
                      ("users", "maya"), ("users", "bob", "a")):
        store.put(namespace, "k", {"content": f"item of {'/'.join(namespace)}"})
    assert store.list_namespaces(prefix=("users", "maya")) == [
        ("users", "maya"), ("users", "maya", "a"), ("users", "maya", "a", "x"), ("users", "maya", "b", "x")]
    assert store.list_namespaces(prefix=("users", "maya"), suffix=("x",)) == [
        ("users", "maya", "a", "x"), ("users", "maya", "b", "x")]
    assert store.list_namespaces(prefix=("users", "maya", "*", "x")) == [
        ("users", "maya", "a", "x"), ("users", "maya", "b", "x")]
    assert store.list_namespaces(prefix=("users", "maya"), max_depth=3) == [
        ("users", "maya"), ("users", "maya", "a"), ("users", "maya", "b")]
    assert store.list_namespaces(prefix=("users", "maya"), limit=2, offset=1) == [
        ("users", "maya", "a"), ("users", "maya", "a", "x")]
    assert store.list_namespaces(prefix=("users", "bob")) == [("users", "bob", "a")]


def test_unindexed_items_are_kept_but_not_searched(store: Any) -> None:
    store.put(NS, "secret", {"content": "the door code is 4711"}, index=False)
    store.put(NS, "open", {"content": "the office door is blue"})
    assert [i.key for i in store.search(("users", "maya"), query="door code")] == ["open"]
    assert store.get(NS, "secret").value == {"content": "the door code is 4711"}
    assert {i.key for i in store.search(("users", "maya"))} == {"secret", "open"}


def test_bad_puts_write_nothing(store: Any, memory: Memory) -> None:
    store.put(NS, "a", {"content": "Maya likes tea"})
    with pytest.raises(DuplicateMemoryError, match="same scope already holds this text"):
        store.put(NS, "b", {"content": "Maya likes tea"})
    with pytest.raises(InvalidInputError, match="reserved"):
        store.put(NS, "c", {"content": "x", "_lg_key": "a"})
    with pytest.raises(InvalidInputError, match="metadata"):
        store.put(NS, "d", {"content": "x", "when": object()})
    with pytest.raises(UnsupportedError, match="TTL"):
        store.batch([importlib.import_module("langgraph.store.base").PutOp(NS, "e", {"content": "x"}, ttl=5.0)])
    langgraph_errors = importlib.import_module("langgraph.store.base")
    with pytest.raises(langgraph_errors.InvalidNamespaceError):
        store.batch([langgraph_errors.GetOp(("users", "maya.s"), "k")])  # a period would forge a namespace
    assert [r["memory"] for r in items_of(memory, "maya")] == ["Maya likes tea"]
    assert store.get(NS, "a").value == {"content": "Maya likes tea"}


def test_async_methods_and_batch_order(store: Any) -> None:
    base = need("langgraph.store.base")

    async def run() -> list[Any]:
        await store.aput(NS, "a", {"content": "Maya plays chess on Sundays"})
        hits = await store.asearch(("users", "maya"), query="chess")
        results = await store.abatch([base.PutOp(NS, "b", {"content": "Maya swims"}), base.GetOp(NS, "b"),
                                      base.PutOp(NS, "b", None), base.GetOp(NS, "b")])
        await store.adelete(NS, "a")
        return [hits, results, await store.aget(NS, "a")]

    hits, results, gone = asyncio.run(run())
    assert [h.key for h in hits] == ["a"]
    assert results[0] is None and results[1].value == {"content": "Maya swims"} and results[2:] == [None, None]
    assert gone is None


def test_puts_of_one_new_key_make_one_memory(store: Any, memory: Memory) -> None:
    import threading

    barrier = threading.Barrier(6)

    def put(i: int) -> None:
        barrier.wait()
        store.put(NS, "same", {"content": f"version {i}"})

    threads = [threading.Thread(target=put, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [record] = items_of(memory, "maya")
    assert store.get(NS, "same").value == {"content": record["memory"]}


def test_a_key_written_twice_by_racing_processes_heals(store: Any, memory: Memory) -> None:
    """Two processes' stores can each add a new key (their locks are their own): reads take the newest
    memory, the next put keeps one."""
    store.put(NS, "k", {"content": "first writer"})
    [first] = items_of(memory, "maya")
    memory.add("second writer", user_id="maya", infer=False, metadata={**first["metadata"], "content": "second writer"})
    assert len(items_of(memory, "maya")) == 2
    assert store.get(NS, "k").value == {"content": "second writer"}
    store.put(NS, "k", {"content": "third put"})
    assert [r["memory"] for r in items_of(memory, "maya")] == ["third put"]
    assert [i.key for i in store.search(("users", "maya"))] == ["k"]


def test_store_fields_name_the_text(memory: Memory) -> None:
    need("langgraph.store.base")
    from graphmem.adapters.langgraph import GraphmemStore

    store = GraphmemStore(memory, fields=["facts[*].text"])
    store.put(NS, "k", {"facts": [{"text": "Maya sings"}, {"text": "Maya paints"}], "n": 2})
    assert [r["memory"] for r in items_of(memory, "maya")] == ["Maya sings\nMaya paints"]
    assert store.search(("users", "maya"), query="who paints")[0].value["n"] == 2
    with pytest.raises(InvalidInputError):
        GraphmemStore(memory, fields="facts")  # type: ignore[arg-type]


@pytest.mark.neo4j
def test_store_on_neo4j(tmp_path: Path, neo4j_available: bool, uid: str) -> None:
    need("langgraph.store.base")
    from graphmem.adapters.langgraph import GraphmemStore

    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`)")
    m = Memory(MemoryConfig.load(make_config("neo4j", tmp_path)), embedder=HashingEmbedder(384))
    other = f"{uid}-other"
    try:
        store = GraphmemStore(m)
        ns = ("users", uid, "memories")
        store.put(ns, "home", {"content": "Wei lives in Shanghai", "since": 2024, "tags": ["city"], "x": None})
        store.put(ns, "job", {"content": "Wei works for Acme as an engineer", "since": 2021})
        store.put(("users", other, "memories"), "home", {"content": "Wei lives in Shanghai too"})
        store.put(ns, "home", {"content": "Wei lives in Hangzhou", "since": 2025, "tags": ["city"], "x": None})
        assert store.get(ns, "home").value == {"content": "Wei lives in Hangzhou", "since": 2025, "tags": ["city"],
                                               "x": None}
        assert len(m.get_all(user_id=uid)["results"]) == 2
        hits = store.search(("users", uid), query="where does Wei live", limit=5)
        assert hits[0].key == "home" and {h.namespace[1] for h in hits} == {uid}
        assert [i.key for i in store.search(("users", uid), filter={"since": {"$lt": 2025}})] == ["job"]
        assert store.list_namespaces(prefix=("users", uid)) == [ns]
        store.delete(ns, "home")
        assert store.get(ns, "home") is None and store.get(("users", other, "memories"), "home") is not None
    finally:
        m.delete_all(user_id=uid)
        m.delete_all(user_id=other)
        m.close()


# -- a LangGraph graph on the store ----------------------------------------------------------------
class ChatState(TypedDict, total=False):
    user_id: str
    message: str
    recalled: list[str]


def test_langgraph_graph_reads_and_writes_the_store(store: Any, memory: Memory) -> None:
    need("langgraph.graph")
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    def recall(state: ChatState, *, store: BaseStore) -> ChatState:  # the store injected by argument
        hits = store.search(("users", state["user_id"]), query=state["message"], limit=2)
        return {"recalled": [h.value["content"] for h in hits]}

    def remember(state: ChatState) -> ChatState:  # the store from the run's context
        if state["message"].startswith("remember:"):
            text = state["message"].removeprefix("remember:").strip()
            get_store().put(("users", state["user_id"], "chat"), uuid.uuid4().hex, {"content": text})
        return {}

    graph = (StateGraph(ChatState).add_node("recall", recall).add_node("remember", remember)
             .add_edge(START, "recall").add_edge("recall", "remember").add_edge("remember", END)
             .compile(store=store))
    graph.invoke({"user_id": "maya", "message": "remember: Maya's sister is called Inês"})
    graph.invoke({"user_id": "bob", "message": "remember: Bob's sister is called Clara"})
    graph.invoke({"user_id": "maya", "message": "remember: Maya is vegetarian"})
    out = graph.invoke({"user_id": "maya", "message": "what is my sister called?"})
    assert out["recalled"][0] == "Maya's sister is called Inês"
    assert all("Clara" not in r for r in out["recalled"])
    assert sorted(r["memory"] for r in items_of(memory, "maya")) == ["Maya is vegetarian",
                                                                    "Maya's sister is called Inês"]
    later = asyncio.run(graph.ainvoke({"user_id": "bob", "message": "who is my sister?"}))
    assert later["recalled"] == ["Bob's sister is called Clara"]


# -- agent tools ------------------------------------------------------------------------------------
def test_langchain_tools_are_bound_to_their_scope(memory: Memory) -> None:
    need("langchain_core.tools")
    from graphmem.adapters.langchain import memory_tools

    add, search = memory_tools(memory, user_id="maya", infer=False)
    bob_add, _ = memory_tools(memory, user_id="bob", infer=False)
    assert [t.name for t in (add, search)] == ["add_memory", "search_memory"]
    for tool in (add, search):  # nothing in what the model fills in names a scope
        props = tool.tool_call_schema.model_json_schema()["properties"]
        assert not {"user_id", "agent_id", "run_id"} & set(props)
    assert json.loads(add.invoke({"text": "Maya is allergic to peanuts"}))["stored"][0]["event"] == "ADD"
    add.invoke({"text": "Maya lives in Lisbon"})
    bob_add.invoke({"text": "Bob is allergic to cats"})
    found = json.loads(search.invoke({"query": "what is she allergic to?", "limit": 3}))["memories"]
    assert found[0]["memory"] == "Maya is allergic to peanuts" and found[0]["score"] > 0
    assert all("Bob" not in f["memory"] for f in found)
    assert {r["memory"] for r in items_of(memory, "maya")} == {"Maya is allergic to peanuts", "Maya lives in Lisbon"}

    call = {"name": "search_memory", "args": {"query": "allergic", "user_id": "bob"}, "id": "c1", "type": "tool_call"}
    answer = search.invoke(call)  # a model trying another tenant gets an error back, not Bob's memories
    assert answer.status == "error" and "user_id" in answer.content and "cats" not in answer.content
    empty = add.invoke({"name": "add_memory", "args": {"text": "  "}, "id": "c2", "type": "tool_call"})
    assert empty.status == "error" and "nothing was stored" in empty.content
    assert len(items_of(memory, "maya")) == 2
    found = json.loads(asyncio.run(search.ainvoke({"query": "Lisbon"})))["memories"]
    assert found[0]["memory"] == "Maya lives in Lisbon"
    with pytest.raises(ScopeError):
        memory_tools(memory)


def test_langchain_tools_in_a_langgraph_tool_node(memory: Memory) -> None:
    need("langchain_core.tools")
    need("langgraph.prebuilt")
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from graphmem.adapters.langchain import memory_tools

    tools = ToolNode(memory_tools(memory, user_id="maya"))  # infer=True: graphmem extracts memories and facts
    graph = StateGraph(MessagesState).add_node("tools", tools).add_edge(START, "tools").add_edge("tools", END).compile()

    def answer(name: str, args: dict[str, Any]) -> dict[str, Any]:
        """What the tool node answers an AI message calling ``name`` (as a model would)."""
        out = graph.invoke({"messages": [AIMessage("", tool_calls=[{"name": name, "args": args, "id": "t1"}])]})
        message = out["messages"][-1]
        assert message.status == "success", message.content
        parsed: dict[str, Any] = json.loads(message.content)
        return parsed

    stored = answer("add_memory", {"text": "I work at Acme. My brother Tom lives in Porto."})["stored"]
    assert len(stored) >= 2 and all(s["event"] == "ADD" for s in stored)  # a memory per sentence
    assert "Porto" in answer("search_memory", {"query": "where does Tom live?"})["memories"][0]["memory"]
    assert memory.entities(user_id="maya", name="Tom")["results"]  # the graph was built too


def test_openai_agents_tools(memory: Memory) -> None:
    need("agents")
    from agents import FunctionTool
    from agents.tool_context import ToolContext

    from graphmem.adapters.openai_agents import memory_tools

    add, search = memory_tools(memory, user_id="maya", infer=False)
    assert isinstance(add, FunctionTool) and (add.name, search.name) == ("add_memory", "search_memory")
    for tool in (add, search):
        schema = tool.params_json_schema
        assert schema["additionalProperties"] is False and not {"user_id", "agent_id", "run_id"} & set(
            schema["properties"])

    def ctx(name: str, args: str) -> ToolContext[None]:
        return ToolContext(context=None, tool_name=name, tool_call_id="c", tool_arguments=args)

    async def run() -> list[Any]:
        a = '{"text": "Maya collects vinyl records"}'
        s = '{"query": "what does Maya collect?", "limit": null}'
        bad = '{"query": "records", "limit": 0}'
        return [await add.on_invoke_tool(ctx("add_memory", a), a),
                await search.on_invoke_tool(ctx("search_memory", s), s),
                await search.on_invoke_tool(ctx("search_memory", bad), bad)]

    added, found, bad = asyncio.run(run())
    assert json.loads(added)["stored"][0]["memory"] == "Maya collects vinyl records"
    assert json.loads(found)["memories"][0]["memory"] == "Maya collects vinyl records"
    assert bad.startswith("error: limit")
    assert [r["memory"] for r in items_of(memory, "maya")] == ["Maya collects vinyl records"]


def test_openai_agents_runner_calls_the_tools_over_http(memory: Memory) -> None:
    """A real Agents SDK run: the model (the suite's OpenAI-compatible stand-in, over HTTP) calls
    add_memory, then search_memory, then answers; the tools' outputs go back to it."""
    agents = need("agents")
    from openai import AsyncOpenAI

    from graphmem.adapters.openai_agents import memory_tools
    from graphmem.testing.standin import Reply, StandinServer

    agents.set_tracing_disabled(True)  # the SDK would otherwise export traces to the hosted platform
    with StandinServer() as server:
        server.chat_script.extend([
            Reply(tool_calls=[{"name": "add_memory", "arguments": json.dumps({"text": "Maya's bike is red"})}]),
            Reply(tool_calls=[{"name": "search_memory",
                               "arguments": json.dumps({"query": "what colour is the bike?", "limit": None})}]),
            Reply(content="Your bike is red."),
        ])
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-standin", max_retries=0)
        model = agents.OpenAIChatCompletionsModel(model="standin", openai_client=client)
        agent = agents.Agent(name="assistant", instructions="Use your memory tools.", model=model,
                             tools=memory_tools(memory, user_id="maya", infer=False))
        result = agents.Runner.run_sync(agent, "Remember my bike is red, then tell me its colour.")
        requests = server.chat_requests
    assert result.final_output == "Your bike is red."
    assert [r["memory"] for r in items_of(memory, "maya")] == ["Maya's bike is red"]
    sent = [t["function"] for t in requests[0]["tools"]]
    assert {t["name"] for t in sent} == {"add_memory", "search_memory"}
    assert all(not {"user_id", "agent_id", "run_id"} & set(t["parameters"]["properties"]) for t in sent)
    tool_outputs = [m["content"] for m in requests[2]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_outputs[-1])["memories"][0]["memory"] == "Maya's bike is red"
