"""What graphmem knows about one OpenAI-compatible server, and learns from its answers.

Local servers differ in what they accept (llama-cpp-python answers a JSON schema with HTTP 500, some
refuse ``max_completion_tokens`` or ``temperature``) and rarely say how large their context window
is. Each difference is learnt once, from the server's own error or answer, and kept for the life of
the ``Memory``: the next request is sent in the form the server takes. No I/O here; the extractor
sends what this module decides.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Final, Literal

import openai
from openai.types.chat import ChatCompletionMessageParam

from ...chunking.tokens import TokenCounter, token_counter
from ...config import LLMConfig
from .answers import Spec, bounded

log = logging.getLogger(__name__)

Mode = Literal["json_schema", "json_object", "text"]
"""How the answer's structure is requested: a strict JSON schema, JSON mode (structure described in the
prompt, checked here), or neither (servers that refuse both; the same check applies)."""

FORMAT_WORDS: Final = ("response_format", "response format", "json_schema", "json_object", "structured output")
CONTEXT_WORDS: Final = ("context length", "context_length", "context window", "maximum context", "context size")
"""How servers word a prompt beyond the window (llama.cpp's own server: "exceeds the available context size")."""
_REFUSED_WORDS: Final = ("unsupported", "not supported", "unrecognized", "unknown", "not permitted", "extra")
_CONTEXT_SIZE: Final = (
    re.compile(r"context window of (\d+)", re.I),  # llama-cpp-python: "Requested tokens (N) exceed context window of M"
    re.compile(r"maximum context length is (\d+)", re.I),  # OpenAI, vLLM
    re.compile(r"context (?:length|size|window)[^\d]{0,20}(\d{3,})", re.I),
)
_LISTED_CONTEXT: Final = ("max_model_len", "max_context_length", "context_length", "n_ctx")
"""Where ``/v1/models`` lists the window: vLLM, LM Studio, others, and llama.cpp's own server (in ``meta``:
the context of a slot, not the model's training context ``n_ctx_train``)."""
MIN_ANSWER_TOKENS: Final = 256
"""Room an answer needs at least: a prompt leaving less than this is reported, not sent."""
MAX_RETRY_WAIT_S: Final = 60.0
_SHORT_KEPT: Final = 16
"""Reported prompt sizes below our count kept to compare new ones with (see ``ServerProfile._cut``)."""


def error_text(exc: openai.OpenAIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
    return str(getattr(exc, "message", None) or exc)


def mentions(exc: openai.OpenAIError, words: Sequence[str]) -> bool:
    text = error_text(exc).lower()
    return any(w in text for w in words)


def is_transient(exc: openai.OpenAIError) -> bool:
    """Worth sending again unchanged: rate limits, server failures, a connection that did not open.
    Never a timeout: a local server keeps generating after its client gave up, so a re-send doubles
    its work (and the next one would time out the same way)."""
    if isinstance(exc, openai.APITimeoutError):
        return False
    if isinstance(exc, openai.APIConnectionError):
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500)


def retry_delay(exc: openai.OpenAIError, attempt: int) -> float:
    """Seconds before re-send ``attempt`` (1, 2, …): the server's ``retry-after(-ms)`` when it gives
    one (capped at a minute), else exponential backoff with jitter."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    wait: float | None = None
    try:
        if headers.get("retry-after-ms"):
            wait = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after"):
            value = headers["retry-after"]
            try:
                wait = float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                wait = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        wait = None
    if wait is None or wait < 0:
        wait = min(8.0, 0.5 * 2 ** (attempt - 1)) * random.uniform(0.75, 1.0)
    return min(wait, MAX_RETRY_WAIT_S)


class ServerProfile:
    """The request form one server takes and the size of its context window. Thread-safe."""

    def __init__(self, config: LLMConfig, base_url: str, where: str) -> None:
        self.config = config
        self.where = where
        self.official = "api.openai.com" in base_url
        self.mode: Mode = "json_object" if config.structured_output == "json_object" else "json_schema"
        # api.openai.com wants max_completion_tokens (reasoning models refuse max_tokens); most other
        # compatible servers only know max_tokens. A 400 naming the parameter switches to the other one.
        self.token_param = "max_completion_tokens" if self.official else "max_tokens"
        self.object_schema = not self.official
        """Send the schema inside json_object too (llama.cpp then constrains output to it)."""
        self.send_temperature = True
        self.context: int | None = config.context_tokens
        self.needs_listing = not self.official and self.context is None
        """``/v1/models`` not yet asked for the window (asked once, before the first request)."""
        self._scale = 1.0
        """Server-reported prompt tokens per counted token (learnt from ``usage``; counts only grow)."""
        self._short: dict[int, int] = {}
        """Prompt tokens the server reported below our count -> our count then (the latest few)."""
        self._most_reported = 0
        """The most prompt tokens the server has reported for one request."""
        self._counter: TokenCounter | None = None
        self._adapted: set[str] = set()
        self._lock = threading.Lock()

    # -- the request -------------------------------------------------------------------------------

    def params(self, spec: Spec[Any], mode: Mode, chunk: str) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.send_temperature:
            params["temperature"] = self.config.temperature
        schema = spec.schema if self.official else bounded(spec.schema, chunk)
        if mode == "json_schema":
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": spec.name, "strict": True, "schema": schema}}
        elif mode == "json_object":
            params["response_format"] = {"type": "json_object", "schema": schema} \
                if self.object_schema else {"type": "json_object"}
        return params

    def count(self, text: str) -> int:
        """Tokens of ``text`` as the server counts them (as far as its answers have shown)."""
        if self._counter is None:
            self._counter = token_counter(self.config.model)
        return int(self._counter.count(text) * self._scale)

    def prompt_tokens(self, messages: Sequence[ChatCompletionMessageParam]) -> int:
        """The prompt's tokens, chat-template overhead included."""
        return sum(self.count(str(m.get("content") or "")) + 4 for m in messages) + 9

    def margin(self, window: int) -> int:
        return 32 + window // 64

    def output_limit(self, prompt_tokens: int) -> int | None:
        """``max_tokens`` to send; ``None`` when the prompt leaves the answer too little room."""
        window = self.context
        if window is None:
            return self.config.max_output_tokens
        room = window - prompt_tokens - self.margin(window)
        return min(self.config.max_output_tokens, room) if room >= MIN_ANSWER_TOKENS else None

    def fits(self, fixed_tokens: int) -> bool:
        """Whether a prompt of ``fixed_tokens`` without any conversation leaves room for an answer."""
        window = self.context
        return window is None or fixed_tokens + self.margin(window) + MIN_ANSWER_TOKENS <= window

    # -- learning from the server ------------------------------------------------------------------

    def learn_listing(self, listing: Any) -> None:
        """The window from ``/v1/models`` where the server lists it for the configured model."""
        self.needs_listing = False
        for entry in getattr(listing, "data", None) or []:
            extra = getattr(entry, "model_extra", None) or {}
            if getattr(entry, "id", None) not in (self.config.model, None) and len(listing.data) > 1:
                continue
            meta = extra.get("meta")
            fields = {**extra, **meta} if isinstance(meta, dict) else extra
            for key in _LISTED_CONTEXT:
                value = fields.get(key)
                if isinstance(value, int) and value >= 512:
                    with self._lock:
                        self.context = self.context or value
                    log.info("%s: context window %d tokens (from /v1/models %s)", self.where, value, key)
                    return

    def learn_from_error(self, exc: openai.APIStatusError) -> bool:
        """Whether a context-length error taught a window not known before (then re-size and re-send)."""
        text = error_text(exc)
        for pattern in _CONTEXT_SIZE:
            found = pattern.search(text)
            if found:
                return self._learn_window(int(found.group(1)), "the server's error")
        return False

    def learn_from_answer(self, usage: Any, finish_reason: str | None, sent_limit: int, counted: int) -> bool:
        """What an answer shows; ``True`` when it shows the server cut the prompt (see :meth:`_cut`):
        the answer then lacks the prompt's start and is not to be used. Its ``usage.prompt_tokens``
        against our count: the server's tokenizer. And a server that cuts ``max_tokens`` to its
        window without saying so (llama-cpp-python) stops at ``finish_reason == "length"`` before the
        limit sent: the prompt plus the answer is then its window. (Only from an answer of some
        length: a few tokens cut off say more about a server's own output cap than about its window.)"""
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if prompt_tokens and self._cut(prompt_tokens, counted):
            return True
        if prompt_tokens > counted > 0:
            with self._lock:
                self._scale = min(4.0, self._scale * prompt_tokens / counted)
        if finish_reason == "length" and prompt_tokens and MIN_ANSWER_TOKENS <= completion_tokens < sent_limit:
            self._learn_window(prompt_tokens + completion_tokens, "an answer the server cut at its window")
        return False

    def _cut(self, prompt_tokens: int, counted: int) -> bool:
        """Whether the server cut this prompt to its window without an error, as Ollama does beyond
        its ``num_ctx`` (dropping tokens from the start, where the instructions are, and reporting
        the window as the prompt's size); the window is then learnt.

        A server's count below ours alone proves nothing: graphmem's estimate over-counts most text
        against a model's own tokenizer, and some scripts by far more. A cut shows as a cap instead:
        two prompts whose counts differ by more than a tenth, reported at exactly the same size, the
        most this server has reported."""
        with self._lock:
            earlier = self._short.get(prompt_tokens) if prompt_tokens < counted else None
            capped = (earlier is not None and abs(earlier - counted) > 0.1 * max(earlier, counted)
                      and prompt_tokens >= self._most_reported)
            self._most_reported = max(self._most_reported, prompt_tokens)
            if prompt_tokens < counted:
                self._short[prompt_tokens] = counted
                if len(self._short) > _SHORT_KEPT:
                    del self._short[next(iter(self._short))]
        if not capped or earlier is None:
            return False
        return self._learn_window(prompt_tokens, (
            f"prompts of ~{earlier:,} and ~{counted:,} tokens that the server reported at {prompt_tokens:,} "
            "both: it cuts a longer prompt to its window without an error, dropping the instructions at its "
            "start (Ollama beyond num_ctx; set llm.context_tokens to it, or raise num_ctx)"))

    def _learn_window(self, size: int, source: str) -> bool:
        with self._lock:
            if self.context is not None and size >= self.context:
                return False
            self.context = size
        log.warning("%s: context window is %d tokens (from %s); sizing requests to it", self.where, size, source)
        return True

    def adapt(self, exc: openai.APIStatusError, mode: Mode) -> Literal["moved", "changed", None]:
        """Whether a refused request should be sent again in a simpler form (the change is remembered):
        ``changed`` by this call, ``moved`` by another thread meanwhile, ``None``: no."""
        text = error_text(exc)
        auto = self.config.structured_output == "auto"
        with self._lock:
            if mode != self.mode:  # another thread already moved on
                return "moved"
            if (auto and mode == "json_object" and self.object_schema and mentions(exc, ("schema",))
                    and not mentions(exc, ("json_object",))):
                self.object_schema = False  # the server knows JSON mode but not a schema inside it
                log.warning("%s refused a schema inside json_object (%s); sending plain JSON mode", self.where,
                            text[:200])
                return "changed"
            if auto and mode != "text" and mentions(exc, FORMAT_WORDS):
                self.mode = "json_object" if mode == "json_schema" else "text"
                log.warning("%s refused response_format %s (%s); using %s from now on", self.where, mode,
                            text[:200], self.mode)
                return "changed"
            refused = any(w in text.lower() for w in _REFUSED_WORDS)
            if refused and self.token_param in text and "tokens" not in self._adapted:
                self._adapted.add("tokens")
                self.token_param = "max_tokens" if self.token_param == "max_completion_tokens" \
                    else "max_completion_tokens"
                log.warning("%s refused the output-limit parameter; sending %s instead", self.where,
                            self.token_param)
                return "changed"
            if refused and self.send_temperature and "temperature" in text and "temperature" not in self._adapted:
                self._adapted.add("temperature")
                self.send_temperature = False
                log.warning("%s refused temperature=%s; using the model's default", self.where,
                            self.config.temperature)
                return "changed"
        return None
