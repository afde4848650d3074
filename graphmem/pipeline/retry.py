"""Optimistic concurrency: plan from reads, let the store check them at commit, plan again on conflict."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

from ..errors import ConflictError

T = TypeVar("T")

_QUEUE_AFTER = 2
"""Conflicts after which a write waits its turn behind the other writes of its scope in this process."""
_turns: dict[Hashable, threading.Lock] = {}
_turns_lock = threading.Lock()


def _turn(key: Hashable) -> threading.Lock:
    with _turns_lock:
        return _turns.setdefault(key, threading.Lock())


def replanning(retries: int, attempt: Callable[[], T], key: Hashable = None) -> T:
    """Run ``attempt`` (plan, then write) until its write commits, at most ``retries`` more times.

    Why a re-plan and not a re-run of the transaction: a conflict means the state the plan was made
    from moved (another writer created the entity, closed the fact, took the text), so what to write
    has to be decided again from the new state. Writers colliding on one entity are spread by a
    random pause that grows with each conflict. Within a process, a write that conflicted
    ``_QUEUE_AFTER`` times takes a turn lock of its ``key`` (its scope), and while one holds it every
    other write of the key waits for it too: a busy entity then has its writers one at a time, and
    none of them starves while its neighbours keep committing. Without contention nobody waits."""
    turn: threading.Lock | None = None
    try:
        for n in range(retries + 1):
            if turn is None and key is not None:
                lock = _turn(key)
                if n >= _QUEUE_AFTER or lock.locked():  # contended: take turns with the others
                    lock.acquire()
                    turn = lock
            try:
                return attempt()
            except ConflictError as exc:
                if n == retries:
                    raise ConflictError(f"{exc}; gave up after {retries} re-plans (store.conflict_retries), "
                                        "nothing was written") from exc
            time.sleep(random.uniform(0, min(0.25, 0.002 * 2**n)))
        raise AssertionError("unreachable")
    finally:
        if turn is not None:
            turn.release()
