"""Store backends by name: ``store.provider`` in the configuration picks one.

The two built-in backends are imported only when chosen (the Neo4j driver is not loaded by a
process that uses SQLite). Another backend is added either in code, ``register_store("mine",
factory)``, or by a package that declares an entry point in the ``graphmem.stores`` group whose
object is such a factory, so ``pip install graphmem-mine`` and ``store.provider: mine`` suffice.
A factory takes the whole :class:`~graphmem.config.MemoryConfig` (a store may need ``home`` as
well as its own ``store`` section) and returns an unopened :class:`~graphmem.stores.base.Store`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from .base import Store

StoreFactory = Callable[["MemoryConfig"], "Store"]
ENTRY_POINT_GROUP = "graphmem.stores"


def _sqlite(config: MemoryConfig) -> Store:
    from .sqlite import SQLiteStore

    return SQLiteStore(config.sqlite_path(), config.store.busy_timeout_ms)


def _neo4j(config: MemoryConfig) -> Store:
    from .neo4j import Neo4jStore

    return Neo4jStore(config.store)


_factories: dict[str, StoreFactory] = {"sqlite": _sqlite, "neo4j": _neo4j}
_lock = threading.Lock()


def register_store(name: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Make ``store.provider: name`` build its store with ``factory``. A built-in or already
    registered name is refused unless ``replace`` (a plug-in must not shadow one by accident)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"a store provider name is an identifier (letters, digits, _), got {name!r}")
    if not callable(factory):
        raise ConfigError(f"the factory of store provider {name!r} must be callable")
    with _lock:
        if name in _factories and not replace:
            raise ConfigError(f"store provider {name!r} is already registered; pass replace=True to replace it")
        _factories[name] = factory


def providers() -> list[str]:
    """Every provider name usable now: built-in, registered, and installed entry points."""
    with _lock:
        names = set(_factories)
    return sorted(names | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def is_provider(name: str) -> bool:
    """Whether ``name`` builds a store; entry points are scanned only for a name not registered,
    so loading a configuration of a built-in backend reads no package metadata."""
    with _lock:
        if name in _factories:
            return True
    return any(ep.name == name for ep in entry_points(group=ENTRY_POINT_GROUP))


def create_store(config: MemoryConfig) -> Store:
    """The store ``config.store.provider`` names, not yet opened."""
    name = config.store.provider
    with _lock:
        factory = _factories.get(name)
    if factory is None:
        found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if not found:
            raise ConfigError(f"no store provider {name!r}; available: {', '.join(providers())} (register one "
                              f"with graphmem.stores.register_store or a {ENTRY_POINT_GROUP!r} entry point)")
        try:
            factory = found[0].load()
        except Exception as exc:  # a broken plug-in is a configuration problem, reported as one
            raise ConfigError(f"store provider {name!r} ({found[0].value}) failed to load: {exc}") from exc
        if not callable(factory):
            raise ConfigError(f"store provider {name!r} ({found[0].value}) is not a factory")
    store = factory(config)
    from .base import Store

    if not isinstance(store, Store):
        raise ConfigError(f"store provider {name!r} returned a {type(store).__name__}, not a graphmem Store")
    return store
