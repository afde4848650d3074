"""Store backends by name: ``store.provider`` in the configuration picks one.

The two built-in backends are imported only when chosen (the Neo4j driver is not loaded by a
process that uses SQLite). Another backend is added either in code, ``register_store("mine",
factory)``, or by a package that declares an entry point in the ``graphmem.stores`` group whose
object is such a factory, so ``pip install graphmem-mine`` and ``store.provider: mine`` suffice.
A factory takes the whole :class:`~graphmem.config.MemoryConfig` (a store may need ``home`` as
well as its own ``store`` section) and returns an unopened :class:`~graphmem.stores.base.Store`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..plugins import Plugins

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from .base import Store

StoreFactory = Callable[["MemoryConfig"], "Store"]
ENTRY_POINT_GROUP = "graphmem.stores"


def _sqlite(config: MemoryConfig) -> Store:
    from .sqlite import SQLiteStore

    return SQLiteStore(config.sqlite_path(), config.store.busy_timeout_ms, config.store.entity_cache_mb)


def _neo4j(config: MemoryConfig) -> Store:
    from .neo4j import Neo4jStore

    return Neo4jStore(config.store)


_plugins: Plugins[StoreFactory] = Plugins("store provider", ENTRY_POINT_GROUP, "graphmem.stores.register_store",
                                          {"sqlite": _sqlite, "neo4j": _neo4j})


def register_store(name: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Make ``store.provider: name`` build its store with ``factory``. A built-in or already
    registered name is refused unless ``replace`` (a plug-in must not shadow one by accident)."""
    _plugins.register(name, factory, replace=replace)


def providers() -> list[str]:
    """Every provider name usable now: built-in, registered, and installed entry points."""
    return _plugins.names()


def is_provider(name: str) -> bool:
    """Whether ``name`` builds a store; entry points are scanned only for a name not registered,
    so loading a configuration of a built-in backend reads no package metadata."""
    return _plugins.knows(name)


def create_store(config: MemoryConfig) -> Store:
    """The store ``config.store.provider`` names, not yet opened."""
    name = config.store.provider
    store = _plugins.factory(name)(config)
    from .base import Store

    if not isinstance(store, Store):
        raise ConfigError(f"store provider {name!r} returned a {type(store).__name__}, not a graphmem Store")
    return store
