"""What a model reads from the MCP server, through the real ``mcp`` client and ``graphmem mcp`` as a
process: tool descriptions are one short paragraph (no source indentation), answers leave out the
64-character digests unless ``include_hash`` asks for them, and an argument the schema refuses is one
plain sentence naming the argument and what is expected (no pydantic report, no URL)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from graphmem.models import text_hash
from tests.test_mcp import TRIPLES, HttpServer, call, http_server, run, stdio, tool_error, write_config

__all__ = ["http_server"]  # the fixture, shared with tests/test_mcp.py

DIGEST = re.compile(r"\b[0-9a-f]{64}\b")
MAX_DESCRIPTION = 250


def descriptions(node: Any) -> list[str]:
    """Every ``description`` in a JSON schema."""
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for value in node.values() for d in descriptions(value)]
    if isinstance(node, list):
        return [d for value in node for d in descriptions(value)]
    return []


def test_descriptions_are_short_paragraphs(tmp_path: Path) -> None:
    config = write_config("sqlite", tmp_path)

    async def test() -> None:
        async with stdio(config, "--user-id", "maya") as c:
            tools = (await c.list_tools()).tools
            assert len(tools) == 9
            for tool in tools:
                text = tool.description or ""
                assert 40 < len(text) <= MAX_DESCRIPTION, (tool.name, len(text))
                assert text == " ".join(text.split()), (tool.name, text)  # no line breaks or indentation
                assert text.endswith((".", '"')) and "``" not in text, (tool.name, text)
                for field in descriptions(tool.input_schema):
                    assert field == " ".join(field.split()) and len(field) <= MAX_DESCRIPTION, (tool.name, field)
            by_name = {t.name: t for t in tools}
            assert by_name["add_memory"].description.startswith("Remember something about the user. Returns")  # type: ignore[union-attr]

    run(test)


def test_answers_leave_out_digests_unless_asked(backend: str, tmp_path: Path, uid: str) -> None:
    config = write_config(backend, tmp_path)

    async def text_of(c: Any, tool: str, **arguments: Any) -> str:
        result = await c.call_tool(tool, arguments)
        assert isinstance(result, CallToolResult) and not result.is_error, result.content
        return str(result.content[0].text)

    async def test() -> None:
        async with stdio(config, "--user-id", uid) as c:
            added = await call(c, "add_memory", text="I live in Beijing", infer=False, triples=TRIPLES)
            mid = added["results"][0]["id"]
            plain = {
                "search_memories": await text_of(c, "search_memories", query="Beijing", explain=True),
                "list_memories": await text_of(c, "list_memories"),
                "get_memory": await text_of(c, "get_memory", memory_id=mid),
                "list_rejected": await text_of(c, "list_rejected"),
            }
            for tool, text in plain.items():
                assert not DIGEST.search(text), (tool, text)
            assert json.loads(plain["get_memory"])["memory"] == "I live in Beijing"
            assert json.loads(plain["list_rejected"])["results"][0]["triple"]["target"] == "Shanghai Tower"
            assert "hash" not in json.loads(plain["search_memories"])["results"][0]

            # asked for: the same digests the Python API returns (the client checks each answer's schema)
            want = text_hash("I live in Beijing")
            hit = (await call(c, "search_memories", query="Beijing", include_hash=True))["results"][0]
            assert hit["id"] == mid and hit["hash"] == want
            assert (await call(c, "get_memory", memory_id=mid, include_hash=True))["hash"] == want
            assert [r["hash"] for r in (await call(c, "list_memories", include_hash=True))["results"]] == [want]
            entry = (await call(c, "list_rejected", include_hash=True))["results"][0]
            assert DIGEST.fullmatch(entry["ontology"])
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name in ("search_memories", "get_memory", "list_memories", "list_rejected"):
                assert tools[name].input_schema["properties"]["include_hash"]["default"] is False, name

    run(test)


# (arguments, the exact sentence the model reads)
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("search_memories", {"query": "x", "foo": 1},
     "search_memories: unknown argument 'foo'; expected query, top_k, filters, explain, threshold, as_of, since, "
     "until, now, include_hash."),
    ("search_memories", {"query": "x", "user_id": "someone-else"},
     "search_memories: unknown argument 'user_id'; expected query, top_k, filters, explain, threshold, as_of, "
     "since, until, now, include_hash."),
    ("search_memories", {"query": "x", "top_k": 0},
     "search_memories: top_k should be greater than or equal to 1, got 0."),
    ("search_memories", {"query": 5}, "search_memories: query should be a valid string, got 5."),
    ("search_memories", {}, "search_memories: missing argument 'query'."),
    ("get_memory", {"memory_id": "m1", "scope": "all"},
     "get_memory: unknown argument 'scope'; expected memory_id, include_hash."),
    ("add_memory", {"text": "x", "memory_type": "bogus"},
     "add_memory: memory_type should be 'semantic', 'episodic' or 'procedural', got 'bogus'."),
    ("add_memory", {"text": "x", "triples": [{"source": "a", "relation": "b", "target": "c", "foo": 1}]},
     "add_memory: triples[0] has an unknown field 'foo'; expected source, relation, target, source_type, "
     "target_type, valid_from."),
    ("add_memory", {"text": "x", "triples": [{"source": "a", "target": "c"}]},
     "add_memory: triples[0] needs 'relation'."),
    ("add_memory", {"text": "x", "triples": [{"source": "a", "relation": "b", "target": [1]}]},
     "add_memory: triples[0].target should be a valid string or a valid integer or a valid number or a valid "
     "boolean, got [1]."),
    ("add_memories", {"items": [{"text": "x", "user_id": "other"}]},
     "add_memories: items[0] has an unknown field 'user_id'; expected text, timestamp, metadata, memory_type, "
     "triples, speaker."),
    ("list_facts", {"include_closed": "maybe", "limit": -1, "as_of": 3, "cursor": 4, "x": 1},
     "list_facts: as_of should be a valid string, got 3; include_closed should be a valid boolean, unable to "
     "interpret input, got 'maybe'; limit should be greater than or equal to 1, got -1 (and 2 more)."),
]


def test_refused_arguments_are_one_plain_sentence(tmp_path: Path) -> None:
    config = write_config("sqlite", tmp_path)

    async def test() -> None:
        async with stdio(config, "--user-id", "maya") as c:
            for tool, arguments, sentence in REFUSED:
                said = await tool_error(c, tool, **arguments)
                assert said == sentence, (tool, arguments)
                assert "\n" not in said and "http" not in said and "pydantic" not in said.lower()
                assert "Arguments" not in said and "[type=" not in said  # no internal model names or codes
            # a graphmem error reads "Type: message", without the SDK's prefix
            assert await tool_error(c, "get_memory", memory_id="nope") == \
                "NotFoundError: no memory 'nope' in scope {'user_id': 'maya'}"
            assert await tool_error(c, "search_memories", query="  ") == \
                "InvalidInputError: query is empty"
            # the server goes on answering
            assert (await call(c, "list_memories"))["results"] == []

    run(test)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_refused_arguments_over_http(http_server: HttpServer) -> None:
    async def test() -> None:
        async with http_server.client("a") as c:
            said = await tool_error(c, "list_memories", user_id=http_server.users["b"])
            assert said == "list_memories: unknown argument 'user_id'; expected limit, cursor, filters, include_hash."
            hits = await call(c, "search_memories", query="anything")
            assert hits["results"] == []

    run(test)
