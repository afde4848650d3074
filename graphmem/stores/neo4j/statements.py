"""Transaction logic without I/O: a function of the store that runs Cypher is a generator yielding
:class:`Run` statements and receiving their records, so the same code runs in a transaction of
the sync driver (:func:`drive`) and of the async one (:func:`adrive`).

Why: an ``add`` commits on ``neo4j.AsyncGraphDatabase`` for ``AsyncMemory`` and on the sync driver
for ``Memory``, with its checks, locks and statements written once. A driver error is thrown back
into the generator at the statement that caused it, so its ``with conflicts():`` blocks still map it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from neo4j import AsyncManagedTransaction, AsyncResult, ManagedTransaction, Record, Result

from ...sansio import adrive as arun_steps
from ...sansio import drive as run_steps

T = TypeVar("T")
Fetch = Literal["all", "single", "consume"]


@dataclass(frozen=True)
class Run:
    """One statement and what to send back: every record (a list), the single one (or ``None``),
    or nothing (the summary is consumed)."""

    query: str
    params: dict[str, Any]
    fetch: Fetch = "all"


Statements = Generator[Run, Any, T]


def run(query: str, params: Mapping[str, Any] | None = None, fetch: Fetch = "all", **values: Any) -> Run:
    """A statement with ``params`` and/or keyword values (as ``tx.run`` takes them)."""
    return Run(query, quiet({**(params or {}), **values}), fetch)


class _ShortRepr(list[Any]):
    """A list parameter whose ``repr`` is its length.

    Why: the driver formats every RUN for its debug log before it asks whether that level is on,
    ``repr`` of all parameters included, which for rows with embeddings costs more than sending them
    (docs: Benchmarks, "Batched ingest"). The driver packs a list subclass as the list it is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<list of {len(self)}>"


def quiet(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with every list value a :class:`_ShortRepr` (see there); pass a statement's
    parameters through it wherever they may hold rows or vectors."""
    return {k: _ShortRepr(v) if isinstance(v, list) and not isinstance(v, _ShortRepr) else v
            for k, v in params.items()}


def _fetch(result: Result, fetch: Fetch) -> list[Record] | Record | None:
    if fetch == "all":
        return list(result)
    if fetch == "single":
        return result.single()
    result.consume()
    return None


async def _afetch(result: AsyncResult, fetch: Fetch) -> list[Record] | Record | None:
    if fetch == "all":
        return [record async for record in result]
    if fetch == "single":
        return await result.single()
    await result.consume()
    return None


def drive(tx: ManagedTransaction, steps: Statements[T]) -> T:
    """Run ``steps`` in a transaction of the sync driver."""
    return run_steps(steps, lambda step: _fetch(tx.run(step.query, step.params), step.fetch))


async def adrive(tx: AsyncManagedTransaction, steps: Statements[T]) -> T:
    """Run ``steps`` in a transaction of the async driver."""

    async def answer(step: Run) -> list[Record] | Record | None:
        return await _afetch(await tx.run(step.query, step.params), step.fetch)

    return await arun_steps(steps, answer)


How = Literal["read", "write", "alone"]


@dataclass(frozen=True)
class Job(Generic[T]):
    """A store method's work on the server, for either driver: its statements (made afresh per
    try) and how they run: in a read or a write transaction, or ``alone`` (each statement an
    auto-commit read, as a search's are)."""

    how: How
    what: str
    steps: Callable[[], Statements[T]]

    @staticmethod
    def done(value: T) -> Job[T]:
        """A job with nothing to ask the server (an empty input): no session is opened."""
        def nothing() -> Statements[T]:
            return value
            yield  # pragma: no cover - a generator that runs no statement

        return Job("alone", "", nothing)
