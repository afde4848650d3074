"""Every write of the Neo4j store: memories and history (insert, update, delete, touch, delete_scope,
reset) and the knowledge graph they support (write_graph, forgetting), each logical write in one
transaction, so a memory and the graph facts it supports are written, or forgotten, together.

Names are checked and rows built before a transaction starts, so a bad name or vector writes
nothing; any failure inside rolls everything back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from neo4j import ManagedTransaction

from ...errors import ConflictError, DuplicateMemoryError, StoreError
from ...models import EventType, HistoryEvent, Keep, MemoryRecord, Relation, Scope, norm_name, to_utc, utcnow
from ..base import (
    Expectations,
    GraphWrite,
    MemoryPatch,
    NewMemory,
    ThreadScope,
    WriteResult,
    new_tails,
    patched_metadata,
    stale_entities,
    stale_memories,
    thread_key,
    threaded,
)
from . import graph
from .cypher import DATA_LABELS, exact_scope_where, hint, merge_new, scope_where
from .cypher import graph as graph_q
from .cypher import memories as memory_q
from .cypher import schema as schema_q
from .filters import mirror_properties, normalize_metadata
from .naming import class_labels, rel_type
from .records import (
    aliases_props,
    chunks,
    history_props,
    identity,
    memory_row,
    scope_props,
    stored_vector,
    to_record,
    unique,
    utc,
    wire,
)
from .session import Db, conflicts
from .statements import Statements, drive, quiet, run

_RESET_BATCH: Final = 10_000
_ATOMIC_DELETE_MAX: Final = 20_000
"""Scopes up to this size are deleted in one transaction (see :func:`delete_scope`)."""
_DELETE_CHUNK: Final = 10_000


# --------------------------------------------------------------------------------------------------
# Memories


def _insert_rows(
    memory_rows: Sequence[dict[str, Any]], event_rows: Sequence[dict[str, Any]], batch: int
) -> Statements[None]:
    for chunk in chunks(memory_rows, batch):
        yield from run_merge_new(memory_q.INSERT_MEMORIES, chunk, "memory")
    # ``seq`` (write order) breaks ties of ``created_at``: one write's ADD and SUPERSEDE events
    # share a time, and history lists them in the order they were written.
    seq = time.time_ns()
    rows = [wire({**row, "seq": seq + pos}) for pos, row in enumerate(event_rows)]
    for chunk in chunks(rows, batch):
        yield run(memory_q.INSERT_HISTORY, rows=chunk, fetch="consume")


def write_steps(
    batch: int, dims: int | None, scope: Scope, change: GraphWrite
) -> Callable[[], Statements[WriteResult]]:
    """The write's statements, made afresh for each try of its transaction (rows are checked and
    built once, before the first: a bad name or vector writes nothing)."""
    memory_rows = [memory_row(m, dims) for m in change.memories]
    event_rows = [history_props(e) for e in change.events]
    for rel in change.relations:
        rel_type(rel.relation)

    def work() -> Statements[WriteResult]:
        yield from check(scope, change.expect)
        follows = yield from thread(change.memories)
        rows = [{**row, "props": {**row["props"], "follows": f}} if f else row
                for row, f in zip(memory_rows, follows, strict=True)]
        with conflicts():
            yield from _insert_rows(rows, event_rows, batch)
            return (yield from write_graph(scope, change, batch=batch, dims=dims))

    return work


def thread(memories: Sequence[NewMemory]) -> Statements[list[str | None]]:
    """What each new memory follows (:func:`~graphmem.stores.records.threaded`), read in the statement
    that locks the scopes' threads and points them at this write's last memories."""
    if not memories:
        return []
    last = new_tails(memories)
    scopes = sorted(last, key=thread_key)  # one lock order for every writer: no deadlock between two
    rows = [{"key": thread_key(s), "scope": scope_props(*s), "last": last[s]} for s in scopes]
    found = {r["key"]: r["last"] for r in (yield run(memory_q.ADVANCE_THREADS, rows=rows))}
    tails: dict[ThreadScope, str | None] = {}
    for s in scopes:
        tails[s] = found.get(thread_key(s))
        if tails[s] is None:
            scope, params = Scope(user_id=s[0], agent_id=s[1], run_id=s[2]), dict[str, Any]()
            row = yield run(memory_q.newest_unfollowed(hint(scope), exact_scope_where(scope, "m", params)), params,
                            fetch="single")
            tails[s] = row["id"] if row is not None else None
    return threaded(memories, tails)


def check(scope: Scope, expect: Expectations) -> Statements[None]:
    """Lock what the plan read (in id order), then compare it with what is stored now.

    Why the lock: Neo4j reads committed data without holding it, so a check alone could pass
    while another writer is about to commit a change. Every writer takes these node locks from
    its check to its commit, so writers that read the same entities or memories serialize, and
    whichever commits second sees the first's change here and plans again."""
    if expect.memories:
        params: dict[str, Any] = {"ids": sorted(expect.memories)}
        query = memory_q.lock_memories(scope_where(scope, "m", params))
        found = {r["id"]: r["hash"] for r in (yield run(query, params))}
        gone = stale_memories(expect, found)
        if gone:
            raise ConflictError(f"memory {gone[0]} changed or was deleted by a concurrent write")
    if expect.entities:
        ids = sorted(expect.entities)
        yield run(graph_q.LOCK_ENTITIES, ids=ids, fetch="consume")
        stale = stale_entities(expect, (yield from graph.graph_context(scope, ids)))
        if stale:
            raise ConflictError(f"entity {stale[0]} changed or was deleted by a concurrent write")


