"""Optimistic concurrency: plan from reads, let the store check them at commit, plan again on conflict."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from ..errors import ConflictError

T = TypeVar("T")


def replanning(retries: int, attempt: Callable[[], T]) -> T:
    """Run ``attempt`` (plan, then write) until its write commits, at most ``retries`` more times.

    Why a re-plan and not a re-run of the transaction: a conflict means the state the plan was made
    from moved (another writer created the entity, closed the fact, took the text), so what to write
    has to be decided again from the new state. The short random pause spreads writers that keep
    colliding on one entity."""
    for n in range(retries + 1):
        try:
            return attempt()
        except ConflictError as exc:
            if n == retries:
                raise ConflictError(f"{exc}; gave up after {retries} re-plans (store.conflict_retries), "
                                    "nothing was written") from exc
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**n)))
    raise AssertionError("unreachable")
