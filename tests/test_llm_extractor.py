"""The LLM extractor over real HTTP against the local stand-in server (the real ``openai`` client path)."""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from graphmem.config import LLMConfig
from graphmem.errors import ConfigError, ExtractionError, LLMError
from graphmem.extraction import (
    ExtractedTriple,
    Extraction,
    ExtractionContext,
    KnownEntity,
    KnownMemory,
    Rejection,
)
from graphmem.extraction.llm import LLMExtractor
from graphmem.extraction.llm.answers import EXTRACTION, bounded, merge, split_in_two, strict_json_schema
from graphmem.extraction.llm.server_profile import ServerProfile
from graphmem.ontology import Ontology
from graphmem.testing import Reply, StandinServer
from graphmem.testing.standin import last_user_message

CHUNK = "Maya: I moved from Beijing to Shanghai last week.\nMaya: I work for Acme Corp now."


@pytest.fixture
def context(ontology: Ontology) -> ExtractionContext:
    return ExtractionContext(
        ontology=ontology, reference_time=datetime(2024, 5, 14, 10, 30, tzinfo=UTC), speakers=["Maya"],
        memories=[KnownMemory(0, "Maya lives in Beijing."), KnownMemory(1, "Maya likes green tea.")],
        entities=[KnownEntity(0, "Maya Lopez", ("https://graphmem.dev/ontology#Person",), ("Maya",)),
                  KnownEntity(1, "Beijing", ("https://graphmem.dev/ontology#City",))],
    )


def make(server: StandinServer, **kw: Any) -> LLMExtractor:
    cfg = LLMConfig.model_validate({"provider": "openai", "model": "standin-model", "api_key": "test",
                                    "base_url": server.base_url, "max_retries": 1, "timeout_s": 5, **kw})
    return LLMExtractor(cfg)


def answer(memories: list[dict[str, Any]] | None = None, entities: list[dict[str, Any]] | None = None,
           triples: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"memories": memories or [], "entities": entities or [], "triples": triples or []})


GOOD = answer(
    memories=[{"text": "Maya Lopez moved from Beijing to Shanghai in the week of 2024-05-06.",
               "memory_type": "episodic", "event_time": "2024-05-07", "attributed_to": "Maya", "replaces": 0},
              {"text": "Maya Lopez works for Acme Corp.", "memory_type": "semantic", "event_time": None,
               "attributed_to": "Maya", "replaces": None}],
    entities=[{"name": "Maya Lopez", "type": "Person", "aliases": ["Maya"], "existing": 0},
              {"name": "Shanghai", "type": "City", "aliases": [], "existing": None},
              {"name": "Acme Corp", "type": "Company", "aliases": [], "existing": None}],
    triples=[{"source": "Maya Lopez", "relation": "livesIn", "target": "Shanghai", "valid_from": "2024-05-07",
              "memory": 0},
             {"source": "Maya Lopez", "relation": "worksFor", "target": "Acme Corp", "valid_from": None, "memory": 1}],
)


