"""A whole graphmem store in plain dicts: the smallest backend that passes graphmem's backend kit.

What it is: one process's memory. Nothing is persisted (a closed store is gone) and another process
sees nothing of it, so it suits tests, demos and notebooks, and shows what a backend must do.

How it keeps the contract:

- **Transactions.** The data lives in :class:`Tables`, which are never changed once published. A write
  takes the lock, copies the tables (shallow: the records inside are immutable values), applies the
  whole change to the copy and publishes it only when every step succeeded; a failure leaves the
  published tables as they were. Readers take the published tables without a lock and see one
  consistent state. Copying costs O(size) per write: fine for thousands of rows, not millions.
- **Identity.** One memory per (exact scope, text hash) and one entity per (exact scope, normalized
  name): a second one raises :class:`~graphmem.errors.ConflictError`, as a concurrent writer's would
  in a database; a second row with a taken id raises :class:`~graphmem.errors.StoreError`.
- **Scope.** Reads keep the rows the scope contains (given fields equal, absent ones free); duplicate
  checks and entity resolution use the exact scope.
- **Search.** Exact cosine over the scope's vectors (NumPy), BM25 over word tokens for full text; the
  graph walk, ``search``, ``nearest`` and ``fact_states`` are the base class's, over the primitive
  reads below.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from graphmem.errors import ConflictError, DuplicateMemoryError, SchemaMismatchError, StoreError
from graphmem.filters import Filter, evaluate
from graphmem.models import (
    Entity,
    EventType,
    HistoryEvent,
    Keep,
    MemoryRecord,
    QuarantineEntry,
    Relation,
    Scope,
    iso,
    norm_name,
)
from graphmem.stores.base import (
    Candidates,
    EntityQuery,
    Expectations,
    FactQuery,
    GraphWrite,
    MemoryPatch,
    NewMemory,
    Records,
    Store,
    StoreInfo,
    ThreadScope,
    Vector,
    WriteResult,
    new_tails,
    patched_metadata,
    stale_entities,
    stale_memories,
    thread_scope,
    threaded,
)
from graphmem.stores.text import query_terms

_WORD = re.compile(r"\w+")
_K1, _B = 1.2, 0.75
"""BM25's usual term-saturation and length-normalization constants."""

ScopeKey = tuple[str | None, str | None, str | None]


def scope_key(row: Any) -> ScopeKey:
    """The exact scope of anything with ``user_id``, ``agent_id`` and ``run_id``."""
    return (row.user_id, row.agent_id, row.run_id)


def in_scope(scope: Scope, row: Any) -> bool:
    return scope.contains(row.user_id, row.agent_id, row.run_id)


def words(text: str) -> Counter[str]:
    """Case-folded word tokens without accents: what full text matches on."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    return Counter(_WORD.findall(folded))


def entity_keys(entity: Entity) -> set[str]:
    """The normalized name and aliases an entity is found by."""
    return {norm_name(entity.name), *(norm_name(a) for a in entity.aliases)}


@dataclass(frozen=True)
class StoredMemory:
    record: MemoryRecord
    vector: Vector
    words: Counter[str]


@dataclass(frozen=True)
class StoredEntity:
    entity: Entity
    vector: Vector | None
    keys: frozenset[str]


@dataclass
class Tables:
    """Everything the store holds. Published tables are never changed: a write changes a :meth:`copy`."""

    memories: dict[str, StoredMemory] = field(default_factory=dict)
    hashes: dict[tuple[ScopeKey, str], str] = field(default_factory=dict)
    """(exact scope, text hash) -> memory id: the memories' identity."""
    history: list[HistoryEvent] = field(default_factory=list)
    entities: dict[str, StoredEntity] = field(default_factory=dict)
    """In creation order, so "the oldest" is the first found."""
    names: dict[tuple[ScopeKey, str], str] = field(default_factory=dict)
    """(exact scope, normalized name) -> entity id: the entities' identity."""
    mentions: set[tuple[str, str]] = field(default_factory=set)
    """(memory id, entity id)."""
    facts: dict[str, Relation] = field(default_factory=dict)
    quarantine: dict[str, QuarantineEntry] = field(default_factory=dict)
    threads: dict[ThreadScope, str] = field(default_factory=dict)
    """Exact scope -> the memory written there last (what the next one follows)."""

    def copy(self) -> Tables:
        return Tables(dict(self.memories), dict(self.hashes), list(self.history), dict(self.entities),
                      dict(self.names), set(self.mentions), dict(self.facts), dict(self.quarantine),
                      dict(self.threads))