def update(
    db: Db, dims: int | None, memory_id: str, scope: Scope, patch: MemoryPatch, relink: GraphWrite | None = None
) -> MemoryRecord | None:
    """Lock, read, merge in Python, write back and log, all in one write transaction (with the
    graph re-linked in it when ``relink`` is given)."""
    relink_rows = (
        ([memory_row(m, dims) for m in relink.memories], [history_props(e) for e in relink.events])
        if relink is not None else None
    )
    vec = stored_vector(patch.vector, dims, "embedding of the update") if patch.vector is not None else None
    params: dict[str, Any] = {"id": memory_id}
    lock_and_read = memory_q.lock_and_read_memory(scope_where(scope, "m", params))
    write_back = memory_q.write_back_memory("keep" if patch.vector is None else "remove" if vec is None else "set")
    batch = db.cfg.write_batch_size

    def work(tx: ManagedTransaction) -> MemoryRecord | None:
        row = tx.run(lock_and_read, params).single()
        if row is None:
            return None
        old = to_record(row["rec"])
        if relink is not None:
            drive(tx, check(scope, relink.expect))
        new_identity = None
        if patch.hash is not None and patch.hash != old.hash:
            new_identity = identity(old.user_id, old.agent_id, old.run_id, patch.hash)
            twin = tx.run(memory_q.MEMORY_TWIN, identity=new_identity, id=memory_id).single()
            if twin is not None:
                raise DuplicateMemoryError(
                    f"memory {twin['id']} of this scope already has that text; delete one of them instead")
        metadata = patched_metadata(old.metadata, patch)
        metadata, metadata_json = normalize_metadata(metadata, "metadata of the update")
        mirror = mirror_properties(metadata)
        props: dict[str, Any] = {k: None for k in row["mirrored"] if k not in mirror}
        props.update(mirror)
        props["metadata"] = metadata_json
        props["updated_at"] = to_utc(patch.updated_at)
        if patch.text is not None:
            props["memory"] = patch.text
        if patch.hash is not None:
            props["hash"] = patch.hash
        if new_identity is not None:
            props["identity"] = new_identity
        if patch.expires_at is not Keep.KEEP:
            props["expires_at"] = to_utc(patch.expires_at) if patch.expires_at else None
        new = old.model_copy(
            update={
                "memory": patch.text if patch.text is not None else old.memory,
                "hash": patch.hash if patch.hash is not None else old.hash,
                "metadata": metadata,
                "updated_at": to_utc(patch.updated_at),
                "expires_at": old.expires_at if patch.expires_at is Keep.KEEP else patch.expires_at,
            }
        )
        event = HistoryEvent(
            id=patch.event_id,
            memory_id=old.id,
            event=EventType.UPDATE,
            old_memory=old.memory,
            new_memory=new.memory,
            user_id=old.user_id,
            agent_id=old.agent_id,
            run_id=old.run_id,
            actor_id=old.actor_id,
            role=old.role,
            created_at=to_utc(patch.updated_at),
            details=patch.details(),
        )
        with conflicts():
            values = quiet({"id": memory_id, "props": props, "vec": vec, "event": history_props(event)})
            tx.run(write_back, values).consume()
            if relink is not None and relink_rows is not None:
                # the old text's support goes; entities left without any are dropped only after the
                # new text's facts are written (an entity both texts name stays)
                mentioned = tx.run(memory_q.UNLINK_MEMORY, id=memory_id).single()
                left = forget_memories(tx, scope, [memory_id], mentioned["entities"] if mentioned else [],
                                       batch, drop_orphans=False)
                drive(tx, _insert_rows(*relink_rows, batch))
                drive(tx, write_graph(scope, relink, batch=batch, dims=dims))
                drop_orphans_of(tx, left, batch)
        return new

    return db.write("update", work)


