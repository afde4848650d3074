"""LangGraph's long-term memory on graphmem: :class:`GraphmemStore`, a ``BaseStore`` whose namespaces
are graphmem scopes (``pip install 'graphmem[langgraph]'``).

- **Namespaces → scopes.** The leading labels of a namespace name its scope (by default
  ``("users", "<user_id>", ...)``, ``("agents", "<agent_id>", ...)``, ``("runs", "<run_id>", ...)``;
  ``scope=`` takes any :data:`~graphmem.adapters.namespaces.ScopeMapper`). A namespace or search prefix
  that names no scope raises :class:`~graphmem.errors.ScopeError`: nothing reads across tenants.
- **Items are memories.** The text is the value's ``"content"``, ``"text"`` or ``"memory"`` string
  (or the put's ``index`` fields, or the store's ``fields``; else the value as JSON); the whole value is
  the memory's metadata, so every value round-trips and its top-level keys can be filtered on. The
  memory is stored verbatim (``infer=False``): one item, one memory.
- **Keys are stable.** A put with a stored key updates that memory in place (same id, one ``UPDATE``
  in its history), never a duplicate; a value of ``None`` deletes it.
- **Search** with a ``query`` is graphmem's hybrid search (its fused score is the item's ``score``);
  without one, items come newest first. ``filter`` takes LangGraph's ``$eq $ne $gt $gte $lt $lte``.

graphmem keeps one memory per scope and text, so two keys of one scope cannot hold the same text
(:class:`~graphmem.errors.DuplicateMemoryError`). TTLs are not supported. Each operation of a batch
is its own transaction; puts of one store instance are serialized, so two puts of a new key never
make two memories (across processes the read after a race keeps the newest and a later put removes
the other).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import DuplicateMemoryError, InvalidInputError, ScopeError, UnsupportedError, short

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as exc:
    raise ImportError("graphmem.adapters.langgraph needs LangGraph: pip install 'graphmem[langgraph]'") from exc

from ..memory import Memory
from . import ScopeArgs
from . import namespaces as ns
from .namespaces import NamespaceScope, ScopeMapper, by_kind

__all__ = ["TEXT_KEYS", "GraphmemStore", "NamespaceScope", "ScopeMapper", "by_kind"]

TEXT_KEYS = ("content", "text", "memory")
"""Where an item's text is looked for when neither the put nor the store names fields."""


