"""What search returned, kept for decay by use (``search.decay.access``).

Buffered in the process, so that a search stays one read (one round trip on Neo4j): the buffer is
written with one :meth:`~graphmem.stores.base.Store.touch` per scope when it is due, and on close.
Until then :meth:`AccessLog.uses` lets searches of the same process count the buffered uses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import GraphmemError

if TYPE_CHECKING:
    from ..models import Scope
    from ..stores.base import Store

log = logging.getLogger("graphmem")


class AccessLog:
    """Thread-safe buffer of (count, last time) per scope and memory id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[Scope, dict[str, tuple[int, datetime]]] = {}
        self._uses: dict[str, int] = {}
        self._since = time.monotonic()

    def record(self, scope: Scope, memory_ids: Iterable[str], at: datetime) -> None:
        with self._lock:
            if not self._pending:
                self._since = time.monotonic()
            for mid in memory_ids:
                self._add(scope, mid, 1, at)

    def _add(self, scope: Scope, memory_id: str, n: int, at: datetime) -> None:
        """Under the lock."""
        rows = self._pending.setdefault(scope, {})
        count, last = rows.get(memory_id, (0, at))
        rows[memory_id] = (count + n, max(last, at))
        self._uses[memory_id] = self._uses.get(memory_id, 0) + n

    def uses(self, memory_id: str) -> int:
        """Buffered uses of a memory (not yet in the store)."""
        return self._uses.get(memory_id, 0)

    def due(self, every: int, seconds: float) -> bool:
        with self._lock:
            return bool(self._pending) and (len(self._uses) >= every or time.monotonic() - self._since >= seconds)

    def flush(self, store: Store) -> None:
        """Write the buffer; what a failed write did not take stays buffered for the next flush (an
        access count is not worth failing a search for, so the failure is logged, not raised)."""
        with self._lock:
            pending, self._pending, self._uses = self._pending, {}, {}
        while pending:
            scope, rows = next(iter(pending.items()))
            try:
                store.touch(scope, rows)
            except GraphmemError as exc:
                log.warning("could not record search accesses (kept for the next flush): %s", exc)
                with self._lock:
                    for scope_left, left in pending.items():
                        for mid, (n, at) in left.items():
                            self._add(scope_left, mid, n, at)
                return
            del pending[scope]
