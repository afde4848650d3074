"""Importing a dump (:mod:`.format`) into a store: checked whole before the first write, then
written in batches, each one transaction of one exact scope.

What is refused, before anything is written: a line that is not JSON or does not validate,
another format version, vectors of other dimensions than the target's, another embedder unless
re-embedding was asked for, a dump shorter or longer than its header counts, a row naming an
entity or memory the dump has not given before it, and any id (or a scope's text or entity name)
the target already holds: an import adds new rows, it never merges into existing ones.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from ..errors import DumpConflictError, DumpFormatError, InvalidInputError, SchemaMismatchError, short
from ..models import Entity, MemoryRecord, Relation, Scope, norm_name
from ..stores.base import DUMP_KINDS, NewMemory, Restore, Store, Vector
from .format import Header, Line, parse_line

Source = str | os.PathLike[str] | IO[str]
Embed = Callable[[list[str]], Vector]


@dataclass
class _Seen:
    ids: dict[str, set[str]] = field(default_factory=lambda: {k: set() for k in DUMP_KINDS})
    hashes: dict[Scope, dict[str, str]] = field(default_factory=dict)
    names: dict[Scope, dict[str, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DUMP_KINDS, 0))


def import_dump(store: Store, source: Source, *, embedder: str, dims: int, batch: int = 1000,
                embed: Embed | None = None) -> dict[str, Any]:
    """Import every row of the dump at ``source`` into ``store`` (opened with ``embedder``/``dims``).

    ``embed``: re-embed memory texts and entity names with it (a dump of another embedder);
    without it the dump's vectors are stored as they are, and must come from ``embedder``."""
    with _readable(source) as stream:
        header = Header.parse(stream.readline())
        if header.dims != dims:
            raise SchemaMismatchError(f"the dump holds {header.dims}-dimensional vectors of {header.embedder!r}; "
                                      f"this store holds {dims}-dimensional ones of {embedder!r}: import it into a "
                                      "store of the same dimensions (nothing was written)")
        if header.embedder != embedder and embed is None:
            raise SchemaMismatchError(f"the dump's vectors come from {header.embedder!r}, this store's from "
                                      f"{embedder!r}; re-embed on import (reembed=True, --reembed) or configure "
                                      f"{header.embedder!r} (nothing was written)")
        seen = _check_lines(_lines(stream, dims), header)
        _check_target(store, seen)
        stream.seek(0)
        stream.readline()
        batches = 0
        for scope, rows in _batches(_lines(stream, dims), batch):
            if embed is not None:
                _reembed(rows, embed)
            store.restore(scope, rows)
            batches += 1
    return {"imported": seen.counts, "scopes": [dict(s.items()) for s in header.scopes], "batches": batches,
            "reembedded": embed is not None}


def _lines(stream: IO[str], dims: int) -> Iterator[tuple[int, Line]]:
    for number, text in enumerate(stream, start=2):
        if text.strip():
            yield number, parse_line(text, number, dims)


def _check_lines(lines: Iterator[tuple[int, Line]], header: Header) -> _Seen:
    seen = _Seen()
    for number, line in lines:
        row = line.row
        ids = seen.ids[line.kind]
        if row.id in ids:
            raise DumpFormatError(f"{line.kind} {row.id} appears twice", number)
        if isinstance(row, MemoryRecord):
            _unique(seen.hashes, line.scope, row.hash, row.id, f"memory {row.id} repeats the text of", number)
        elif isinstance(row, Entity):
            _unique(seen.names, line.scope, norm_name(row.name), row.id, f"entity {row.id} repeats the name of",
                    number)
            missing = [m for m in line.mentions if m not in seen.ids["memory"]]
            if missing:
                raise DumpFormatError(f"entity {row.id} is mentioned by memory {missing[0]}, which no earlier line "
                                      "holds", number)
        elif isinstance(row, Relation):
            for end in (row.source_id, row.target_id):
                if end is not None and end not in seen.ids["entity"]:
                    raise DumpFormatError(f"fact {row.id} names entity {end}, which no earlier line holds", number)
        ids.add(row.id)
        seen.counts[line.kind] += 1
    if seen.counts != header.counts:
        diff = ", ".join(f"{k} {seen.counts[k]} of {header.counts[k]}" for k in DUMP_KINDS
                         if seen.counts[k] != header.counts[k])
        raise DumpFormatError(f"the dump holds other row counts than its header says ({diff}): cut off or edited")
    return seen


