"""The pipeline's waits, named: an operation is written once as a generator that yields what it
waits for (a store call, an embedding, an extraction, CPU work, a pause) and receives the answer.

Why: ``Memory`` and ``AsyncMemory`` run the same code. :func:`run` answers each step by calling the
sync parts; :func:`arun` awaits the async ones (the async Neo4j driver, ``AsyncOpenAI``) and sends
CPU work (planning, the SHACL guard) and sync-only parts to worker threads. A failure is thrown back
into the generator at the step that caused it, so its ``try``/``except`` (a write conflict, say)
reads as in plain code.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from ..sansio import adrive, drive

if TYPE_CHECKING:
    from ..embedding import Embedder
    from ..extraction import Extraction, ExtractionContext, Extractor
    from ..stores.base import AsyncStore, Store

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class Call:
    """A store method with its arguments, made by :meth:`of` from the method itself
    (``Call.of(Store.get, memory_id, scope)``): mypy checks the arguments against the store
    contract and a reader can follow the reference. The runners look the method up by its name on
    the store they drive (the sync store, or the async store's job of that name)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(method: Callable[Concatenate[Store, P], object], /, *args: P.args, **kwargs: P.kwargs) -> Call:
        return Call(method.__name__, args, dict(kwargs))


@dataclass(frozen=True)
class Embed:
    texts: Sequence[str]


@dataclass(frozen=True)
class Extract:
    chunk: str
    context: ExtractionContext


@dataclass(frozen=True)
class Work:
    """CPU-bound (or sync-only) work: run inline by :func:`run`, in a worker thread by :func:`arun`."""

    fn: Callable[[], Any]


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Acquire:
    """Take a process-wide turn lock (released by the generator itself)."""

    lock: threading.Lock


Step = Call | Embed | Extract | Work | Pause | Acquire
Steps = Generator[Step, Any, T]


@dataclass
class Engines:
    """The parts a step goes to."""

    store: Store
    embedder: Embedder
    extractor: Callable[[], Extractor]
    """Built on first use (it may load the ontology)."""


def run(steps: Steps[T], parts: Engines) -> T:
    """Drive ``steps`` with the sync parts."""
    return drive(steps, lambda step: _sync(step, parts))


def _sync(step: Step, parts: Engines) -> Any:
    if isinstance(step, Call):
        return getattr(parts.store, step.name)(*step.args, **step.kwargs)
    if isinstance(step, Embed):
        return parts.embedder.embed(step.texts)
    if isinstance(step, Extract):
        return parts.extractor().extract(step.chunk, step.context)
    if isinstance(step, Work):
        return step.fn()
    if isinstance(step, Pause):
        time.sleep(step.seconds)
        return None
    step.lock.acquire()
    return None


async def arun(steps: Steps[T], parts: Engines, store: AsyncStore) -> T:
    """Drive ``steps`` awaiting the async parts; a cancellation stops it at the step it waits on
    (the generator is closed: nothing after that step runs)."""
    return await adrive(steps, lambda step: _async(step, parts, store))


async def _async(step: Step, parts: Engines, store: AsyncStore) -> Any:
    if isinstance(step, Call):
        return await store.call(step.name, *step.args, **step.kwargs)
    if isinstance(step, Embed):
        return await parts.embedder.aembed(step.texts)
    if isinstance(step, Extract):
        extractor = await asyncio.to_thread(parts.extractor)
        return await extractor.aextract(step.chunk, step.context)
    if isinstance(step, Work):
        return await asyncio.to_thread(step.fn)
    if isinstance(step, Pause):
        await asyncio.sleep(step.seconds)
        return None
    await _acquire(step.lock)
    return None


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Lock]] = weakref.WeakKeyDictionary()


async def _acquire(lock: threading.Lock) -> None:
    """Wait for a thread lock without blocking the event loop or a worker thread.

    The tasks of one loop queue on an ``asyncio.Lock`` in front of it (first come, first served),
    and only the first polls the thread lock, briefly: the lock passes from writer to writer with
    a millisecond's gap, and a hundred waiters do not wake up a hundred times each."""
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = gates.setdefault(id(lock), asyncio.Lock())
    async with gate:
        while not lock.acquire(blocking=False):
            await asyncio.sleep(0.001)


def extraction(chunk: str, context: ExtractionContext) -> Generator[Step, Any, Extraction]:
    """One chunk through the extractor (a step, typed)."""
    result: Extraction = yield Extract(chunk, context)
    return result
