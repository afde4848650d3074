"""The MCP server with the ``mcp`` client, on both backends: over stdio (``graphmem mcp`` started by the
client's stdio transport) and over streamable HTTP (``graphmem mcp --transport http`` as a process on a
free port of 127.0.0.1). The scope never comes from tool arguments: stdio takes it from the command
line, HTTP from each request's API key; another tenant's id behaves as missing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from graphmem import Memory, MemoryConfig, StoreUnavailableError
from graphmem.embedding import HashingEmbedder
from graphmem.servers.auth import digest, new_key
from graphmem.servers.mcp import create_server
from tests.conftest import make_config
from tests.test_docs import PAGES, blocks
from tests.test_rest import FaultyStore, _free_port, _graphmem

TOOLS = {"add_memory", "add_memories", "search_memories", "get_memory", "list_memories", "delete_memory",
         "list_entities", "list_facts", "list_rejected"}
TRIPLES = [
    {"source": "Wei", "relation": "lives in", "target": "Beijing", "source_type": "Person", "target_type": "City"},
    {"source": "Wei", "relation": "born in", "target": "Shanghai Tower", "target_type": "Organization"},
]


def write_config(backend: str, tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "graphmem.yaml"
    path.write_text(yaml.safe_dump(make_config(backend, tmp_path, **extra)), encoding="utf-8")
    return path


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer; its text content is the same JSON."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]
    return data


async def tool_error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult) and result.is_error, result
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    return text


# -- stdio --------------------------------------------------------------------------------------------
def stdio(config: Path, *args: str) -> Client:
    env = {"GRAPHMEM_CACHE_DIR": os.environ["GRAPHMEM_CACHE_DIR"]}
    return Client(StdioServerParameters(command=sys.executable, args=["-m", "graphmem", "mcp", "--config", str(config),
                                                                      *args], env=env), read_timeout_seconds=120)


def test_tools_are_listed_with_their_schemas(tmp_path: Path) -> None:
    config = write_config("sqlite", tmp_path)

    async def test() -> None:
        async with stdio(config, "--user-id", "maya") as c:
            assert c.server_info is not None and c.server_info.name == "graphmem"
            assert c.instructions is not None and "scope" in c.instructions
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for name, tool in tools.items():
                props = tool.input_schema.get("properties", {})
                assert tool.input_schema.get("additionalProperties") is False, name
                assert not {"user_id", "agent_id", "run_id"} & set(props), name  # the model never names a scope
                assert tool.description and len(tool.description) > 40, name
                assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
                assert tool.annotations is not None
                writes = {"add_memory", "add_memories", "delete_memory"}
                assert tool.annotations.read_only_hint is (name not in writes), name
            assert tools["delete_memory"].annotations.destructive_hint is True  # type: ignore[union-attr]
            search = tools["search_memories"].input_schema
            assert search["required"] == ["query"] and "explain" in search["properties"]
            assert "description" in search["properties"]["explain"]
            assert tools["get_memory"].input_schema["required"] == ["memory_id"]
            add = tools["add_memory"].input_schema
            assert add["properties"]["memory_type"]["anyOf"][0]["enum"] == ["semantic", "episodic", "procedural"]
            assert "results" in tools["search_memories"].output_schema["properties"]  # type: ignore[index]
            assert "next_cursor" in tools["list_facts"].output_schema["properties"]  # type: ignore[index]

    run(test)


def test_every_tool_over_stdio(backend: str, tmp_path: Path, uid: str) -> None:
    config = write_config(backend, tmp_path)

    async def test() -> None:
        async with stdio(config, "--user-id", uid) as c:
            out = await call(c, "add_memory", text="I live in Beijing", infer=False, timestamp="2023-05-01",
                             metadata={"source": "chat"}, triples=TRIPLES)
            mid = out["results"][0]["id"]
            assert out["results"][0]["event"] == "ADD"
            assert [r["target"] for r in out["relations"]["added"]] == ["Beijing"]
            assert [r["target"] for r in out["relations"]["rejected"]] == ["Shanghai Tower"]

            found = await call(c, "search_memories", query="where does Wei live? Beijing", explain=True)
            assert found["results"][0]["id"] == mid and found["results"][0]["user_id"] == uid
            assert {"vector", "fulltext"} <= found["results"][0]["score_details"].keys()
            plain = await call(c, "search_memories", query="Beijing")
            assert "score_details" not in plain["results"][0]
            later = await call(c, "search_memories", query="where did Wei live in May? Beijing", explain=True,
                               now="2024-06-10")  # May 2024: the memory of May 2023 is lowered
            assert later["results"][0]["score_details"]["outside_asked_time"] == 0.5

            got = await call(c, "get_memory", memory_id=mid)
            assert got["memory"] == "I live in Beijing" and got["metadata"] == {"source": "chat"}
            for i in range(3):
                await call(c, "add_memory", text=f"note number {i}", infer=False, metadata={"kind": "note"})
            first = await call(c, "list_memories", limit=2, filters={"kind": "note"})
            assert len(first["results"]) == 2 and first["next_cursor"]
            rest = await call(c, "list_memories", limit=2, filters={"kind": "note"}, cursor=first["next_cursor"])
            assert [r["memory"] for r in first["results"] + rest["results"]] == \
                ["note number 2", "note number 1", "note number 0"] and rest["next_cursor"] is None

            people = await call(c, "list_entities", type="Person")
            assert [(e["name"], e["types"]) for e in people["results"]] == [("Wei", ["gm:Person"])]
            facts = (await call(c, "list_facts", entity="Wei", relation="lives in"))["results"]
            assert [(f["relation_name"], f["target"]["name"]) for f in facts] == [("gm:livesIn", "Beijing")]
            assert facts[0]["memories"] == [{"id": mid, "memory": "I live in Beijing"}]
            assert facts[0]["valid_from"].startswith("2023-05-01")
            quarantined = (await call(c, "list_rejected"))["results"]
            assert [q["triple"]["target"] for q in quarantined] == ["Shanghai Tower"]
            assert quarantined[0]["reasons"][0]["constraint"].endswith("ClassConstraintComponent")

            assert await call(c, "delete_memory", memory_id=mid) == {"id": mid, "event": "DELETE",
                                                                     "message": "memory deleted"}
            assert await tool_error(c, "get_memory", memory_id=mid) == \
                f"NotFoundError: no memory {mid!r} in scope {{'user_id': {uid!r}}}"

            many = await call(c, "add_memories", infer=False, items=[
                {"text": "I moved to Shanghai", "timestamp": "2024-01-01", "metadata": {"kind": "move"},
                 "triples": [{"source": "Wei", "relation": "lives in", "target": "Shanghai"}]},
                {"text": "note number 0"}])  # said before: nothing stored twice
            assert [it["results"][0]["event"] for it in many["items"]] == ["ADD", "NONE"]
            assert [r["target"] for r in many["items"][0]["relations"]["added"]] == ["Shanghai"]
            moved = many["items"][0]["results"][0]["id"]
            assert (await call(c, "get_memory", memory_id=moved))["metadata"] == {"kind": "move"}
            assert "items[1]" in await tool_error(c, "add_memories", items=[{"text": "fine"}, {"text": " "}])
            assert await tool_error(c, "add_memories", items=[{"text": "x", "user_id": "other"}]) == (
                "add_memories: items[0] has an unknown field 'user_id'; expected text, timestamp, metadata, "
                "memory_type, triples, speaker.")
            assert await call(c, "delete_memory", memory_id=moved)

            # bad input is a tool error with the typed error's message; the server goes on
            assert "InvalidInputError" in await tool_error(c, "search_memories", query="   ")
            assert "InvalidFilterError" in await tool_error(c, "list_memories", filters={"x": {"near": 1}})
            assert "InvalidInputError" in await tool_error(c, "list_memories", cursor="not-a-cursor")
            assert "InvalidInputError" in await tool_error(c, "list_entities", type="NoSuchClass")
            assert "NotFoundError" in await tool_error(c, "list_facts", entity="Nobody")
            assert "top_k" in await tool_error(c, "search_memories", query="x", top_k=0)
            assert "ScopeError" in await tool_error(c, "search_memories", query="x", filters={"user_id": "someone"})
            said = await tool_error(c, "list_memories", user_id="someone-else")  # one sentence for the model
            assert said == "list_memories: unknown argument 'user_id'; expected limit, cursor, filters, include_hash."
            assert "unknown tool" in (await tool_error(c, "reset")).lower()
            assert len((await call(c, "list_memories"))["results"]) == 3

    run(test)
    with Memory(MemoryConfig.from_file(config)) as m:  # everything went to the command line's scope
        assert sorted(r["memory"] for r in m.get_all(user_id=uid)["results"]) == \
            ["note number 0", "note number 1", "note number 2"]


def test_the_documented_client_config_starts_a_server(tmp_path: Path) -> None:
    configs = [json.loads(b.code) for page in PAGES for b in blocks(page, "json") if "mcpServers" in b.code]
    assert configs, "the docs lost their MCP client configuration?"
    server = configs[0]["mcpServers"]["graphmem"]
    command = Path(sys.executable).with_name(server["command"])  # the entry point this checkout installs
    env = {**server["env"], "GRAPHMEM_HOME": str(tmp_path), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing",
           "GRAPHMEM_CACHE_DIR": os.environ["GRAPHMEM_CACHE_DIR"]}

    async def test() -> None:
        async with Client(StdioServerParameters(command=str(command), args=server["args"], env=env)) as c:
            assert (await call(c, "add_memory", text="from the README's config", infer=False))["results"]

    run(test)
    user = server["args"][server["args"].index("--user-id") + 1]
    with Memory({"home": str(tmp_path), "embedder": {"provider": "hashing"}}) as m:
        assert [r["memory"] for r in m.get_all(user_id=user)["results"]] == ["from the README's config"]


def test_stdio_scope_of_an_agent_and_run(tmp_path: Path) -> None:
    config = write_config("sqlite", tmp_path)

    async def test() -> None:
        async with stdio(config, "--agent-id", "helper", "--run-id", "r1") as c:
            await call(c, "add_memory", text="said in run one", infer=False)
        async with stdio(config, "--agent-id", "helper", "--run-id", "r2") as c:
            assert (await call(c, "list_memories"))["results"] == []
            assert (await call(c, "search_memories", query="said in run one"))["results"] == []

    run(test)
    with Memory(MemoryConfig.from_file(config)) as m:
        rows = m.get_all(agent_id="helper")["results"]
        assert [(r["memory"], r["agent_id"], r["run_id"], r.get("user_id")) for r in rows] == \
            [("said in run one", "helper", "r1", None)]


def test_the_server_refuses_to_start_without_a_scope(tmp_path: Path) -> None:
    config = str(write_config("sqlite", tmp_path))

    def refused(*args: str) -> str:
        out = _graphmem("mcp", "--config", config, *args)
        said = " ".join(out.stderr.split())  # rich wraps long lines
        assert out.returncode == 2 and "Traceback" not in said and out.stdout == "", said
        return said

    assert "ConfigError: graphmem mcp over stdio needs a scope: --user-id U" in refused()
    assert "ConfigError: invalid scope" in refused("--user-id", "bad\x01id")
    assert "ConfigError: graphmem mcp over HTTP needs an API key bound to a scope" in refused("--transport", "http")
    admin_only = tmp_path / "admin-keys.yaml"
    admin_only.write_text(yaml.safe_dump({"keys": [{"id": "ops", "sha256": digest(new_key()), "admin": True}]}),
                          encoding="utf-8")
    assert "needs an API key bound to a scope" in refused("--transport", "http", "--keys-file", str(admin_only))
    assert "are for --transport stdio" in refused("--transport", "http", "--user-id", "maya")
    assert "--transport is stdio or http, not 'sse'" in refused("--transport", "sse")
    assert not (tmp_path / "graphmem.db").exists()  # refused before the store was opened

    async def test() -> None:  # a client starting such a server gets an error, not a hang
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a server that exits at once
            async with stdio(Path(config)) as c:
                await c.list_tools()

    run(test)


def test_faults_are_tool_errors_without_internals(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FaultyStore(tmp_path / "faulty.db")
    with Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(384), store=store) as m:
        async def test() -> None:
            async with Client(create_server(m, user_id="u1")) as c:  # in process
                await call(c, "add_memory", text="kept", infer=False)
                store.fault = StoreUnavailableError("Neo4j at bolt://db.internal:7687 is unreachable")
                said = await tool_error(c, "list_memories")
                assert said.endswith("StoreUnavailableError: the store cannot be reached; retry later")
                store.fault = RuntimeError("secret internals at /srv/app/config.yaml")
                said = await tool_error(c, "list_memories")
                assert said == "Error executing tool list_memories" and "secret" not in said
                store.fault = None
                assert [r["memory"] for r in (await call(c, "list_memories"))["results"]] == ["kept"]
            async with Client(create_server(m)) as c:  # keys mode without the HTTP layer: nothing is served
                assert "UnauthenticatedError" in await tool_error(c, "list_memories")

        run(test)
    assert "RuntimeError: secret internals" in caplog.text  # in the server's log only, with its traceback


# -- streamable HTTP ----------------------------------------------------------------------------------
@dataclass
class HttpServer:
    url: str
    keys: dict[str, str]
    users: dict[str, str]
    log: Path

    @contextlib.asynccontextmanager
    async def client(self, name: str) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.keys[name]}"},
                                      timeout=httpx2.Timeout(60, read=120)) as http, \
                Client(streamable_http_client(self.url, http_client=http)) as client:
            yield client


@pytest.fixture
def http_server(backend: str, tmp_path: Path) -> Iterator[HttpServer]:
    users = {"a": f"u-{uuid.uuid4().hex[:12]}", "b": f"u-{uuid.uuid4().hex[:12]}"}
    keys = {name: new_key() for name in ("a", "b", "admin")}
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(yaml.safe_dump({"keys": [
        {"id": "key-a", "sha256": digest(keys["a"]), "user_id": users["a"]},
        {"id": "key-b", "sha256": digest(keys["b"]), "user_id": users["b"]},
        {"id": "key-admin", "sha256": digest(keys["admin"]), "admin": True}]}), encoding="utf-8")
    config, port, log = write_config(backend, tmp_path), _free_port(), tmp_path / "server.log"
    with log.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp", "--transport", "http", "--config",
                                 str(config), "--keys-file", str(keys_file), "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            deadline = time.monotonic() + 90
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text(encoding="utf-8")
                try:
                    if httpx.get(url, timeout=1).status_code == 401:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield HttpServer(url, keys, users, log)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    said = log.read_text(encoding="utf-8")
    assert proc.returncode in (0, -signal.SIGTERM), said  # uvicorn re-raises the signal once it has shut down
    assert "Application shutdown complete." in said  # the lifespan closed the store


def test_every_tool_over_http(http_server: HttpServer) -> None:
    user = http_server.users["a"]

    async def test() -> None:
        async with http_server.client("a") as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            out = await call(c, "add_memory", text="I live in Beijing", infer=False, triples=TRIPLES)
            mid = out["results"][0]["id"]
            found = await call(c, "search_memories", query="Beijing", explain=True)
            assert found["results"][0]["id"] == mid and "score_details" in found["results"][0]
            assert (await call(c, "get_memory", memory_id=mid))["user_id"] == user
            assert [r["id"] for r in (await call(c, "list_memories"))["results"]] == [mid]
            assert sorted(e["name"] for e in (await call(c, "list_entities"))["results"]) == ["Beijing", "Wei"]
            assert (await call(c, "list_facts", entity="Wei"))["results"][0]["target"]["name"] == "Beijing"
            assert [q["triple"]["target"] for q in (await call(c, "list_rejected"))["results"]] == ["Shanghai Tower"]
            assert "user_id" in await tool_error(c, "get_memory", memory_id=mid, user_id=http_server.users["b"])
            assert (await call(c, "delete_memory", memory_id=mid))["event"] == "DELETE"
            assert "NotFoundError" in await tool_error(c, "delete_memory", memory_id=mid)

    run(test)


def test_each_key_sees_only_its_own_scope(http_server: HttpServer) -> None:
    missing = str(uuid.uuid4())

    async def test() -> None:
        async with http_server.client("a") as a, http_server.client("b") as b:
            added = await call(a, "add_memory", text="a's secret plan", infer=False, triples=TRIPLES)
            mid = added["results"][0]["id"]
            await call(b, "add_memory", text="b's own note", infer=False)
            for tool in ("get_memory", "delete_memory"):
                theirs, nothing = await tool_error(b, tool, memory_id=mid), await tool_error(b, tool, memory_id=missing)
                assert "NotFoundError" in theirs and theirs == nothing.replace(missing, mid)
                assert http_server.users["a"] not in theirs and "secret" not in theirs
            assert [r["memory"] for r in (await call(b, "list_memories"))["results"]] == ["b's own note"]
            assert [r["memory"] for r in (await call(b, "search_memories", query="secret plan"))["results"]] == \
                ["b's own note"]
            assert (await call(b, "list_entities"))["results"] == []
            assert (await call(b, "list_facts"))["results"] == []
            assert (await call(b, "list_rejected"))["results"] == []
            assert "NotFoundError" in await tool_error(b, "list_facts", entity="Wei")
            assert "ScopeError" in await tool_error(b, "list_memories", filters={"user_id": http_server.users["a"]})
            assert (await call(a, "get_memory", memory_id=mid))["memory"] == "a's secret plan"  # b changed nothing
            assert [r["memory"] for r in (await call(a, "list_memories"))["results"]] == ["a's secret plan"]

    run(test)


def test_http_needs_a_key_bound_to_a_scope(http_server: HttpServer) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}

    def post(key: str | None, payload: dict[str, Any], **headers: str) -> httpx.Response:
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.post(http_server.url, json=payload, headers={**accept, **auth, **headers}, timeout=30)

    for key, status, error in [(None, 401, "UnauthenticatedError"), ("gm_not-a-key-of-this-server", 401,
                                                                      "UnauthenticatedError"),
                               (http_server.keys["admin"], 403, "KeyScopeError")]:
        r = post(key, hello)
        assert r.status_code == status and r.headers["content-type"] == "application/problem+json"
        assert r.json()["error"] == error, r.text
    assert "admin key and binds no scope" in post(http_server.keys["admin"], hello).json()["detail"]
    assert post(None, hello).headers["www-authenticate"] == "Bearer"

    opened = post(http_server.keys["a"], hello)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    assert post(http_server.keys["b"], listing, **headers).status_code == 404  # a's session is not b's
    assert post(http_server.keys["a"], listing, **headers).status_code in (200, 202)

    async def test() -> None:  # the SDK's client without a key fails to connect
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401 answer
            async with Client(http_server.url) as c:
                await c.list_tools()

    run(test)
    lines = [json.loads(line) for line in http_server.log.read_text(encoding="utf-8").splitlines() if line.strip()]
    requests = [x for x in lines if x.get("event") == "request"]
    assert {"key-a", "key-b", "key-admin", None} <= {x["key_id"] for x in requests}
    assert all(x["path"] in ("/mcp", "<unmatched>") for x in requests)
    text = http_server.log.read_text(encoding="utf-8")
    assert not any(key in text for key in http_server.keys.values())


def test_add_memory_takes_a_speaker(tmp_path: Path) -> None:
    """Over the real MCP client: ``speaker`` names whom "I" is, in add_memory and add_memories."""
    config = write_config("sqlite", tmp_path)

    async def test() -> None:
        async with stdio(config, "--user-id", "u-17") as c:
            out = await call(c, "add_memory", text="I live in Oslo.", speaker="Kari")
            assert [(r["source"], r["target"]) for r in out["relations"]["added"]] == [("Kari", "Oslo")]
            many = await call(c, "add_memories", items=[{"text": "I work at Statnett.", "speaker": "Kari"},
                                                        {"text": "I live in Bergen."}])
            assert [r["source"] for item in many["items"] for r in item["relations"]["added"]] == ["Kari", "u-17"]

    run(test)
