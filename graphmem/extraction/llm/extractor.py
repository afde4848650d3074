"""Extraction with any OpenAI-compatible chat model: one structured-output call per chunk.

What mem0 users lose today is handled here explicitly: output cut off at the token limit is never
parsed as if it were whole (the chunk is halved and both halves extracted), malformed or off-schema
output is re-asked with the validation error, and whatever still fails raises instead of returning a
partial result. Existing memories and entities are referred to by small numbers only; numbers the
model invents are removed before anything leaves this module. What the server accepts and how large
its window is are learnt in ``server.py``; the answers' schemas and parsing are in ``answers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel

from ...config import LLMConfig, display_uri
from ...errors import ConfigError, ExtractionError, LLMError
from ...sansio import adrive, drive
from .. import prompt
from ..contract import ExtractedTriple, Extraction, ExtractionContext, Extractor, Rejection
from .answers import EXTRACTION, REPAIR, BadOutput, M, Spec, looks_looping, merge, parse_answer, split_in_two
from .server_profile import (
    CONTEXT_WORDS,
    FORMAT_WORDS,
    MIN_ANSWER_TOKENS,
    Mode,
    ServerProfile,
    error_text,
    is_transient,
    mentions,
    retry_delay,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)
_Chat = Generator[dict[str, Any], Any, T]
"""Steps of a conversation with the model: each yields the keyword arguments of one chat-completion
request (or ``{"_models": True}``, ``{"_sleep": seconds}``) and receives its response (or has the
client's exception thrown in)."""

_CLIP: Final = 2000
"""A malformed answer echoed back in the corrective turn is shortened to this many characters."""


@dataclass
class LLMStats:
    """Counters since the extractor was built (read them in logs, benchmarks and tests)."""

    calls: int = 0
    """Chat-completion requests made, re-sends after a transient failure not counted."""
    retries: int = 0
    """Re-sends after a transient failure (429, 5xx, no connection; never a timeout)."""
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


class LLMExtractor(Extractor):
    """Memories, entities and triples from an OpenAI-compatible chat model (OpenAI, Azure, Ollama, vLLM,
    LM Studio: whatever ``base_url`` points at).

    Thread-safe: the structured-output mode learnt from the server and the counters are shared under a
    lock; requests run concurrently.
    """

    follows_instructions = True

    def __init__(self, config: LLMConfig, client: openai.OpenAI | None = None) -> None:
        """``client`` (optional) is used with its own timeout; re-sends are graphmem's (``llm.max_retries``)."""
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
            client = openai.OpenAI(api_key=key, base_url=config.base_url, timeout=config.timeout_s)
        # The client never re-sends on its own: a refusal may come as a 500 (llama-cpp-python) and must
        # not be retried as a server failure, and a timed-out request must not be sent again at all.
        self._client = client.with_options(max_retries=0)
        self._aclient: openai.AsyncOpenAI | None = None
        self.stats = LLMStats()
        self._lock = threading.Lock()
        self.server = ServerProfile(config, str(client.base_url), self.where)

    @property
    def mode(self) -> Mode:
        """The structured-output mode in use; ``auto`` moves it down once when the server refuses it."""
        return self.server.mode

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
        answer = self._run(self._ask(REPAIR, context, tail))
        if isinstance(answer, _Cut):
            raise ExtractionError(f"{self.where}: the repair answer was cut off "
                                  f"({'output limit' if answer.reason == 'length' else 'context window'}); "
                                  f"raise llm.max_output_tokens (now {self.config.max_output_tokens})")
        return self._valid_triples(answer.triples, len(previous.memories))

    # -- the two ways of sending: each request the steps below yield is sent by the sync or the
    # async client, and its response (or exception) goes back into them

    def _run(self, steps: _Chat[T]) -> T:
        def send(request: dict[str, Any]) -> Any:
            if "_sleep" in request:
                return time.sleep(request["_sleep"])
            if request.get("_models"):
                return self._client.with_options(timeout=5.0).models.list()
            return self._client.chat.completions.create(**request)

        return drive(steps, send)

    async def _arun(self, steps: _Chat[T]) -> T:
        aclient = self._async_client()

        async def send(request: dict[str, Any]) -> Any:
            if "_sleep" in request:
                return await asyncio.sleep(request["_sleep"])
            if request.get("_models"):
                return await aclient.with_options(timeout=5.0).models.list()
            return await aclient.chat.completions.create(**request)

        return await adrive(steps, send)

    def _async_client(self) -> openai.AsyncOpenAI:
        """The sync client's twin (same key, endpoint and timeout), made on first async use."""
        with self._lock:
            if self._aclient is None:
                c = self._client
                self._aclient = openai.AsyncOpenAI(api_key=c.api_key, base_url=c.base_url, timeout=c.timeout,
                                                   max_retries=0)
            return self._aclient

    # -- splitting ----------------------------------------------------------------------------------

    def _extract(self, chunk: str, context: ExtractionContext, depth: int, budget: _Budget) -> _Chat[Extraction]:
        answer = yield from self._ask(EXTRACTION, context, [{"role": "user", "content": chunk}], budget)
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

    def _ask(self, spec: Spec[M], context: ExtractionContext, tail: list[ChatCompletionMessageParam],
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
            except BadOutput as exc:
                error = str(exc)
            shown = (answer.content or "(empty answer)")
            shown = shown if len(shown) <= _CLIP else shown[:_CLIP] + " …[shortened]"
            extra = [{"role": "assistant", "content": shown}, {"role": "user", "content": prompt.corrective(error)}]
        raise ExtractionError(f"{self.where} returned output that is not valid JSON for the {spec.name} schema "
                              f"{attempts} time(s) (llm.output_retries={self.config.output_retries}); "
                              f"last error: {error}")

    def _send(self, spec: Spec[Any], context: ExtractionContext, tail: list[ChatCompletionMessageParam],
              budget: _Budget | None = None) -> _Chat[_Answer]:
        """One chat completion. Adapts (once each) to servers that refuse a structured-output mode or a
        parameter, sizes the output limit to the context window when it is known, re-sends transient
        failures (never a timeout) after a backoff; maps every transport failure to :class:`LLMError`."""
        server = self.server
        if server.needs_listing:
            try:
                listing = yield {"_models": True}
            except (openai.OpenAIError, ValueError):
                listing = None  # many servers list no metadata, or no models at all: learnt later if needed
            server.learn_listing(listing)
        resends = 0
        while True:
            mode = server.mode
            params = server.params(spec, mode, _chunk_of(tail))
            system = self._system(context, mode, tail)
            messages = [system, *tail]
            counted = server.prompt_tokens(messages)
            limit = server.output_limit(counted)
            if limit is None:
                self._check_fixed_part(context, _chunk_of(tail), system)
                return _Answer(None, "context")
            params[server.token_param] = limit
            if not resends:
                self._charge(context, budget, tail)
            try:
                response = yield {"model": self.model, "messages": messages, **params}
            except openai.APIStatusError as exc:
                if exc.status_code in (400, 422) or exc.status_code >= 500:
                    moved = server.adapt(exc, mode)
                    if moved:
                        self._refund(budget)
                        if moved == "changed":
                            with self._lock:
                                self.stats.fallbacks += 1
                            if context.usage is not None:
                                context.usage.add(fallbacks=1)
                        resends = 0
                        continue
                    if mentions(exc, CONTEXT_WORDS) or exc.code == "context_length_exceeded":
                        if server.learn_from_error(exc):
                            self._refund(budget)
                            resends = 0
                            continue
                        return _Answer(None, "context")
                    if mentions(exc, FORMAT_WORDS):  # a refusal: the same request fails the same way
                        raise self._error(exc, resends, refused=True) from exc
                if is_transient(exc) and resends < self.config.max_retries:
                    resends += 1
                    yield from self._back_off(exc, resends)
                    continue
                raise self._error(exc, resends) from exc
            except openai.OpenAIError as exc:
                if is_transient(exc) and resends < self.config.max_retries:
                    resends += 1
                    yield from self._back_off(exc, resends)
                    continue
                raise self._error(exc, resends, context=context) from exc
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
            usage = getattr(response, "usage", None)
            cut = server.learn_from_answer(usage, answer.finish_reason, limit, counted)
            if context.usage is not None:
                context.usage.add(prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                                  completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))
            # the answer to a prompt the server cut lacks its start (the instructions): not used, and
            # the chunk goes again in pieces that fit the window now known, as after a refusal for size
            return _Answer(None, "context") if cut else answer

    def _charge(self, context: ExtractionContext, budget: _Budget | None,
                tail: list[ChatCompletionMessageParam]) -> None:
        """Count a request about to go out against the chunk's budget; raise when it is spent."""
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

    @staticmethod
    def _refund(budget: _Budget | None) -> None:
        """A refused request generated nothing: it does not count against the chunk."""
        if budget is not None:
            budget.spent -= 1

    def _back_off(self, exc: openai.OpenAIError, attempt: int) -> _Chat[None]:
        wait = retry_delay(exc, attempt)
        with self._lock:
            self.stats.retries += 1
        log.warning("%s: %s; sending again in %.1f s (%d of %d)", self.where, error_text(exc)[:200] or
                    type(exc).__name__, wait, attempt, self.config.max_retries)
        yield {"_sleep": wait}

    def _check_fixed_part(self, context: ExtractionContext, chunk: str,
                          system: ChatCompletionMessageParam | None = None) -> None:
        """Raise when the prompt without the chunk leaves no room for an answer: splitting the chunk
        cannot help then."""
        if system is None:
            system = self._system(context, self.server.mode, [{"role": "user", "content": chunk}])
        fixed = self.server.prompt_tokens([system])
        if self.server.fits(fixed):
            return
        raise ExtractionError(
            f"{self.where}: {_chunk_name(context)}: the prompt does not fit the model's context window even "
            f"without the conversation: system prompt ~{fixed:,} tokens, chunk ~{self.server.count(chunk):,} "
            f"tokens, context {self.server.context:,} tokens (at least {MIN_ANSWER_TOKENS} are kept for the "
            "answer). Splitting the chunk cannot help; use a model or server setting with a larger context "
            "(llm.context_tokens), or a smaller ontology. Nothing was sent for this chunk and nothing of it "
            "was kept.")

    @staticmethod
    def _system(context: ExtractionContext, mode: Mode,
                tail: list[ChatCompletionMessageParam]) -> ChatCompletionMessageParam:
        """The system message: the one place the prompt module is asked for it. ``tail[0]`` is the
        chunk in every request (repairs and re-asks too), so they all see its pruned vocabulary."""
        shape = None if mode == "json_schema" else EXTRACTION.shape
        return {"role": "system", "content": prompt.system_prompt(context, shape, _chunk_of(tail))}

    def _error(self, exc: openai.OpenAIError, resends: int, refused: bool = False,
               context: ExtractionContext | None = None) -> LLMError:
        """A message a person can act on: what kind of failure, where, after how many retries."""
        tries = f"after {resends} retr{'y' if resends == 1 else 'ies'}"
        detail = error_text(exc)[:300]
        if isinstance(exc, openai.RateLimitError):
            text = (f"rate limit: {self.where} answered 429 (too many requests or quota exhausted) {tries}: {detail}. "
                    "Wait, lower the request rate, or raise llm.max_retries")
        elif isinstance(exc, openai.APITimeoutError):
            where = f" for {_chunk_name(context)}" if context is not None else ""
            text = (f"timeout: {self.where} did not answer{where} within llm.timeout_s={self.config.timeout_s}s "
                    "(not re-sent: a local server keeps generating after its client gave up); nothing of that "
                    "chunk was kept. Raise llm.timeout_s or check the server's load")
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
        memories, dropped_memories = _null_unknown(answer.memories, "replaces", {m.number for m in context.memories})
        entities, dropped_entities = _null_unknown(answer.entities, "existing", {e.number for e in context.entities})
        dropped_refs = dropped_memories + dropped_entities
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


def _null_unknown(items: Sequence[B], field: str, known: set[int]) -> tuple[list[B], int]:
    """``items`` with ``field`` set to null where it names a number the context did not give."""
    out, dropped = [], 0
    for item in items:
        ref = getattr(item, field)
        if ref is not None and ref not in known:
            dropped += 1
            item = item.model_copy(update={field: None})
        out.append(item)
    return out, dropped


def _chunk_name(context: ExtractionContext) -> str:
    return f"chunk {context.chunk_index + 1} of {context.chunk_count}"


def _chunk_of(tail: Sequence[ChatCompletionMessageParam]) -> str:
    """The chunk a request is about: the first message after the system prompt, in every request."""
    return str(tail[0].get("content") or "") if tail else ""
