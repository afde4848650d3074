"""From triples (given by a caller or extracted) to a checked change of the knowledge graph.

The order matters and follows the write path of the specification:

1. resolve every relation and type name against the ontology (unknown names stay data: they reach
   the guard, which rejects them, and the quarantine; they never become query text);
2. resolve entity names inside the write scope (normalized name and aliases), creating the rest;
3. resolve conflicts: a new value of an ``owl:FunctionalProperty`` closes the subject's open edge with
   another value, so the guard judges the state *after* the update;
4. let the guard judge the new triples against the stored context of their entities;
5. turn accepted triples into facts with provenance and validity, rejected ones into quarantine
   entries with their SHACL reasons. Closing an old edge only happens when its replacement passed.

Nothing here writes: the result is a :class:`~graphmem.stores.base.GraphWrite` that the caller
commits in one transaction together with the memories.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from ..embedding import Embedder
from ..errors import InvalidInputError, clip, short
from ..models import Entity, EventType, HistoryEvent, QuarantineEntry, Relation, Scope, clean_text, json_time, norm_name
from ..models import parse_datetime as _parse_dt
from ..ontology import Guard, Ontology, Triple, TypedLiteral, Verdict
from ..stores.base import Expectations, GraphContext, GraphWrite, NewEntity, Store, entity_state

Literal_ = str | int | float | bool
MAX_NAME_CHARS = 1000
"""Default bound of a triple's names (``limits.max_entity_chars``; validation context ``max_chars``)."""
_INT64 = 2**63


def _name_limit(info: ValidationInfo) -> int:
    context = info.context if isinstance(info.context, dict) else {}
    limit = context.get("max_chars", MAX_NAME_CHARS)
    return limit if isinstance(limit, int) else MAX_NAME_CHARS


