"""graphmem against a real local model: llama-cpp-python's server with Gemma 3 270M (``make test-llm``).

The model is far too small to extract well, so these tests judge the protocol, not the quality:
every ``add`` returns or raises a graphmem error (never an ``openai`` or pydantic exception), a
failed ``add`` writes nothing, the structured-output mode adapts to what this server accepts, the
prompt fits the context, and long input goes out as several chunks, one call each. Requests pass a
recording proxy (real HTTP both ways) so the tests see what was sent and answered.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import GraphmemError, LLMError
from graphmem.extraction.llm import LLMExtractor

from .conftest import OUTCOMES, Outcome
from .proxy import Exchange, RecordingProxy

MODEL = "gemma-3-270m"

CONVERSATIONS: dict[str, list[dict[str, str]]] = {
    "move": [
        {"role": "user", "name": "Maya",
         "content": "Hi, I'm Maya. I moved to Lisbon in March and I work for Northwind."},
        {"role": "assistant", "content": "Welcome to Lisbon! How do you like it so far?"},
        {"role": "user", "name": "Maya", "content": "I love it, the food is great."},
    ],
    "allergy": [
        {"role": "user", "name": "Wei", "content": "Please remember that I am allergic to peanuts."},
        {"role": "assistant", "content": "Noted: you are allergic to peanuts."},
    ],
    "family": [
        {"role": "user", "name": "Omar", "content": "My sister Lina lives in Cairo and works as a nurse."},
        {"role": "assistant", "content": "Thanks for telling me about Lina."},
        {"role": "user", "name": "Omar", "content": "We are flying to Cairo on 12 May to visit her."},
    ],
}

LONG = [
    {"role": "user", "name": "Ana", "content": f"Day {i}: I met {name} at the {place} office of Northwind in {city}, "
                                               f"where {name} has worked since {2010 + i}. We talked about the "
                                               "project plan, the budget for next quarter and the new hires."}
    for i, (name, place, city) in enumerate([
        ("Bruno", "main", "Porto"), ("Carla", "river", "Madrid"), ("Dario", "old", "Rome"),
        ("Elena", "north", "Berlin"), ("Farid", "south", "Paris"), ("Greta", "east", "Vienna"),
    ])
]


BOUNDED: dict[str, Any] = {"max_output_tokens": 256, "max_splits": 1, "output_retries": 1}
"""Gemma 270M often loops until the output limit, at ~25 tokens/s on 2 shared cores: a small budget and
few re-asks keep an add under about a minute while still exercising cut-off answers and splitting."""


def make_memory(tmp_path: Path, proxy: RecordingProxy, **settings: Any) -> Memory:
    chunking = settings.pop("chunking", {})
    llm = {"provider": "openai", "base_url": proxy.url, "model": MODEL, "max_retries": 0, "timeout_s": 300,
           **settings}
    config = {"home": str(tmp_path), "store": {"provider": "sqlite", "path": str(tmp_path / "graphmem.db")},
              "embedder": {"provider": "hashing"}, "llm": llm, "chunking": chunking}
    return Memory(MemoryConfig.load(config), embedder=HashingEmbedder(384))


def contents(m: Memory, uid: str) -> tuple[int, int, int, int]:
    """What the scope holds: memories, entities, facts (closed ones too), quarantined triples."""
    return (len(m.get_all(user_id=uid, limit=1000)["results"]), len(m.entities(user_id=uid)["results"]),
            len(m.facts(user_id=uid, include_closed=True)["results"]), len(m.rejected(user_id=uid)))


def extractor(m: Memory) -> LLMExtractor:
    ex = m.extractor
    assert isinstance(ex, LLMExtractor), f"llm.provider=openai built {type(ex).__name__}"
    return ex


def attempt(m: Memory, proxy: RecordingProxy, test: str, what: str, messages: list[dict[str, str]],
            uid: str, **add: Any) -> tuple[dict[str, Any] | None, GraphmemError | None, list[Exchange]]:
    """One ``add``: its result or its graphmem error, the calls it made; anything else fails the test,
    and so does a failed ``add`` that changed the store."""
    before = contents(m, uid)
    stats = extractor(m).stats.as_dict()
    mark = proxy.mark()
    started = time.monotonic()
    out: dict[str, Any] | None = None
    error: GraphmemError | None = None
    try:
        out = m.add(messages, user_id=uid, **add)
    except GraphmemError as exc:
        error = exc
    except BaseException as exc:  # the point: name what escaped
        raise AssertionError(f"add raised {type(exc).__module__}.{type(exc).__name__}, not a graphmem error: "
                             f"{exc}") from exc
    seconds = time.monotonic() - started
    calls = proxy.since(mark)
    after = extractor(m).stats.as_dict()
    delta = {k: after[k] - stats[k] for k in after if k != "calls"}
    if out is not None:
        n = len(out["results"])
        result = f"returned {n} memor{'y' if n == 1 else 'ies'}, {out.get('chunks')} chunk(s), " \
                 f"{len(out['relations'].get('added', []))} fact(s) added"
    else:
        result = f"{type(error).__name__}: {str(error)[:300]}"
    OUTCOMES.append(Outcome(test, what, seconds, [f"{c.format}:{c.status}" for c in calls], result, delta))
    if error is not None:
        assert contents(m, uid) == before, f"a failed add ({type(error).__name__}) changed the store"
    return out, error, calls


def test_the_server_behaves_as_the_issue_says(llama_url: str) -> None:
    """The facts the other tests (and the stand-in's imitation) rely on: json_schema refused with a
    500, json_object with a schema accepted and obeyed, and the system role reaching the model."""
    def chat(**body: Any) -> httpx.Response:
        return httpx.post(f"{llama_url}/chat/completions", timeout=300,
                          json={"model": MODEL, "temperature": 0, "max_tokens": 32, **body})

    question = [{"role": "user", "content": "Maya lives in Lisbon. Where does Maya live?"}]
    refused = chat(messages=question, response_format={"type": "json_schema", "json_schema": {
        "name": "city", "schema": {"type": "object"}}})
    assert refused.status_code == 500 and "json_object" in refused.text
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    answered = chat(messages=question, response_format={"type": "json_object", "schema": schema})
    assert answered.status_code == 200
    assert isinstance(json.loads(answered.json()["choices"][0]["message"]["content"])["city"], str)
    system = "You answer questions about where people live, in one short sentence, politely. " * 5
    with_system = chat(messages=[{"role": "system", "content": system}, *question], max_tokens=1)
    without = chat(messages=question, max_tokens=1)
    grown = with_system.json()["usage"]["prompt_tokens"] - without.json()["usage"]["prompt_tokens"]
    assert grown >= 50, f"the system message added only {grown} prompt tokens: the chat template dropped it"


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_conversations_in_json_object_mode(name: str, tmp_path: Path, proxy: RecordingProxy, uid: str) -> None:
    with make_memory(tmp_path, proxy, structured_output="json_object", **BOUNDED) as m:
        out, _error, calls = attempt(m, proxy, f"conversation {name}", "json_object", CONVERSATIONS[name], uid)
        assert calls, "the add made no call to the server"
        assert {c.format for c in calls} == {"json_object"}
        assert all(c.status != 500 for c in calls), [c.response for c in calls if c.status == 500]
        if out is not None:
            assert out["results"] or out["relations"] is not None


def test_auto_mode_falls_back_from_json_schema_to_json_object(tmp_path: Path, proxy: RecordingProxy,
                                                              uid: str) -> None:
    """``structured_output: auto`` meets this server's 500 for json_schema, moves to json_object within
    the same add, and remembers it for the next one."""
    with make_memory(tmp_path, proxy, structured_output="auto", **BOUNDED) as m:
        _out, error, calls = attempt(m, proxy, "auto mode, first add", "auto", CONVERSATIONS["move"], uid)
        assert [c.format for c in calls[:1]] == ["json_schema"] and calls[0].status == 500
        assert not isinstance(error, LLMError), f"the refusal was not taken as a fallback: {error}"
        assert extractor(m).mode == "json_object"
        assert any(c.format == "json_object" for c in calls[1:]), "no json_object call after the refusal"
        _out, error, calls = attempt(m, proxy, "auto mode, second add", "auto", CONVERSATIONS["allergy"], uid)
        assert calls and {c.format for c in calls} == {"json_object"}, "the fallback was not remembered"


def test_with_room_to_answer_an_add_succeeds_and_the_guard_judges_the_models_facts(
        tmp_path: Path, proxy: RecordingProxy, uid: str, n_ctx: int) -> None:
    """The lists in the schema are capped by the chunk's lines, so the grammar closes them even when
    this model repeats an item; with the window's room to answer, the add goes through: the memory is
    stored and every triple the model made up is either a fact or quarantined with its SHACL reasons.
    The timestamp is fixed so the prompt, and the greedy answer, are the same on every run."""
    said = [{"role": "user", "content": "Hi, I'm Maya and I live in Lisbon. I'm allergic to peanuts."}]
    with make_memory(tmp_path, proxy, structured_output="json_object", context_tokens=n_ctx) as m:
        out, error, calls = attempt(m, proxy, "room to answer", f"context_tokens={n_ctx}, default output limit",
                                    said, uid, timestamp="2024-05-14T10:30:00Z")
        assert error is None, error
        assert out is not None and any(r["event"] == "ADD" for r in out["results"])
        assert calls and all(c.status == 200 for c in calls)
        stored = m.get_all(user_id=uid)["results"]
        assert stored and all("Maya" in r["memory"] or "peanut" in r["memory"] or "Lisbon" in r["memory"]
                              for r in stored), [r["memory"] for r in stored]
        for q in m.rejected(user_id=uid):
            assert q["reasons"], q


def fits(calls: list[Exchange], n_ctx: int) -> list[str]:
    """The calls whose prompt plus output limit exceed the server's context."""
    over = []
    for c in calls:
        assert c.prompt_tokens is not None, c.response
        budget = c.request.get("max_tokens") or c.request.get("max_completion_tokens") or 0
        if c.prompt_tokens + budget > n_ctx:
            over.append(f"prompt {c.prompt_tokens} + max_tokens {budget} > n_ctx {n_ctx}")
    return over


def test_with_the_context_configured_every_call_fits(tmp_path: Path, proxy: RecordingProxy, uid: str,
                                                     n_ctx: int) -> None:
    """``llm.context_tokens`` set to the server's ``--n_ctx``: no call asks for more than the window."""
    with make_memory(tmp_path, proxy, structured_output="json_object", context_tokens=n_ctx, max_splits=0,
                     output_retries=0) as m:
        _out, error, calls = attempt(m, proxy, "prompt fits", f"context_tokens={n_ctx}, one call",
                                     CONVERSATIONS["allergy"], uid)
        assert not [c.response for c in calls if c.status == 400], "calls refused (context overflow?)"
        assert error is None or "context" not in str(error), error
        assert not fits(calls, n_ctx)


@pytest.mark.timeout(2400)
def test_the_window_is_learnt_when_not_configured(tmp_path: Path, proxy: RecordingProxy, uid: str,
                                                  n_ctx: int) -> None:
    """llama-cpp-python lists no context size, so the first call goes out with the default output
    limit and the server cuts it to the window without a word. The prompt itself always fits (no call
    is refused); once an answer has been cut at the window, graphmem knows it and later calls fit.
    A long conversation in one chunk leaves the answer little room, so the cut comes soon."""
    long = [dict(msg) for _ in range(7) for msg in LONG]
    with make_memory(tmp_path, proxy, structured_output="json_object", max_splits=0, output_retries=0,
                     chunking={"max_tokens": 3200}, timeout_s=1100) as m:
        _out, _error, calls = attempt(m, proxy, "window learnt", "default output limit, one long chunk", long, uid)
        assert len(calls) == 1 and calls[0].status == 200, [c.response for c in calls]
        learnt = extractor(m).server.context
        if learnt is None:
            pytest.skip(f"the model stopped before the window ({calls[0].response.get('usage')})")
        assert learnt == n_ctx, f"learnt a window of {learnt}, the server's is {n_ctx}"
        # a chunk still long enough to leave the answer little room (a short wait), but over 256 tokens
        again = [{**msg, "content": msg["content"].replace("Day", "Week")} for msg in long[: len(long) * 3 // 4]]
        _out, _error, calls = attempt(m, proxy, "window learnt, next add", f"learnt {learnt}", again, uid)
        assert calls and not fits(calls, n_ctx)


@pytest.mark.timeout(1200)
def test_long_input_is_chunked_one_call_each(tmp_path: Path, proxy: RecordingProxy, uid: str) -> None:
    """Each call carries one chunk, not the conversation; when the add succeeds, every chunk had its call.
    (No splitting here: one call per chunk, so the count is exact.)"""
    whole = " ".join(msg["content"] for msg in LONG)
    with make_memory(tmp_path, proxy, structured_output="json_object", max_output_tokens=256, max_splits=0,
                     output_retries=0, chunking={"max_tokens": 96}) as m:
        out, error, calls = attempt(m, proxy, "long input", "json_object, chunks of 96 tokens", LONG, uid)
        assert calls, f"no call was made: {error}"
        sent = [c.request["messages"][-1]["content"] for c in calls]
        assert all(len(text) < len(whole) / 2 for text in sent), "a call carried most of the conversation"
        if out is not None:
            assert out["chunks"] >= 3, out
            assert len(calls) == out["chunks"], f"{out['chunks']} chunks but {len(calls)} call(s)"


def test_a_failing_add_is_typed_and_writes_nothing(tmp_path: Path, proxy: RecordingProxy, uid: str) -> None:
    """A client timeout shorter than the model needs: the add raises a graphmem error, the memories
    stored before it are all that is there, and the timed-out call was sent once."""
    with make_memory(tmp_path, proxy, structured_output="json_object", timeout_s=0.5,
                     max_output_tokens=256) as m:
        m.add("Kept before the failure: Maya likes tea.", user_id=uid, infer=False)
        assert contents(m, uid)[0] == 1
        out, error, calls = attempt(m, proxy, "failing add", "timeout_s=0.5", CONVERSATIONS["family"], uid)
        assert out is None and error is not None
        assert len(calls) <= 1 or len({str(c.request["messages"]) for c in calls}) == len(calls), \
            "a timed-out call was sent again unchanged"
