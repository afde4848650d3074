"""Backups of a live store and their restore.

A backup is the backend's own snapshot where it has one (SQLite: the online backup API, a copy of
one read transaction, which is itself a store), else a dump (:mod:`.format`) of every scope, read
a page at a time while writers go on (Neo4j: see :func:`backup`). A restore takes either into the
configured store, which must hold none of the backup's scopes: a SQLite backup is copied in through
:func:`.migrate.migrate`, a dump through :func:`.load.import_dump`, both checked before writing.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, short
from ..stores.base import Store
from ..stores.sqlite import SQLiteStore
from .export import export_dump
from .load import import_dump
from .migrate import migrate

SQLITE_HEADER = b"SQLite format 3\x00"

NOT_A_SNAPSHOT = (
    "a dump read a page at a time while writers went on, not a snapshot: every write acknowledged "
    "before the backup began is in it; one that committed meanwhile may be in it, in part (left_out "
    "counts the references it lost). For a point-in-time copy of a live Neo4j, use its own tools "
    "(docs: Operators, Backups)"
)


def _path(value: Any, what: str) -> Path:
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise InvalidInputError(f"{what} is a file path, got {short(value)}")
    return Path(value)


def backup(store: Store, target: str | os.PathLike[str], *, embedder: str, dims: int,
           ontology: dict[str, Any]) -> dict[str, Any]:
    """Write a backup of the whole ``store`` to the new file ``target`` (never over an existing one,
    never half written). The result says which kind it is and whether it is a snapshot."""
    path = _path(target, "the backup target")
    if path.exists():
        raise InvalidInputError(f"{os.fspath(path)!r} exists; a backup is written to a new file")
    if not path.parent.is_dir():
        raise InvalidInputError(f"{os.fspath(path.parent)!r} is not a folder to write the backup into")
    began = time.perf_counter()
    done = store.backup(path)
    if done is not None:
        return {**done, "snapshot": True}
    dumped = export_dump(store, path, scope=None, embedder=embedder, dims=dims, ontology=ontology)
    return {"format": "jsonl", "path": str(path), "bytes": path.stat().st_size,
            "seconds": round(time.perf_counter() - began, 3), "snapshot": False, "note": NOT_A_SNAPSHOT, **dumped}


def backup_format(path: Path) -> str:
    """``sqlite`` or ``jsonl``, from the file's first bytes."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise InvalidInputError(f"cannot read the backup {os.fspath(path)!r}: {exc.strerror or exc}") from None
    return "sqlite" if head == SQLITE_HEADER else "jsonl"


def restore(store: Store, source: str | os.PathLike[str], *, embedder: str, dims: int,
            batch: int = 1000) -> dict[str, Any]:
    """Copy the backup at ``source`` into ``store`` (opened with ``embedder``/``dims``, the backup's)."""
    path = _path(source, "the backup to restore")
    kind = backup_format(path)
    began = time.perf_counter()
    if kind == "jsonl":
        result = import_dump(store, path, embedder=embedder, dims=dims, batch=batch)
    else:
        result = _from_sqlite(store, path, embedder, dims, batch)
    return {"format": kind, "path": str(path), **result, "seconds": round(time.perf_counter() - began, 3)}


def _from_sqlite(store: Store, path: Path, embedder: str, dims: int, batch: int) -> dict[str, Any]:
    """Open a private copy of the backup (opening a store may write to it; the backup stays as it
    was) and migrate it in."""
    with tempfile.TemporaryDirectory(prefix="graphmem-restore-") as folder:
        copy = Path(folder) / "backup.db"
        try:
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as original, \
                    closing(sqlite3.connect(copy)) as target:
                original.backup(target)
        except sqlite3.Error as exc:
            raise InvalidInputError(f"{os.fspath(path)!r} is not a readable SQLite backup: {exc}") from None
        source = SQLiteStore(copy)
        try:
            source.open(embedder, dims)
            return migrate(source, store, checkpoint=Path(folder) / "restore.checkpoint.json", batch=batch,
                           route="restore")
        finally:
            source.close()
