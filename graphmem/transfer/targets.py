"""Where a migration goes: a store configuration given as settings, a config file or a URI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..config import MemoryConfig, StoreConfig
from ..errors import ConfigError, InvalidInputError, short

StoreTarget = StoreConfig | dict[str, Any] | str | os.PathLike[str]


def store_config(to: StoreTarget) -> StoreConfig:
    """``to`` as a store configuration: a :class:`StoreConfig`, a dict of its settings
    (``{"provider": "neo4j", "uri": ..., "password": ...}``), a YAML/TOML config file (its ``store``
    section), ``sqlite:///path/to/file.db``, or a Bolt URI (``bolt://host:7687``, the Neo4j store;
    its password from ``GRAPHMEM_STORE__PASSWORD`` or written into the URI)."""
    if isinstance(to, StoreConfig):
        return to
    if isinstance(to, dict):
        try:
            return StoreConfig(**to)
        except ValidationError as exc:
            raise ConfigError(f"invalid target store settings: {exc.errors()[0]['msg']}") from None
    if not isinstance(to, str | os.PathLike) or not os.fspath(to):
        raise InvalidInputError(f"migrate to store settings, a config file or a URI, got {short(to)}")
    text = os.fspath(to)
    scheme = text.partition("://")[0].lower() if "://" in text else ""
    if scheme == "sqlite":
        return StoreConfig(provider="sqlite", path=Path(text.partition("://")[2]))
    if scheme:
        password = os.environ.get("GRAPHMEM_STORE__PASSWORD")
        settings: dict[str, Any] = {"provider": "neo4j", "uri": text}
        if password:
            settings["password"] = password
        return MemoryConfig.load({"store": settings}).store
    return MemoryConfig.from_file(text).store
