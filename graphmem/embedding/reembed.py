"""Moving a store to another embedder: every memory text and entity name embedded again, in batches,
then one switch.

Why staged: a reader must never see vectors of two models at once (their cosines mean nothing
together), and a failure halfway must leave a store that still searches. So new vectors go beside
the live ones batch by batch (the store's ``reembed_*`` methods), and one transaction swaps all of
them and the store's recorded embedder, only once nothing is left unstaged. A run that fails keeps
what it staged; running it again with the same embedder continues from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import EmbeddingError
from ..models import Scope
from ..stores.base import REEMBED_KINDS, Store
from .base import Embedder

ROUNDS = 3
"""Passes over rows written while a run stages (each pass stages what changed during the last)."""


@dataclass(frozen=True)
class ReembedProgress:
    """Reported after every staged batch: ``kind`` is ``memory`` or ``entity``."""

    kind: str
    done: int
    total: int


def reembed(store: Store, embedder: Embedder, scope: Scope | None, *, batch: int,
            progress: Callable[[ReembedProgress], None] | None = None) -> dict[str, Any]:
    """Stage vectors of ``embedder`` for the rows of ``scope`` (``None``: the whole store) and switch
    when no row of the store is left without one. Returns what was done; ``switched`` is false when
    other scopes still hold rows to re-embed (run it for them, or for the whole store)."""
    store.reembed_start(embedder.name, embedder.dims)
    staged = dict.fromkeys(REEMBED_KINDS, 0)
    left = 0
    for _ in range(ROUNDS):
        fresh = 0
        for kind in REEMBED_KINDS:
            n = _stage(store, embedder, kind, scope, batch, progress)
            staged[kind] += n
            fresh += n
        left = store.reembed_finish(embedder.name, embedder.dims)
        if not left or not fresh:  # switched, or what is left lies outside the scope
            break
    return {"embedder": embedder.name, "dims": embedder.dims, "memories": staged["memory"],
            "entities": staged["entity"], "switched": left == 0, "left": left}


def _stage(store: Store, embedder: Embedder, kind: str, scope: Scope | None, batch: int,
           progress: Callable[[ReembedProgress], None] | None) -> int:
    total = store.reembed_count(kind, scope)
    done, after = 0, None
    while rows := store.reembed_pending(kind, scope, after, batch):
        vectors = embedder.embed([r.text for r in rows])
        if vectors.shape != (len(rows), embedder.dims):
            raise EmbeddingError(f"embedder {embedder.name!r} returned vectors of shape {vectors.shape} for "
                                 f"{len(rows)} texts; expected {embedder.dims} dimensions each")
        store.reembed_stage(kind, rows, vectors)
        done, after = done + len(rows), rows[-1].key
        if progress is not None:
            progress(ReembedProgress(kind, done, max(total, done)))
    return done
