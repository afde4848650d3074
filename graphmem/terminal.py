"""What the command line prints besides its results: errors, warnings and JSON.

Off a terminal (a pipe, a file, a CI log) every error and warning is one plain line,
``Kind: message``, so ``grep``, ``tail -1`` and log collectors see it whole; rich colour and boxes
are for terminals only. JSON is plain ``json.dumps`` off a terminal, so it always parses.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

console = Console()
err_console = Console(stderr=True)


def one_line(message: str) -> str:
    """``message`` on one line: its lines joined (``"; "`` between sentences), spaces collapsed."""
    parts = [" ".join(line.split()) for line in message.splitlines()]
    out = ""
    for part in filter(None, parts):
        out += part if not out else (" " if out.endswith((":", ";", ",")) else "; ") + part
    return out


def error(kind: str, message: str, *, style: str = "bold red") -> None:
    """One error line on stderr: ``Kind: message``; ``kind`` in ``style`` on a terminal."""
    if err_console.is_terminal:
        err_console.print(f"[{style}]{escape(kind)}[/]: {escape(message)}", highlight=False, soft_wrap=True)
    else:
        _write(sys.stderr, f"{kind}: {one_line(message)}")


def note(message: str) -> None:
    """A line for the person at the terminal (not data) on stderr, one line off a terminal."""
    if err_console.is_terminal:
        err_console.print(escape(message), highlight=False, soft_wrap=True)
    else:
        _write(sys.stderr, one_line(message))


def print_json(data: Any, *, stderr: bool = False) -> None:
    """``data`` as JSON: highlighted on a terminal, else plain ``json.dumps`` (always parseable)."""
    text = json.dumps(data, ensure_ascii=False, default=str, indent=2)
    target = err_console if stderr else console
    if target.is_terminal:
        target.print_json(text)
    else:
        _write(sys.stderr if stderr else sys.stdout, text)


def _write(stream: TextIO, line: str) -> None:
    stream.write(line + "\n")
    stream.flush()


class _OnceHandler(logging.Handler):
    """graphmem's log records for the command line: each text once, one line."""

    def __init__(self, seen: set[str], level: int) -> None:
        super().__init__(level)
        self.seen = seen

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format itself is not worth a traceback here
            return
        if text in self.seen:
            return
        self.seen.add(text)
        if record.levelno >= logging.WARNING:
            error(record.levelname.lower(), text, style="yellow")
        else:
            note(text)


def show_info() -> None:
    """Also print graphmem's INFO records (which embedder, which extractor) while the command runs."""
    logger = logging.getLogger("graphmem")
    for handler in logger.handlers:
        if isinstance(handler, _OnceHandler):
            handler.setLevel(logging.INFO)
            logger.setLevel(logging.INFO)


@contextmanager
def warnings_once(level: int = logging.WARNING) -> Iterator[None]:
    """While a command runs: each warning (``warnings.warn`` or a graphmem log record at ``level`` or
    above) printed once, as one line without the file and source line Python's default adds. The
    library both logs and warns some things (the hashing fallback); the text is shown once."""
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        text = str(message)
        if text in seen:
            return
        seen.add(text)
        error(category.__name__, text, style="yellow")

    logger = logging.getLogger("graphmem")
    handler = _OnceHandler(seen, level)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.propagate = False  # an application's root handler would print each record a second time
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    with warnings.catch_warnings():
        warnings.showwarning = show
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(saved[0])
            logger.propagate = saved[1]
