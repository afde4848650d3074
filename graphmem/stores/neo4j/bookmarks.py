"""Causal consistency on a Neo4j cluster: one set of bookmarks shared by every session a store opens.

A cluster (or Aura) may serve a read from a member that has not applied the last write yet. Each
committed transaction returns a bookmark; a session that sends it waits until the member it runs
on has caught up. Both drivers of a store (sync, and async for ``AsyncMemory``) keep theirs here, so
a search after an add reads that add whatever member serves it. On one server a bookmark costs a
few bytes per message and no wait."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable

from neo4j.api import AsyncBookmarkManager, BookmarkManager


class SharedBookmarks(BookmarkManager):
    """The driver's bookmark manager interface over one thread-safe set: a transaction's new
    bookmark replaces the ones it started from (it implies them), others stay."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def update_bookmarks(self, previous_bookmarks: Collection[str], new_bookmarks: Collection[str]) -> None:
        if not new_bookmarks:
            return
        with self._lock:
            self._held.difference_update(previous_bookmarks)
            self._held.update(new_bookmarks)

    def get_bookmarks(self) -> set[str]:
        with self._lock:
            return set(self._held)

    def add(self, bookmarks: Iterable[str]) -> None:
        """Bookmarks of another process (see ``Memory.bookmarks``): later reads wait for them too."""
        with self._lock:
            self._held.update(bookmarks)

    def for_async(self) -> AsyncSharedBookmarks:
        return AsyncSharedBookmarks(self)


class AsyncSharedBookmarks(AsyncBookmarkManager):
    """:class:`SharedBookmarks` for the async driver: the same set (its lock is held only for a copy)."""

    def __init__(self, shared: SharedBookmarks) -> None:
        self.shared = shared

    async def update_bookmarks(self, previous_bookmarks: Collection[str], new_bookmarks: Collection[str]) -> None:
        self.shared.update_bookmarks(previous_bookmarks, new_bookmarks)

    async def get_bookmarks(self) -> set[str]:
        return self.shared.get_bookmarks()