def delete(db: Db, memory_ids: Sequence[str], scope: Scope, at: datetime) -> list[str]:
    """Delete the in-scope ones with a DELETE event each; ids outside the scope are ignored."""
    wanted = list(dict.fromkeys(memory_ids))
    if not wanted:
        return []
    params: dict[str, Any] = {"at": to_utc(at)}
    query = memory_q.delete_by_ids(scope_where(scope, "m", params))
    batch = db.cfg.write_batch_size

    def work(tx: ManagedTransaction) -> list[str]:
        deleted: set[str] = set()
        for chunk in chunks(wanted, batch):
            deleted.update(_delete_chunk(tx, query, params, chunk, scope, batch))
        return [i for i in wanted if i in deleted]

    return db.write("delete", work)


def _delete_chunk(
    tx: ManagedTransaction, query: str, params: dict[str, Any], ids: Sequence[str], scope: Scope, batch: int
) -> list[str]:
    """Delete one chunk of memories (with their DELETE events) and what only they supported."""
    deleted: list[str] = []
    entities: list[str] = []
    for row in tx.run(query, params, ids=list(ids)):
        deleted.append(row["deleted"])
        entities.extend(row["entities"])
    forget_memories(tx, scope, deleted, entities, batch)
    return deleted


def touch(db: Db, scope: Scope, accesses: Mapping[str, tuple[int, datetime]]) -> None:
    if not accesses:
        return
    params: dict[str, Any] = {"rows": [{"id": mid, "n": int(n), "at": to_utc(at)}
                                       for mid, (n, at) in accesses.items()]}
    query = memory_q.touch(scope_where(scope, "m", params))
    db.write("touch", lambda tx: tx.run(query, params).consume())


def delete_scope(db: Db, scope: Scope, at: datetime) -> int:
    """Delete the scope in one transaction when it holds at most ``_ATOMIC_DELETE_MAX`` memories.

    Bigger scopes go in transactions of ``_DELETE_CHUNK`` memories, each deleting its memories
    together with their DELETE events: one transaction's time grows faster than its size, and
    100k memories exceed the server's transaction memory limit. A failure part-way leaves a consistent store (every
    deleted memory has its event, the rest are intact) and calling again finishes the job.
    Within a transaction the ids are read first, then deleted in ``write_batch_size`` chunks,
    each lookup a unique-index seek.

    The graph follows the same rule: each transaction forgets what its memories alone supported
    (as :func:`delete` does), so every fact left between transactions still has support; the
    transaction that deletes the last memories also deletes the scope's remaining entities,
    facts, Value nodes and quarantine entries (more transactions only if those alone exceed the
    limit).
    """
    params: dict[str, Any] = {"at": to_utc(at)}
    where = scope_where(scope, "m", params)
    list_ids = memory_q.scope_ids(hint(scope), where)
    query = memory_q.delete_by_ids(where)
    batch = db.cfg.write_batch_size

    def work(tx: ManagedTransaction, first: bool) -> tuple[int, bool]:
        limit = _ATOMIC_DELETE_MAX + 1 if first else _DELETE_CHUNK
        ids = [r["id"] for r in tx.run(list_ids, params, limit=limit)]
        more = len(ids) > _ATOMIC_DELETE_MAX if first else len(ids) == _DELETE_CHUNK
        if first and more:
            ids = ids[:_DELETE_CHUNK]
        count = 0
        for chunk in chunks(ids, batch):
            count += len(_delete_chunk(tx, query, params, chunk, scope, batch))
        if not more:
            more = delete_scope_graph(tx, scope, _ATOMIC_DELETE_MAX if first else _DELETE_CHUNK)
        return count, more

    total, more = db.write("delete_scope", lambda tx: work(tx, True))
    while more:
        count, more = db.write("delete_scope", lambda tx: work(tx, False))
        total += count
    return total


