"""The LLM protocol against servers people run locally, imitated by the stand-in over real HTTP:
llama-cpp-python's refusal of ``json_schema`` as an HTTP 500, context windows configured or learnt
(from a server's error, from an answer llama-cpp-python cut at its window, or from prompts Ollama
cut to its window without a word), transient failures
re-sent after the server's ``retry-after`` and timeouts never, and the token usage an ``add`` reports."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from graphmem import AsyncMemory, Memory, MemoryConfig
from graphmem.config import LLMConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ExtractionError, LLMError
from graphmem.extraction import ExtractionContext
from graphmem.extraction.llm import LLMExtractor
from graphmem.extraction.llm.server_profile import retry_delay
from graphmem.models import Scope
from graphmem.ontology import Ontology
from graphmem.testing import Reply, StandinServer
from graphmem.testing.fake_llm import fact_responder
from tests.conftest import make_config

FACTS = "Maya: FACT Maya:Person livesIn Lisbon:City\nMaya: FACT Maya:Person worksFor Northwind:Company"


@pytest.fixture
def server(server: StandinServer) -> StandinServer:
    """The shared stand-in, answering the FACT lines of each chunk."""
    server.chat_responder = fact_responder
    return server


def context(ontology: Ontology) -> ExtractionContext:
    return ExtractionContext(ontology=ontology, reference_time=datetime(2026, 3, 2, tzinfo=UTC), speakers=["Maya"])


def make(server: StandinServer, **kw: Any) -> LLMExtractor:
    cfg = LLMConfig.model_validate({"provider": "openai", "model": "llama3.1", "api_key": "test",
                                    "base_url": server.base_url, "max_retries": 3, "timeout_s": 5, **kw})
    return LLMExtractor(cfg)


def kinds(server: StandinServer) -> list[str | None]:
    return [(b.get("response_format") or {}).get("type") for b in server.chat_requests]


# -- refusals the way llama-cpp-python sends them ------------------------------------------------------


def test_llama_cpp_500_refusal_falls_back_once_without_client_retries(
        server: StandinServer, ontology: Ontology) -> None:
    server.imitate = "llama-cpp-python"
    ex = make(server)  # max_retries=3: a 500 taken for a server failure would be sent 4 times
    assert [t.target for t in ex.extract(FACTS, context(ontology)).triples] == ["Lisbon", "Northwind"]
    assert ex.extract(FACTS, context(ontology)).triples
    assert kinds(server) == ["json_schema", "json_object", "json_object"]  # refused once, then remembered
    assert ex.mode == "json_object" and ex.stats.fallbacks == 1
    sent = server.chat_requests[1]
    assert sent["response_format"]["schema"]["required"] == ["memories", "entities", "triples"]
    assert "max_tokens" in sent and "max_completion_tokens" not in sent  # llama.cpp ignores the latter


def test_explicit_json_schema_refused_by_500_is_not_retried(server: StandinServer, ontology: Ontology) -> None:
    server.imitate = "llama-cpp-python"
    refused = r"(?s)refused the request \(HTTP 500.*Input should be 'text' or 'json_object'"
    with pytest.raises(LLMError, match=refused):
        make(server, structured_output="json_schema").extract(FACTS, context(ontology))
    assert len(server.chat_requests) == 1


def test_a_transient_500_on_the_first_call_still_gets_the_client_retries(
        server: StandinServer, ontology: Ontology) -> None:
    server.chat_script.extend([Reply(status=500), Reply(status=503)])
    ex = make(server, max_retries=2)
    assert ex.extract(FACTS, context(ontology)).triples
    assert len(server.chat_requests) == 3 and ex.mode == "json_schema" and ex.stats.fallbacks == 0


def test_timeout_is_not_resent_and_names_the_chunk(server: StandinServer, ontology: Ontology) -> None:
    server.chat_script.append(Reply(content="{}", delay_s=1.0))
    ctx = context(ontology)
    ctx.chunk_index, ctx.chunk_count = 1, 6
    with pytest.raises(LLMError, match=r"timeout: .* for chunk 2 of 6 within llm.timeout_s=0.3s.*not re-sent"):
        make(server, timeout_s=0.3).extract(FACTS, ctx)
    assert len(server.chat_requests) == 1


def test_a_timeout_after_earlier_successes_is_not_resent_either(server: StandinServer, ontology: Ontology) -> None:
    ex = make(server, timeout_s=0.3)
    assert ex.extract(FACTS, context(ontology)).triples
    server.chat_script.append(Reply(content="{}", delay_s=1.0))
    with pytest.raises(LLMError, match=r"timeout: .*not re-sent"):
        ex.extract(FACTS, context(ontology))
    assert len(server.chat_requests) == 2 and ex.stats.retries == 0


def test_transient_failures_are_resent_with_the_servers_retry_after(server: StandinServer,
                                                                     ontology: Ontology) -> None:
    ex = make(server, max_retries=2)
    assert ex.extract(FACTS, context(ontology)).triples
    server.chat_script.extend([Reply(status=503), Reply(status=429)])
    assert ex.extract(FACTS, context(ontology)).triples
    assert len(server.chat_requests) == 4 and ex.stats.retries == 2 and ex.stats.calls == 2


@pytest.mark.parametrize(("headers", "low", "high"), [
    ({"retry-after-ms": "250"}, 0.25, 0.25),
    ({"retry-after": "3"}, 3.0, 3.0),
    ({"retry-after": "7200"}, 60.0, 60.0),  # capped at a minute
    ({"retry-after": "soon"}, 0.75, 1.0),  # unreadable: backoff of attempt 2 (1 s, jittered)
    ({}, 0.75, 1.0),
])
def test_retry_delay_follows_the_server_then_backs_off(headers: dict[str, str], low: float, high: float) -> None:
    exc: Any = SimpleNamespace(response=SimpleNamespace(headers=headers))  # what retry_delay reads of an error
    assert low <= retry_delay(exc, 2) <= high


# -- context sizing ------------------------------------------------------------------------------------


def test_context_window_learnt_from_the_servers_error_sizes_max_tokens(
        server: StandinServer, ontology: Ontology) -> None:
    server.context_window = 8192  # OpenAI and vLLM refuse a prompt plus limit beyond the window
    ex = make(server, structured_output="json_object", max_output_tokens=8000)
    assert ex.extract(FACTS, context(ontology)).triples
    first, second = server.chat_requests
    assert StandinServer.prompt_tokens(first) + first["max_tokens"] > 8192
    assert second["max_tokens"] < 8000
    assert StandinServer.prompt_tokens(second) + second["max_tokens"] <= 8192
    assert ex.extract(FACTS, context(ontology)).triples  # remembered: no refused request the second time
    assert len(server.chat_requests) == 3


def test_window_learnt_from_an_answer_llama_cpp_cut_without_a_word(
        server: StandinServer, ontology: Ontology) -> None:
    """llama-cpp-python lists no context size and cuts ``max_tokens`` to what the prompt leaves: the
    answer stops (``length``) before the limit sent, and prompt plus answer is the window."""
    server.imitate = "llama-cpp-python"
    server.context_window = 2400
    rambling = json.dumps({"memories": [{"text": uuid.uuid4().hex * 3} for _ in range(60)]})

    def first_rambles(body: dict[str, Any]) -> str:
        return rambling if len(server.chat_requests) == 1 else fact_responder(body)

    server.chat_responder = first_rambles
    ex = make(server, structured_output="json_object")
    assert [t.target for t in ex.extract(FACTS, context(ontology)).triples] == ["Lisbon", "Northwind"]
    first, *later = server.chat_requests
    assert StandinServer.prompt_tokens(first) + first["max_tokens"] > 2400
    assert server.usage_sent[0]["completion_tokens"] < first["max_tokens"]
    assert ex.server.context == 2400 and ex.stats.splits == 1 and len(later) == 2
    assert all(StandinServer.prompt_tokens(b) + b["max_tokens"] <= 2400 for b in later)


def test_prompts_a_server_cut_without_a_word_teach_its_window(
        server: StandinServer, ontology: Ontology, caplog: pytest.LogCaptureFixture) -> None:
    """Ollama cuts a prompt beyond its ``num_ctx`` from the start (the instructions) and answers
    anyway, reporting the window as the prompt's size. One such answer cannot be told from a
    tokenizer that counts less than graphmem; two prompts of different sizes reported at the same
    size, the most reported, are a cap: the window is learnt, that answer dropped, the chunk sent
    again in pieces that fit."""
    server.imitate = "ollama"
    window = 2800  # the default ontology's prompt plus a few hundred tokens of chunk
    server.context_window = window

    def reads_the_instructions_it_got(body: dict[str, Any]) -> str:
        sent = server.chat_requests[-1]  # as the client sent it (the server's cut comes after)
        if body["messages"][0]["content"] != sent["messages"][0]["content"]:  # no instructions left
            wrong = "M: FACT Maya:Person livesIn Atlantis:City"
            return fact_responder({"messages": [{"role": "user", "content": wrong}]})
        return fact_responder(body)

    server.chat_responder = reads_the_instructions_it_got
    filler = "Maya mentioned the conference schedule yesterday. "
    first = "Maya: FACT Maya:Person worksFor Northwind:Company\nMaya: " + filler * 150
    second = "Maya: FACT Maya:Person livesIn Lisbon:City\nMaya: " + filler * 180
    ex = make(server, structured_output="json_object")
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        assert [t.target for t in ex.extract(FACTS, context(ontology)).triples] == ["Lisbon", "Northwind"]
        assert [t.target for t in ex.extract(first, context(ontology)).triples] == ["Atlantis"]  # cut, not yet known
        assert ex.server.context is None
        assert [t.target for t in ex.extract(second, context(ontology)).triples] == ["Lisbon"]
    assert ex.server.context == window and ex.stats.splits >= 1
    sizes = [u["prompt_tokens"] for u in server.usage_sent]
    assert sizes[1] == sizes[2] == window  # both long prompts reported at the window
    assert all(StandinServer.prompt_tokens(b) <= window for b in server.chat_requests[3:])  # the pieces fit
    said = [r.getMessage() for r in caplog.records if "without an error" in r.getMessage()]
    assert len(said) == 1 and f"context window is {window} tokens" in said[0] and "num_ctx" in said[0]


def test_prompts_the_server_counts_below_ours_are_not_taken_for_cut(
        server: StandinServer, ontology: Ontology, caplog: pytest.LogCaptureFixture) -> None:
    """This stand-in counts some text at three quarters of graphmem's estimate, as real tokenizers
    may: prompts of every size below our count are no cut while their sizes differ."""
    filler = "Maya mentioned the conference schedule yesterday. "
    long = "Maya: FACT Maya:Person livesIn Lisbon:City\nMaya: " + filler * 150
    ex = make(server, structured_output="json_object")
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        for text in (FACTS, long, FACTS, long, long + long):
            assert ex.extract(text, context(ontology)).triples
    bodies, sent = server.chat_requests, server.usage_sent
    assert len(bodies) == len(sent) == 5  # no request dropped or sent again
    below = [u["prompt_tokens"] < ex.server.prompt_tokens(b["messages"]) for b, u in zip(bodies, sent, strict=True)]
    assert below[1] and below[3] and below[4]  # the long prompts: the server counts less than graphmem
    assert ex.server.context is None
    assert not [r for r in caplog.records if "without an error" in r.getMessage()]


def test_configured_context_sizes_the_first_request(server: StandinServer, ontology: Ontology) -> None:
    server.context_window = 8192  # OpenAI-style error, never triggered
    ex = make(server, context_tokens=8192, max_output_tokens=8000)
    assert ex.extract(FACTS, context(ontology)).triples
    (body,) = server.chat_requests
    assert 256 <= body["max_tokens"] < 8000
    assert StandinServer.prompt_tokens(body) + body["max_tokens"] <= 8192


def test_prompt_that_cannot_fit_without_the_chunk_is_reported_not_split(
        server: StandinServer, ontology: Ontology) -> None:
    ex = make(server, context_tokens=1024)
    with pytest.raises(ExtractionError, match=r"chunk 1 of 1: the prompt does not fit .* even without the "
                                              r"conversation: system prompt ~[\d,]+ tokens, chunk ~\d+ tokens, "
                                              r"context 1,024 tokens.*Nothing was sent"):
        ex.extract(FACTS, context(ontology))
    assert server.chat_requests == [] and ex.stats.splits == 0


@pytest.mark.parametrize("imitate", ["llama-cpp-python", "llama.cpp"])
def test_prompt_learnt_too_large_from_the_server_is_reported_once(
        server: StandinServer, ontology: Ontology, imitate: Any) -> None:
    server.imitate = imitate
    server.context_window = 1024
    with pytest.raises(ExtractionError, match=r"system prompt ~[\d,]+ tokens.*context 1,024 tokens"):
        make(server, structured_output="json_object").extract(FACTS, context(ontology))
    assert len(server.chat_requests) == 1  # the overflow taught the size; no halving of a small chunk


def test_chunk_too_large_for_the_room_left_is_split_before_sending(
        server: StandinServer, ontology: Ontology) -> None:
    ex = make(server, context_tokens=6500)
    filler = "Maya: " + "blah " * 3000 + "\n"
    chunk = f"{filler}Maya: FACT Maya:Person livesIn Lisbon:City\n{filler}"
    result = ex.extract(chunk, context(ontology))
    assert [t.target for t in result.triples] == ["Lisbon"]
    assert ex.stats.splits >= 1
    sent = [b["messages"][-1]["content"] for b in server.chat_requests]
    assert chunk.strip() not in sent and all(len(text) < 0.6 * len(chunk) for text in sent)  # split before sending
    assert all(b["max_tokens"] >= 256 for b in server.chat_requests)


# -- usage per add ---------------------------------------------------------------------------------------


def _memory_config(tmp_path: Path, server: StandinServer) -> MemoryConfig:
    return MemoryConfig.load(make_config("sqlite", tmp_path, llm={
        "provider": "openai", "base_url": server.base_url, "api_key": "test", "model": "llama3.1",
        "max_retries": 2, "timeout_s": 10, "repair": False}))


def test_add_reports_the_usage_the_server_sent(tmp_path: Path, server: StandinServer) -> None:
    server.imitate = "llama-cpp-python"
    with Memory(_memory_config(tmp_path, server), embedder=HashingEmbedder(64)) as m:
        out = m.add([{"role": "user", "name": "Maya", "content": "FACT Maya:Person livesIn Lisbon:City"}],
                    user_id="u1")
        assert [r["target"] for r in out["relations"]["added"]] == ["Lisbon"]
        sent = server.usage_sent
        assert out["usage"] == {"prompt_tokens": sum(u["prompt_tokens"] for u in sent),
                                "completion_tokens": sum(u["completion_tokens"] for u in sent),
                                "calls": 2, "repairs": 0, "fallbacks": 1}
        assert out["usage"]["prompt_tokens"] > 0
        again = m.add([{"role": "user", "name": "Maya", "content": "FACT Maya:Person worksFor Northwind:Company"}],
                      user_id="u1")
        assert again["usage"]["calls"] == 1 and again["usage"]["fallbacks"] == 0  # the mode is remembered
        assert again["usage"]["prompt_tokens"] == server.usage_sent[-1]["prompt_tokens"]


def test_async_memory_falls_back_and_reports_usage(tmp_path: Path, server: StandinServer) -> None:
    server.imitate = "llama-cpp-python"

    async def main() -> dict[str, Any]:
        async with AsyncMemory(_memory_config(tmp_path, server), embedder=HashingEmbedder(64)) as m:
            out: dict[str, Any] = await m.add(
                [{"role": "user", "name": "Maya", "content": "FACT Maya:Person livesIn Lisbon:City"}], user_id="u1")
            return out

    out = asyncio.run(main())
    assert [r["target"] for r in out["relations"]["added"]] == ["Lisbon"]
    assert kinds(server) == ["json_schema", "json_object"]
    assert out["usage"]["fallbacks"] == 1 and out["usage"]["calls"] == 2
    assert out["usage"]["completion_tokens"] == server.usage_sent[-1]["completion_tokens"]


# -- a repaired triple that states a stored fact again -----------------------------------------------------


def test_repaired_duplicate_of_a_stored_fact_is_listed_under_the_stored_id(
        backend: str, tmp_path: Path, server: StandinServer, uid: str) -> None:
    def responder(body: dict[str, Any]) -> str:
        if len(body["messages"]) > 2:  # the re-ask with the guard's messages: the model corrects to Lisbon
            return json.dumps({"triples": [{"source": "Maya", "relation": "livesIn", "target": "Lisbon",
                                            "valid_from": None, "memory": 0}]})
        return fact_responder(body)

    server.chat_responder = responder
    cfg = make_config(backend, tmp_path, llm={"provider": "openai", "base_url": server.base_url, "api_key": "t",
                                              "model": "standin", "max_retries": 0, "repair": True})
    with Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384)) as m:
        first = m.add([{"role": "user", "name": "Maya", "content": "FACT Maya:Person livesIn Lisbon:City"}],
                      user_id=uid)
        again = m.add([{"role": "user", "name": "Maya", "content": "FACT Maya:Person livesIn Ming:Person"}],
                      user_id=uid)
        assert [r["target"] for r in again["relations"]["rejected"]] == ["Ming"]
        assert again["usage"]["repairs"] == 1
        stored = {r.id for r in m.store.relations(Scope(user_id=uid))}
        (added,) = again["relations"]["added"]
        assert added["target"] == "Lisbon" and added["id"] in stored
        assert added["id"] == first["relations"]["added"][0]["id"] and len(stored) == 1


# -- calls per chunk are bounded -----------------------------------------------------------------------------


def test_output_that_loops_to_the_limit_is_not_halved(server: StandinServer, ontology: Ontology) -> None:
    loop = '{"memories": [' + '{"text": "Maya lives in Lisbon", "memory_type": "semantic"}, ' * 100
    server.chat_responder = lambda _body: Reply(content=loop, finish_reason="length")
    ex = make(server)
    with pytest.raises(ExtractionError, match=r"chunk 1 of 1: .* repeated itself .* not split"):
        ex.extract(FACTS, context(ontology))
    assert len(server.chat_requests) == 1 and ex.stats.splits == 0


def test_calls_per_chunk_are_bounded(server: StandinServer, ontology: Ontology) -> None:
    def one_line_only(body: dict[str, Any]) -> str | Reply:
        if "\n" in body["messages"][-1]["content"].strip():
            return Reply(content='{"memories": [{"text": "Maya', finish_reason="length")
        return fact_responder(body)

    server.chat_responder = one_line_only
    lines = "\n".join(f"Maya: FACT Maya:Person knows Friend{i}:Person" for i in range(8))
    ex = make(server, max_splits=3, output_retries=0)  # unbounded: 15 requests (7 halvings, 8 lines)
    ctx = context(ontology)
    ctx.chunk_index, ctx.chunk_count = 0, 6
    with pytest.raises(ExtractionError, match=r"chunk 1 of 6: 8 requests spent on this chunk .* = 8\); a piece of "
                                              r"\d+ characters and any after it were not sent"):
        ex.extract(lines, ctx)
    assert len(server.chat_requests) == 8
    assert len(make(server, max_splits=3, output_retries=0).extract("\n".join(lines.splitlines()[:2]),
                                                                    context(ontology)).triples) == 2


def test_unknown_model_for_tiktoken_is_logged_once(tmp_path: Path, server: StandinServer,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    from graphmem.chunking.tokens import _reset_loads

    _reset_loads()
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        for home in ("a", "b"):  # two Memory instances, each with its chunker and prompt counter
            with Memory(_memory_config(tmp_path / home, server), embedder=HashingEmbedder(64)) as m:
                for i in range(2):
                    m.add([{"role": "user", "name": "Maya", "content": f"FACT Maya:Person knows P{i}:Person"}],
                          user_id="u1")
    said = [r for r in caplog.records if "tiktoken does not know the model 'llama3.1'" in r.getMessage()]
    assert len(said) == 1


@pytest.mark.parametrize("entry", [
    {"id": "llama3.1", "object": "model", "owned_by": "vllm", "max_model_len": 8192},
    {"id": "llama3.1", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx": 8192, "n_ctx_train": 131072}},
], ids=["vllm", "llama.cpp"])
def test_context_window_from_the_model_listing(server: StandinServer, ontology: Ontology,
                                               entry: dict[str, Any]) -> None:
    server.models = [entry]
    server.context_window = 8192
    ex = make(server, max_output_tokens=8000)
    assert ex.extract(FACTS, context(ontology)).triples
    assert ex.extract(FACTS, context(ontology)).triples
    assert [p for p, _ in server.requests] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
    assert all(StandinServer.prompt_tokens(b) + b["max_tokens"] <= 8192 for b in server.chat_requests)


def test_a_server_without_a_model_listing_is_asked_once(server: StandinServer, ontology: Ontology) -> None:
    ex = make(server)
    assert ex.extract(FACTS, context(ontology)).triples and ex.extract(FACTS, context(ontology)).triples
    assert [p for p, _ in server.requests] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]
