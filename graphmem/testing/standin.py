"""A local OpenAI-compatible HTTP server for tests, benchmarks and offline demos.

It speaks the two endpoints graphmem uses, ``POST /v1/chat/completions`` and ``POST /v1/embeddings``,
over real HTTP, so the code under test goes through the real ``openai`` client: retries, timeouts,
status codes and JSON parsing included. Answers come from a script (a queue of :class:`Reply`) or,
when the queue is empty, from a responder function (which sees the request, so it can answer per
content); faults (429, 500, slow, truncated or malformed output, refusals) are scripted the same way.
``unsupported_formats`` makes it refuse ``response_format`` types with a 400, like servers without
JSON-schema support. ``context_window`` makes it refuse requests whose prompt plus output limit exceed
it (OpenAI, vLLM). ``imitate = "llama-cpp-python"`` behaves as llama-cpp-python 0.3.36 does: a
``json_schema`` request is refused with an HTTP 500, only a prompt that fills the window is refused,
and an output limit beyond what the prompt leaves is cut to it without a word (the answer then stops
with ``finish_reason: length`` before the limit sent); ``imitate = "llama.cpp"`` words a prompt beyond
the window the way llama.cpp's own server (``llama-server``) does; ``imitate = "ollama"`` refuses
nothing and cuts a prompt beyond the window to it without a word, as Ollama's runner does ("truncating
input prompt ... keep=4" in its log): the first four tokens stay, the tokens after them go until the
rest fits, the responder sees the cut request, and ``usage`` counts what was kept. Every request
body is recorded in ``requests``, and the ``usage`` of every answer in ``usage_sent``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from ..embedding.hashing import HashingEmbedder


@dataclass
class Reply:
    """One scripted answer. ``status`` other than 200 sends an OpenAI-style error body."""

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    delay_s: float = 0.0
    raw_body: str | None = None
    """Sent verbatim instead of a well-formed response (for malformed-body tests)."""
    error_message: str | None = None
    """Message of the OpenAI-style error body sent with a non-200 ``status``."""
    error_code: str | None = None
    """``error.code`` of that body (e.g. ``context_length_exceeded``); default: derived from the status."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (e.g. ``retry-after-ms``)."""
    refusal: str | None = None
    """A model refusal: ``message.refusal`` set and ``content`` null."""
    tool_calls: list[dict[str, Any]] | None = None
    """Function calls the model makes (``{"name", "arguments", "id"?}``, arguments a JSON string): sent
    as ``message.tool_calls`` (an id unique to the call when none is given) with ``finish_reason``
    ``tool_calls``."""

    def fault_body(self) -> str:
        """The body of a non-200 or raw reply."""
        return self.raw_body if self.raw_body is not None else _error(self.status, self.error_message, self.error_code)


ChatResponder = Callable[[dict[str, Any]], "str | Reply"]
"""Answers a chat request (the decoded JSON body) with the content, or with a whole :class:`Reply`."""


_OLLAMA_KEEP = 4
"""Tokens Ollama's runner keeps from the start of a prompt it cuts (its log says ``keep=4``)."""