def reset(db: Db) -> None:
    """Empty every graphmem label in batches (auto-commit ``IN TRANSACTIONS``); keep the schema."""
    with db.errors("reset", write=True), db.session() as session:
        for label in DATA_LABELS:
            session.run(schema_q.reset_label(label, _RESET_BATCH)).consume()


# --------------------------------------------------------------------------------------------------
# The knowledge graph


def run_merge_new(query: str, rows: Sequence[dict[str, Any]], what: str) -> Statements[None]:
    """Run a ``merge_new`` query; a lost identity is a :class:`ConflictError` (the caller plans again)."""
    identities = [r["props"]["identity"] for r in rows]
    if len(set(identities)) != len(identities) or len({r["props"]["id"] for r in rows}) != len(rows):
        raise StoreError(f"one write holds two {what} rows with the same id or identity; nothing was written")
    row = (yield run(query, rows=list(rows), fetch="single"))
    if row is not None and row["lost"]:
        raise ConflictError(f"a concurrent write stored {what} {row['lost'][0]} first (same scope and "
                            f"{'name' if what == 'entity' else 'text'})")


@dataclass
class _NewFact:
    rel: Relation
    rtype: str
    mids: list[str]


@dataclass
class _Merge:
    id: str
    source: str
    rtype: str
    mids: list[str] = field(default_factory=list)


def write_graph(scope: Scope, change: GraphWrite, *, batch: int, dims: int | None) -> Statements[WriteResult]:
    """Apply the graph part of ``change`` (the caller has written its memories and events in its transaction).

    Order: entities, entity updates, facts (twin merge), mentions, closes, quarantine, releases.
    Every name check happens before the first statement, so a bad name writes nothing.
    """
    types = {rel.relation: rel_type(rel.relation) for rel in change.relations}
    seq = time.time_ns()

    # Entities, one UNWIND per label set.
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for pos, item in enumerate(change.entities):
        e = item.entity
        props: dict[str, Any] = {
            "id": e.id, "name": e.name, "key": norm_name(e.name), "classes": list(e.classes),
            "identity": identity(e.user_id, e.agent_id, e.run_id, norm_name(e.name)),
            **aliases_props(e.aliases), **scope_props(e.user_id, e.agent_id, e.run_id),
            "created_at": to_utc(e.created_at), "seq": seq + pos,
        }
        row = {**wire(props),
               "vec": stored_vector(item.vector, dims, f"embedding of entity {e.id}")}
        groups.setdefault(tuple(class_labels(e.classes)), []).append(row)
    for labels, rows in groups.items():
        query = merge_new("Entity", labels)
        for chunk in chunks(rows, batch):
            yield from run_merge_new(query, chunk, "entity")

    # Entity updates: classes and aliases replaced, labels of new classes added.
    if change.entity_updates:
        rows = [
            {"id": e.id, "classes": list(e.classes), **aliases_props(e.aliases), "updated_at": utc(e.updated_at)}
            for e in change.entity_updates
        ]
        for chunk in chunks(rows, batch):
            found = (yield run(graph_q.UPDATE_ENTITIES, rows=chunk, fetch="single"))
            if found is None or found["n"] != len(chunk):
                raise StoreError("an entity update names an entity that does not exist; nothing was written")
        by_labels: dict[tuple[str, ...], list[str]] = {}
        for e in change.entity_updates:
            labels = tuple(class_labels(e.classes))
            if labels:
                by_labels.setdefault(labels, []).append(e.id)
        for labels, ids in by_labels.items():
            query = graph_q.add_labels(labels)
            for part in chunks(ids, batch):
                yield run(query, ids=part, fetch="consume")

    if change.closes:  # first: a fact stated again after a closed value is a new fact
        yield from _close(scope, change, batch)
    result = yield from _write_facts(change, types, seq + len(change.entities), batch)

    # Mentions: the given ones, plus supporting memory -> subject for every fact written or merged.
    pairs = unique([*change.mentions, *((m, rel.source_id) for rel in change.relations for m in rel.memory_ids)])
    if pairs:
        params: dict[str, Any] = {}
        query = graph_q.mentions(scope_where(scope, "m", params))
        for chunk in chunks([{"m": m, "e": e} for m, e in pairs], batch):
            linked = (yield run(query, params, rows=chunk, fetch="single"))
            if linked is not None and linked["missing"]:
                raise StoreError(f"mentions name unknown entities {linked['missing'][:5]}; nothing was written")

    if change.quarantine:
        rows = [
            {k: v for k, v in {
                "id": q.id, "triple": json.dumps(q.triple, ensure_ascii=False, default=str),
                "reasons": json.dumps(q.reasons, ensure_ascii=False, default=str),
                "memory_ids": unique(q.memory_ids), "ontology": q.ontology, "status": q.status,
                **scope_props(q.user_id, q.agent_id, q.run_id), "created_at": to_utc(q.created_at),
                "released_at": utc(q.released_at), "seq": seq + len(change.entities) + len(change.relations) + pos,
            }.items() if v is not None}
            for pos, q in enumerate(change.quarantine)
        ]
        for chunk in chunks(rows, batch):
            yield run(graph_q.CREATE_QUARANTINE, rows=chunk, fetch="consume")

    if change.released:
        at = max((to_utc(e.created_at) for e in change.events), default=None) or utcnow()
        params = {"at": at}
        query = graph_q.release(scope_where(scope, "q", params))
        for part in chunks(unique(change.released), batch):
            done = (yield run(query, params, ids=part, fetch="single"))
            if done is None or done["n"] != len(part):
                raise ConflictError("a quarantine entry was released by a concurrent recheck")
    return result


