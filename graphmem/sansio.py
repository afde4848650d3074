"""One loop for code written as generators of requests (sans I/O): each yielded request is answered
by a function, or awaited from a coroutine function, and the answer sent back; a failure is thrown
back in at the request that caused it, so the generator's own ``try``/``except`` handles it.

Why one module: the pipeline's steps, the Neo4j store's statements and the LLM extractor's calls are
each run by a sync and an async driver; the loop is the same six times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

R = TypeVar("R")
T = TypeVar("T")


def drive(steps: Generator[R, Any, T], answer: Callable[[R], Any]) -> T:
    """Answer each request with ``answer`` until the generator returns its value."""
    try:
        request = next(steps)
        while True:
            try:
                result = answer(request)
            except Exception as exc:  # thrown into the generator: it handles it or re-raises
                request = steps.throw(exc)
            else:
                request = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        steps.close()


async def adrive(steps: Generator[R, Any, T], answer: Callable[[R], Awaitable[Any]]) -> T:
    """:func:`drive`, awaiting each answer; a cancellation closes the generator at the request it
    waits on (nothing after it runs)."""
    try:
        request = next(steps)
        while True:
            try:
                result = await answer(request)
            except Exception as exc:  # see drive
                request = steps.throw(exc)
            else:
                request = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        steps.close()
