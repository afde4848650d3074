"""The folder graphmem keeps derived files in (the compiled ontology, embedding models and their
runtime graphs, the vectors of an ontology's names): ``$GRAPHMEM_CACHE_DIR`` (``off`` turns it off),
else ``$XDG_CACHE_HOME/graphmem`` or ``~/.cache/graphmem``. Everything in it can be deleted; it is
made again when needed."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from .private_files import PRIVATE_FILE, make_private_dirs

log = logging.getLogger("graphmem")

_OFF = ("", "off", "0", "false", "no")


def root() -> Path | None:
    """The cache folder, or ``None`` when caching is off or there is no home to put it in."""
    env = os.environ.get("GRAPHMEM_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    except RuntimeError:  # no home directory known
        return None
    return base / "graphmem"


def write(path: Path, data: bytes) -> bool:
    """Write ``path`` atomically (a temporary file renamed over it), folders 0700 and the file 0600 like
    the store's; a failure (read-only or full disk) is logged and returns ``False``: a cache is best
    effort."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        make_private_dirs(path.parent)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), PRIVATE_FILE)
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("could not write the cache file %s: %s", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False
    return True
