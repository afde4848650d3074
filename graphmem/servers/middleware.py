"""The REST server's outer layers, as plain ASGI: one JSON log line per request, the body size limit,
and the last word on faults nothing else caught (a 500 problem, never a traceback to the client).

Order, outside in: :class:`AccessLog` (sees every answer, the refused ones too) then
:class:`BodyLimit` (reads the body before the application parses it, refusing it at
``server.max_body_bytes``) then the FastAPI application.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any

from .errors import INTERNAL, PROBLEM_JSON, body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

access_log = logging.getLogger("graphmem.server.access")
error_log = logging.getLogger("graphmem.server.error")


class JsonFormatter(logging.Formatter):
    """Every log record as one JSON line: a request's fields when it carries them (``extra={"fields":
    ...}``), else time, level, logger and message (uvicorn's start and stop lines)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        line: dict[str, Any] = {"ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                                "level": record.levelname.lower(), "logger": record.name}
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        return json.dumps(line, ensure_ascii=False, default=str)


async def send_problem(send: Send, status: int, problem: dict[str, Any],
                       headers: list[tuple[bytes, bytes]] | None = None) -> None:
    raw = json.dumps(problem, ensure_ascii=False).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(raw)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": raw})


class AccessLog:
    """Logs method, path template (``/v1/memories/{memory_id}``, never the raw path), status,
    duration and the API key's id: never the key, a query string or a body. A fault that escaped
    every handler becomes a 500 problem here, logged with its type and stack, not its message."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0
        request_id = uuid.uuid4().hex[:16]

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            error_log.error("unhandled error", extra={"fields": {
                "event": "error", "request_id": request_id, "error": type(exc).__name__,
                "stack": "".join(traceback.format_tb(exc.__traceback__))[-4000:]}})
            if status == 0:
                await send_problem(sending, 500, body(INTERNAL.status, INTERNAL.slug, INTERNAL.title,
                                                      INTERNAL.safe_detail or "", "InternalError"))
            status = status or 500
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "<unmatched>"
            state = scope.get("state") or {}
            access_log.info("request", extra={"fields": {
                "event": "request", "method": scope.get("method"), "path": path, "status": status,
                "duration_ms": round((time.perf_counter() - start) * 1000, 3), "key_id": state.get("key_id"),
                "request_id": request_id}})


class BodyLimit:
    """Refuses a request body larger than ``max_bytes`` with 413: at once when ``Content-Length``
    says so, else as soon as the chunks read pass it. The application then reads the body kept here."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope.get("headers", []) if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, _replay([], message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, None)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(chunks, None, receive), send)

    async def _refuse(self, send: Send, declared: int | None) -> None:
        said = f"{declared:,} bytes" if declared is not None else "more"
        await send_problem(send, 413, body(
            413, "body-too-large", "Request body too large",
            f"the request body is {said}; this server accepts at most {self.max_bytes:,} (server.max_body_bytes)",
            "RequestTooLarge"), [(b"connection", b"close")])


def _replay(chunks: list[bytes], pending: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if pending is not None:
                return pending
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replay
