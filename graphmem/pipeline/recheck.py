"""``recheck``: quarantined triples judged again by today's ontology and graph; those that pass are
written, each entry in its own transaction (re-planned on a conflict)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..models import QuarantineEntry, Scope, utcnow
from .parts import Parts
from .planner import PlanRequest, TripleInput, triple_problems
from .retry import replanning


def recheck(parts: Parts, scope: Scope, wanted: set[str] | None) -> dict[str, Any]:
    """Every quarantined entry of ``scope`` (or those whose ids are ``wanted``)."""
    released: list[dict[str, Any]] = []
    still: list[dict[str, Any]] = []
    for entry in parts.store.quarantined(scope):
        if wanted is not None and entry.id not in wanted:
            continue
        try:
            given = TripleInput.model_validate({k: v for k, v in entry.triple.items() if k != "relation_iri"})
        except ValidationError as exc:  # quarantined before today's input checks: it stays
            still.append({"quarantine_id": entry.id, "reasons": [triple_problems(exc)]})
            continue
        _release(parts, entry, given, released, still)
    return {"released": released, "still_rejected": still}


def _release(parts: Parts, entry: QuarantineEntry, given: TripleInput, released: list[dict[str, Any]],
             still: list[dict[str, Any]]) -> None:
    store = parts.store
    exact = Scope(user_id=entry.user_id, agent_id=entry.agent_id, run_id=entry.run_id)
    tries = 0

    def attempt() -> None:
        """Plan and write the entry, unless another recheck released it meanwhile."""
        nonlocal tries
        tries += 1
        if tries > 1 and entry.id not in {q.id for q in store.quarantined(exact)}:
            return
        records = {m: store.get(m, exact) for m in entry.memory_ids}
        live = {m: r.hash for m, r in records.items() if r is not None}
        # a released fact holds from when its memories said it (as it would have, never quarantined)
        said = min((r.event_time or r.created_at for r in records.values() if r is not None), default=None)
        plan = parts.planner.plan(PlanRequest.shared(exact, [given], list(live), utcnow(), default_time=said))
        if plan.rejected:
            still.append({"quarantine_id": entry.id, "reasons": plan.rejected[0]["reasons"]})
            return
        plan.change.released = [entry.id]
        plan.change.expect.memories.update(live)
        store.write(exact, plan.change)
        released.append({"quarantine_id": entry.id, **plan.added[0]})

    replanning(parts.config.store.conflict_retries, attempt, key=(id(store), *exact.items()))
