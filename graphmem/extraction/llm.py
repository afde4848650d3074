"""Extraction with any OpenAI-compatible chat model: one structured-output call per chunk.

What mem0 users lose today is handled here explicitly: output cut off at the token limit is never
parsed as if it were whole (the chunk is halved and both halves extracted), malformed or off-schema
output is re-asked with the validation error, and whatever still fails raises instead of returning a
partial result. Existing memories and entities are referred to by small numbers only; numbers the
model invents are removed before anything leaves this module.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import zlib
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Generic, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..chunking.tokens import TokenCounter, token_counter
from ..config import LLMConfig, display_uri
from ..driving import adrive, drive
from ..errors import ConfigError, ExtractionError, LLMError
from ..ontology.naming import normalize_surface
from . import prompt
from .schema import (
    ExtractedEntity,
    ExtractedMemory,
    ExtractedTriple,
    Extraction,
    ExtractionContext,
    Extractor,
    Rejection,
)

log = logging.getLogger(__name__)

Mode = Literal["json_schema", "json_object", "text"]
"""How the answer's structure is requested: a strict JSON schema, JSON mode (structure described in the
prompt, checked here), or neither (servers that refuse both; the same check applies)."""
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
_Chat = Generator[dict[str, Any], Any, T]
"""Steps of a conversation with the model: each yields the keyword arguments of one chat-completion
request and receives its response (or has the client's exception thrown in)."""

_FENCE: Final = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)\s*```", re.S)
_THINK: Final = re.compile(r"<think>.*?</think>", re.S)
_FORMAT_WORDS: Final = ("response_format", "response format", "json_schema", "json_object", "structured output")
_CONTEXT_WORDS: Final = ("context length", "context_length", "context window", "maximum context")
_REFUSED_WORDS: Final = ("unsupported", "not supported", "unrecognized", "unknown", "not permitted", "extra")
_CONTEXT_SIZE: Final = (
    re.compile(r"context window of (\d+)", re.I),  # llama-cpp-python: "Requested tokens (N) exceed context window of M"
    re.compile(r"maximum context length is (\d+)", re.I),  # OpenAI, vLLM
    re.compile(r"context (?:length|size|window)[^\d]{0,20}(\d{3,})", re.I),
)
MIN_ANSWER_TOKENS: Final = 256
"""Room an answer needs at least: a prompt leaving less than this is reported, not sent."""
_CLIP: Final = 2000
"""A malformed answer echoed back in the corrective turn is shortened to this many characters."""


class RepairAnswer(BaseModel):
    """The answer to the re-ask after the guard rejected triples. Extra keys are ignored so that a
    model in JSON mode that repeats a whole extraction still yields its triples."""

    model_config = ConfigDict(extra="ignore")
    triples: list[ExtractedTriple] = Field(default_factory=list)


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the subset OpenAI's strict structured outputs accept.

    Every object gets ``additionalProperties: false`` and lists *all* its properties as required
    (optional fields are already nullable, ``anyOf [T, null]``, so the model writes ``null``); ``$ref``
    is inlined (a ``$ref`` with sibling keys such as ``description`` is not allowed, and inlining also
    suits servers with partial ``$ref`` support); ``default`` and ``title`` go (not part of the subset,
    and only cost tokens). Pydantic still validates the answer, so defaults apply when parsing.
    """
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})

    def walk(node: dict[str, Any], chain: tuple[str, ...]) -> dict[str, Any]:
        node = dict(node)
        ref = node.pop("$ref", None)
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in chain:
                raise ValueError(f"recursive schema through {name} cannot be inlined")
            return walk({**defs[name], **node}, (*chain, name))
        node.pop("title", None)
        node.pop("default", None)
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list) and len(all_of) == 1:
            node = {**walk(all_of[0], chain), **node}
        elif all_of is not None:
            node["allOf"] = [walk(v, chain) for v in all_of]
        if node.get("type") == "object" or "properties" in node:
            props: dict[str, Any] = node.get("properties", {})
            node["properties"] = {k: walk(v, chain) for k, v in props.items()}
            node["required"] = list(props)
            node["additionalProperties"] = False
        if isinstance(node.get("items"), dict):
            node["items"] = walk(node["items"], chain)
        if isinstance(node.get("anyOf"), list):
            node["anyOf"] = [walk(v, chain) for v in node["anyOf"]]
        return node

    return walk(raw, ())


@dataclass(frozen=True)
class _Spec(Generic[M]):
    """One kind of answer: its pydantic model, the strict schema sent, and the shape shown in JSON mode."""

    name: str
    model: type[M]
    schema: dict[str, Any]
    shape: str

    @classmethod
    def of(cls, name: str, model: type[M]) -> _Spec[M]:
        schema = strict_json_schema(model)
        return cls(name, model, schema, prompt.json_shape(schema))


_EXTRACTION: Final = _Spec.of("graphmem_extraction", Extraction)
_REPAIR: Final = _Spec.of("graphmem_repair", RepairAnswer)


@dataclass
class LLMStats:
    """Counters since the extractor was built (read them in logs, benchmarks and tests)."""

    calls: int = 0
    """Chat-completion requests made (the openai client's own transport retries are not counted)."""
    output_retries: int = 0
    """Re-asks after malformed or off-schema output."""
    splits: int = 0
    """Chunks halved because the answer was cut off (or the request exceeded the context window)."""
    fallbacks: int = 0
    """Switches to a simpler structured-output mode (or request parameter) after a server refused one."""
    dropped_triples: int = 0
    """Triples removed because their ``memory`` index pointed outside the answer's memories."""
    dropped_refs: int = 0
    """``replaces``/``existing`` numbers set to null because they are not numbers of the context."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class _Answer:
    content: str | None
    finish_reason: str | None
    refusal: str | None = None


@dataclass(frozen=True)
class _Cut:
    """The answer did not fit: cut off at the output limit, or the request exceeded the context."""

    reason: Literal["length", "context"]
    looping: bool = False
    """The cut-off answer repeats itself: a smaller piece would loop the same way."""


@dataclass
class _Budget:
    """Requests one chunk may cost, halves and re-asks included (refused requests are not charged)."""

    limit: int
    spent: int = 0


def looks_looping(content: str | None) -> bool:
    """Whether a cut-off answer ends in repetition (its last 2,000 characters compress tenfold)."""
    tail = (content or "")[-2000:]
    return len(tail) >= 1000 and len(zlib.compress(tail.encode("utf-8"))) * 10 < len(tail)


class _BadOutput(Exception):
    """The answer is not valid JSON or does not fit the schema (message: what is wrong, briefly)."""


def _json_text(content: str) -> str:
    """The JSON inside an answer: without a ``<think>`` block, a Markdown fence or chatter around it."""
    text = _THINK.sub("", content).strip()
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    if not text.startswith("{"):
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return text[start : end + 1]
    return text


def _describe(exc: ValidationError, limit: int = 3) -> str:
    problems = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"])
        problems.append(f"{where}: {err['msg']}" if where else str(err["msg"]))
    more = exc.error_count() - limit
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def parse_answer(content: str | None, model: type[M]) -> M:
    """Validate an answer against ``model``, tolerating a fenced block; :class:`_BadOutput` if unusable."""
    if content is None or not content.strip():
        raise _BadOutput("the answer was empty")
    try:
        return model.model_validate_json(_json_text(content))
    except ValidationError as exc:
        raise _BadOutput(_describe(exc)) from None


_SENTENCE_BREAK: Final = re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？]")


def split_in_two(text: str) -> tuple[str, str] | None:
    """Two halves of ``text`` cut near the middle, preferring a line break, then a sentence end, then a
    space within the middle half; a hard cut at the middle for text without any (``None`` if < 2 chars)."""
    text = text.strip()
    if len(text) < 2:
        return None
    mid, lo, hi = len(text) / 2, len(text) // 4, 3 * len(text) // 4
    lines = [m.end() for m in re.finditer(r"\n\s*", text)]
    sentences = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
    spaces = [m.end() for m in re.finditer(r"\s+", text)]
    tiers = [[p for p in group if lo <= p <= hi] for group in (lines, sentences, spaces)]
    for positions in [*tiers, lines, sentences, spaces, [len(text) // 2]]:
        for cut in sorted(positions, key=lambda p: abs(p - mid)):
            first, second = text[:cut].strip(), text[cut:].strip()
            if first and second:
                return first, second
    return None


def merge(parts: Sequence[Extraction]) -> Extraction:
    """One extraction from the extractions of consecutive pieces of a chunk.

    Memories are concatenated, so each triple's ``memory`` index is shifted by the memories before its
    piece; entities named alike (case, spaces and dashes ignored) become one, keeping every alias and the
    first type and existing number given; a triple stated in several pieces is kept once.
    """
    memories: list[ExtractedMemory] = []
    entities: list[ExtractedEntity] = []
    triples: list[ExtractedTriple] = []
    by_name: dict[str, int] = {}
    seen: set[tuple[str, str, str, str | None]] = set()
    for part in parts:
        offset = len(memories)
        memories += part.memories
        for e in part.entities:
            key = normalize_surface(e.name)
            if key not in by_name:
                by_name[key] = len(entities)
                entities.append(e)
                continue
            i = by_name[key]
            old = entities[i]
            entities[i] = old.model_copy(update={
                "type": old.type or e.type,
                "existing": old.existing if old.existing is not None else e.existing,
                "aliases": list(dict.fromkeys([*old.aliases, *e.aliases])),
            })
        for t in part.triples:
            tkey = (normalize_surface(t.source), normalize_surface(t.relation), t.target.strip(), t.valid_from)
            if tkey in seen:
                continue
            seen.add(tkey)
            triples.append(t if t.memory is None else t.model_copy(update={"memory": t.memory + offset}))
    return Extraction(memories=memories, entities=entities, triples=triples)


class LLMExtractor(Extractor):
    """Memories, entities and triples from an OpenAI-compatible chat model (OpenAI, Azure, Ollama, vLLM,
    LM Studio: whatever ``base_url`` points at).

    Thread-safe: the structured-output mode learnt from the server and the counters are shared under a
    lock; requests run concurrently.
    """

    def __init__(self, config: LLMConfig, client: openai.OpenAI | None = None) -> None:
        """``client`` (optional) is used as given, with its own timeout and retry settings."""
        self.config = config
        self.model = config.model
        self.name = f"llm:{config.model}"
        if client is None:
            local = config.base_url or os.environ.get("OPENAI_BASE_URL")
            given = config.api_key.get_secret_value() if config.api_key is not None else None
            key = given or os.environ.get("OPENAI_API_KEY") or ("unused" if local else None)
            if key is None:
                raise ConfigError("llm.provider is 'openai' but no API key is set: set llm.api_key or OPENAI_API_KEY "
                                  "(or llm.base_url for a local server that needs no key)")
            client = openai.OpenAI(api_key=key, base_url=config.base_url, timeout=config.timeout_s,
                                   max_retries=config.max_retries)
        self._client = client
        self._aclient: openai.AsyncOpenAI | None = None
        self.stats = LLMStats()
        self._lock = threading.Lock()
        self._mode: Mode = "json_object" if config.structured_output == "json_object" else "json_schema"
        # api.openai.com wants max_completion_tokens (reasoning models refuse max_tokens); most other
        # compatible servers only know max_tokens. A 400 naming the parameter switches to the other one.
        official = "api.openai.com" in str(client.base_url)
        self._official = official
        self._token_param = "max_completion_tokens" if official else "max_tokens"
        # Until a request has succeeded, the server's answer to our format is unknown: a refusal may
        # come as a 500 (llama-cpp-python), which the client would retry as a server failure.
        self._settled = False
        self._object_schema = not official
        """Send the schema inside json_object too (llama.cpp then constrains output to it)."""
        self._context: int | None = config.context_tokens
        self._counter: TokenCounter | None = None
        self._scale = 1.0
        self._discovered = official or self._context is not None
        """Server-reported prompt tokens per counted token (learnt from ``usage``; counts only grow)."""
        self._send_temperature = True
        self._adapted: set[str] = set()

    @property
    def mode(self) -> Mode:
        """The structured-output mode in use; ``auto`` moves it down once when the server refuses it."""
        return self._mode

    @property
    def where(self) -> str:
        return f"model {self.model!r} at {display_uri(str(self._client.base_url))}"

    # -- the Extractor interface -------------------------------------------------------------------

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        """Raise :class:`LLMError` (transport) or :class:`ExtractionError` (output); never a partial result."""
        return self._run(self._extract(chunk, context, 0, self._budget()))

    async def aextract(self, chunk: str, context: ExtractionContext) -> Extraction:
        """:meth:`extract` over ``openai.AsyncOpenAI``: the same requests, retries and parsing."""
        return await self._arun(self._extract(chunk, context, 0, self._budget()))

    def _budget(self) -> _Budget:
        return _Budget(2 * (1 + self.config.max_splits) + self.config.output_retries)

    async def aclose(self) -> None:
        if self._aclient is not None:
            client, self._aclient = self._aclient, None
            await client.close()

    def repair(self, chunk: str, context: ExtractionContext, previous: Extraction,
               rejected: list[Rejection]) -> list[ExtractedTriple]:
        """One re-ask showing the model its answer and the guard's SHACL messages per rejected triple."""
        if not rejected or not self.config.repair:
            return []
        tail: list[ChatCompletionMessageParam] = [
            {"role": "user", "content": chunk},
            {"role": "assistant", "content": previous.model_dump_json()},
            {"role": "user", "content": prompt.repair_request(rejected)},
        ]
        if context.usage is not None:
            context.usage.add(repairs=1)
        answer = self._run(self._ask(_REPAIR, context, tail))
        if isinstance(answer, _Cut):
            raise ExtractionError(f"{self.where}: the repair answer was cut off "
                                  f"({'output limit' if answer.reason == 'length' else 'context window'}); "
                                  f"raise llm.max_output_tokens (now {self.config.max_output_tokens})")
        return self._valid_triples(answer.triples, len(previous.memories))

    # -- the two ways of sending: each request the steps below yield is sent by the sync or the
    # async client, and its response (or exception) goes back into them

    def _run(self, steps: _Chat[T]) -> T:
        def send(request: dict[str, Any]) -> Any:
            if request.get("_models"):
                return self._client.with_options(max_retries=0, timeout=5.0).models.list()
            retries = request.pop("_retries", None)
            client = self._client if retries is None else self._client.with_options(max_retries=retries)
            return client.chat.completions.create(**request)

        return drive(steps, send)

    async def _arun(self, steps: _Chat[T]) -> T:
        aclient = self._async_client()

        async def send(request: dict[str, Any]) -> Any:
            if request.get("_models"):
                return await aclient.with_options(max_retries=0, timeout=5.0).models.list()
            retries = request.pop("_retries", None)
            client = aclient if retries is None else aclient.with_options(max_retries=retries)
            return await client.chat.completions.create(**request)

        return await adrive(steps, send)

    def _async_client(self) -> openai.AsyncOpenAI:
        """The sync client's twin (same key, endpoint, timeout and retries), made on first async use."""
        with self._lock:
            if self._aclient is None:
                c = self._client
                self._aclient = openai.AsyncOpenAI(api_key=c.api_key, base_url=c.base_url, timeout=c.timeout,
                                                   max_retries=c.max_retries)
            return self._aclient

    # -- splitting ----------------------------------------------------------------------------------

    def _extract(self, chunk: str, context: ExtractionContext, depth: int, budget: _Budget) -> _Chat[Extraction]:
        answer = yield from self._ask(_EXTRACTION, context, [{"role": "user", "content": chunk}], budget)
        if not isinstance(answer, _Cut):
            return self._checked(answer, context)
        if answer.reason == "context":
            self._check_fixed_part(context, chunk)
        if answer.looping:
            raise ExtractionError(f"{self.where}: {_chunk_name(context)}: the answer for a piece of {len(chunk):,} "
                                  "characters repeated itself until llm.max_output_tokens (the model loops); "
                                  "halving the text would loop the same way, so it was not split. Nothing of this "
                                  "chunk was kept; try another model or a lower temperature.")
        what = ("was cut off at llm.max_output_tokens" if answer.reason == "length"
                else "did not fit the model's context window")
        halves = split_in_two(chunk) if depth < self.config.max_splits else None
        if halves is None:
            fix = (f"raise llm.max_output_tokens (now {self.config.max_output_tokens}) or lower chunking.max_tokens"
                   if answer.reason == "length" else "lower chunking.max_tokens or use a model with a larger context")
            raise ExtractionError(f"{self.where}: {_chunk_name(context)}: the answer for a piece of {len(chunk):,} "
                                  f"characters {what} "
                                  f"even after halving the chunk {depth} time(s) (llm.max_splits="
                                  f"{self.config.max_splits}); {fix}. Nothing of this chunk was kept.")
        with self._lock:
            self.stats.splits += 1
        log.warning("%s: answer %s; splitting a chunk of %d characters in two (level %d of %d)",
                    self.where, what, len(chunk), depth + 1, self.config.max_splits)
        parts = []
        for half in halves:
            parts.append((yield from self._extract(half, context, depth + 1, budget)))
        return merge(parts)

    # -- asking until the answer is usable ----------------------------------------------------------

    def _ask(self, spec: _Spec[M], context: ExtractionContext, tail: list[ChatCompletionMessageParam],
             budget: _Budget | None = None) -> _Chat[M | _Cut]:
        extra: list[ChatCompletionMessageParam] = []
        error = ""
        attempts = self.config.output_retries + 1
        for attempt in range(attempts):
            if attempt:
                with self._lock:
                    self.stats.output_retries += 1
                log.warning("%s: unusable answer (%s); asking again (%d of %d)", self.where, error, attempt,
                            self.config.output_retries)
            answer = yield from self._send(spec, context, tail + extra, budget)
            if answer.finish_reason == "length":
                return _Cut("length", looks_looping(answer.content))
            if answer.finish_reason == "context":
                return _Cut("context")
            if answer.refusal:
                raise ExtractionError(f"{self.where} refused to answer: {answer.refusal}")
            if answer.finish_reason == "content_filter":
                raise ExtractionError(f"{self.where} withheld its answer (content filter); nothing was extracted")
            try:
                return parse_answer(answer.content, spec.model)
            except _BadOutput as exc:
                error = str(exc)
            shown = (answer.content or "(empty answer)")
            shown = shown if len(shown) <= _CLIP else shown[:_CLIP] + " …[shortened]"
            extra = [{"role": "assistant", "content": shown}, {"role": "user", "content": prompt.corrective(error)}]
        raise ExtractionError(f"{self.where} returned output that is not valid JSON for the {spec.name} schema "
                              f"{attempts} time(s) (llm.output_retries={self.config.output_retries}); "
                              f"last error: {error}")

    def _send(self, spec: _Spec[Any], context: ExtractionContext, tail: list[ChatCompletionMessageParam],
              budget: _Budget | None = None) -> _Chat[_Answer]:
        """One chat completion. Adapts (once each) to servers that refuse a structured-output mode or a
        parameter, and sizes the output limit to the context window when it is known; maps every
        transport failure to :class:`LLMError`."""
        if not self._discovered:
            self._discovered = True
            try:
                listing = yield {"_models": True}
            except (openai.OpenAIError, ValueError):
                listing = None  # many servers list no metadata, or no models at all: learnt later if needed
            self._context_from_listing(listing)
        resend_with_retries = False
        while True:
            mode = self._mode
            params: dict[str, Any] = {}
            if self._send_temperature:
                params["temperature"] = self.config.temperature
            if mode == "json_schema":
                params["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": spec.name, "strict": True, "schema": spec.schema}}
            elif mode == "json_object":
                params["response_format"] = {"type": "json_object", "schema": spec.schema} \
                    if self._object_schema else {"type": "json_object"}
            system = self._system(context, mode, tail)
            messages = [system, *tail]
            counted = self._prompt_tokens(messages)
            limit = self._output_limit(context, counted, system, tail)
            if limit is None:
                return _Answer(None, "context")
            params[self._token_param] = limit
            if not self._settled and not resend_with_retries:
                params["_retries"] = 0  # a refusal must not be retried as a server failure
            elif resend_with_retries:
                params["_retries"] = max(0, self._client.max_retries - 1)
            if not resend_with_retries:
                if budget is not None:
                    if budget.spent >= budget.limit:
                        raise ExtractionError(
                            f"{self.where}: {_chunk_name(context)}: {budget.spent} requests spent on this chunk "
                            f"without a usable answer (the limit is 2 x (1 + llm.max_splits) + llm.output_retries "
                            f"= {budget.limit}); a piece of {len(_chunk_of(tail)):,} characters "
                            "and any after it were not sent. Nothing of this chunk was kept.")
                    budget.spent += 1
                with self._lock:
                    self.stats.calls += 1
                if context.usage is not None:
                    context.usage.add(calls=1)
            try:
                response = yield {"model": self.model, "messages": messages, **params}
            except openai.APIStatusError as exc:
                if exc.status_code in (400, 422) or exc.status_code >= 500:
                    moved = self._adapt(exc, mode)
                    if moved:
                        if budget is not None:
                            budget.spent -= 1  # refused: nothing was generated
                        if moved == "changed" and context.usage is not None:
                            context.usage.add(fallbacks=1)
                        resend_with_retries = False
                        continue
                    if _mentions(exc, _CONTEXT_WORDS) or exc.code == "context_length_exceeded":
                        if self._learn_context(exc):
                            if budget is not None:
                                budget.spent -= 1
                            resend_with_retries = False
                            continue
                        return _Answer(None, "context")
                    if _mentions(exc, _FORMAT_WORDS):  # a refusal: the same request fails the same way
                        raise self._error(exc, refused=True) from exc
                if self._may_resend(exc, resend_with_retries):
                    resend_with_retries = True
                    continue
                raise self._error(exc) from exc
            except openai.APIConnectionError as exc:
                if not isinstance(exc, openai.APITimeoutError) and self._may_resend(exc, resend_with_retries):
                    resend_with_retries = True
                    continue
                raise self._error(exc, context=context) from exc
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
            except ValueError as exc:  # a 200 whose body is not JSON
                raise LLMError(f"{self.where} answered with a body that is not JSON ({exc}); check llm.base_url "
                               "points at an OpenAI-compatible /v1 endpoint") from exc
            try:
                choice = response.choices[0]
                message = choice.message
                answer = _Answer(message.content, choice.finish_reason, getattr(message, "refusal", None))
            except (AttributeError, IndexError, TypeError) as exc:
                raise LLMError(f"{self.where} answered with something that is not a chat completion "
                               f"(no choices); check llm.base_url: {str(response)[:200]}") from exc
            self._settled = True
            self._record_usage(response, counted, context)
            return answer

    @staticmethod
    def _system(context: ExtractionContext, mode: Mode,
                tail: list[ChatCompletionMessageParam]) -> ChatCompletionMessageParam:
        """The system message: the one place the prompt module is asked for it. ``tail[0]`` is the
        chunk in every request (repairs and re-asks too), so they all see its pruned vocabulary."""
        shape = None if mode == "json_schema" else _EXTRACTION.shape
        return {"role": "system", "content": prompt.system_prompt(context, shape, _chunk_of(tail))}

    def _may_resend(self, exc: openai.OpenAIError, resent: bool) -> bool:
        """A first request went out without the client's retries (see ``_settled``): a transient
        failure of it (429, 5xx, no connection) gets them now. Timeouts are never re-sent: a local
        server keeps generating after the client gave up, so a re-send doubles its work."""
        transient = isinstance(exc, openai.APIConnectionError) or (
            isinstance(exc, openai.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500))
        return transient and not resent and not self._settled and self._client.max_retries > 0

    # -- sizing to the context window ----------------------------------------------------------------

    def _count(self, text: str) -> int:
        if self._counter is None:
            self._counter = token_counter(self.model)
        return self._counter.count(text)

    def _prompt_tokens(self, messages: Sequence[ChatCompletionMessageParam]) -> int:
        """The prompt's tokens as the server will count them (chat-template overhead included)."""
        raw = sum(self._count(str(m.get("content") or "")) + 4 for m in messages) + 8
        return int(raw * self._scale) + 1

    def _margin(self, context_tokens: int) -> int:
        return 32 + context_tokens // 64

    def _output_limit(self, context: ExtractionContext, prompt_tokens: int, system: ChatCompletionMessageParam,
                      tail: list[ChatCompletionMessageParam]) -> int | None:
        """``max_tokens`` to send, ``None`` when the chunk leaves no room for an answer (split it).
        Raises when even the prompt without the chunk cannot fit."""
        window = self._context
        if window is None:
            return self.config.max_output_tokens
        room = window - prompt_tokens - self._margin(window)
        if room >= MIN_ANSWER_TOKENS:
            return min(self.config.max_output_tokens, room)
        chunk = _chunk_of(tail)
        self._check_fixed_part(context, chunk, system)
        return None

    def _check_fixed_part(self, context: ExtractionContext, chunk: str,
                          system: ChatCompletionMessageParam | None = None) -> None:
        """Raise when the prompt without the chunk leaves no room for an answer: splitting the chunk
        cannot help then."""
        window = self._context
        if window is None:
            return
        if system is None:
            system = self._system(context, self._mode, [{"role": "user", "content": chunk}])
        fixed = self._prompt_tokens([system])
        if fixed + self._margin(window) + MIN_ANSWER_TOKENS <= window:
            return
        chunk_tokens = int(self._count(chunk) * self._scale)
        raise ExtractionError(
            f"{self.where}: {_chunk_name(context)}: the prompt does not fit the model's context window even "
            f"without the conversation: system prompt ~{fixed:,} tokens, chunk ~{chunk_tokens:,} tokens, context "
            f"{window:,} tokens (at least {MIN_ANSWER_TOKENS} are kept for the answer). Splitting the chunk "
            "cannot help; use a model or server setting with a larger context (llm.context_tokens), or a "
            "smaller ontology. Nothing was sent for this chunk and nothing of it was kept.")

    def _context_from_listing(self, listing: Any) -> None:
        """The context window from ``/v1/models`` where the server lists it (vLLM ``max_model_len``,
        LM Studio ``max_context_length``, others ``context_length``) for the configured model."""
        for entry in getattr(listing, "data", None) or []:
            extra = getattr(entry, "model_extra", None) or {}
            if getattr(entry, "id", None) not in (self.model, None) and len(listing.data) > 1:
                continue
            for key in ("max_model_len", "max_context_length", "context_length"):
                value = extra.get(key)
                if isinstance(value, int) and value >= 512:
                    with self._lock:
                        self._context = self._context or value
                    log.info("%s: context window %d tokens (from /v1/models %s)", self.where, value, key)
                    return

    def _learn_context(self, exc: openai.APIStatusError) -> bool:
        """Whether the error taught a context size not known before (then the request is re-sized)."""
        text = _error_text(exc)
        for pattern in _CONTEXT_SIZE:
            found = pattern.search(text)
            if found:
                size = int(found.group(1))
                with self._lock:
                    if size == self._context:
                        return False
                    self._context = size
                log.warning("%s: context window is %d tokens (from the server's error); sizing requests to it",
                            self.where, size)
                return True
        return False

    def _record_usage(self, response: Any, counted: int, context: ExtractionContext) -> None:
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if context.usage is not None:
            context.usage.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        if prompt_tokens > counted > 0:  # the server's tokenizer counts more than ours
            with self._lock:
                self._scale = min(4.0, self._scale * prompt_tokens / counted)

    def _adapt(self, exc: openai.APIStatusError, mode: Mode) -> Literal["moved", "changed", None]:
        """Whether a refused request should be sent again in a simpler form (the change is remembered):
        ``changed`` by this call, ``moved`` by another thread meanwhile, ``None``: no."""
        text = _error_text(exc)
        with self._lock:
            if mode != self._mode:  # another thread already moved on
                return "moved"
            if (self.config.structured_output == "auto" and mode == "json_object" and self._object_schema
                    and _mentions(exc, ("schema",)) and not _mentions(exc, ("json_object",))):
                self._object_schema = False  # the server knows JSON mode but not a schema inside it
                self.stats.fallbacks += 1
                log.warning("%s refused a schema inside json_object (%s); sending plain JSON mode", self.where,
                            text[:200])
                return "changed"
            if self.config.structured_output == "auto" and mode != "text" and _mentions(exc, _FORMAT_WORDS):
                self._mode = "json_object" if mode == "json_schema" else "text"
                self.stats.fallbacks += 1
                log.warning("%s refused response_format %s (%s); using %s from now on", self.where, mode,
                            text[:200], self._mode)
                return "changed"
            refused = any(w in text.lower() for w in _REFUSED_WORDS)
            if refused and self._token_param in text and "tokens" not in self._adapted:
                self._adapted.add("tokens")
                self._token_param = "max_tokens" if self._token_param == "max_completion_tokens" \
                    else "max_completion_tokens"
                self.stats.fallbacks += 1
                log.warning("%s refused the output-limit parameter; sending %s instead", self.where,
                            self._token_param)
                return "changed"
            if refused and self._send_temperature and "temperature" in text and "temperature" not in self._adapted:
                self._adapted.add("temperature")
                self._send_temperature = False
                self.stats.fallbacks += 1
                log.warning("%s refused temperature=%s; using the model's default", self.where,
                            self.config.temperature)
                return "changed"
        return None

    def _error(self, exc: openai.OpenAIError, refused: bool = False,
               context: ExtractionContext | None = None) -> LLMError:
        """A message a person can act on: what kind of failure, where, after how many tries."""
        tries = f"after {self._client.max_retries} retr{'y' if self._client.max_retries == 1 else 'ies'}"
        detail = _error_text(exc)[:300]
        if isinstance(exc, openai.RateLimitError):
            text = (f"rate limit: {self.where} answered 429 (too many requests or quota exhausted) {tries}: {detail}. "
                    "Wait, lower the request rate, or raise llm.max_retries")
        elif isinstance(exc, openai.APITimeoutError):
            where = f" for {_chunk_name(context)}" if context is not None else ""
            sent = " (not re-sent: a local server keeps generating after a timeout)" if not self._settled else ""
            text = (f"timeout: {self.where} did not answer{where} within llm.timeout_s={self.config.timeout_s}s "
                    f"{tries}{sent}; nothing of that chunk was kept. Raise llm.timeout_s or check the server's load")
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            text = (f"unreachable: cannot connect to {self.where} {tries} ({cause}). Check llm.base_url and that "
                    "the server is running")
        elif isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            text = f"{self.where} refused the API key (HTTP {exc.status_code}): {detail}. Check llm.api_key"
        elif isinstance(exc, openai.NotFoundError):
            text = f"{self.where} answered 404: unknown model or wrong llm.base_url: {detail}"
        elif isinstance(exc, openai.APIStatusError) and refused:
            text = (f"{self.where} refused the request (HTTP {exc.status_code}; not retried, a refusal repeats): "
                    f"{detail}")
        elif isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
            text = f"server error: {self.where} answered HTTP {exc.status_code} {tries}: {detail}"
        elif isinstance(exc, openai.APIStatusError):
            text = f"{self.where} refused the request (HTTP {exc.status_code}): {detail}"
        else:
            text = f"call to {self.where} failed: {detail}"
        return LLMError(text)

    # -- light checks of the model's numbers ----------------------------------------------------------

    def _checked(self, answer: Extraction, context: ExtractionContext) -> Extraction:
        known_memories = {m.number for m in context.memories}
        known_entities = {e.number for e in context.entities}
        dropped_refs = 0
        memories = []
        for m in answer.memories:
            if m.replaces is not None and m.replaces not in known_memories:
                dropped_refs += 1
                m = m.model_copy(update={"replaces": None})
            memories.append(m)
        entities = []
        for e in answer.entities:
            if e.existing is not None and e.existing not in known_entities:
                dropped_refs += 1
                e = e.model_copy(update={"existing": None})
            entities.append(e)
        if dropped_refs:
            with self._lock:
                self.stats.dropped_refs += dropped_refs
            log.warning("%s: %d replaces/existing number(s) not in the context were set to null", self.where,
                        dropped_refs)
        triples = self._valid_triples(answer.triples, len(memories))
        return Extraction(memories=memories, entities=entities, triples=triples)

    def _valid_triples(self, triples: Sequence[ExtractedTriple], memories: int) -> list[ExtractedTriple]:
        kept = [t for t in triples if t.memory is None or 0 <= t.memory < memories]
        if len(kept) < len(triples):
            with self._lock:
                self.stats.dropped_triples += len(triples) - len(kept)
            log.warning("%s: dropped %d triple(s) whose memory index is not one of the %d memories", self.where,
                        len(triples) - len(kept), memories)
        return kept


def _chunk_name(context: ExtractionContext) -> str:
    return f"chunk {context.chunk_index + 1} of {context.chunk_count}"


def _chunk_of(tail: Sequence[ChatCompletionMessageParam]) -> str:
    """The chunk a request is about: the first message after the system prompt, in every request."""
    return str(tail[0].get("content") or "") if tail else ""


def _error_text(exc: openai.OpenAIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
    return str(getattr(exc, "message", None) or exc)


def _mentions(exc: openai.OpenAIError, words: Sequence[str]) -> bool:
    text = _error_text(exc).lower()
    return any(w in text for w in words)
