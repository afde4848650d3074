"""``update``: a memory's new text and/or metadata, and its graph facts made again from the new text,
in one transaction that the store re-checks at commit (re-planned on a conflict)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import NotFoundError, short
from ..models import EventType, Keep, MemoryRecord, Scope, new_id, text_hash, utcnow
from ..stores.base import MemoryPatch
from .ingest import Ingestor
from .planner import GraphPlan
from .retry import replanning


def update(ingestor: Ingestor, memory_id: str, scope: Scope, text: str | None, metadata: dict[str, Any] | None,
           *, infer: bool, expiry: datetime | Keep | None = Keep.KEEP) -> dict[str, Any]:
    """Apply an already validated change. The new text is extracted once; its facts are planned
    from the store's state at each attempt, replacing what the old text alone supported.
    ``expiry``: the new ``expires_at`` (``None`` clears it)."""
    parts = ingestor.parts
    store = parts.store
    patch = MemoryPatch(
        updated_at=utcnow(), event_id=new_id(), text=text,
        hash=text_hash(text) if text is not None else None,
        vector=parts.embedder.embed_one(text) if text is not None else None,
        metadata=metadata, max_metadata_bytes=parts.config.limits.max_metadata_bytes,
        expires_at=expiry,
    )
    replan = None
    if text is not None and infer:
        current = store.get(memory_id, scope)
        if current is None:
            raise _missing(memory_id, scope)
        replan = ingestor.relink(current.scope, current, text, patch.updated_at)

    def attempt() -> tuple[MemoryRecord | None, GraphPlan | None]:
        relink = replan() if replan is not None else None
        return store.update(memory_id, scope, patch, relink.change if relink else None), relink

    record, relink = replanning(parts.config.store.conflict_retries, attempt, key=(id(store), *scope.items()))
    if record is None:
        raise _missing(memory_id, scope)
    relations = relink.summary() if relink else {"added": [], "superseded": [], "ended": [], "rejected": []}
    return {**record.public(), "event": EventType.UPDATE.value, "relations": relations}


def _missing(memory_id: str, scope: Scope) -> NotFoundError:
    return NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