def system_text(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


# -- the schema sent -----------------------------------------------------------------------------


def test_strict_schema_is_openai_strict_compatible() -> None:
    schema = strict_json_schema(Extraction)
    objects = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            assert not {"$ref", "$defs", "default", "title"} & set(node), node
            if node.get("type") == "object":
                objects.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert len(objects) == 4  # the root, memory, entity, triple
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    memory = schema["properties"]["memories"]["items"]["properties"]
    assert memory["memory_type"]["enum"] == ["semantic", "episodic", "procedural"]
    assert {"type": "null"} in memory["replaces"]["anyOf"]  # optional = required but nullable
    assert memory["memory_type"]["description"]  # the field's own description survives the inlining


# -- a good answer and what the request carries ------------------------------------------------------


def test_good_answer_parses_and_request_carries_context(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.append(Reply(content=GOOD))
    ex = make(server, max_output_tokens=1024, temperature=0.0)
    assert ex.name == "llm:standin-model"
    result = ex.extract(CHUNK, context)
    assert result == Extraction.model_validate_json(GOOD)
    [body] = server.chat_requests
    assert body["model"] == "standin-model" and body["max_tokens"] == 1024 and body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == CHUNK
    system = system_text(body)
    # ontology vocabulary (pruned to the chunk, see tests/test_prompt_vocabulary.py): classes with parent and
    # definition; relations with domain -> range, marks, and the chunk's words that named them
    assert "- City < Place: A settlement" in system
    assert "- livesIn: Person -> Place [functional]: The place where the person lives now." in system
    assert "- worksFor: Person -> Organization [inverse of employs]" in system
    assert "- locatedIn: Thing -> Place [transitive]" in system
    assert "- livedIn: Person -> Place: A place where the person lived in the past." in system
    assert "(text: moved from)" in system
    assert "- birthDate: Organism -> xsd:date [functional]" in system and "date YYYY-MM-DD" in system
    assert "- childOf:" not in system  # nothing in the chunk names it
    # reference time, speakers, numbered memories and entities
    assert "Reference time: 2024-05-14T10:30+00:00, a Tuesday" in system
    assert "Speakers: Maya" in system
    assert "[0] Maya lives in Beijing.\n[1] Maya likes green tea." in system
    assert "[0] Maya Lopez (Person); also called Maya\n[1] Beijing (City)" in system
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True and fmt["json_schema"]["name"] == "graphmem_extraction"
    assert fmt["json_schema"]["schema"] == bounded(strict_json_schema(Extraction), CHUNK)
    assert ex.stats.calls == 1 and ex.stats.output_retries == 0


def test_vocabulary_prefix_is_built_once_and_shared(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_responder = lambda _body: answer()
    ex = make(server)
    ex.extract("Maya: hello", context)
    other = ExtractionContext(ontology=context.ontology, reference_time=datetime(2025, 1, 1, tzinfo=UTC))
    ex.extract("Maya: hi again", other)
    first, second = (system_text(b) for b in server.chat_requests)
    static = first.split("Reference time:")[0]
    assert second.startswith(static) and first != second  # same cacheable prefix, different context
    assert "EXISTING MEMORIES: none" in second and "2025-01-01T00:00+00:00, a Wednesday" in second


def test_fenced_json_and_think_block_are_tolerated(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.append(Reply(content=f"<think>the user moved</think>\nHere you go:\n```json\n{GOOD}\n```"))
    assert len(make(server).extract(CHUNK, context).triples) == 2


# -- structured-output fallback ------------------------------------------------------------------------


def test_json_object_fallback_after_400_is_remembered(server: StandinServer, context: ExtractionContext) -> None:
    server.unsupported_formats = {"json_schema"}
    server.chat_script.extend([Reply(content=GOOD), Reply(content=GOOD)])
    ex = make(server)
    assert ex.extract(CHUNK, context) == Extraction.model_validate_json(GOOD)
    assert ex.extract(CHUNK, context).memories
    kinds = [b["response_format"]["type"] for b in server.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"]  # asked once, then remembered
    assert ex.mode == "json_object" and ex.stats.fallbacks == 1
    system = system_text(server.chat_requests[-1])
    assert 'exactly this shape (all keys present, [x] = list of x):\n{"memories": [{"text": str' in system


def test_auto_falls_back_to_plain_text_when_json_mode_is_refused_too(
        server: StandinServer, context: ExtractionContext) -> None:
    server.unsupported_formats = {"json_schema", "json_object"}
    server.chat_script.append(Reply(content=GOOD))
    ex = make(server)
    assert len(ex.extract(CHUNK, context).memories) == 2
    assert [b.get("response_format", {}).get("type") for b in server.chat_requests] == \
        ["json_schema", "json_object", None]
    assert ex.mode == "text"


def test_explicit_json_schema_mode_does_not_fall_back(server: StandinServer, context: ExtractionContext) -> None:
    server.unsupported_formats = {"json_schema"}
    with pytest.raises(LLMError, match=r"HTTP 400.*json_schema' is not supported"):
        make(server, structured_output="json_schema").extract(CHUNK, context)
    assert len(server.chat_requests) == 1


def test_token_limit_parameter_adapts_to_the_server(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.extend([
        Reply(status=400, error_message="Unsupported parameter: 'max_tokens' is not supported with this model. "
              "Use 'max_completion_tokens' instead."),
        Reply(content=GOOD)])
    ex = make(server, max_output_tokens=512)
    assert ex.extract(CHUNK, context).memories
    first, second = server.chat_requests
    assert first["max_tokens"] == 512 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 512 and "max_tokens" not in second


# -- cut-off output: split ------------------------------------------------------------------------------


def per_line(body: dict[str, Any]) -> str | Reply:
    """A model whose answer only fits for a one-line chunk: longer chunks are cut off."""
    lines = last_user_message(body).splitlines()
    if len(lines) > 1:
        return Reply(content='{"memories": [{"text": "Maya Lopez moved', finish_reason="length")
    text = lines[0].split(": ", 1)[1]
    target = "Shanghai" if "Shanghai" in text else "Acme Corp"
    relation = "livesIn" if target == "Shanghai" else "worksFor"
    return answer(
        memories=[{"text": f"Maya says: {text}", "memory_type": "semantic", "event_time": None, "attributed_to": "Maya",
                   "replaces": None}],
        entities=[{"name": "Maya Lopez", "type": "Person", "aliases": [], "existing": 0},
                  {"name": target, "type": None, "aliases": [], "existing": None}],
        triples=[{"source": "Maya Lopez", "relation": relation, "target": target, "valid_from": None, "memory": 0}])


def test_truncated_output_splits_the_chunk_and_keeps_both_halves(
        server: StandinServer, context: ExtractionContext) -> None:
    server.chat_responder = per_line
    ex = make(server)
    result = ex.extract(CHUNK, context)
    users = [last_user_message(b) for b in server.chat_requests]
    assert users == [CHUNK, *CHUNK.splitlines()]
    assert [m.text for m in result.memories] == ["Maya says: I moved from Beijing to Shanghai last week.",
                                                 "Maya says: I work for Acme Corp now."]
    assert [(t.relation, t.target, t.memory) for t in result.triples] == [("livesIn", "Shanghai", 0),
                                                                         ("worksFor", "Acme Corp", 1)]
    assert [e.name for e in result.entities] == ["Maya Lopez", "Shanghai", "Acme Corp"]  # merged by name
    assert ex.stats.splits == 1


def test_persistent_truncation_raises(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_responder = lambda _body: Reply(content='{"memories": [', finish_reason="length")
    long_chunk = "\n".join(f"Maya: fact number {i} about my life." for i in range(8))
    with pytest.raises(ExtractionError, match=r"cut off at llm.max_output_tokens even after halving the chunk 2"):
        make(server, max_splits=2).extract(long_chunk, context)
    assert len(server.chat_requests) == 3  # whole, first half, its first half: fails at the limit, no more calls


def test_context_window_overflow_splits_too(server: StandinServer, context: ExtractionContext) -> None:
    def responder(body: dict[str, Any]) -> str | Reply:
        if "\n" in last_user_message(body):
            return Reply(status=400, error_code="context_length_exceeded",
                         error_message="This model's maximum context length is 8192 tokens.")
        return per_line(body)

    server.chat_responder = responder
    assert len(make(server).extract(CHUNK, context).memories) == 2


# -- malformed output: retry, then raise ---------------------------------------------------------------


def test_malformed_then_good_is_retried_with_the_error(server: StandinServer, context: ExtractionContext) -> None:
    bad_type = GOOD.replace('"episodic"', '"opinion"')
    server.chat_script.extend([Reply(content='{"memories": [{"text": "Maya'), Reply(content=bad_type),
                               Reply(content=GOOD)])
    ex = make(server, output_retries=2)
    assert ex.extract(CHUNK, context) == Extraction.model_validate_json(GOOD)
    first, second, third = server.chat_requests
    assert len(first["messages"]) == 2
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == '{"memories": [{"text": "Maya'
    assert "could not be used: Invalid JSON" in second["messages"][3]["content"]
    assert "memories.0.memory_type: Input should be 'semantic', 'episodic' or 'procedural'" in \
        third["messages"][3]["content"]
    assert ex.stats.output_retries == 2 and ex.stats.calls == 3


def test_persistently_malformed_output_raises(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_responder = lambda _body: "I am sorry, I cannot produce JSON today."
    with pytest.raises(ExtractionError, match=r"not valid JSON .* 2 time\(s\).*last error: Invalid JSON"):
        make(server, output_retries=1).extract(CHUNK, context)
    assert len(server.chat_requests) == 2


def test_refusal_is_an_extraction_error(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.append(Reply(refusal="I can't help with that."))
    with pytest.raises(ExtractionError, match="refused to answer: I can't help with that"):
        make(server).extract(CHUNK, context)


# -- transport faults ------------------------------------------------------------------------------------


def test_rate_limit_after_client_retries_is_llm_error(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.extend([Reply(status=429)] * 3)
    with pytest.raises(LLMError, match=r"rate limit: model 'standin-model' at http://127\.0\.0\.1:\d+/v1/ .*429.*"
                                       r"after 2 retries"):
        make(server, max_retries=2).extract(CHUNK, context)
    assert len(server.chat_requests) == 3  # the openai client's own retries


def test_server_error_then_success_uses_the_client_retry(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.extend([Reply(status=500), Reply(content=GOOD)])
    ex = make(server, max_retries=1)
    assert len(ex.extract(CHUNK, context).triples) == 2
    assert len(server.chat_requests) == 2 and ex.stats.calls == 1


def test_persistent_server_error_is_llm_error(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.extend([Reply(status=503)] * 2)
    with pytest.raises(LLMError, match=r"server error: .* HTTP 503 after 1 retry"):
        make(server, max_retries=1).extract(CHUNK, context)


def test_slow_response_beyond_timeout_is_llm_error(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.append(Reply(content=GOOD, delay_s=1.5))
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timeout: .* within llm.timeout_s=0.2s"):
        make(server, timeout_s=0.2, max_retries=0).extract(CHUNK, context)
    assert time.monotonic() - started < 1.2


def test_unreachable_server_is_llm_error(context: ExtractionContext) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = LLMConfig(provider="openai", model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout_s=2)
    with pytest.raises(LLMError, match=rf"unreachable: cannot connect to model 'm' at http://127.0.0.1:{port}/v1/"):
        LLMExtractor(cfg).extract(CHUNK, context)


def test_body_that_is_not_a_completion_is_llm_error(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.extend([Reply(raw_body="<html>proxy login</html>"), Reply(raw_body='{"ok": true}')])
    ex = make(server)
    with pytest.raises(LLMError, match="not JSON"):
        ex.extract(CHUNK, context)
    with pytest.raises(LLMError, match="not a chat completion"):
        ex.extract(CHUNK, context)


def test_missing_api_key_without_base_url_is_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="no API key"):
        LLMExtractor(LLMConfig(provider="openai"))


# -- numbers the model made up ----------------------------------------------------------------------------


def test_invented_numbers_are_dropped(server: StandinServer, context: ExtractionContext) -> None:
    server.chat_script.append(Reply(content=answer(
        memories=[{"text": "Maya Lopez lives in Shanghai.", "memory_type": "semantic", "event_time": None,
                   "attributed_to": "Maya", "replaces": 7}],
        entities=[{"name": "Maya Lopez", "type": "Person", "aliases": [], "existing": 0},
                  {"name": "Shanghai", "type": "City", "aliases": [], "existing": 42}],
        triples=[{"source": "Maya Lopez", "relation": "livesIn", "target": "Shanghai", "valid_from": None, "memory": 0},
                 {"source": "Maya Lopez", "relation": "worksFor", "target": "Acme", "valid_from": None, "memory": 3},
                 {"source": "Maya Lopez", "relation": "likes", "target": "tea", "valid_from": None, "memory": -1},
                 {"source": "Maya Lopez", "relation": "knows", "target": "Bo", "valid_from": None, "memory": None}])))
    ex = make(server)
    result = ex.extract(CHUNK, context)
    assert result.memories[0].replaces is None
    assert [e.existing for e in result.entities] == [0, None]
    assert [t.relation for t in result.triples] == ["livesIn", "knows"]
    assert ex.stats.dropped_triples == 2 and ex.stats.dropped_refs == 2


# -- repair -------------------------------------------------------------------------------------------------


def test_repair_sends_shacl_messages_and_returns_corrected_triples(
        server: StandinServer, context: ExtractionContext) -> None:
    previous = Extraction.model_validate_json(GOOD)
    bad = ExtractedTriple(source="Acme Corp", relation="worksFor", target="Maya Lopez")
    reason = "Value does not have class gm:Organization (worksFor: object must be an Organization)"
    server.chat_script.append(Reply(content=json.dumps({"triples": [
        {"source": "Maya Lopez", "relation": "worksFor", "target": "Acme Corp", "valid_from": None, "memory": 1},
        {"source": "Maya Lopez", "relation": "knows", "target": "Bo", "valid_from": None, "memory": 9}]})))
    ex = make(server)
    fixed = ex.repair(CHUNK, context, previous, [Rejection(bad, (reason,))])
    assert [(t.source, t.relation, t.target) for t in fixed] == [("Maya Lopez", "worksFor", "Acme Corp")]
    assert ex.stats.dropped_triples == 1  # memory 9 is not one of the two memories
    [body] = server.chat_requests
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert body["messages"][1]["content"] == CHUNK
    assert Extraction.model_validate_json(body["messages"][2]["content"]) == previous
    ask = body["messages"][3]["content"]
    assert "1. (Acme Corp, worksFor, Maya Lopez)" in ask and f"   - {reason}" in ask
    assert body["response_format"]["json_schema"]["name"] == "graphmem_repair"


def test_repair_without_rejections_makes_no_call(server: StandinServer, context: ExtractionContext) -> None:
    assert make(server).repair(CHUNK, context, Extraction(), []) == []
    assert server.chat_requests == []


def test_repair_errors_are_typed(server: StandinServer, context: ExtractionContext) -> None:
    rejected = [Rejection(ExtractedTriple(source="a", relation="b", target="c"), ("bad",))]
    server.chat_script.extend([Reply(content="nope"), Reply(content="still nope")])
    with pytest.raises(ExtractionError, match="graphmem_repair"):
        make(server, output_retries=1).repair(CHUNK, context, Extraction(), rejected)
    server.chat_script.extend([Reply(status=429)] * 2)
    with pytest.raises(LLMError, match="rate limit"):
        make(server).repair(CHUNK, context, Extraction(), rejected)


# -- helpers --------------------------------------------------------------------------------------------------


def test_split_prefers_lines_then_sentences_near_the_middle() -> None:
    assert split_in_two("a: one.\nb: two.\nc: three.\nd: four.") == ("a: one.\nb: two.", "c: three.\nd: four.")
    text = "First sentence here. Second one is here. Third sentence now. Last one ends it."
    assert split_in_two(text) == ("First sentence here. Second one is here.", "Third sentence now. Last one ends it.")
    assert split_in_two("玛雅住在北京。她在上海工作。她喜欢茶。") == ("玛雅住在北京。", "她在上海工作。她喜欢茶。")
    assert split_in_two("abcdef") == ("abc", "def")
    assert split_in_two("x") is None


def test_merge_reindexes_memory_fields() -> None:
    part = Extraction.model_validate_json(GOOD)
    merged = merge([part, part.model_copy(update={"triples": [
        part.triples[0].model_copy(update={"target": "Hangzhou"})]})])
    assert len(merged.memories) == 4 and len(merged.entities) == 3
    assert [(t.target, t.memory) for t in merged.triples] == [("Shanghai", 0), ("Acme Corp", 1), ("Hangzhou", 2)]


def test_lists_are_capped_by_the_chunk_except_on_the_official_api() -> None:
    """A looping small model under llama.cpp's grammar repeats one item until its output limit: the
    schema's maxItems makes the grammar close the list instead (api.openai.com gets the strict subset)."""
    one, three = bounded(strict_json_schema(Extraction), "Maya: hi"), bounded(strict_json_schema(Extraction), "a\nb\nc")
    assert one["properties"]["memories"]["maxItems"] == 4 and three["properties"]["memories"]["maxItems"] == 8
    assert three["properties"]["triples"]["maxItems"] == 16
    assert three["properties"]["entities"]["items"]["properties"]["aliases"]["maxItems"] == 4
    assert "maxItems" not in json.dumps(strict_json_schema(Extraction))
    official = ServerProfile(LLMConfig(model="gpt-4o-mini"), "https://api.openai.com/v1", "openai")
    assert official.params(EXTRACTION, "json_schema", "a\nb")["response_format"]["json_schema"]["schema"] == \
        strict_json_schema(Extraction)
