"""Copying one store into another (SQLite to Neo4j and back): batched, resumable, verified.

Each page of rows (:mod:`.pages`) is one transaction on the target, and after it commits the
position is saved to a checkpoint file (written to a sibling and renamed, so it is whole or the
previous one). A run that stops (killed, the server gone, an exception from ``on_batch``) is
continued by running it again with the same checkpoint: it starts after the last saved page. The
one page that may have committed after the last save is recognised by its ids on the target and
not written twice. At the end the row counts of every kind are compared, and the checkpoint removed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import DumpConflictError, InvalidInputError, StoreError
from ..models import Scope
from ..stores.base import DUMP_KINDS, Store
from .pages import Page, Position, pages, row_ids


@dataclass(frozen=True)
class BatchDone:
    """What ``on_batch`` is told after each committed (and checkpointed) page."""

    number: int
    """1-based, counted over the whole migration (resumed runs continue the count)."""
    kind: str
    rows: int
    copied: dict[str, int]


def migrate(source: Store, target: Store, *, checkpoint: str | os.PathLike[str], scope: Scope | None = None,
            batch: int = 1000, progress: bool = False, console: Console | None = None,
            on_batch: Callable[[BatchDone], None] | None = None, route: str = "") -> dict[str, Any]:
    """Copy every row of ``source`` (of the exact scopes ``scope`` contains; ``None``: all) into
    ``target`` (both opened, with the same embedder).

    A new migration needs a target that holds none of those scopes; with an existing
    ``checkpoint`` it continues the one that wrote it. Returns the rows copied per kind, the
    counts compared, and the time. ``route`` names the two stores: a checkpoint written for
    another route (or scope) is refused rather than continued into the wrong store."""
    if batch < 1:
        raise InvalidInputError(f"batch must be at least 1, got {batch}")
    path = Path(checkpoint)
    state = _load(path)
    resumed = state is not None
    if state is None:
        scopes = [s for s in source.dump_scopes() if scope is None or scope.contains(s.user_id, s.agent_id, s.run_id)]
        held = sorted(set(scopes) & set(target.dump_scopes()), key=lambda s: str(s.items()))
        if held:
            raise DumpConflictError(f"the target store already holds scope {dict(held[0].items())} (and "
                                    f"{len(held) - 1} more of the {len(scopes)} to copy); migrate copies into scopes "
                                    "the target does not have (continue an interrupted migration with its "
                                    "checkpoint); nothing was written")
        state = {"route": route, "scope": dict(scope.items()) if scope else None,
                 "scopes": [dict(s.items()) for s in scopes], "position": None,
                 "copied": dict.fromkeys(DUMP_KINDS, 0), "batches": 0, "seconds": 0.0}
        _save(path, state)
    elif state.get("route") != route or state.get("scope") != (dict(scope.items()) if scope else None):
        raise InvalidInputError(f"the checkpoint {path} belongs to another migration ({state.get('route')!r}, "
                                f"scope {state.get('scope')}); give this one its own --checkpoint, or delete that "
                                "file once its migration is no longer wanted")
    scopes = [Scope(**s) for s in state["scopes"]]
    start = Position(**state["position"]) if state["position"] else None
    copied: dict[str, int] = state["copied"]
    totals = _counts(source, scopes)
    began = time.perf_counter()
    with _bars(progress, console, totals, copied) as bars:
        first = resumed
        for page in pages(source, scopes, batch, start):
            if not (first and _landed(target, page)):
                target.restore(page.scope, page.rows)
            first = False
            copied[page.kind] += page.size
            state["position"] = asdict(page.position)
            state["batches"] += 1
            state["seconds"] += time.perf_counter() - began
            began = time.perf_counter()
            _save(path, state)
            if bars is not None:
                bars.update(bars.task_ids[DUMP_KINDS.index(page.kind)], completed=copied[page.kind])
            if on_batch is not None:
                on_batch(BatchDone(state["batches"], page.kind, page.size, dict(copied)))
    state["seconds"] += time.perf_counter() - began
    after = _counts(target, scopes)
    if after != totals:
        diff = ", ".join(f"{k}: source {totals[k]}, target {after[k]}" for k in DUMP_KINDS if totals[k] != after[k])
        raise StoreError(f"the migrated store's counts differ from the source's ({diff}); the checkpoint "
                         f"{path} is kept: was either store written to during the migration?")
    path.unlink(missing_ok=True)
    seconds = round(float(state["seconds"]), 3)
    return {"copied": copied, "counts": after, "batches": state["batches"], "resumed": resumed, "seconds": seconds,
            "memories_per_s": round(totals["memory"] / seconds, 1) if seconds else None}


def _counts(store: Store, scopes: list[Scope]) -> dict[str, int]:
    total = dict.fromkeys(DUMP_KINDS, 0)
    for s in scopes:
        for kind, n in store.dump_counts(s).items():
            total[kind] += n
    return total


def _landed(target: Store, page: Page) -> bool:
    """Whether the page committed before the run stopped (its ids are on the target)."""
    for kind, ids in row_ids(page.rows).items():
        if ids:
            return bool(target.taken_ids(kind, ids[:1]))
    return False


def _load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if state.get("format") != 1:
            raise ValueError("unknown format")
        return state
    except (ValueError, OSError) as exc:
        raise InvalidInputError(f"the migration checkpoint {path} cannot be read ({exc}); delete it to start over "
                                "into an empty target") from None


def _save(path: Path, state: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps({**state, "format": 1}), encoding="utf-8")
    os.replace(partial, path)


class _NoBars:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _bars(show: bool, console: Console | None, totals: dict[str, int], copied: dict[str, int]) -> Any:
    if not show:
        return _NoBars()
    bars = Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console or Console(stderr=True))
    for kind in DUMP_KINDS:
        bars.add_task(kind, total=totals[kind], completed=copied[kind])
    return bars
