"""Writing a store, or the scopes one scope contains, to a dump (:mod:`.format`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInputError, short
from ..models import Scope, iso, utcnow
from ..stores.base import DUMP_KINDS, Store
from ..version import __version__
from .format import Header, encode_vector, row_line
from .pages import Page, pages, row_ids

Target = str | os.PathLike[str] | IO[str]


def export_dump(store: Store, target: Target, *, scope: Scope | None, embedder: str, dims: int,
                ontology: dict[str, Any] | None = None, batch: int = 1000) -> dict[str, Any]:
    """Dump the exact scopes ``scope`` contains (``None``: every one) to ``target`` (a path,
    written whole or not at all, or an open text file). Returns the header's counts and scopes, and
    what was left out (see :class:`_Written`)."""
    scopes = [s for s in store.dump_scopes() if scope is None or scope.contains(s.user_id, s.agent_id, s.run_id)]
    written = _Written()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as body:
        for page in pages(store, scopes, batch):
            for line in _lines(written.keep(page)):
                body.write(line + "\n")
        counts = written.counts
        header = Header(embedder=embedder, dims=dims, counts=counts, scopes=scopes, ontology=ontology or {},
                        created_at=iso(utcnow()), graphmem=__version__)
        with output(target) as out:
            out.write(header.to_json() + "\n")
            body.seek(0)
            shutil.copyfileobj(body, out)
    return {"counts": counts, "scopes": [dict(s.items()) for s in scopes], "left_out": written.left_out}


@dataclass
class _Written:
    """What the dump holds so far, so that every row refers only to rows before it.

    The store is read a page at a time; a write that commits meanwhile can add an entity mentioned
    by a memory already passed, or a fact between entities already passed. Such a reference is
    left out (counted in ``left_out``) rather than written: an import refuses a dump that names a
    row it does not hold. A store nobody writes to while it is exported leaves nothing out."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DUMP_KINDS, 0))
    memories: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    left_out: dict[str, int] = field(default_factory=lambda: {"mentions": 0, "facts": 0, "citations": 0})

    def keep(self, page: Page) -> Page:
        rows = page.rows
        if page.kind == "memory":
            self.memories.update(m.record.id for m in rows.memories)
        elif page.kind == "entity":
            self.entities.update(e.id for e, _ in rows.entities)
            for eid, mids in page.mentions.items():
                kept = [m for m in mids if m in self.memories]
                self.left_out["mentions"] += len(mids) - len(kept)
                page.mentions[eid] = kept
        elif page.kind == "fact":
            facts = [f for f in rows.facts if f.source_id in self.entities
                     and (f.target_id is None or f.target_id in self.entities)]
            self.left_out["facts"] += len(rows.facts) - len(facts)
            for i, f in enumerate(facts):
                cited = [m for m in f.memory_ids if m in self.memories]
                if len(cited) != len(f.memory_ids):
                    self.left_out["citations"] += len(f.memory_ids) - len(cited)
                    facts[i] = f.model_copy(update={"memory_ids": cited})
            rows.facts = facts
        self.counts[page.kind] += len(row_ids(rows)[page.kind])
        return page



def _lines(page: Page) -> Iterator[str]:
    rows = page.rows
    if page.kind == "memory":
        for m in rows.memories:
            yield row_line("memory", m.record, vector=encode_vector(m.vector))
    elif page.kind == "event":
        for e in rows.events:
            yield row_line("event", e)
    elif page.kind == "entity":
        for ent, vec in rows.entities:
            yield row_line("entity", ent, vector=encode_vector(vec), mentions=page.mentions.get(ent.id, []))
    elif page.kind == "fact":
        for f in rows.facts:
            yield row_line("fact", f)
    else:
        for q in rows.quarantine:
            yield row_line("quarantine", q)


@contextlib.contextmanager
def output(target: Target) -> Iterator[IO[str]]:
    """A path is written to a temporary sibling and renamed into place: never a half file. A path
    that cannot be written (a folder, a missing folder, no permission) is the caller's input error."""
    if not isinstance(target, str | os.PathLike):
        if not callable(getattr(target, "write", None)):
            raise InvalidInputError(f"write to a file path or an open text file, got {short(target)}")
        yield target
        return
    path = Path(target)
    if not os.fspath(target) or path.is_dir():
        raise InvalidInputError(f"{os.fspath(target)!r} is not a file path to write to")
    partial = path.with_name(path.name + ".partial")
    try:
        out = partial.open("w", encoding="utf-8")
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InvalidInputError(f"cannot write {os.fspath(target)!r}: {getattr(exc, 'strerror', None) or exc}"
                                ) from None
    try:
        with out:
            yield out
        os.replace(partial, path)
    except OSError as exc:  # a full disk, a rename refused
        raise InvalidInputError(f"cannot write {os.fspath(target)!r}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)
