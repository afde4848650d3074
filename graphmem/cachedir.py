"""The folder graphmem keeps derived files in (the compiled ontology, embedding models and their
runtime graphs, the vectors of an ontology's names): ``$GRAPHMEM_CACHE_DIR`` (``off`` turns it off),
else ``$XDG_CACHE_HOME/graphmem`` or ``~/.cache/graphmem``. Everything in it can be deleted; it is
made again when needed."""

from __future__ import annotations

import os
from pathlib import Path

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
