"""The Neo4j store for ``AsyncMemory``: every method with a job (``Neo4jStore.job_<name>``: the
reads a caller awaits, search, and the write that commits an add) runs on the async driver, the
same statements as the sync store's; the others run in worker threads on the sync driver."""

from __future__ import annotations

from typing import Any

from ..base import AsyncStore, Store
from .session import AsyncDb, Db


class AsyncNeo4jStore(AsyncStore):
    def __init__(self, store: Store, db: Db) -> None:
        """``store`` is the sync Neo4j store (its jobs and the rest of its methods), ``db`` its driver;
        taking them as the base types keeps this module below the store that builds it."""
        super().__init__(store)
        self._adb = AsyncDb(db)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        job = getattr(self.store, f"job_{name}", None)
        if job is None:
            return await super().call(name, *args, **kwargs)
        return await self._adb.perform(job(*args, **kwargs))

    async def close(self) -> None:
        await self._adb.close()
