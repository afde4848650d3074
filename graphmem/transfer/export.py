"""Writing a store, or the scopes one scope contains, to a dump (:mod:`.format`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInputError, short
from ..models import Scope, iso, utcnow
from ..stores.base import DUMP_KINDS, Store
from ..version import __version__
from .format import Header, encode_vector, row_line
from .pages import Page, pages

Target = str | os.PathLike[str] | IO[str]


def export_dump(store: Store, target: Target, *, scope: Scope | None, embedder: str, dims: int,
                ontology: dict[str, Any] | None = None, batch: int = 1000) -> dict[str, Any]:
    """Dump the exact scopes ``scope`` contains (``None``: every one) to ``target`` (a path,
    written whole or not at all, or an open text file). Returns the header's counts and scopes."""
    scopes = [s for s in store.dump_scopes() if scope is None or scope.contains(s.user_id, s.agent_id, s.run_id)]
    counts = dict.fromkeys(DUMP_KINDS, 0)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as body:
        for page in pages(store, scopes, batch):
            for line in _lines(page):
                body.write(line + "\n")
            counts[page.kind] += page.size
        header = Header(embedder=embedder, dims=dims, counts=counts, scopes=scopes, ontology=ontology or {},
                        created_at=iso(utcnow()), graphmem=__version__)
        with output(target) as out:
            out.write(header.to_json() + "\n")
            body.seek(0)
            shutil.copyfileobj(body, out)
    return {"counts": counts, "scopes": [dict(s.items()) for s in scopes]}


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