def _write_facts(change: GraphWrite, types: dict[str, str], seq: int, batch: int) -> Statements[WriteResult]:
    """Create facts, or add provenance to the stored fact of the same id or, for an open fact, to
    an open twin (same subject, relation and object).

    Twins stored before this write are found after locking the subjects; twins within the write
    are resolved here in order, as the SQLite store's row-by-row inserts would.
    """
    result = WriteResult()
    if not change.relations:
        return result
    yield run(graph_q.LOCK_ENTITIES, ids=sorted({rel.source_id for rel in change.relations}), fetch="consume")
    lookup: dict[str, list[dict[str, Any]]] = {}
    for i, rel in enumerate(change.relations):
        lookup.setdefault(types[rel.relation], []).append(
            {"i": i, "id": rel.id, "open": rel.valid_to is None, "source": rel.source_id, "relation": rel.relation,
             "target": rel.target_id, "value": rel.value, "datatype": rel.datatype}
        )
    stored: dict[int, str] = {}
    for rtype, rows in lookup.items():
        query = graph_q.find_twins(rtype)
        for chunk in chunks(rows, batch):
            for rec in (yield run(query, rows=chunk)):
                stored.setdefault(rec["i"], rec["id"])

    open_now: dict[tuple[str, str, str | None, str | None, str | None], _NewFact | _Merge] = {}
    merges: dict[str, _Merge] = {}
    new: list[_NewFact] = []
    for i, rel in enumerate(change.relations):
        key = (rel.source_id, rel.relation, rel.target_id, rel.value, rel.datatype)
        twin = open_now.get(key) if rel.valid_to is None and i not in stored else None
        if twin is None and i in stored:
            twin = merges.setdefault(stored[i], _Merge(stored[i], rel.source_id, types[rel.relation]))
            if rel.valid_to is None:
                open_now[key] = twin
        if twin is not None:
            twin.mids.extend(m for m in rel.memory_ids if m not in twin.mids)
            result.merged.append(twin.id if isinstance(twin, _Merge) else twin.rel.id)
            continue
        fact = _NewFact(rel, types[rel.relation], unique(rel.memory_ids))
        new.append(fact)
        result.added.append(rel.id)
        if rel.valid_to is None:
            open_now[key] = fact

    creates: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for pos, fact in enumerate(new):
        rel = fact.rel
        props = {
            "id": rel.id, "relation": rel.relation, "memory_ids": fact.mids, "valid_from": utc(rel.valid_from),
            "valid_to": utc(rel.valid_to), "created_at": to_utc(rel.created_at), "seq": seq + pos,
            **scope_props(rel.user_id, rel.agent_id, rel.run_id),
        }
        row: dict[str, Any] = {"source": rel.source_id, "target": rel.target_id,
                               **wire(props)}
        literal = rel.target_id is None
        if literal:
            row["value"] = {"id": rel.id, "value": rel.value,
                            **({"datatype": rel.datatype} if rel.datatype is not None else {}),
                            **scope_props(rel.user_id, rel.agent_id, rel.run_id)}
        creates.setdefault((fact.rtype, literal), []).append(row)
    for (rtype, literal), rows in creates.items():
        query = graph_q.create_facts(rtype, literal)
        for chunk in chunks(rows, batch):
            done = (yield run(query, rows=chunk, fetch="single"))
            if done is None or done["n"] != len(chunk):
                raise StoreError("a fact names an entity that does not exist; nothing was written")

    by_type: dict[str, list[dict[str, Any]]] = {}
    for m in merges.values():
        by_type.setdefault(m.rtype, []).append({"id": m.id, "source": m.source, "mids": m.mids})
    for rtype, rows in by_type.items():
        query = graph_q.merge_facts(rtype)
        for chunk in chunks(rows, batch):
            yield run(query, rows=chunk, fetch="consume")
    return result