def _fields(record: MemoryRecord) -> dict[str, Any]:
    """A record's fields as filters name them (:data:`graphmem.filters.RECORD_FIELDS`)."""
    return {"id": record.id, "memory_type": record.memory_type.value, "role": record.role,
            "actor_id": record.actor_id, "user_id": record.user_id, "agent_id": record.agent_id,
            "run_id": record.run_id, "hash": record.hash, "created_at": record.created_at,
            "updated_at": record.updated_at, "event_time": record.event_time, "expires_at": record.expires_at}


def _passes(flt: Filter | None, record: MemoryRecord) -> bool:
    return flt is None or evaluate(flt, _fields(record), record.metadata)


def _valid(fact: Relation, as_of: datetime | None, history: bool = False) -> bool:
    if history:
        return True
    if as_of is None:
        return fact.valid_to is None
    at = iso(as_of)
    return ((fact.valid_from is None or iso(fact.valid_from) <= at)
            and (fact.valid_to is None or iso(fact.valid_to) > at))


def _page_key(row: Entity | Relation) -> tuple[str, str]:
    return (iso(row.created_at), row.id)


class MemoryStore(Store):
    """graphmem's store contract over Python dicts: single process, not persistent (see the module)."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self._tables = Tables()
        self._lock = threading.RLock()
        self._pin: tuple[str, int] | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self, embedder: str, dims: int) -> StoreInfo:
        with self._lock:
            if self._pin is not None and self._pin != (embedder, dims):
                raise SchemaMismatchError(f"this store holds vectors of {self._pin[0]!r} ({self._pin[1]} dims), "
                                          f"not of {embedder!r} ({dims} dims)")
            self._pin = (embedder, dims)
        return StoreInfo("memory", f"memory:{self.name}", embedder, dims)

    def recorded_embedder(self) -> tuple[str, int] | None:
        return self._pin

    def reset(self) -> None:
        with self._lock:
            self._tables = Tables()

    def _commit(self, change: Any) -> Any:
        """Run ``change(tables)`` on a copy of the tables and publish the copy if it returns."""
        with self._lock:
            tables = self._tables.copy()
            result = change(tables)
            self._tables = tables
            return result

    # -- writes ------------------------------------------------------------------------------------
    def write(self, scope: Scope, change: GraphWrite) -> WriteResult:
        def apply(t: Tables) -> WriteResult:
            self._check(t, scope, change.expect)
            follows = threaded(change.memories, self._tails(t, change.memories))
            self._insert(t, [NewMemory(m.record.model_copy(update={"follows": f}), m.vector)
                             for m, f in zip(change.memories, follows, strict=True)], change.events)
            t.threads.update(new_tails(change.memories))
            return self._write_graph(t, change)

        result: WriteResult = self._commit(apply)
        return result

    @staticmethod
    def _tails(t: Tables, memories: Sequence[NewMemory]) -> dict[ThreadScope, str | None]:
        """Each scope's last memory; for a scope without a thread (restored) or whose last memory was
        deleted, its newest memory none follows."""
        out: dict[ThreadScope, str | None] = {}
        for scope in {thread_scope(m.record) for m in memories}:
            if t.threads.get(scope) in t.memories:
                out[scope] = t.threads[scope]
                continue
            mine = [m.record for m in t.memories.values() if thread_scope(m.record) == scope]
            followed = {r.follows for r in mine}
            heads = [r for r in mine if r.id not in followed]
            out[scope] = max(heads, key=lambda r: (iso(r.created_at), r.id)).id if heads else None
        return out

    def _check(self, t: Tables, scope: Scope, expect: Expectations) -> None:
        """Refuse a plan whose reads a concurrent write has changed since (the lock is held)."""
        found = {i: t.memories[i].record.hash for i in expect.memories
                 if i in t.memories and in_scope(scope, t.memories[i].record)}
        gone = stale_memories(expect, found)
        if gone:
            raise ConflictError(f"memory {gone[0]} changed or was deleted by a concurrent write")
        if expect.entities:  # the published tables are t until this write changes it
            stale = stale_entities(expect, self.graph_context(scope, list(expect.entities)))
            if stale:
                raise ConflictError(f"entity {stale[0]} changed or was deleted by a concurrent write")

    @staticmethod
    def _insert(t: Tables, memories: Sequence[NewMemory], events: Sequence[HistoryEvent]) -> None:
        for item in memories:
            r = item.record
            if r.id in t.memories:
                raise StoreError(f"memory id {r.id} is taken")
            identity = (scope_key(r), r.hash)
            if identity in t.hashes:
                raise ConflictError(f"memory {t.hashes[identity]} of this scope already has this text")
            t.hashes[identity] = r.id
            vector = np.ascontiguousarray(item.vector, dtype=np.float32)
            t.memories[r.id] = StoredMemory(r, vector, words(r.memory))
        t.history.extend(events)

    @staticmethod
    def _write_graph(t: Tables, change: GraphWrite) -> WriteResult:
        for item in change.entities:
            e = item.entity
            if e.id in t.entities:
                raise StoreError(f"entity id {e.id} is taken")
            identity = (scope_key(e), norm_name(e.name))
            if identity in t.names:
                raise ConflictError(f"entity {t.names[identity]} of this scope already has the name {e.name!r}")
            t.names[identity] = e.id
            vector = None if item.vector is None else np.ascontiguousarray(item.vector, dtype=np.float32)
            t.entities[e.id] = StoredEntity(e, vector, frozenset(entity_keys(e)))
        for e in change.entity_updates:  # classes and aliases grow: concurrent growers both keep theirs
            stored = t.entities.get(e.id)
            if stored is None:
                continue
            grown = stored.entity.model_copy(update={
                "classes": list(dict.fromkeys([*stored.entity.classes, *e.classes])),
                "aliases": list(dict.fromkeys([*stored.entity.aliases, *e.aliases])), "updated_at": e.updated_at})
            t.entities[e.id] = replace(stored, entity=grown, keys=stored.keys | entity_keys(grown))
        for memory_id, entity_id in change.mentions:
            if entity_id not in t.entities:
                raise StoreError(f"memory {memory_id} mentions an unknown entity {entity_id}")
            t.mentions.add((memory_id, entity_id))
        result = WriteResult()
        for rid, at in change.closes:  # first: a fact stated again after a closed value is a new fact
            fact = t.facts.get(rid)
            if fact is not None and fact.valid_to is None:
                t.facts[rid] = fact.model_copy(update={"valid_to": at})
        for rel in change.relations:
            twin = t.facts.get(rel.id)
            if twin is None and rel.valid_to is None:
                twin = next((f for f in t.facts.values() if f.valid_to is None and (
                    f.source_id, f.relation, f.target_id, f.value, f.datatype) == (
                    rel.source_id, rel.relation, rel.target_id, rel.value, rel.datatype)), None)
            if twin is None:
                for end in (rel.source_id, rel.target_id):
                    if end is not None and end not in t.entities:
                        raise StoreError(f"fact {rel.id} names an unknown entity {end}")
                t.facts[rel.id] = rel.model_copy(update={"memory_ids": sorted(set(rel.memory_ids))})
                result.added.append(rel.id)
            else:
                support = sorted({*twin.memory_ids, *rel.memory_ids})
                t.facts[twin.id] = twin.model_copy(update={"memory_ids": support})
                result.merged.append(twin.id)
        for q in change.quarantine:
            if q.id in t.quarantine:
                raise StoreError(f"quarantine id {q.id} is taken")
            t.quarantine[q.id] = q
        now = max((e.created_at for e in change.events), default=None)
        for qid in dict.fromkeys(change.released):
            entry = t.quarantine.get(qid)
            if entry is None or entry.status != "quarantined":
                raise ConflictError(f"quarantine entry {qid} was released by a concurrent recheck")
            t.quarantine[qid] = entry.model_copy(update={"status": "released", "released_at": now})
        return result

    @staticmethod
    def _forget(t: Tables, memory_ids: Iterable[str], *, drop_orphans: bool = True) -> set[str]:
        """Drop what only these memories supported (mentions, provenance, then facts and entities
        left without support); the entities whose support changed."""
        gone = set(memory_ids)
        touched = {e for m, e in t.mentions if m in gone}
        t.mentions -= {(m, e) for m, e in t.mentions if m in gone}
        for fact in list(t.facts.values()):
            if gone.isdisjoint(fact.memory_ids):
                continue
            left = [m for m in fact.memory_ids if m not in gone]
            if left:
                t.facts[fact.id] = fact.model_copy(update={"memory_ids": left})
            else:
                del t.facts[fact.id]
                touched.update(e for e in (fact.source_id, fact.target_id) if e is not None)
        for entry in list(t.quarantine.values()):
            if not gone.isdisjoint(entry.memory_ids):
                kept = [m for m in entry.memory_ids if m not in gone]
                t.quarantine[entry.id] = entry.model_copy(update={"memory_ids": kept})
        if drop_orphans:
            MemoryStore._drop_orphans(t, touched)
        return touched

    @staticmethod
    def _drop_orphans(t: Tables, entity_ids: Iterable[str]) -> None:
        used = {e for _, e in t.mentions} | {f.source_id for f in t.facts.values()} | {
            f.target_id for f in t.facts.values() if f.target_id is not None}
        for eid in set(entity_ids) - used:
            stored = t.entities.pop(eid, None)
            if stored is not None:
                t.names.pop((scope_key(stored.entity), norm_name(stored.entity.name)), None)

    @staticmethod
    def _remove_memories(t: Tables, ids: Sequence[str], at: datetime) -> None:
        for mid in ids:
            r = t.memories.pop(mid).record
            t.hashes.pop((scope_key(r), r.hash), None)
            t.history.append(HistoryEvent(memory_id=mid, event=EventType.DELETE, old_memory=r.memory,
                                          user_id=r.user_id, agent_id=r.agent_id, run_id=r.run_id,
                                          actor_id=r.actor_id, role=r.role, created_at=at))

    def update(
        self, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
    ) -> MemoryRecord | None:
        def apply(t: Tables) -> MemoryRecord | None:
            stored = t.memories.get(memory_id)
            if stored is None or not in_scope(scope, stored.record):
                return None
            old = stored.record
            if relink is not None:
                self._check(t, scope, relink.expect)
            if patch.hash is not None and patch.hash != old.hash:
                twin = t.hashes.get((scope_key(old), patch.hash))
                if twin is not None and twin != memory_id:
                    raise DuplicateMemoryError(
                        f"memory {twin} of this scope already has that text; delete one of them instead")
                del t.hashes[(scope_key(old), old.hash)]
                t.hashes[(scope_key(old), patch.hash)] = memory_id
            new = old.model_copy(update={
                "memory": patch.text or old.memory, "hash": patch.hash or old.hash,
                "metadata": patched_metadata(old.metadata, patch), "updated_at": patch.updated_at,
                "expires_at": old.expires_at if patch.expires_at is Keep.KEEP else patch.expires_at})
            vector = stored.vector if patch.vector is None else np.ascontiguousarray(patch.vector, dtype=np.float32)
            t.memories[memory_id] = StoredMemory(new, vector, words(new.memory))
            t.history.append(HistoryEvent(
                id=patch.event_id, memory_id=memory_id, event=EventType.UPDATE, old_memory=old.memory,
                new_memory=new.memory, user_id=old.user_id, agent_id=old.agent_id, run_id=old.run_id,
                actor_id=old.actor_id, role=old.role, created_at=patch.updated_at, details=patch.details()))
            if relink is not None:  # the old text's support goes once the new text's facts are in
                left = self._forget(t, [memory_id], drop_orphans=False)
                self._insert(t, relink.memories, relink.events)
                self._write_graph(t, relink)
                self._drop_orphans(t, left)
            return new

        result: MemoryRecord | None = self._commit(apply)
        return result

    def delete(self, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
        def apply(t: Tables) -> list[str]:
            ids = [i for i in dict.fromkeys(memory_ids) if i in t.memories and in_scope(scope, t.memories[i].record)]
            self._remove_memories(t, ids, at)
            self._forget(t, ids)
            return ids

        result: list[str] = self._commit(apply)
        return result

    def delete_scope(self, scope: Scope, at: datetime) -> int:
        def apply(t: Tables) -> int:
            ids = [i for i, m in t.memories.items() if in_scope(scope, m.record)]
            self._remove_memories(t, ids, at)
            self._forget(t, ids)
            for fid in [i for i, f in t.facts.items() if in_scope(scope, f)]:
                del t.facts[fid]
            for stored in [s for s in t.entities.values() if in_scope(scope, s.entity)]:
                del t.entities[stored.entity.id]
                t.names.pop((scope_key(stored.entity), norm_name(stored.entity.name)), None)
            for qid in [i for i, q in t.quarantine.items() if in_scope(scope, q)]:
                del t.quarantine[qid]
            for key in [k for k in t.threads if scope.contains(*k)]:
                del t.threads[key]
            return len(ids)

        result: int = self._commit(apply)
        return result

    def touch(self, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
        def apply(t: Tables) -> None:
            for mid, (n, at) in accesses.items():
                stored = t.memories.get(mid)
                if stored is None or not in_scope(scope, stored.record):
                    continue
                r = stored.record
                last = at if r.last_accessed_at is None or iso(r.last_accessed_at) < iso(at) else r.last_accessed_at
                record = r.model_copy(update={"access_count": r.access_count + n, "last_accessed_at": last})
                t.memories[mid] = replace(stored, record=record)

        self._commit(apply)

    # -- memory reads --------------------------------------------------------------------------------
    def _scoped(self, scope: Scope | None) -> list[StoredMemory]:
        rows = self._tables.memories.values()
        return list(rows) if scope is None else [m for m in rows if in_scope(scope, m.record)]

    def count(self, scope: Scope | None = None) -> int:
        return len(self._scoped(scope))

    def find_hashes(self, scope: Scope, hashes: Sequence[str]) -> dict[str, str]:
        key = (scope.user_id, scope.agent_id, scope.run_id)
        found = {h: self._tables.hashes.get((key, h)) for h in hashes}
        return {h: mid for h, mid in found.items() if mid is not None}

    def ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return sorted(m.record.id for m in self._scoped(scope) if m.record.id.startswith(prefix))[:limit]

    def history_ids_with_prefix(self, scope: Scope, prefix: str, limit: int) -> list[str]:
        return sorted({e.memory_id for e in self._tables.history
                       if e.memory_id.startswith(prefix) and in_scope(scope, e)})[:limit]

    def list_memories(self, scope: Scope, flt: Filter | None, limit: int) -> list[MemoryRecord]:
        found = sorted((m.record for m in self._scoped(scope) if _passes(flt, m.record)), key=lambda r: r.id)
        return sorted(found, key=lambda r: iso(r.created_at), reverse=True)[:limit]  # stable: newest, then id

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEvent]:
        events = [e for e in self._tables.history if e.memory_id == memory_id and in_scope(scope, e)]
        return sorted(events, key=lambda e: iso(e.created_at))

    def scope_of(self, memory_id: str) -> Scope | None:
        stored = self._tables.memories.get(memory_id)
        if stored is not None:
            return stored.record.scope
        events = [e for e in self._tables.history if e.memory_id == memory_id]
        if not events:
            return None
        first = min(events, key=lambda e: iso(e.created_at))
        return Scope(user_id=first.user_id, agent_id=first.agent_id, run_id=first.run_id)

    def candidates(self, scope: Scope, flt: Filter | None, vector: Vector | None, text: str | None,
                   k: int) -> Candidates:
        rows = self._scoped(scope)
        passing = [m for m in rows if _passes(flt, m.record)]
        out = Candidates()
        if vector is not None and passing:
            scores = np.stack([m.vector for m in passing]) @ np.asarray(vector, dtype=np.float32)
            hits = [(m.record.id, float(s)) for m, s in zip(passing, scores.tolist(), strict=True)]
            out.vector = sorted(hits, key=lambda h: (-h[1], h[0]))[:k]
        terms = query_terms(text) if text else []
        if terms:
            out.fulltext = self._bm25(rows, passing, terms, k)
        for mid in dict.fromkeys([i for i, _ in out.vector] + [i for i, _ in out.fulltext]):
            out.records[mid] = self._tables.memories[mid].record
        if vector is not None:
            out.similarity = self._cosines(list(out.records), vector)
        return out

    @staticmethod
    def _bm25(rows: list[StoredMemory], passing: list[StoredMemory], terms: list[str],
              k: int) -> list[tuple[str, float]]:
        """Okapi BM25 of the query's terms, document frequencies counted over the scope alone (so
        another tenant's texts never move a score)."""
        terms = list({t: None for term in terms for t in words(term)})
        if not rows or not terms:
            return []
        mean = sum(sum(m.words.values()) for m in rows) / len(rows)
        df = {t: sum(1 for m in rows if t in m.words) for t in terms}
        idf = {t: math.log(1 + (len(rows) - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        hits = []
        for m in passing:
            length = sum(m.words.values())
            score = sum(idf[t] * m.words[t] * (_K1 + 1) / (m.words[t] + _K1 * (1 - _B + _B * length / (mean or 1)))
                        for t in terms if t in m.words)
            if score > 0:
                hits.append((m.record.id, score))
        return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]

    def _cosines(self, ids: Sequence[str], vector: Vector) -> dict[str, float]:
        query = np.asarray(vector, dtype=np.float32)
        return {i: float(self._tables.memories[i].vector @ query) for i in ids}

    def records(self, scope: Scope, ids: Sequence[str], flt: Filter | None,
                vector: Vector | None) -> tuple[Records, dict[str, float]]:
        out = Records()
        for mid in dict.fromkeys(ids):
            stored = self._tables.memories.get(mid)
            if stored is not None and in_scope(scope, stored.record) and _passes(flt, stored.record):
                out[mid] = stored.record
        return out, ({} if vector is None else self._cosines(list(out), vector))

    def followers(self, scope: Scope, ids: Sequence[str], flt: Filter | None) -> Records:
        wanted, out = set(ids), Records()
        for mid, stored in self._tables.memories.items():
            r = stored.record
            if r.follows in wanted and in_scope(scope, r) and _passes(flt, r):
                out[mid] = r
        return out

    # -- graph reads ---------------------------------------------------------------------------------
    def find_entities(self, scope: Scope, keys: Sequence[str], *, exact: bool = True) -> dict[str, Entity]:
        wanted = set(keys)
        exact_key = (scope.user_id, scope.agent_id, scope.run_id)
        out: dict[str, Entity] = {}
        for stored in self._tables.entities.values():  # oldest first: the first found per key wins
            e = stored.entity
            if (scope_key(e) == exact_key) if exact else in_scope(scope, e):
                for key in stored.keys & wanted:
                    out.setdefault(key, e)
        return out

    def similar_entities(self, scope: Scope, vectors: Vector) -> list[tuple[Entity, float] | None]:
        queries = np.asarray(vectors, dtype=np.float32)
        queries = queries.reshape(-1, queries.shape[-1])
        exact_key = (scope.user_id, scope.agent_id, scope.run_id)
        pool = [s for s in self._tables.entities.values() if s.vector is not None and scope_key(s.entity) == exact_key]
        if not pool:
            return [None] * len(queries)
        scores = np.stack([s.vector for s in pool if s.vector is not None]) @ queries.T
        best = scores.argmax(axis=0)  # ties: the oldest
        return [(pool[int(j)].entity, float(scores[j, q])) for q, j in enumerate(best)]

    def entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, Entity]:
        found = (self._tables.entities.get(i) for i in dict.fromkeys(ids))
        return {s.entity.id: s.entity for s in found if s is not None and in_scope(scope, s.entity)}

    def entity_memories(self, scope: Scope, ids: Sequence[str], limit: int,
                        hub_degree: int) -> dict[str, tuple[int, list[str]]]:
        mentioned: dict[str, list[str]] = {}
        for m, e in self._tables.mentions:
            mentioned.setdefault(e, []).append(m)
        out: dict[str, tuple[int, list[str]]] = {}
        for eid in self.entities(scope, ids):
            memories = mentioned.get(eid, [])
            out[eid] = (len(memories), [] if len(memories) > hub_degree else self._newest(memories)[:limit])
        return out

    def _newest(self, memory_ids: Iterable[str]) -> list[str]:
        """The memories newest first, then last written first (the contract's cut of mentions and support)."""
        written = {m: i for i, m in enumerate(self._tables.memories)}
        return sorted((m for m in memory_ids if m in written),
                      key=lambda m: (self._tables.memories[m].record.created_at, written[m]), reverse=True)

    def memory_entities(self, scope: Scope, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        wanted = set(memory_ids)
        pairs = sorted((m, e) for m, e in self._tables.mentions if m in wanted)
        reachable = self.entities(scope, [e for _, e in pairs])
        return [(m, e) for m, e in pairs if e in reachable]

    def facts(self, scope: Scope, entity_ids: Sequence[str], *, as_of: datetime | None, limit: int, support: int,
              history: bool = False) -> list[Relation]:
        written = {i: n for n, i in enumerate(self._tables.facts)}  # newest first, then the last written
        valid = sorted((f for f in self._tables.facts.values() if in_scope(scope, f) and _valid(f, as_of, history)),
                       key=lambda f: (f.created_at, written[f.id]), reverse=True)
        found: dict[str, Relation] = {}
        for eid in dict.fromkeys(entity_ids):
            for f in [f for f in valid if eid in (f.source_id, f.target_id)][:limit]:
                found[f.id] = f.model_copy(update={"memory_ids": sorted(self._newest(f.memory_ids)[:support])})
        return sorted(found.values(), key=lambda f: f.id)

    def list_entities(self, scope: Scope, query: EntityQuery) -> list[Entity]:
        out = []
        for stored in self._tables.entities.values():
            e = stored.entity
            if not in_scope(scope, e):
                continue
            if query.contains is not None and not any(query.contains in key for key in stored.keys):
                continue
            if query.classes and not set(query.classes) & set(e.classes):
                continue
            if query.after is not None and _page_key(e) <= (iso(query.after[0]), query.after[1]):
                continue
            out.append(e)
        return sorted(out, key=_page_key)[: query.limit]

    def list_facts(self, scope: Scope, query: FactQuery) -> list[Relation]:
        out = []
        for f in self._tables.facts.values():
            if not in_scope(scope, f):
                continue
            if query.memory_id is not None and query.memory_id not in f.memory_ids:
                continue
            if query.entity_ids and not {f.source_id, f.target_id} & set(query.entity_ids):
                continue
            if query.relations and f.relation not in query.relations:
                continue
            if (query.as_of is not None or not query.include_closed) and not _valid(f, query.as_of):
                continue
            if query.after is not None and _page_key(f) <= (iso(query.after[0]), query.after[1]):
                continue
            out.append(f)
        return sorted(out, key=_page_key)[: query.limit]

    def graph_scopes(self) -> list[Scope]:
        keys = {scope_key(f) for f in self._tables.facts.values()}
        ordered = sorted(keys, key=lambda k: [(v is not None, v or "") for v in k])  # absent fields first
        return [Scope(user_id=u, agent_id=a, run_id=r) for u, a, r in ordered]

    def quarantined(self, scope: Scope, status: str | None = "quarantined") -> list[QuarantineEntry]:
        return [q for q in self._tables.quarantine.values()
                if in_scope(scope, q) and (status is None or q.status == status)]
