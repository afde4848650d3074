"""Reading a store as dump pages: each exact scope, kind after kind, a batch at a time, with a
cursor that says where the next page starts (what a migration's checkpoint records)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..models import Scope
from ..stores.base import DUMP_KINDS, NewMemory, Restore, Store


@dataclass(frozen=True)
class Position:
    """Where a copy stands: the scope (index into the sorted list), the kind, and the cursor of the
    last page done in it (``None``: the kind not started)."""

    scope: int = 0
    kind: str = DUMP_KINDS[0]
    cursor: str | None = None


@dataclass
class Page:
    scope: Scope
    position: Position
    """Where the copy stands once this page is written."""
    kind: str
    rows: Restore
    size: int
    mentions: dict[str, list[str]] = field(default_factory=dict)
    """Entity id -> memory ids mentioning it (the page's ``rows.mentions``, grouped for the dump)."""


def pages(store: Store, scopes: Sequence[Scope], batch: int, start: Position | None = None) -> Iterator[Page]:
    """Every row of ``scopes`` (exact scopes) in dump order, as pages of up to ``batch`` rows."""
    start = start or Position()
    for index in range(start.scope, len(scopes)):
        scope = scopes[index]
        kinds = DUMP_KINDS[DUMP_KINDS.index(start.kind):] if index == start.scope else DUMP_KINDS
        for kind in kinds:
            cursor = start.cursor if index == start.scope and kind == start.kind else None
            while True:
                page = _page(store, scope, kind, cursor, batch)
                if page is None:
                    break
                cursor, rows, size, mentions = page
                yield Page(scope, Position(index, kind, cursor), kind, rows, size, mentions)


def _page(store: Store, scope: Scope, kind: str, after: str | None, batch: int
          ) -> tuple[str, Restore, int, dict[str, list[str]]] | None:
    rows = Restore()
    mentions: dict[str, list[str]] = {}
    if kind == "memory":
        found = store.dump_memories(scope, after, batch)
        if not found:
            return None
        rows.memories = [NewMemory(r, v) for r, v in found]
        rows.access = {r.id: (r.access_count, r.last_accessed_at) for r, _ in found
                       if r.access_count or r.last_accessed_at is not None}
        return found[-1][0].id, rows, len(found), mentions
    if kind == "event":
        events = store.dump_history(scope, after, batch)
        if not events:
            return None
        rows.events = events
        return events[-1].memory_id, rows, len(events), mentions
    if kind in ("entity", "fact"):
        ents = store.dump_entities(scope, after, batch)
        if not ents:
            return None
        last = ents[-1][0].id
        if kind == "fact":
            rows.facts = store.dump_facts(scope, [e.id for e, _, _ in ents])
            return last, rows, len(rows.facts), mentions
        rows.entities = [(e, v) for e, v, _ in ents]
        mentions = {e.id: m for e, _, m in ents}
        rows.mentions = [(m, e.id) for e, _, ms in ents for m in ms]
        return last, rows, len(ents), mentions
    entries = store.dump_quarantine(scope, after, batch)
    if not entries:
        return None
    rows.quarantine = entries
    return entries[-1].id, rows, len(entries), mentions


def row_ids(rows: Restore) -> dict[str, list[str]]:
    """The ids a page writes, per kind."""
    return {"memory": [m.record.id for m in rows.memories], "event": [e.id for e in rows.events],
            "entity": [e.id for e, _ in rows.entities], "fact": [f.id for f in rows.facts],
            "quarantine": [q.id for q in rows.quarantine]}