def _close(scope: Scope, change: GraphWrite, batch: int) -> Statements[None]:
    """Set ``valid_to`` on still-open facts in scope (the first close of an id wins; unknown ids: no-op)."""
    at: dict[str, datetime] = {}
    for rid, when in change.closes:
        at.setdefault(rid, to_utc(when))
    left = set(at)
    sources = sorted({rel.source_id for rel in change.relations})
    for part in chunks(sorted(left), batch):
        params: dict[str, Any] = {"ids": part, "at": {k: at[k] for k in part}}
        if sources:
            query = graph_q.close_from(scope_where(scope, "x", params))
            for chunk in chunks(sources, batch):
                left.difference_update(r["id"] for r in (yield run(query, params, sources=chunk)))
    if left:
        for part in chunks(sorted(left), batch):
            params = {"ids": part, "at": {k: at[k] for k in part}}
            query = graph_q.close_in_scope(hint(scope, "s", "Entity"), scope_where(scope, "s", params),
                                           scope_where(scope, "x", params))
            yield run(query, params, fetch="consume")


def forget_memories(
    tx: ManagedTransaction, scope: Scope, memory_ids: Sequence[str], entity_ids: Iterable[str], batch: int,
    *, drop_orphans: bool = True,
) -> list[str]:
    """After ``memory_ids`` (in ``scope``) were deleted in ``tx``: drop what only they supported.

    ``entity_ids`` are the entities those memories mentioned (read before they were deleted).
    Their ids leave the provenance of facts and quarantine entries; facts left without support are
    deleted, then entities left with no mention and no fact. Returns the entities touched;
    ``drop_orphans=False`` leaves the last step to the caller (an update, after its new facts).
    """
    mids = unique(memory_ids)
    if not mids:
        return []
    touched = unique(entity_ids)
    for part in chunks(touched, batch):
        row = tx.run(graph_q.FORGET_FACTS, entities=part, mids=mids).single()
        if row is not None:
            touched.extend(o for o in row["others"] if o is not None)
    if drop_orphans:
        drop_orphans_of(tx, touched, batch)
    params: dict[str, Any] = {"mids": mids}
    tx.run(graph_q.forget_quarantine(scope, params), params).consume()
    return unique(touched)


def drop_orphans_of(tx: ManagedTransaction, entity_ids: Iterable[str], batch: int) -> None:
    """Delete those of the entities that no memory mentions and no fact uses."""
    for part in chunks(sorted(set(entity_ids)), batch):
        tx.run(graph_q.DROP_ORPHANS, ids=part).consume()


def _delete_threads(scope: Scope, params: dict[str, Any]) -> str:
    return memory_q.delete_threads(scope_where(scope, "t", params))


def delete_scope_graph(tx: ManagedTransaction, scope: Scope, limit: int) -> bool:
    """Delete up to ``limit`` entities (with their facts and Value nodes), quarantine entries and
    threads in scope; return whether any may remain."""
    more = False
    for statement in (graph_q.delete_scope_entities, graph_q.delete_scope_quarantine, _delete_threads):
        params: dict[str, Any] = {"limit": limit}
        row = tx.run(statement(scope, params), params).single()
        more = more or (row is not None and row["n"] >= limit)
    return more