class TripleInput(BaseModel):
    """One caller-supplied fact. Names may be IRIs, prefixed or local names, labels or synonyms.

    Every field is checked here, whoever made the triple (caller, extractor, repair round): an entity
    name is text like a memory's (valid Unicode, no control characters, not empty, bounded), and a
    literal target a value both backends store the same way.
    """

    model_config = ConfigDict(extra="forbid")

    source: str
    relation: str
    target: Literal_
    source_type: str | None = None
    target_type: str | None = None
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    """When the fact stopped holding, if it is stated as ended ("I left Acme in May"): the open stored
    fact is closed then, or the fact is written closed (history, not a current value)."""

    @field_validator("source", "relation", "source_type", "target_type")
    @classmethod
    def _text(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        return clean_text(value, what=info.field_name or "triple field", max_chars=_name_limit(info),
                          setting="limits.max_entity_chars")

    @field_validator("target")
    @classmethod
    def _target(cls, value: Literal_, info: ValidationInfo) -> Literal_:
        """An entity name (text), or a literal: a boolean, a 64-bit integer or a finite float."""
        if isinstance(value, str):
            return clean_text(value, what="target", max_chars=_name_limit(info), setting="limits.max_entity_chars")
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not -_INT64 <= value < _INT64:
                raise ValueError(f"target {short(value)} does not fit in 64 bits")
            return int(value)
        if not math.isfinite(value):
            raise ValueError(f"target {value!r} is not a finite number")
        return float(value)

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _valid_time(cls, value: datetime | str | None, info: ValidationInfo) -> datetime | str | None:
        """Kept as given (the quarantine shows what was said), but it must be a time both backends hold."""
        if value is not None:
            _parse_dt(value, what=info.field_name or "time")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TripleInput:
        if self.valid_from is not None and self.valid_to is not None and \
                _parse_dt(self.valid_to, what="valid_to") < _parse_dt(self.valid_from, what="valid_from"):
            raise ValueError(f"valid_to {self.valid_to} is before valid_from {self.valid_from}")
        return self

    def as_given(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def parse_triples(triples: object, *, max_chars: int = MAX_NAME_CHARS,
                  max_count: int | None = None) -> list[TripleInput]:
    """A caller's ``triples`` argument, each checked (names at most ``max_chars``, at most
    ``max_count`` triples), with short messages naming the triple and field at fault."""
    if triples is None:
        return []
    if not isinstance(triples, Sequence) or isinstance(triples, str | bytes | bytearray):
        raise InvalidInputError(f"triples must be a list of dicts with source, relation and target, "
                                f"got {type(triples).__name__}")
    if max_count is not None and len(triples) > max_count:
        raise InvalidInputError(f"{len(triples)} triples in one add; the limit is {max_count} (limits.max_batch)")
    out = []
    for i, t in enumerate(triples):
        if isinstance(t, TripleInput):
            t = t.model_dump()  # checked again: it may have been built without validation, or other limits
        if not isinstance(t, dict):
            raise InvalidInputError(f"triples[{i}] must be a dict with source, relation and target, "
                                    f"got {type(t).__name__}")
        try:
            out.append(TripleInput.model_validate(t, context={"max_chars": max_chars}))
        except ValidationError as exc:
            raise InvalidInputError(f"triples[{i}] is not a valid triple: {triple_problems(exc)}") from None
    return out


def triple_problems(exc: ValidationError) -> str:
    """pydantic's errors in one short line (its own text repeats every input value in full)."""
    seen: dict[str, str] = {}
    for e in exc.errors(include_url=False):
        loc = [str(p) for p in e.get("loc", ())]
        field_name = loc[0] if loc else "triple"
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        seen.setdefault(field_name, clip(msg))  # a union reports each branch: keep the first
    return "; ".join(f"{k}: {v}" for k, v in seen.items())


@dataclass
class GraphPlan:
    """What :func:`plan` decided: a change to commit, and a summary for the caller."""

    change: GraphWrite = field(default_factory=GraphWrite)
    added: list[dict[str, Any]] = field(default_factory=list)
    superseded: list[dict[str, Any]] = field(default_factory=list)
    ended: list[dict[str, Any]] = field(default_factory=list)
    """Stored facts closed because the text said they ended."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    def summary(self) -> dict[str, list[dict[str, Any]]]:
        return {"added": self.added, "superseded": self.superseded, "ended": self.ended, "rejected": self.rejected}


Mention = tuple[str, str | None, Sequence[str]]
"""An entity a memory names without a fact: (name, class or ``None``, ids of the memories naming it)."""


@dataclass
class PlanRequest:
    """What to plan: ``triples``, each supported by the memories of ``supports`` (its provenance).

    ``mentions``: entities stored with their MENTIONS edges even when no accepted fact uses them
    (the graph search walks memory -> entity -> memory, so a name two memories share links them);
    only a class the ontology knows is kept, nothing validates a mention-only entity's class.
    ``aliases``: other names of an entity, keyed by the normalized name used in the triples.
    ``default_time``: a fact's ``valid_from`` when it gives none (else ``now``); ``times``, when given,
    one such default per triple (``add_many`` plans items of several times at once). ``replacing``: a
    memory being re-linked after an update; facts only it supports are about to go, so they are
    neither context for the guard nor conflicts to close.
    """

    scope: Scope
    triples: Sequence[TripleInput]
    supports: Sequence[Sequence[str]]
    now: datetime
    default_time: datetime | None = None
    times: Sequence[datetime | None] = ()
    mentions: Sequence[Mention] = ()
    aliases: dict[str, list[str]] = field(default_factory=dict)
    replacing: str | None = None
    vectors: Mapping[str, Any] = field(default_factory=dict)
    """Embeddings made already, by text: ``add`` embeds the names a read found unknown in its one
    embedding call (see :meth:`GraphPlanner.entity_names`), so resolving them embeds nothing."""

    @classmethod
    def shared(cls, scope: Scope, triples: Sequence[TripleInput], memory_ids: Sequence[str], now: datetime,
               **options: Any) -> PlanRequest:
        """Every triple supported by the same memories."""
        return cls(scope, triples, [list(memory_ids)] * len(triples), now, **options)


@dataclass
class _Item:
    given: TripleInput
    relation: str | None
    """Resolved relation IRI."""
    is_literal: bool
    source: Entity
    target: Entity | None
    literal: TypedLiteral | None
    valid_from: datetime
    memory_ids: list[str]
    closes: list[Relation] = field(default_factory=list)
    valid_to: datetime | None = None
    ended: bool = False
    """``valid_to`` was stated: the fact is said to have ended, not closed by a later value."""
    quarantine_id: str | None = None
    twin: str | None = None
    """Id of the stored open fact this item states again (maybe closed by a later value of the same
    write): the store merges it there by id, so the summary and the write name that id."""
    merged: bool = False
    """A functional value said again before the next one: the earlier statement's fact holds it."""


class _Resolver:
    """Maps entity names to entities of the write scope, in this order: normalized name or alias of
    a stored entity; an alias given with the batch; embedding similarity to a stored entity of a
    compatible type (``dedup.entity_similarity``; the name then becomes an alias); else a new entity."""

    def __init__(self, planner: GraphPlanner, scope: Scope, now: datetime, names: dict[str, str],
                 declared: dict[str, str], aliases: dict[str, list[str]], known: Mapping[str, Any]) -> None:
        self.planner, self.scope, self.now, self.known = planner, scope, now, known
        self.aliases = {k: [a for a in v if norm_name(a) != k] for k, v in aliases.items()}
        self.by_id: dict[str, Entity] = {}
        self.key_to_id: dict[str, str] = {}
        self.new_ids: set[str] = set()
        self.grown: set[str] = set()
        self._vectors: dict[str, Any] = {}
        lookup = set(names) | {norm_name(a) for v in self.aliases.values() for a in v}
        stored = planner.store.find_entities(scope, sorted(lookup))
        for k, e in stored.items():
            self.by_id.setdefault(e.id, e)
            self.key_to_id[k] = e.id
        for k, alias_list in list(self.aliases.items()):
            hit = next((self.key_to_id[norm_name(a)] for a in alias_list if norm_name(a) in self.key_to_id), None)
            if k not in self.key_to_id and hit is not None:
                self.key_to_id[k] = hit
                if k in names:  # "Kari" found through its alias "u-17": the stored entity learns "Kari"
                    alias_list.append(names[k])
        self._similar([k for k in names if k not in self.key_to_id], names, declared)

    def _similar(self, keys: list[str], names: dict[str, str], declared: dict[str, str]) -> None:
        threshold = self.planner.similarity
        if not keys:
            return
        vectors = np.stack(self.vectors([names[k] for k in keys]))
        if threshold >= 1.0:
            return
        onto = self.planner.ontology
        for k, hit in zip(keys, self.planner.store.similar_entities(self.scope, vectors), strict=True):
            if hit is None or hit[1] < threshold:
                continue
            entity, _ = hit
            typ = onto.resolve_class(declared[k]) if k in declared else None
            if typ and entity.classes and not any(
                    onto.is_subclass(typ, c) or onto.is_subclass(c, typ) for c in entity.classes):
                continue  # a similar name of another kind of thing
            self.by_id.setdefault(entity.id, entity)
            self.key_to_id[k] = entity.id
            self.aliases.setdefault(k, []).append(names[k])

    def vectors(self, names: list[str]) -> list[Any]:
        """Each name's embedding: given with the request, made before, or made now in one call."""
        self._vectors.update((n, self.known[n]) for n in names if n not in self._vectors and n in self.known)
        missing = list(dict.fromkeys(n for n in names if n not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self.planner.embedder.embed(missing), strict=True))
        return [self._vectors[n] for n in names]

    def entity(self, name: str, declared: str | None, implied: Sequence[str]) -> Entity:
        key = norm_name(name)
        eid = self.key_to_id.get(key)
        if eid is None:
            scope = self.scope
            ent = Entity(name=name, aliases=list(self.aliases.get(key, [])), user_id=scope.user_id,
                         agent_id=scope.agent_id, run_id=scope.run_id, created_at=self.now)
            eid = ent.id
            self.by_id[eid], self.key_to_id[key] = ent, eid
            self.new_ids.add(eid)
        ent = self.by_id[eid]
        update: dict[str, Any] = {}
        extra = [a for a in self.aliases.get(key, []) if a not in ent.aliases and norm_name(a) != norm_name(ent.name)]
        if extra:
            update["aliases"] = [*ent.aliases, *extra]
        onto = self.planner.ontology
        cls = onto.resolve_class(declared) if declared else None
        untyped = self.planner.type_untyped and not ent.classes
        wanted = [cls or declared] if declared else (list(implied) if untyped else [])
        missing = [c for c in wanted if c and c not in ent.classes]
        if missing:
            update["classes"] = [*ent.classes, *missing]
        if update:
            if eid not in self.new_ids:
                update["updated_at"] = self.now
                self.grown.add(eid)
            ent = self.by_id[eid] = ent.model_copy(update=update)
        return ent


class GraphPlanner:
    """Plans graph changes for one scope. Cheap to create; holds no state between calls."""

    def __init__(self, ontology: Ontology, guard: Guard, store: Store, embedder: Embedder, *,
                 type_untyped: bool = True, similarity: float = 1.0) -> None:
        self.ontology = ontology
        self.guard = guard
        self.store = store
        self.embedder = embedder
        self.type_untyped = type_untyped
        self.similarity = similarity

    def entity_names(self, triples: Sequence[TripleInput],
                     mentioned: Sequence[tuple[str, str | None]]) -> dict[str, str]:
        """Normalized key -> name as first written, of every entity :meth:`plan` resolves for these
        triples and (name, type) mentions. ``add`` reads which are stored before it embeds, so the
        unknown ones, which resolving embeds, join its memories' one embedding call: a local model
        packs them into the memories' rows (:mod:`graphmem.embedding.packing`), a few tokens each
        instead of a model call of their own."""
        named = [(name, None) for name, _ in mentioned if norm_name(name)]
        return self._named(triples, [self._kind(t.relation) for t in triples], named)[0]

    @staticmethod
    def _named(triples: Sequence[TripleInput], kinds: Sequence[str | None], mentioned: Sequence[tuple[str, str | None]],
               ) -> tuple[dict[str, str], dict[str, str]]:
        """Entity names (key -> name as first written) and declared classes (key -> class)."""
        declared: dict[str, str] = {}
        names: dict[str, str] = {}
        for t, kind in zip(triples, kinds, strict=True):
            named = [(t.source, t.source_type)]
            if kind != "datatype":
                named.append((str(t.target), t.target_type))
            for name, typ in named:
                names.setdefault(norm_name(name), name)
                if typ:
                    declared.setdefault(norm_name(name), typ)
        for name, cls in mentioned:
            names.setdefault(norm_name(name), name)
            if cls:
                declared.setdefault(norm_name(name), cls)
        return names, declared

    def plan(self, req: PlanRequest) -> GraphPlan:
        """The checked change for ``req``: entities resolved, conflicts closed, the guard's verdicts,
        accepted facts and quarantined ones. Reads the store; writes nothing."""
        result = GraphPlan()
        if not req.triples and not req.mentions:
            return result
        resolver, items, mentioned = self._resolve(req)
        verdicts, fingerprint = self._judge(req, items, resolver, result.change.expect)
        result.verdicts = verdicts
        self._compose(req, items, verdicts, fingerprint, mentioned, resolver, result)
        return result

    def _resolve(self, req: PlanRequest) -> tuple[_Resolver, list[_Item], list[Mention]]:
        """Steps 1-2: relations and classes by name, entities by name within the scope."""
        onto = self.ontology
        kinds = [self._kind(t.relation) for t in req.triples]
        mentioned = [(name, onto.resolve_class(typ) if typ else None, ids) for name, typ, ids in req.mentions
                     if norm_name(name)]
        names, declared = self._named(req.triples, kinds, [(name, cls) for name, cls, _ in mentioned])
        resolver = _Resolver(self, req.scope, req.now, names, declared, req.aliases, req.vectors)
        items: list[_Item] = []
        times = req.times or [req.default_time] * len(req.triples)
        for t, kind, support, default in zip(req.triples, kinds, req.supports, times, strict=True):
            rel = onto.relation_info(t.relation)
            until = _parse_dt(t.valid_to, what="valid_to") if t.valid_to is not None else None
            when = _parse_dt(t.valid_from, what="valid_from") if t.valid_from is not None else (default or req.now)
            if until is not None and t.valid_from is None and when > until:
                when = until  # started no later than it ended; the start itself is unknown
            domain = rel.domain if rel and len(rel.domain) == 1 else ()
            src = resolver.entity(t.source, t.source_type, domain)
            if kind == "datatype" and rel is not None:
                dt = rel.range[0] if len(rel.range) == 1 else None
                lit = TypedLiteral(_lexical(t.target), dt)
                items.append(_Item(t, rel.iri, True, src, None, lit, when, list(support),
                                   valid_to=until, ended=until is not None))
            else:
                rng = rel.range if rel and len(rel.range) == 1 else ()
                tgt = resolver.entity(str(t.target), t.target_type, rng)
                items.append(_Item(t, rel.iri if rel else None, False, src, tgt, None, when, list(support),
                                   valid_to=until, ended=until is not None))
        for it in items:  # entities may have gained classes after an item captured them
            it.source = resolver.by_id[it.source.id]
            if it.target is not None:
                it.target = resolver.by_id[it.target.id]
        return resolver, items, mentioned

    def _judge(self, req: PlanRequest, items: list[_Item], resolver: _Resolver,
               expect: Expectations) -> tuple[list[Verdict], str]:
        """Steps 3-4: the stored context of the items' entities (recorded in ``expect`` for the
        store to check at commit), functional conflicts, and the guard's verdict on each item."""
        by_id, new_ids = resolver.by_id, resolver.new_ids
        ends = {e.id for it in items for e in (it.source, it.target) if e is not None}
        stored_ids = [i for i in by_id if i in ends and i not in new_ids]  # not the mention-only ones
        ctx = self.store.graph_context(req.scope, stored_ids) if stored_ids else GraphContext()
        expect.entities.update({i: entity_state(ctx, i) for i in stored_ids})
        if req.replacing is not None:
            ctx.relations = [r for r in ctx.relations if r.memory_ids != [req.replacing]]
        groups, replaced = self._functional_groups(items, ctx)
        # The guard names entities by readable keys (its messages are read by people and LLMs).
        known = {**ctx.entities, **{i: e for i, e in by_id.items() if i in ends}}
        key = readable_keys(known.values())
        context = [self._triple(r, key) for r in ctx.relations if r.id not in replaced]
        types = {key[e.id]: list(e.classes) for e in known.values()}
        fresh_keys = [key[i] for i in new_ids]
        # Values of one functional property are judged one state at a time: the newest of each group
        # with everything else, then each older value (which becomes history) on its own.
        rounds: list[list[int]] = [[i for i in range(len(items)) if not any(i in g[:-1] for g in groups)]]
        depth = max((len(g) for g in groups), default=1)
        rounds += [[g[-1 - d] for g in groups if len(g) > d] for d in range(1, depth)]
        verdicts: list[Verdict | None] = [None] * len(items)
        fingerprint = ""
        for members in rounds:
            if not members:
                continue
            report = self.guard.check([self._guard_triple(items[i], key) for i in members], types, context,
                                      new_entities=fresh_keys)
            fingerprint = report.fingerprint
            for i, v in zip(members, report.verdicts, strict=True):
                verdicts[i] = v
        final = [v for v in verdicts if v is not None]
        self._settle(items, final, groups, ctx)
        closed = {r.id for it in items for r in it.closes}
        open_facts = {(r.source_id, r.relation, (r.target_id, r.value)): r.id for r in ctx.relations
                      if r.valid_to is None and r.id not in closed}
        for it in items:
            if it.twin is None and (it.valid_to is None or it.ended):
                it.twin = open_facts.get((it.source.id, it.relation or "", _object(it)))
        for it in items:  # a closed fact's other end changes too: the store locks it
            for r in it.closes:
                if r.target_id:
                    expect.entities.setdefault(r.target_id, "")
        return final, fingerprint

    def _compose(self, req: PlanRequest, items: list[_Item], verdicts: list[Verdict], fingerprint: str,
                 mentioned: list[Mention], resolver: _Resolver,
                 result: GraphPlan) -> None:
        """Step 5: accepted items become facts, rejected ones quarantine entries; the entities they
        (and the mentions) use are created or updated, with their MENTIONS edges."""
        used: set[str] = set()
        pairs: set[tuple[str, str]] = set()
        change = result.change
        for it, verdict in zip(items, verdicts, strict=True):
            if verdict.accepted:
                self._accept(it, req.scope, req.now, result)
                both = [e.id for e in (it.source, it.target) if e is not None]
                used.update(both)
                pairs.update((m, e) for m in it.memory_ids for e in both)
            else:
                self._reject(it, verdict, req.scope, req.now, fingerprint, result)
        for name, cls, ids in mentioned:
            if ids:
                ent = resolver.entity(name, cls, ())
                used.add(ent.id)
                pairs.update((m, ent.id) for m in ids)
        entities, new_ids = resolver.by_id, resolver.new_ids
        fresh = [e for i, e in entities.items() if i in new_ids and i in used]
        if fresh:
            vectors = resolver.vectors([e.name for e in fresh])
            change.entities = [NewEntity(e, v) for e, v in zip(fresh, vectors, strict=True)]
        change.entity_updates = [e for i, e in entities.items() if i in resolver.grown and i in used]
        change.mentions = sorted(pairs)
        for eid in used - new_ids:  # mention-only stored entities: they must still exist at commit
            change.expect.entities.setdefault(eid, "")

    # -- steps ------------------------------------------------------------------------------------
    def _kind(self, relation: str) -> str | None:
        rel = self.ontology.relation_info(relation)
        return rel.kind if rel else None

    def _functional_groups(self, items: list[_Item], ctx: GraphContext) -> tuple[list[list[int]], set[str]]:
        """Items stating values of one functional property of one subject, oldest first, and the
        subject's stored open edges of that property (left out of the guard's context: with the
        batch's values they form one timeline, each value judged as its own state)."""
        by_key: dict[tuple[str, str], list[int]] = {}
        for i, it in enumerate(items):
            rel = self.ontology.relations.get(it.relation or "")
            if rel is not None and rel.functional and not it.ended:
                by_key.setdefault((it.source.id, rel.iri), []).append(i)
        groups = [sorted(g, key=lambda i: (items[i].valid_from, i)) for g in by_key.values()]
        replaced: set[str] = set()
        for source, relation in by_key:
            replaced.update(r.id for r in ctx.relations
                            if r.source_id == source and r.relation == relation and r.valid_to is None)
        return groups, replaced

    def _settle(self, items: list[_Item], verdicts: list[Verdict], groups: list[list[int]],
                ctx: GraphContext) -> None:
        """Decide validity for each functional group from what was accepted.

        The subject's stored open values and the accepted items form one timeline, oldest first (a
        stored value before an item of the same time). Consecutive equal values are one fact: the
        stored one when the run holds it (its first item then carries the others' provenance to its
        id), else the run's first item. Each fact ends where the next one starts, so a stored value
        is closed by the head of the run after it, and the last run stays open."""
        for group in groups:
            accepted = [i for i in group if verdicts[i].accepted]
            if not accepted:
                continue
            first = items[accepted[0]]
            stored = [r for r in ctx.relations if r.source_id == first.source.id and r.relation == first.relation
                      and r.valid_to is None]
            timeline: list[tuple[datetime | None, tuple[str | None, str | None], Relation | int]] = [
                *((r.valid_from, (r.target_id, r.value), r) for r in stored),
                *((items[i].valid_from, _object(items[i]), i) for i in accepted)]
            timeline.sort(key=lambda e: (e[0] is not None, e[0] or 0, isinstance(e[2], int)))
            runs: list[list[Relation | int]] = []
            for k, (_, obj, element) in enumerate(timeline):
                if k and obj == timeline[k - 1][1]:
                    runs[-1].append(element)
                else:
                    runs.append([element])
            for run, after in itertools.zip_longest(runs, runs[1:]):
                anchor = next((e for e in run if isinstance(e, Relation)), None)
                members = [items[e] for e in run if isinstance(e, int)]
                nxt = after[0] if after else None
                if members:
                    head = members[0]
                    for it in members[1:]:
                        it.merged = True
                        head.memory_ids.extend(m for m in it.memory_ids if m not in head.memory_ids)
                    if anchor is not None:
                        head.twin = anchor.id  # the stored fact holds the run (its end is a close)
                    if nxt is not None:
                        head.valid_to = nxt.valid_from if isinstance(nxt, Relation) else items[nxt].valid_from
                if anchor is not None and isinstance(nxt, int):
                    items[nxt].closes.append(anchor)

    @staticmethod
    def _guard_triple(it: _Item, key: dict[str, str]) -> Triple:
        obj: str | TypedLiteral = it.literal if it.literal is not None else key[it.target.id] if it.target else ""
        return Triple(key[it.source.id], it.relation or it.given.relation, obj)

    @staticmethod
    def _triple(r: Relation, key: dict[str, str]) -> Triple:
        obj: str | TypedLiteral = (
            key.get(r.target_id, r.target_id) if r.target_id is not None else TypedLiteral(r.value or "", r.datatype)
        )
        return Triple(key.get(r.source_id, r.source_id), r.relation, obj)

    def _accept(self, it: _Item, scope: Scope, now: datetime, out: GraphPlan) -> None:
        """One accepted fact; the same open fact stated again in the batch (by the caller and the
        extractor, or by two memories) only adds its provenance, as a stored twin would."""
        assert it.relation is not None
        if it.merged:
            return
        key = (it.source.id, it.relation, _object(it))
        twin = next((r for r in out.change.relations if r.valid_to is None and it.valid_to is None
                     and (r.source_id, r.relation, (r.target_id, r.value)) == key), None)
        if twin is not None:
            twin.memory_ids.extend(m for m in it.memory_ids if m not in twin.memory_ids)
            return
        name = self.ontology.relations[it.relation].name
        if it.ended and it.twin is not None:  # the stored open fact is said to have ended
            assert it.valid_to is not None
            out.change.closes.append((it.twin, it.valid_to))
            out.ended.append({"id": it.twin, "source": it.source.name, "relation": name,
                              "target": it.target.name if it.target else it.literal.value if it.literal else None,
                              "valid_to": json_time(it.valid_to)})
            return
        rel = Relation(
            **({"id": it.twin} if it.twin else {}),
            source_id=it.source.id, relation=it.relation, target_id=it.target.id if it.target else None,
            value=it.literal.value if it.literal else None, datatype=it.literal.datatype if it.literal else None,
            memory_ids=list(it.memory_ids), valid_from=it.valid_from, valid_to=it.valid_to, created_at=now,
            user_id=scope.user_id, agent_id=scope.agent_id, run_id=scope.run_id,
        )
        out.change.relations.append(rel)
        summary = {"id": rel.id, "source": it.source.name, "relation": name,
                   "target": it.target.name if it.target else it.literal.value if it.literal else None}
        out.added.append(summary)
        for old in it.closes:
            out.change.closes.append((old.id, it.valid_from))
            out.superseded.append({"id": old.id, "by": rel.id, "relation": summary["relation"],
                                   "source": it.source.name, "valid_to": json_time(it.valid_from)})
            for mid in it.memory_ids[:1]:
                out.change.events.append(HistoryEvent(
                    memory_id=mid, event=EventType.SUPERSEDE, user_id=scope.user_id, agent_id=scope.agent_id,
                    run_id=scope.run_id, created_at=now, details={"relation_id": old.id, "by": rel.id},
                ))

    def _reject(self, it: _Item, verdict: Verdict, scope: Scope, now: datetime, fingerprint: str,
                out: GraphPlan) -> None:
        triple = {**it.given.as_given(), "relation_iri": it.relation}
        entry = QuarantineEntry(
            triple=triple, reasons=[r.to_dict() for r in verdict.violations], memory_ids=list(it.memory_ids),
            ontology=fingerprint, user_id=scope.user_id, agent_id=scope.agent_id, run_id=scope.run_id,
            created_at=now,
        )
        it.quarantine_id = entry.id
        out.change.quarantine.append(entry)
        out.rejected.append({"quarantine_id": entry.id, **it.given.as_given(),
                             "reasons": [r.text for r in verdict.violations]})
        for mid in it.memory_ids[:1]:
            out.change.events.append(HistoryEvent(
                memory_id=mid, event=EventType.REJECT, user_id=scope.user_id, agent_id=scope.agent_id,
                run_id=scope.run_id, created_at=now, details={"quarantine_id": entry.id},
            ))


def readable_keys(entities: Iterable[Entity]) -> dict[str, str]:
    """Entity id -> its name, made unique with a short id suffix where two names collide."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for e in entities:
        name = e.name if e.name not in taken else f"{e.name} [{e.id[:8]}]"
        taken.add(name)
        out[e.id] = name
    return out


def _object(it: _Item) -> tuple[str | None, str | None]:
    return (it.target.id if it.target else None, it.literal.value if it.literal else None)


def _lexical(value: Literal_) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
