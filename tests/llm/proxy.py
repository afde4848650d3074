"""A recording pass-through in front of the llama.cpp server: real HTTP both ways.

The tests need to see what graphmem sent (``response_format``, ``max_tokens``, how many calls per
``add``) and what the server answered (status, ``usage``), without touching the openai client.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass(frozen=True)
class Exchange:
    seq: int
    """Order of arrival: an answer that comes late (its client timed out) still belongs to its request."""
    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any]

    @property
    def format(self) -> str:
        fmt = self.request.get("response_format") or {}
        return str(fmt.get("type", "text"))

    @property
    def prompt_tokens(self) -> int | None:
        usage = self.response.get("usage") or {}
        value = usage.get("prompt_tokens")
        return int(value) if isinstance(value, int) else None


class RecordingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")  # ends in /v1
        self.exchanges: list[Exchange] = []
        self._arrivals = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self, method: str) -> None:
                with proxy._lock:
                    seq, proxy._arrivals = proxy._arrivals, proxy._arrivals + 1
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.removeprefix("/v1")
                # The model may take minutes; the client's own timeout is what the tests exercise.
                upstream = httpx.request(method, proxy.upstream + path, content=body, timeout=1800,
                                         headers={"content-type": self.headers.get("content-type", "application/json")})
                try:
                    request = json.loads(body) if body else {}
                    response = upstream.json()
                except ValueError:
                    request, response = {}, {}
                with proxy._lock:
                    proxy.exchanges.append(Exchange(seq, path, request, upstream.status_code,
                                                    response if isinstance(response, dict) else {}))
                try:
                    self.send_response(upstream.status_code)
                    self.send_header("content-type", upstream.headers.get("content-type", "application/json"))
                    self.send_header("content-length", str(len(upstream.content)))
                    self.end_headers()
                    self.wfile.write(upstream.content)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def do_POST(self) -> None:
                self._forward("POST")

            def do_GET(self) -> None:
                self._forward("GET")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def mark(self) -> int:
        with self._lock:
            return self._arrivals

    def since(self, mark: int) -> list[Exchange]:
        """The chat completions requested after ``mark`` and answered by now, in order of arrival."""
        with self._lock:
            return sorted((e for e in self.exchanges if e.seq >= mark and e.path.startswith("/chat/completions")),
                          key=lambda e: e.seq)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
