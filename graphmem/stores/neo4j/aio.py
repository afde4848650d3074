"""The Neo4j store for ``AsyncMemory``: every method with a job (``Neo4jStore.job_<name>``: the
reads a caller awaits, search, and the write that commits an add) runs on the async driver, the
same statements as the sync store's; the others run in worker threads on the sync driver."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import AsyncStore
from .session import AsyncDb

if TYPE_CHECKING:
    from .store import Neo4jStore


class AsyncNeo4jStore(AsyncStore):
    def __init__(self, store: Neo4jStore) -> None:
        super().__init__(store)
        self._jobs = store
        self._adb = AsyncDb(store._db)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        job = getattr(self._jobs, f"job_{name}", None)
        if job is None:
            return await super().call(name, *args, **kwargs)
        return await self._adb.perform(job(*args, **kwargs))

    async def close(self) -> None:
        await self._adb.close()