def _cut_to(body: dict[str, Any], window: int) -> dict[str, Any]:
    """The request as Ollama's model sees it: a prompt over ``window`` tokens (as
    :meth:`StandinServer.prompt_tokens` counts them) loses the characters after its first
    :data:`_OLLAMA_KEEP` tokens, from the first message on, until it fits."""
    excess = StandinServer.prompt_tokens(body) - window
    messages = [dict(m) for m in body.get("messages", [])]
    for i, message in enumerate(messages):
        if excess <= 0:
            break
        text = str(message.get("content") or "")
        start = 4 * _OLLAMA_KEEP if i == 0 else 0
        drop = min(4 * excess, max(0, len(text) - start) // 4 * 4)  # whole tokens: the count falls by drop / 4
        message["content"] = text[:start] + text[start + drop:]
        excess -= drop // 4
    return {**body, "messages": messages}


def last_user_message(body: dict[str, Any]) -> str:
    """The text of the last ``user`` message of a chat request (what responders usually key on)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


class _Server(ThreadingHTTPServer):
    request_queue_size = 256
    """Connections waiting to be accepted (the default, 5, refuses a burst of concurrent clients)."""


class StandinServer:
    """Start with ``with StandinServer() as s:``; point clients at ``s.base_url``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, embed_dims: int = 64) -> None:
        self.embedder = HashingEmbedder(embed_dims)
        self.chat_script: deque[Reply] = deque()
        self.embed_script: deque[Reply] = deque()
        self.chat_responder: ChatResponder = lambda _request: "{}"
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.unsupported_formats: set[str] = set()
        self.imitate: Literal["openai", "llama-cpp-python", "llama.cpp", "ollama"] = "openai"
        self.context_window: int | None = None
        """Prompt tokens (as :meth:`prompt_tokens` counts them) plus the output limit allowed per request."""
        self.usage_sent: list[dict[str, int]] = []
        self.models: list[dict[str, Any]] | None = None
        """``GET /v1/models`` answers ``{"data": models}`` (e.g. with vLLM's ``max_model_len``); ``None``: 404."""
        """``response_format`` types answered with a 400 (e.g. ``{"json_schema"}``), before the script."""
        self.retry_after_ms: int | None = 1
        """Sent as ``retry-after-ms`` with 429 and 5xx answers, so the client's retries wait this long
        instead of its default backoff (keeps retry tests fast); ``None`` sends no such header."""
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> StandinServer:
        # a short poll interval makes stop() quick (the default 0.5 s adds up over a test suite)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests received so far, oldest first (retries included)."""
        with self._lock:
            return [body for path, body in self.requests if path.endswith("/chat/completions")]

    def _next(self, script: deque[Reply]) -> Reply | None:
        with self._lock:
            return script.popleft() if script else None

    @staticmethod
    def prompt_tokens(body: dict[str, Any]) -> int:
        """The stand-in's token count of a request's messages: 4 characters a token, 4 per message."""
        return sum(len(str(m.get("content") or "")) // 4 + 4 for m in body.get("messages", []))

    def _refusal(self, body: dict[str, Any]) -> tuple[int, str] | None:
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        llama = self.imitate == "llama-cpp-python"
        if llama and kind == "json_schema":  # its pydantic request model only knows these two
            return 500, json.dumps({"error": {"message": (
                "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be "
                f"'text' or 'json_object' [type=literal_error, input_value='{kind}', input_type=str]"),
                "type": "internal_server_error"}})
        if kind in self.unsupported_formats:
            return 400, _error(400, f"response_format type '{kind}' is not supported by this server")
        limit = body.get("max_tokens") if llama else body.get("max_tokens", body.get("max_completion_tokens"))
        prompt = self.prompt_tokens(body)
        asked = prompt + (limit if isinstance(limit, int) else 0)
        window = self.context_window
        native = self.imitate == "llama.cpp"
        if window is not None and native and prompt >= window:
            return 400, json.dumps({"error": {"code": 400, "type": "exceed_context_size_error", "message": (
                f"request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it")}})
        if window is not None and not native and self.imitate != "ollama" and (
                prompt >= window if llama else asked > window):
            message = (f"This model's maximum context length is {window} tokens. However, you requested {asked} "
                       f"tokens ({prompt} in the messages, {limit} in the completion). Please reduce the length "
                       "of the messages or completion.")
            return 400, _error(400, message, "context_length_exceeded")
        return None

    def _chat(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        refused = self._refusal(body)
        if refused is not None:
            return refused[0], refused[1], {}
        if self.imitate == "ollama" and self.context_window is not None:
            body = _cut_to(body, self.context_window)
        reply = self._next(self.chat_script)
        if reply is None:
            answer = self.chat_responder(body)
            reply = answer if isinstance(answer, Reply) else Reply(content=answer)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw_body is not None or reply.status != 200:
            return reply.status, reply.fault_body(), reply.headers
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.refusal else reply.content}
        if reply.refusal:
            message["refusal"] = reply.refusal
        finish = reply.finish_reason
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": call.get("id") or f"call_{uuid.uuid4().hex[:16]}", "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"]}}
                for call in reply.tool_calls]
            finish = "tool_calls"
        prompt = self.prompt_tokens(body)
        completion = len(reply.content or "") // 4 + 1
        if self.imitate == "llama-cpp-python" and self.context_window is not None:
            room = self.context_window - prompt  # llama-cpp-python cuts max_tokens to this silently
            if completion > room:
                message["content"] = (reply.content or "")[: room * 4]
                completion, finish = room, "length"
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        with self._lock:
            self.usage_sent.append(usage)
        return 200, json.dumps({
            "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": usage,
        }), reply.headers

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, str, dict[str, str]]:
        reply = self._next(self.embed_script)
        if reply is not None:
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.raw_body is not None or reply.status != 200:
                return reply.status, reply.fault_body(), reply.headers
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        vectors = self.embedder.embed([str(t) for t in texts])
        dims = body.get("dimensions")
        if isinstance(dims, int) and 0 < dims < vectors.shape[1]:
            vectors = vectors[:, :dims]
        return 200, json.dumps({
            "object": "list", "model": body.get("model", "standin"),
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }), {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:
                path = self.path.rstrip("/")
                with server._lock:
                    server.requests.append((path, {}))
                if path.endswith("/models") and server.models is not None:
                    self._send(200, json.dumps({"object": "list", "data": server.models}), {})
                else:
                    self._send(404, _error(404), {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, _error(400), {})
                    return
                path = self.path.rstrip("/")
                with server._lock:
                    server.requests.append((path, body))
                if path.endswith("/chat/completions"):
                    self._send(*server._chat(body))
                elif path.endswith("/embeddings"):
                    self._send(*server._embeddings(body))
                else:
                    self._send(404, _error(404), {})

            def _send(self, status: int, payload: str, headers: dict[str, str]) -> None:
                data = payload.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                extra = {k.lower(): v for k, v in headers.items()}
                if status == 429:
                    extra.setdefault("retry-after", "0")
                if (status == 429 or status >= 500) and server.retry_after_ms is not None:
                    extra.setdefault("retry-after-ms", str(server.retry_after_ms))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.wfile.write(data)

        return Handler


def _error(status: int, message: str | None = None, code: str | None = None) -> str:
    kind = {429: "rate_limit_exceeded", 404: "not_found"}.get(status, "server_error" if status >= 500 else
                                                                   "invalid_request")
    return json.dumps({"error": {"message": message or f"stand-in error {status}", "type": kind,
                                 "code": code or kind}})
