"""How LangGraph items live in graphmem, without importing LangGraph: namespaces to scopes, an item's
value to a memory's text and metadata and back, LangGraph filters to graphmem filters.

An item is one memory. Its scope comes from the leading labels of its namespace (a
:data:`ScopeMapper`); the whole namespace, its prefixes and the key are kept in metadata under
reserved ``_lg_`` keys beside the value's own top-level keys, so a get, a search or a listing reads
exactly one namespace even when two namespaces share a scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidFilterError, InvalidInputError, ScopeError, short
from ..models import Scope, parse_datetime
from . import ScopeArgs

RESERVED = "_lg_"
"""Metadata keys the adapter owns; a value may not have top-level keys starting with it."""
NAMESPACE = "_lg_namespace"
KEY = "_lg_key"
PREFIXES = "_lg_prefixes"
NULLS = "_lg_nulls"
"""Top-level value keys whose value is ``None`` (an update's metadata merge drops ``None`` values)."""
UNINDEXED = "_lg_unindexed"
"""Set on items put with ``index=False``: kept and readable, never returned by a search with a query."""
SEPARATOR = "."  # LangGraph refuses periods in namespace labels, so joining with one is unambiguous
OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


@dataclass(frozen=True)
class NamespaceScope:
    """The scope a namespace names: the first ``depth`` labels name it, the rest are collections
    inside it (``("users", "u1", "memories")``: depth 2, ``user_id="u1"``)."""

    depth: int
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    def kwargs(self) -> ScopeArgs:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}


ScopeMapper = Callable[[tuple[str, ...]], "NamespaceScope | None"]
"""A namespace (or a search/listing prefix) to the scope its leading labels name, ``None`` if none."""

KINDS = {"users": "user_id", "agents": "agent_id", "runs": "run_id"}


def by_kind(namespace: tuple[str, ...]) -> NamespaceScope | None:
    """The default mapping: ``("users", "<user_id>", ...)``, ``("agents", "<agent_id>", ...)`` or
    ``("runs", "<run_id>", ...)``; anything else names no scope."""
    if len(namespace) >= 2 and namespace[0] in KINDS:
        return NamespaceScope(2, **{KINDS[namespace[0]]: namespace[1]})
    return None


def resolve(mapper: ScopeMapper, namespace: tuple[str, ...], what: str) -> tuple[NamespaceScope, Scope]:
    """The scope of ``namespace``, checked: a namespace that names none (or names it with labels it
    does not have, or with a wildcard) is a :class:`ScopeError`, never a read across tenants."""
    found = mapper(namespace)
    if found is None or not 0 < found.depth <= len(namespace) or "*" in namespace[: found.depth]:
        raise ScopeError(f"{what} {short(namespace)} names no graphmem scope; with the default mapping a "
                         "namespace starts with ('users', '<user_id>'), ('agents', '<agent_id>') or "
                         "('runs', '<run_id>'), or give GraphmemStore(scope=...) a mapping of your own")
    return found, Scope.of(found.user_id, found.agent_id, found.run_id)


def join(namespace: Sequence[str]) -> str:
    return SEPARATOR.join(namespace)


def split(text: str) -> tuple[str, ...]:
    return tuple(text.split(SEPARATOR))


def encode(namespace: tuple[str, ...], key: str, value: Mapping[str, Any], *, indexed: bool) -> dict[str, Any]:
    """The metadata of an item: its value's keys (``None`` values listed in :data:`NULLS`) and the
    reserved keys that locate it."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"an item's value is a dict, got {type(value).__name__}")
    meta: dict[str, Any] = {}
    nulls: list[str] = []
    for k, v in value.items():
        if not isinstance(k, str):
            raise InvalidInputError(f"an item's value has string keys, got {short(k)}")
        if k.startswith(RESERVED):
            raise InvalidInputError(f"value key {short(k)}: keys starting with {RESERVED!r} are reserved by "
                                    "graphmem's LangGraph store")
        if v is None:
            nulls.append(k)
        else:
            meta[k] = v
    meta[NAMESPACE] = join(namespace)
    meta[KEY] = key
    meta[PREFIXES] = [join(namespace[:i]) for i in range(1, len(namespace) + 1)]
    meta[NULLS] = nulls or None
    meta[UNINDEXED] = None if indexed else True
    return meta


def decode(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The item's value back from a memory's metadata."""
    value = {k: v for k, v in metadata.items() if not k.startswith(RESERVED)}
    value.update(dict.fromkeys(metadata.get(NULLS) or [], None))
    return value


def patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """An update's metadata patch that makes ``old`` equal ``new``: graphmem merges metadata, and
    a ``None`` removes a key."""
    out: dict[str, Any] = dict.fromkeys((k for k in old if k not in new or new[k] is None), None)
    out.update((k, v) for k, v in new.items() if v is not None)
    return out


def located(namespace: tuple[str, ...], key: str) -> dict[str, Any]:
    return {f"metadata.{NAMESPACE}": join(namespace), f"metadata.{KEY}": key}


def under(prefix: tuple[str, ...]) -> dict[str, Any]:
    return {f"metadata.{PREFIXES}": {"contains": join(prefix)}}


def translate(flt: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A LangGraph filter (top-level value keys, a value for equality or ``{"$op": value}`` with
    ``$eq $ne $gt $gte $lt $lte``) as a graphmem metadata filter. Nested-object and list equality
    have no graphmem equivalent and are refused, never approximated."""
    if not flt:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidFilterError(f"filter must be a dict, got {type(flt).__name__}")
    out: dict[str, Any] = {}
    for field, cond in flt.items():
        if not isinstance(field, str) or field.startswith(RESERVED):
            raise InvalidFilterError(f"filter key {short(field)}: keys are the value's top-level keys (strings; "
                                     f"{RESERVED!r} keys are the store's own)")
        if isinstance(cond, Mapping):
            if not cond or not all(isinstance(op, str) and op.startswith("$") for op in cond):
                raise InvalidFilterError(f"filter {short(field)}: nested-object filters are not supported; filter "
                                         "on top-level value keys")
            unknown = [op for op in cond if op not in OPERATORS]
            if unknown:
                raise InvalidFilterError(f"filter {short(field)}: unknown operator {short(unknown[0])}; use one of "
                                         f"{', '.join(OPERATORS)}")
            out[f"metadata.{field}"] = {OPERATORS[op]: v for op, v in cond.items()}
        elif isinstance(cond, list | tuple):
            raise InvalidFilterError(f"filter {short(field)}: list equality is not supported")
        else:
            out[f"metadata.{field}"] = cond
    return out


def matches(namespace: tuple[str, ...], path: tuple[str, ...], suffix: bool) -> bool:
    """LangGraph's namespace match: ``path`` at the start (or end) of ``namespace``, ``"*"`` any label."""
    if len(path) > len(namespace):
        return False
    labels = namespace[len(namespace) - len(path):] if suffix else namespace[: len(path)]
    return all(p in ("*", n) for n, p in zip(labels, path, strict=True))


def times(record: Mapping[str, Any]) -> tuple[datetime, datetime]:
    created = parse_datetime(record["created_at"], what="created_at")
    updated = record.get("updated_at")
    return created, parse_datetime(updated, what="updated_at") if updated else created
