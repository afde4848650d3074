"""API keys of the REST server, and how a key's scope meets the scope a request names.

A key is bound either to a scope (some of ``user_id``, ``agent_id``, ``run_id``) or to
administration. The rules, applied to every request before the engine sees it:

- a field the key binds is the key's: a request that leaves it out gets the key's value, one that
  names the same value is served, one that names another value is refused (403);
- a field the key leaves open may be named by the request, which narrows the scope within the key's
  (a key for ``user_id=u1`` may pass ``run_id=r7``: that run of u1, never another user);
- an admin key binds nothing, so the request names the scope (the engine refuses a request
  without any, 422); only admin keys reach ``/v1/admin/*`` (Cypher, reset, optimize, dry runs).

Keys come from the configuration (``server.keys``, e.g. ``GRAPHMEM_SERVER__KEYS`` as JSON, in
clear or as SHA-256) and from a keys file (``server.keys_file``, hashes only). Only SHA-256 digests
are held in memory; a presented key is hashed and compared with every digest in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypedDict

import yaml
from pydantic import ValidationError

from ..config import ServerConfig, ServerKeyConfig
from ..errors import ConfigError, GraphmemError, ScopeError

SCOPE_FIELDS: Final = ("user_id", "agent_id", "run_id")


class ScopeArgs(TypedDict):
    """The scope keywords of a ``Memory`` call, as a request may use them."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
KEY_PREFIX: Final = "gm_"


class KeyScopeError(GraphmemError):
    """A request named a scope its API key does not reach (403)."""


class AdminOnlyError(GraphmemError):
    """A tenant key asked for an administration endpoint (403)."""


class UnauthenticatedError(GraphmemError):
    """No API key, or one that is not configured (401)."""


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's id (for logs), whether it administers, and the scope it binds."""

    key_id: str
    admin: bool = False
    bound: dict[str, str] = field(default_factory=dict)

    def scope(self, user_id: str | None = None, agent_id: str | None = None,
              run_id: str | None = None) -> ScopeArgs:
        """The scope a request gets: the key's fields, plus the open fields the request names."""
        asked = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        out: dict[str, str | None] = {}
        for name in SCOPE_FIELDS:
            fixed, wanted = self.bound.get(name), asked[name]
            if fixed is not None and wanted is not None and wanted != fixed:
                raise KeyScopeError(f"API key {self.key_id!r} is bound to {name}={fixed!r}; a request may narrow "
                                    "its scope with the fields the key leaves open, never change a bound one")
            out[name] = fixed if fixed is not None else wanted
        return ScopeArgs(user_id=out["user_id"], agent_id=out["agent_id"], run_id=out["run_id"])

    def scope_by_id(self, user_id: str | None = None, agent_id: str | None = None,
                    run_id: str | None = None) -> ScopeArgs:
        """:meth:`scope` for a call on one memory id, never empty: the Python API finds a memory's
        scope by itself (as mem0), a server never reads by id across tenants, whatever the key."""
        out = self.scope(user_id, agent_id, run_id)
        if not any(out.values()):
            raise ScopeError("a call on a memory id needs a scope: the API key's, or user_id, agent_id and/or run_id")
        return out

    def require_admin(self) -> None:
        if not self.admin:
            raise AdminOnlyError(f"this operation needs an admin key; API key {self.key_id!r} is bound to a scope")


INSECURE_LOCAL: Final = Principal("insecure-local", admin=True)
"""Every request of a server started with ``--insecure-local`` (loopback only, no keys)."""


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    principal: Principal


class KeyRing:
    """The configured keys, as digests; :meth:`lookup` finds the caller's in constant time."""

    def __init__(self, entries: Iterable[ServerKeyConfig]) -> None:
        self._entries: list[_Entry] = []
        seen_ids: set[str] = set()
        seen_digests: set[str] = set()
        for e in entries:
            hexdigest = e.sha256 if e.sha256 is not None else digest(e.api_key.get_secret_value())  # type: ignore[union-attr]
            if e.id in seen_ids:
                raise ConfigError(f"server key id {e.id!r} is given twice; key ids name one key each")
            if hexdigest in seen_digests:
                raise ConfigError(f"server key {e.id!r} is the same key as another one; give each its own")
            seen_ids.add(e.id)
            seen_digests.add(hexdigest)
            bound = {name: v for name in SCOPE_FIELDS if (v := getattr(e, name)) is not None}
            self._entries.append(_Entry(bytes.fromhex(hexdigest), Principal(e.id, e.admin, bound)))

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def from_config(cls, server: ServerConfig) -> KeyRing:
        entries = list(server.keys)
        if server.keys_file is not None:
            entries.extend(read_keys_file(server.keys_file))
        return cls(entries)

    def lookup(self, presented: str) -> Principal | None:
        """The principal of ``presented``, or ``None``. Every digest is compared, whatever matches."""
        wanted = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        found: Principal | None = None
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, wanted):
                found = entry.principal
        return found


def read_keys_file(path: Path) -> list[ServerKeyConfig]:
    """``{keys: [{id, sha256, user_id?, agent_id?, run_id?, admin?}]}`` from YAML or JSON: hashes only."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read server.keys_file {path}: {exc}") from None
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot parse server.keys_file {path}: {str(exc)[:200]}") from None
    items = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ConfigError(f"server.keys_file {path} must hold a mapping with a list under 'keys'")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and "api_key" in item:
            raise ConfigError(f"server.keys_file {path}: keys[{i}] holds a key in clear; a keys file holds "
                              "only sha256 digests (graphmem serve --new-key prints one)")
        try:
            out.append(ServerKeyConfig.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}"
                                 for e in exc.errors(include_url=False))
            raise ConfigError(f"server.keys_file {path}: keys[{i}] is invalid ({problems[:300]})") from None
    return out


def key_entry(key_id: str, key: str, *, admin: bool = False, user_id: str | None = None,
              agent_id: str | None = None, run_id: str | None = None) -> dict[str, object]:
    """The keys-file entry of ``key`` (its digest, never the key), checked as the server will."""
    entry: dict[str, object] = {"id": key_id, "sha256": digest(key)}
    entry.update({k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id))
                  if v is not None})
    if admin:
        entry["admin"] = True
    try:
        ServerKeyConfig.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError("; ".join(str(e["msg"]) for e in exc.errors(include_url=False))) from None
    return entry