class GraphmemStore(BaseStore):
    """A LangGraph ``BaseStore`` over a graphmem :class:`~graphmem.memory.Memory` (see the module
    docstring for the mapping). Async methods run the same code in a worker thread."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, scope: ScopeMapper = by_kind, fields: Sequence[str] | None = None) -> None:
        """``scope``: namespace → :class:`NamespaceScope`, e.g. for LangGraph's ``("memories",
        user_id)`` layout ``lambda n: NamespaceScope(2, user_id=n[1]) if n[:1] == ("memories",) and
        len(n) > 1 else None``. ``fields``: LangGraph paths (``"facts[*].text"``) of the text of
        items put without ``index``."""
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"GraphmemStore needs a graphmem Memory, got {type(memory).__name__}")
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
            raise InvalidInputError(f"fields is a list of paths, got {short(fields)}")
        self.memory = memory
        self.scope = scope
        self.fields = list(fields) if fields else None
        self._writes = threading.Lock()

    # -- BaseStore's two abstract methods -------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Every op in order, each its own transaction (a later op sees an earlier put)."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                results.append(self._read(op))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- ops ------------------------------------------------------------------------------------
    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    def _get(self, op: GetOp) -> Item | None:
        found = self._locate(op.namespace, op.key)
        return _item(op.namespace, op.key, found[0]) if found else None

    def _put(self, op: PutOp) -> None:
        if not op.namespace:
            raise InvalidNamespaceError("an item's namespace has at least one label")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(f"namespace {short(op.namespace)}: LangGraph reserves the first label "
                                        "'langgraph'")
        if op.ttl is not None:
            raise UnsupportedError("GraphmemStore does not support TTLs; put with ttl=None "
                                   "(graphmem's own expiry is Memory.add(expires_at=...))")
        if not isinstance(op.key, str):
            raise InvalidInputError(f"an item's key is a string, got {type(op.key).__name__}")
        kw = ns.resolve(self.scope, op.namespace, "namespace")[0].kwargs()
        with self._writes:
            found = self._locate(op.namespace, op.key)
            if op.value is None:
                for record in found:
                    self.memory.delete(record["id"], **kw)
                return
            meta = ns.encode(op.namespace, op.key, op.value, indexed=op.index is not False)
            text = self._text(op.value, op.index)
            if not found:
                self._add(op, text, meta, kw)
                return
            current, *stale = found
            self.memory.update(current["id"], text if text != current["memory"] else None,
                               metadata=ns.patch(current["metadata"], meta), infer=False, **kw)
            for record in stale:  # left by a put of the same new key in another process
                self.memory.delete(record["id"], **kw)

    def _add(self, op: PutOp, text: str, meta: dict[str, Any], kw: ScopeArgs) -> None:
        out = self.memory.add(text, metadata={k: v for k, v in meta.items() if v is not None}, infer=False, **kw)
        result = out["results"][0]
        if result["event"] != "ADD":  # graphmem's identity: one memory per scope and text
            raise DuplicateMemoryError(
                f"item {short(op.key)} of {short(op.namespace)}: memory {result['id']} of the same scope already "
                f"holds this text ({short(text, 80)}); graphmem keeps one memory per scope and text")

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        """A memory's text: the text at the put's ``index`` paths or the store's ``fields``, joined by
        lines; without either the first non-empty string of :data:`TEXT_KEYS`; else the value as JSON,
        so every value can be searched."""
        fields = index if isinstance(index, list) else self.fields
        if fields:
            parts = [t for path in fields for t in get_text_at_path(dict(value), path) if t.strip()]
            if parts:
                return "\n".join(parts)
        else:
            for key in TEXT_KEYS:
                text = value.get(key)
                if isinstance(text, str) and text.strip():
                    return text
        return json.dumps(dict(value), ensure_ascii=False, sort_keys=True, default=str)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.offset < 0 or op.limit < 0:
            raise InvalidInputError(f"search limit and offset are not negative, got {op.limit} and {op.offset}")
        kw = ns.resolve(self.scope, op.namespace_prefix, "search prefix")[0].kwargs()
        if op.limit == 0:
            return []
        parts = [ns.under(op.namespace_prefix)]
        user = ns.translate(op.filter)
        if user:
            parts.append(user)
        wanted = op.offset + op.limit
        if op.query is not None:
            parts.append({f"metadata.{ns.UNINDEXED}": {"ne": True}})
            hits = self.memory.search(op.query, top_k=wanted, filters={"AND": parts}, **kw)["results"]
        else:
            hits = self.memory.get_all(filters={"AND": parts}, limit=wanted, **kw)["results"]
        out = []
        for record in hits[op.offset:]:
            meta = record["metadata"]
            created, updated = ns.times(record)
            out.append(SearchItem(ns.split(meta[ns.NAMESPACE]), meta[ns.KEY], ns.decode(meta), created, updated,
                                  record.get("score")))
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        prefixes = [c.path for c in conditions if c.match_type == "prefix"]
        if not prefixes:
            raise ScopeError("list_namespaces needs a prefix that names a graphmem scope, e.g. "
                                "prefix=('users', '<user_id>'): graphmem never lists across tenants")
        found = ns.resolve(self.scope, tuple(prefixes[0]), "list_namespaces prefix")[0]
        root = tuple(prefixes[0][: found.depth])
        limit = self.memory.config.limits.max_list_limit
        records = self.memory.get_all(filters=ns.under(root), limit=limit, **found.kwargs())["results"]
        if len(records) >= limit:
            raise UnsupportedError(f"the scope of {short(root)} holds {limit:,} items or more, more than "
                                   "limits.max_list_limit lets list_namespaces read; raise that limit")
        names = {ns.split(r["metadata"][ns.NAMESPACE]) for r in records}
        names = {n for n in names if all(ns.matches(n, tuple(c.path), c.match_type == "suffix") for c in conditions)}
        if op.max_depth is not None:
            names = {n[: op.max_depth] for n in names}
        return sorted(names)[op.offset: op.offset + op.limit]

    # -- reads ----------------------------------------------------------------------------------
    def _locate(self, namespace: tuple[str, ...], key: str) -> list[dict[str, Any]]:
        """The memories of one item, most recently written first (more than one only after puts of a
        new key raced in two processes)."""
        kw = ns.resolve(self.scope, namespace, "namespace")[0].kwargs()
        found = self.memory.get_all(filters=ns.located(namespace, key), limit=16, **kw)["results"]
        return sorted(found, key=lambda r: ns.times(r)[1], reverse=True)


def _item(namespace: tuple[str, ...], key: str, record: Mapping[str, Any]) -> Item:
    created, updated = ns.times(record)
    return Item(value=ns.decode(record["metadata"]), key=key, namespace=namespace, created_at=created,
                updated_at=updated)