def _unique(by_scope: dict[Scope, dict[str, str]], scope: Scope, key: str, row_id: str, what: str, number: int
            ) -> None:
    other = by_scope.setdefault(scope, {}).setdefault(key, row_id)
    if other != row_id:
        raise DumpFormatError(f"{what} {other} in scope {dict(scope.items())}", number)


def _check_target(store: Store, seen: _Seen) -> None:
    for kind in DUMP_KINDS:
        ids = sorted(seen.ids[kind])
        for start in range(0, len(ids), 5000):
            taken = store.taken_ids(kind, ids[start : start + 5000])
            if taken:
                raise DumpConflictError(f"the target store already holds {len(taken)} {kind} id(s) of this dump, "
                                        f"e.g. {min(taken)}; import into another store, or delete those first "
                                        "(nothing was written)")
    for scope, hashes in seen.hashes.items():
        keys = sorted(hashes)
        for start in range(0, len(keys), 5000):
            found = store.find_hashes(scope, keys[start : start + 5000])
            if found:
                h, mid = next(iter(found.items()))
                raise DumpConflictError(f"scope {dict(scope.items())} already holds memory {mid} with the text of "
                                        f"the dump's memory {hashes[h]} (nothing was written)")
    for scope, names in seen.names.items():
        keys = sorted(names)
        for start in range(0, len(keys), 5000):
            ents = store.find_entities(scope, keys[start : start + 5000], exact=True)
            if ents:
                ent = next(iter(ents.values()))
                raise DumpConflictError(f"scope {dict(scope.items())} already holds entity {ent.id} named "
                                        f"{ent.name!r} (nothing was written)")


def _batches(lines: Iterator[tuple[int, Line]], size: int) -> Iterator[tuple[Scope, Restore]]:
    scope: Scope | None = None
    rows, n = Restore(), 0
    for _, line in lines:
        if scope is not None and (line.scope != scope or n >= size):
            yield scope, rows
            rows, n = Restore(), 0
        scope = line.scope
        _add(rows, line)
        n += 1
    if scope is not None and n:
        yield scope, rows


def _add(rows: Restore, line: Line) -> None:
    row = line.row
    if line.kind == "memory":
        assert line.vector is not None
        rows.memories.append(NewMemory(row, line.vector))
        if row.access_count or row.last_accessed_at is not None:
            rows.access[row.id] = (row.access_count, row.last_accessed_at)
    elif line.kind == "event":
        rows.events.append(row)
    elif line.kind == "entity":
        rows.entities.append((row, line.vector))
        rows.mentions.extend((m, row.id) for m in line.mentions)
    elif line.kind == "fact":
        rows.facts.append(row)
    else:
        rows.quarantine.append(row)


def _reembed(rows: Restore, embed: Embed) -> None:
    if rows.memories:
        vectors = embed([m.record.memory for m in rows.memories])
        rows.memories = [NewMemory(m.record, np.asarray(v, dtype=np.float32))
                         for m, v in zip(rows.memories, vectors, strict=True)]
    named = [i for i, (_, v) in enumerate(rows.entities) if v is not None]
    if named:
        vectors = embed([rows.entities[i][0].name for i in named])
        for i, v in zip(named, vectors, strict=True):
            rows.entities[i] = (rows.entities[i][0], np.asarray(v, dtype=np.float32))


@contextlib.contextmanager
def _readable(source: Source) -> Iterator[IO[str]]:
    """A seekable text stream over ``source`` (read twice: checked, then written); a stream that
    cannot seek is spooled to a temporary file first."""
    if isinstance(source, str | os.PathLike):
        try:
            f = open(source, encoding="utf-8")  # noqa: SIM115 - closed below, errors mapped apart
        except FileNotFoundError:
            raise DumpFormatError(f"no dump at {short(os.fspath(source))}") from None
        except (OSError, ValueError) as exc:  # a folder, no permission, a NUL in the name
            raise InvalidInputError(f"cannot read {short(os.fspath(source))}: "
                                    f"{getattr(exc, 'strerror', None) or exc}") from None
        with f:
            try:
                yield f
            except UnicodeDecodeError as exc:
                raise DumpFormatError(f"{short(os.fspath(source))} is not UTF-8 text ({exc.reason})") from None
        return
    if not callable(getattr(source, "read", None)) or not callable(getattr(source, "seekable", None)):
        raise InvalidInputError(f"import from a file path or an open text file, got {short(source)}")
    if source.seekable():
        yield source
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        shutil.copyfileobj(source, spool)
        spool.seek(0)
        yield spool
