"""Storage backends behind one contract (:class:`~graphmem.stores.base.Store`)."""

from .base import Candidates, MemoryPatch, NewMemory, Store, StoreInfo

__all__ = ["Candidates", "MemoryPatch", "NewMemory", "Store", "StoreInfo"]
