"""Named factories of one kind (store backends, extractors): built in, registered in code, or
installed by another package as an entry point.

One implementation for every kind, so they behave alike: a name is an identifier; a built-in or a
taken name is replaced only on purpose; entry points are read only for a name not registered (a
process using a built-in never scans package metadata); a plug-in that fails to load, or loads
something that is not a factory, is a configuration error naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from .errors import ConfigError

F = TypeVar("F", bound=Callable[..., object])


class Plugins(Generic[F]):
    def __init__(self, kind: str, group: str, register_with: str, builtins: dict[str, F],
                 reserved: Iterable[str] = ()) -> None:
        """``kind`` names one in messages ("store provider"), ``group`` is the entry-point group,
        ``register_with`` the function a user calls, ``reserved`` names no plug-in may take."""
        self.kind, self.group, self.register_with = kind, group, register_with
        self._factories = dict(builtins)
        self._reserved = frozenset(reserved)
        self._lock = threading.Lock()

    @property
    def _a(self) -> str:
        return f"an {self.kind}" if self.kind[0] in "aeiou" else f"a {self.kind}"

    def register(self, name: str, factory: F, *, replace: bool = False) -> None:
        """A built-in or already registered name is refused unless ``replace`` (a plug-in must not
        shadow one by accident)."""
        if not isinstance(name, str) or not name.isidentifier() or name in self._reserved:
            other = "".join(f" other than {r!r}" for r in sorted(self._reserved))
            raise ConfigError(f"{self._a} name is an identifier (letters, digits, _){other}, got {name!r}")
        if not callable(factory):
            raise ConfigError(f"the factory of {self.kind} {name!r} must be callable")
        with self._lock:
            if name in self._factories and not replace:
                raise ConfigError(f"{self.kind} {name!r} is already registered; pass replace=True to replace it")
            self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Forget a name registered in code (a test's plug-in, say); entry points stay installed."""
        with self._lock:
            self._factories.pop(name, None)

    def names(self) -> list[str]:
        """Every name usable now: built-in, registered, and installed entry points."""
        with self._lock:
            names = set(self._factories)
        return sorted(names | {ep.name for ep in entry_points(group=self.group)})

    def knows(self, name: str) -> bool:
        with self._lock:
            if name in self._factories:
                return True
        return any(ep.name == name for ep in entry_points(group=self.group))

    def unknown(self, name: str) -> ConfigError:
        return ConfigError(f"no {self.kind} {name!r}; available: {', '.join(self.names())} (register one "
                           f"with {self.register_with} or a {self.group!r} entry point)")

    def factory(self, name: str) -> F:
        with self._lock:
            found = self._factories.get(name)
        if found is not None:
            return found
        points = [ep for ep in entry_points(group=self.group) if ep.name == name]
        if not points:
            raise self.unknown(name)
        try:
            loaded = points[0].load()
        except Exception as exc:  # a broken plug-in is a configuration problem, reported as one
            raise ConfigError(f"{self.kind} {name!r} ({points[0].value}) failed to load: {exc}") from exc
        if not callable(loaded):
            raise ConfigError(f"{self.kind} {name!r} ({points[0].value}) is not a factory")
        factory: F = loaded
        return factory
