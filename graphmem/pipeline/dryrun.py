"""Dry run of an ontology change: which stored facts would the new shapes reject?

Stored facts are judged as if they were being written now, one subject at a time in batches, with
every other open fact of the scope as context (so ``sh:maxCount`` still counts them). Nothing is
written; the report lists each fact that would fail, with the SHACL results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import Relation, Scope
from ..ontology import Guard, Triple, TypedLiteral
from ..stores.base import Store
from .planner import readable_keys

BATCH_SUBJECTS = 200


@dataclass
class DryRunReport:
    checked: int = 0
    invalid: list[dict[str, Any]] = field(default_factory=list)
    scopes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "invalid": self.invalid, "scopes": self.scopes}


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _triple(r: Relation, names: dict[str, str]) -> Triple:
    obj: str | TypedLiteral = names[r.target_id] if r.target_id else TypedLiteral(r.value or "", r.datatype)
    return Triple(names[r.source_id], r.relation, obj)


def dry_run(store: Store, guard: Guard, scopes: Sequence[Scope] | None = None) -> DryRunReport:
    report = DryRunReport()
    for scope in scopes if scopes is not None else store.graph_scopes():
        report.scopes += 1
        facts = store.relations(scope, include_closed=False)
        by_subject: dict[str, list[Relation]] = defaultdict(list)
        for f in facts:
            by_subject[f.source_id].append(f)
        for subjects in _batches(sorted(by_subject), BATCH_SUBJECTS):
            ctx = store.graph_context(scope, list(subjects))
            names = readable_keys(ctx.entities.values())
            judged = [f for s in subjects for f in by_subject[s]]
            judged_ids = {f.id for f in judged}

            result = guard.check(
                [_triple(f, names) for f in judged],
                {names[e.id]: list(e.classes) for e in ctx.entities.values()},
                [_triple(r, names) for r in ctx.relations if r.id not in judged_ids],
            )
            report.checked += len(judged)
            for fact, verdict in zip(judged, result.verdicts, strict=True):
                if not verdict.accepted:
                    report.invalid.append({
                        "relation_id": fact.id, "scope": dict(scope.items()),
                        "source": names[fact.source_id], "relation": fact.relation,
                        "target": names[fact.target_id] if fact.target_id else fact.value,
                        "reasons": [r.text for r in verdict.violations],
                    })
    return report
