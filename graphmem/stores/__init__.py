"""Storage backends behind one contract (:class:`~graphmem.stores.base.Store`), found by name
through :mod:`graphmem.stores.registry`."""

from .base import Candidates, MemoryPatch, NewMemory, Store, StoreInfo
from .registry import create_store, providers, register_store

__all__ = ["Candidates", "MemoryPatch", "NewMemory", "Store", "StoreInfo", "create_store", "providers",
           "register_store"]
