"""A local OpenAI-compatible HTTP server for tests, benchmarks and offline demos.

It speaks the two endpoints graphmem uses, ``POST /v1/chat/completions`` and ``POST /v1/embeddings``,
over real HTTP, so the code under test goes through the real ``openai`` client: retries, timeouts,
status codes and JSON parsing included. Answers come from a script (a queue of :class:`Reply`) or,
when the queue is empty, from a responder function; faults (429, 500, slow, truncated or malformed
output) are scripted the same way.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


ChatResponder = Callable[[dict[str, Any]], str]


class StandinServer:
    """Start with ``with StandinServer() as s:``; point clients at ``s.base_url``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, embed_dims: int = 64) -> None:
        self.embedder = HashingEmbedder(embed_dims)
        self.chat_script: deque[Reply] = deque()
        self.embed_script: deque[Reply] = deque()
        self.chat_responder: ChatResponder = lambda _request: "{}"
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> StandinServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, script: deque[Reply]) -> Reply | None:
        with self._lock:
            return script.popleft() if script else None

    def _chat(self, body: dict[str, Any]) -> tuple[int, str]:
        reply = self._next(self.chat_script) or Reply(content=self.chat_responder(body))
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw_body is not None or reply.status != 200:
            return reply.status, reply.raw_body if reply.raw_body is not None else _error(reply.status)
        return 200, json.dumps({
            "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "standin"),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, str]:
        reply = self._next(self.embed_script)
        if reply is not None:
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.raw_body is not None or reply.status != 200:
                return reply.status, reply.raw_body if reply.raw_body is not None else _error(reply.status)
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
        })

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, _error(400))
                    return
                path = self.path.rstrip("/")
                with server._lock:
                    server.requests.append((path, body))
                if path.endswith("/chat/completions"):
                    self._send(*server._chat(body))
                elif path.endswith("/embeddings"):
                    self._send(*server._embeddings(body))
                else:
                    self._send(404, _error(404))

            def _send(self, status: int, payload: str) -> None:
                data = payload.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _error(status: int) -> str:
    kind = {429: "rate_limit_exceeded", 500: "server_error", 404: "not_found"}.get(status, "invalid_request")
    return json.dumps({"error": {"message": f"stand-in error {status}", "type": kind, "code": kind}})
