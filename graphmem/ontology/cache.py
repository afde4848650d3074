"""The compiled ontology on disk, so a fresh process does not run owlrl again for files it has seen.

Compiling means parsing the Turtle files, following imports and computing the OWL 2 RL closure of the
TBox; the result is a few tables of strings (classes, relations, surface-form indexes, problems), so
it is kept as JSON: nothing in the file is executed, and a file that does not read back as exactly
that shape is ignored (the ontology is compiled again and the file rewritten).

An entry is found by a key over the cache format, graphmem's version, the bytes of the modules that
compile, the rdflib, owlrl and pySHACL installs, the given files (path as given, resolved path,
bytes) and every ``*.ttl`` next to them (where local ``owl:imports`` resolve). The entry then lists
every file the compile read, imports included, with its SHA-256; a hit re-reads and compares them.
A changed byte anywhere is a miss.

The folder is ``ontology`` in graphmem's cache folder (:mod:`graphmem.cachedir`); it is created
0700 and entries 0600, like the store's files. Writing is best effort: a read-only home only costs the compile.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from .. import cachedir
from ..version import __version__

CACHE_FORMAT: Final = 1
"""Bump when what an entry holds changes meaning."""
KEEP_ENTRIES: Final = 32
"""Entries kept per folder (newest first): each edit of a shapes file leaves one behind."""

log = logging.getLogger("graphmem.ontology.cache")
_CODE_DIR: Final = Path(__file__).resolve().parent
_COMPILER: Final = ("cache.py", "diagnostics.py", "model.py", "naming.py", "sources.py")
"""The modules whose code decides what a compiled entry holds."""


def cache_dir() -> Path | None:
    """Where entries live, or ``None`` when caching is off or there is no home to put them in."""
    base = cachedir.root()
    return base / "ontology" if base is not None else None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _install_stamp(module: str) -> str:
    """Identifies an installed package without importing it (owlrl's import is what the cache avoids)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return f"{module}:missing"
    origin = spec.origin if spec else None
    if not origin:
        return f"{module}:missing"
    try:
        st = os.stat(origin)
    except OSError:
        return f"{module}:{origin}"
    return f"{module}:{origin}:{st.st_size}:{st.st_mtime_ns}"


def _code_digest() -> str:
    h = hashlib.sha256()
    for name in _COMPILER:
        with contextlib.suppress(OSError):
            h.update(name.encode() + b"\0" + (_CODE_DIR / name).read_bytes() + b"\0")
    return h.hexdigest()


def make_key(ontology: Sequence[Path], shapes: Sequence[Path], read: dict[Path, bytes]) -> str:
    """The entry key for these expanded paths; ``read`` gets every file's bytes (reused by the caller)."""
    h = hashlib.sha256()

    def put(*parts: object) -> None:
        for p in parts:
            h.update(str(p).encode() + b"\0")

    put("format", CACHE_FORMAT, "graphmem", __version__, _code_digest(), _install_stamp("rdflib"),
        _install_stamp("owlrl"), _install_stamp("pyshacl"))
    folders: dict[Path, None] = {}
    for role, paths in (("ontology", ontology), ("shapes", shapes)):
        put(role, len(paths))
        for p in paths:
            resolved = p.resolve()
            put(p, resolved, sha256(_bytes(resolved, read)))
            folders.setdefault(resolved.parent, None)
    for folder in folders:
        put("folder", folder)
        for f in sorted(folder.glob("*.ttl")):
            if f.is_file():
                put(f.name, sha256(_bytes(f.resolve(), read)))
    return h.hexdigest()


def _bytes(path: Path, read: dict[Path, bytes]) -> bytes:
    if path not in read:
        read[path] = path.read_bytes()
    return read[path]


def load(folder: Path, key: str) -> dict[str, Any] | None:
    """The entry stored under ``key``, or ``None`` (missing, unreadable, not JSON, another key)."""
    try:
        data = json.loads((folder / f"{key}.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.debug("ignoring unreadable ontology cache entry %s: %s", key, exc)
        return None
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("key") != key:
        return None
    return data


def store(folder: Path, key: str, entry: dict[str, Any]) -> None:
    """Write ``entry`` atomically (a temporary file renamed over the old one); failures are logged only."""
    payload = json.dumps({**entry, "format": CACHE_FORMAT, "key": key}, ensure_ascii=False, separators=(",", ":"))
    if cachedir.write(folder / f"{key}.json", payload.encode("utf-8")):
        _prune(folder.glob("*.json"))


def _prune(entries: Iterable[Path]) -> None:
    dated = []
    for e in entries:
        with contextlib.suppress(OSError):
            dated.append((e.stat().st_mtime_ns, e))
    for _, old in sorted(dated, reverse=True)[KEEP_ENTRIES:]:
        with contextlib.suppress(OSError):
            old.unlink()
