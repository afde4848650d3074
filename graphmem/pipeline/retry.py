"""Optimistic concurrency: plan from reads, let the store check them at commit, plan again on conflict."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

from ..errors import ConflictError
from ..sansio import drive
from .steps import Acquire, Pause, Step, Steps

T = TypeVar("T")

_QUEUE_AFTER = 2
"""Conflicts after which a write waits its turn behind the other writes of its scope in this process."""
_turns: dict[Hashable, threading.Lock] = {}
_turns_lock = threading.Lock()


def _turn(key: Hashable) -> threading.Lock:
    with _turns_lock:
        return _turns.setdefault(key, threading.Lock())


def replanning(retries: int, attempt: Callable[[], T], key: Hashable = None) -> T:
    """:func:`replan` of a plain ``attempt`` (plan, then write), sleeping and locking in this thread."""
    def now() -> Steps[T]:
        return attempt()
        yield  # pragma: no cover - a generator that waits for nothing

    def wait(step: Step) -> None:
        if isinstance(step, Pause):
            time.sleep(step.seconds)
        elif isinstance(step, Acquire):
            step.lock.acquire()
        else:
            raise TypeError(f"replanning waits only for pauses and locks, not {step!r}")

    return drive(replan(retries, now, key), wait)


def replan(retries: int, attempt: Callable[[], Steps[T]], key: Hashable = None) -> Steps[T]:
    """Run ``attempt`` (plan, then write) until its write commits, at most ``retries`` more times.

    Why a re-plan and not a re-run of the transaction: a conflict means the state the plan was made
    from moved (another writer created the entity, closed the fact, took the text), so what to write
    has to be decided again from the new state. Writers colliding on one entity are spread by a
    random pause that grows with each conflict. Within a process, a write that conflicted
    ``_QUEUE_AFTER`` times takes a turn lock of its ``key`` (its scope), and while one holds it every
    other write of the key waits for it too: a busy entity then has its writers one at a time, and
    none of them starves while its neighbours keep committing. Without contention nobody waits.
    A cancelled async run releases the lock it holds (the generator is closed)."""
    turn: threading.Lock | None = None
    try:
        for n in range(retries + 1):
            if turn is None and key is not None:
                lock = _turn(key)
                if n >= _QUEUE_AFTER or lock.locked():  # contended: take turns with the others
                    yield Acquire(lock)
                    turn = lock
            try:
                return (yield from attempt())
            except ConflictError as exc:
                if n == retries:
                    raise ConflictError(f"{exc}; gave up after {retries} re-plans (store.conflict_retries), "
                                        "nothing was written") from exc
            yield Pause(random.uniform(0, min(0.25, 0.002 * 2**n)))
        raise AssertionError("unreachable")
    finally:
        if turn is not None:
            turn.release()
