"""The ``add`` write path: messages (and caller triples) in, one transaction out.

With ``infer=False`` every message is stored as a memory verbatim. With ``infer=True`` the rendered
conversation is chunked by token budget, every chunk is extracted (LLM, or the rule-based extractor
when no LLM is configured), and the extracted memories and triples take the same path as verbatim
ones: deduplication, embedding in one batch, entity resolution, conflict resolution, the SHACL guard
(with one repair round for extracted triples), then a single atomic write. ``add_many`` takes
several requests down the same path: consecutive ones of one scope are planned and written as one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..extraction import (
    ExtractedTriple,
    Extraction,
    ExtractionContext,
    KnownEntity,
    KnownMemory,
    Rejection,
)
from ..models import (
    EventType,
    HistoryEvent,
    MemoryRecord,
    MemoryType,
    Message,
    Scope,
    Usage,
    clean_text,
    new_id,
    norm_name,
    parse_datetime,
    text_hash,
)
from ..stores.base import GraphWrite, NewMemory, Store
from .parts import Parts
from .planner import GraphPlan, PlanRequest, TripleInput
from .retry import replan
from .steps import Call, Embed, Steps, Work, extraction, run

log = logging.getLogger("graphmem")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Draft:
    """A memory about to be written (or found to be a duplicate)."""

    text: str
    role: str | None
    actor_id: str | None
    memory_type: MemoryType
    event_time: datetime | None
    chunk: int | None = None
    id: str | None = None
    event: EventType = EventType.ADD
    hash: str = ""
    """When a duplicate (event NONE) of a stored memory by exact text: that text's hash."""
    item: int = 0
    """The request of an ``add_many`` that said it (its metadata, expiry and result)."""


@dataclass
class Fact:
    triple: TripleInput
    drafts: list[int]
    """Indexes of the drafts that state it (its provenance)."""
    chunk: int | None = None
    time: datetime | None = None
    """Its ``valid_from`` when it gives none: the time of the request that said it."""


@dataclass
class Mention:
    """An extracted entity and the drafts whose text names it: a MENTIONS edge even without a fact."""

    name: str
    type: str | None
    drafts: list[int]


@dataclass
class AddRequest:
    scope: Scope
    messages: list[Message]
    metadata: dict[str, Any]
    memory_type: MemoryType | None
    event_time: datetime | None
    triples: list[TripleInput]
    infer: bool
    expires_at: datetime | None = None
    instructions: str | None = None
    """The caller's extraction instructions for this add (mem0's ``prompt``)."""


@dataclass
class _Extracted:
    drafts: list[Draft] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    counter: str = ""
    aliases: dict[str, list[str]] = field(default_factory=dict)
    mentions: list[Mention] = field(default_factory=list)
    contexts: list[ExtractionContext] = field(default_factory=list)
    extractions: list[Extraction] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    """What the extractor returned that failed validation, with the reason (``add`` reports it)."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    """What the extractor chose not to remember (text, reason, chunk; ``add`` reports it)."""
    usage: Usage = field(default_factory=Usage)


def _word_pattern(name: str) -> re.Pattern[str]:
    """``name`` as whole words, any case: "Ana" is in "Ana's dog", not in "Banana"."""
    return re.compile(r"(?<!\w)" + re.escape(name.strip()) + r"(?!\w)", re.IGNORECASE)


def render(message: Message, text: str) -> str:
    """One conversation line as extractors see it: ``Speaker: text``."""
    return f"{message.name or message.role}: {text}"


class Ingestor:
    """Runs ``add`` for one :class:`~graphmem.memory.Memory` over its :class:`Parts`. Holds no
    per-call state."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.config = parts.config
        self.store = parts.store
        self.embedder = parts.embedder

    def add(self, req: AddRequest, now: datetime) -> dict[str, Any]:
        return run(self.add_steps(req, now), self.parts.engines())

    def add_steps(self, req: AddRequest, now: datetime) -> Steps[dict[str, Any]]:
        """``add`` as steps: extraction waits on the extractor and the store, planning is CPU work
        (:class:`~.steps.Work`), and the plan's write is one store call, so an async run commits
        natively and a cancelled one stops before or after that single write, never inside."""
        return (yield from self.add_many_steps([req], now, itemized=False))[0]

    def add_many_steps(self, reqs: Sequence[AddRequest], now: datetime, *,
                       itemized: bool = True) -> Steps[list[dict[str, Any]]]:
        """Several ``add`` requests: all validated before anything is extracted or written, every
        text embedded in one batch, and consecutive requests of one scope written together, one
        transaction per group of up to :data:`GROUP_MEMORIES` memories (identity and conflicts are
        decided inside each, as for one ``add``). Returns each request's ``add`` result.

        ``itemized``: errors name the request (``items[3]: ...``)."""
        texts = []
        for n, req in enumerate(reqs):
            try:
                texts.append(self._texts(req))
            except InvalidInputError as exc:
                raise (InvalidInputError(f"items[{n}]: {exc}") if itemized else exc) from None
        extracted: list[_Extracted | None] = []
        for req, given in zip(reqs, texts, strict=True):
            extracted.append((yield from self._extract(req, given, now)) if req.infer else None)
        drafts: list[list[Draft]] = []
        for n, (req, given, ex) in enumerate(zip(reqs, texts, extracted, strict=True)):
            mine = ex.drafts if ex is not None else [
                Draft(text, m.role, m.name, req.memory_type or MemoryType.SEMANTIC, req.event_time)
                for m, text in given]
            for d in mine:
                d.item = n
            drafts.append(mine)
        batches = [_Batch.of(reqs, group, drafts, extracted) for group in _groups(reqs, drafts)]
        unique_texts = list(dict.fromkeys(d.text for mine in drafts for d in mine))
        for batch in batches:  # entity names not stored yet: resolving them would embed them in a call of their own
            mentions = batch.extracted.mentions if batch.extracted else []
            if not batch.facts and not mentions:
                continue  # nothing for the graph: the ontology stays unloaded
            named = self.parts.planner.entity_names([f.triple for f in batch.facts],
                                                    [(m.name, m.type) for m in mentions])
            stored = (yield Call.of(Store.find_entities, batch.scope, sorted(named))) if named else {}
            unique_texts += [name for key, name in named.items() if key not in stored]
        unique_texts = list(dict.fromkeys(unique_texts))
        embedded: dict[str, Any] = dict(zip(unique_texts, (yield Embed(unique_texts)), strict=True)) \
            if unique_texts else {}
        outs: list[dict[str, Any]] = []
        for batch in batches:
            plan = yield from self._write(batch, now, embedded)
            outs += batch.results(plan)
        return outs

    def _texts(self, req: AddRequest) -> list[tuple[Message, str]]:
        # the same bound with or without extraction: a longer text is refused whole, never cut
        limit = self.config.limits.max_memory_chars
        texts = [(m, clean_text(m.content, what=f"messages[{i}].content", max_chars=limit))
                 for i, m in enumerate(req.messages) if m.role != "system"]
        if not texts:
            raise InvalidInputError("messages hold only system messages; there is nothing to remember")
        return texts

    def _write(self, batch: _Batch, now: datetime, embedded: dict[str, Any]) -> Steps[GraphPlan]:
        """Plan one group from the store's current state and write it in one transaction; the store
        refuses (ConflictError) when a concurrent writer changed what the plan read, and the whole
        plan is made again. ``embedded``: text -> vector, so nothing is embedded twice."""
        scope, drafts, facts, ex = batch.scope, batch.drafts, batch.facts, batch.extracted
        repairs: dict[Any, list[ExtractedTriple]] = {}

        def prepare() -> tuple[GraphPlan, GraphWrite]:
            """Plan from the store's current state (its reads are optimistic: the write checks them)."""
            for d in drafts:
                d.id, d.event, d.hash = None, EventType.ADD, ""
            vectors = self._deduplicate(scope, drafts, near=batch.infer, embedded=embedded)
            plan = self._plan(scope, drafts, facts, now, ex, embedded)
            if ex is not None and plan.rejected and self.config.llm.repair:
                plan = self._repair(scope, drafts, facts, plan, ex, now, repairs, embedded)
            change = plan.change
            fresh = [(d, v) for d, v in zip(drafts, vectors, strict=True)
                     if d.event is EventType.ADD and v is not None]
            change.memories = [NewMemory(self._record(batch.reqs[d.item], d, now), v) for d, v in fresh]
            change.events[:0] = [
                HistoryEvent(memory_id=d.id or "", event=EventType.ADD, new_memory=d.text, user_id=scope.user_id,
                             agent_id=scope.agent_id, run_id=scope.run_id, actor_id=d.actor_id, role=d.role,
                             created_at=now)
                for d, _ in fresh
            ]
            created = {m.record.id for m in change.memories}
            for d in drafts:  # a stored duplicate's memory is linked to: it must still exist at commit
                if d.event is EventType.NONE and d.id and d.id not in created:
                    change.expect.memories.setdefault(d.id, d.hash or "")
            return plan, change

        def attempt() -> Steps[GraphPlan]:
            planned: tuple[GraphPlan, GraphWrite] = yield Work(prepare)
            plan, change = planned
            if change.memories or change.events or change.relations or change.quarantine:
                yield Call.of(Store.write, scope, change)
            return plan

        return (yield from replan(self.config.store.conflict_retries, attempt, key=(id(self.store), *scope.items())))

    def relink(self, scope: Scope, memory: MemoryRecord, text: str, now: datetime) -> Callable[[], GraphPlan]:
        """Extract an updated memory's new text once; the returned function plans its graph facts
        (to replace the old ones) from the store's current state, again after each write conflict."""
        message = Message(role=memory.role or "user", content=text, name=memory.actor_id)
        req = AddRequest(scope, [message], {}, None, memory.event_time, [], True)
        extracted = run(self._extract(req, [(message, text)], now), self.parts.engines())
        req_plan = PlanRequest.shared(
            scope, [f.triple for f in extracted.facts], [memory.id], now, default_time=memory.event_time,
            replacing=memory.id, aliases=extracted.aliases,
            mentions=[(m.name, m.type, [memory.id]) for m in extracted.mentions])
        return lambda: self.parts.planner.plan(req_plan)

    # -- steps ------------------------------------------------------------------------------------
    def _record(self, req: AddRequest, d: Draft, now: datetime) -> MemoryRecord:
        return MemoryRecord(
            id=d.id or new_id(), memory=d.text, hash=text_hash(d.text), memory_type=d.memory_type,
            user_id=req.scope.user_id, agent_id=req.scope.agent_id, run_id=req.scope.run_id, role=d.role,
            actor_id=d.actor_id, metadata=req.metadata, created_at=now, event_time=d.event_time,
            expires_at=req.expires_at,
        )

    def _deduplicate(self, scope: Scope, drafts: list[Draft], *, near: bool, embedded: dict[str, Any]) -> list[Any]:
        """Give every draft an id: an existing memory's (exact or, for extracted text, near-duplicate:
        event NONE) or a new one. Returns the embeddings of the new ones (``None`` for duplicates).
        ``embedded``: text -> vector, kept across re-plans of one write so nothing is embedded twice."""
        hashes = [text_hash(d.text) for d in drafts]
        existing = self.store.find_hashes(scope, list(dict.fromkeys(hashes)))
        for d, h in zip(drafts, hashes, strict=True):
            if h in existing:
                d.id, d.event, d.hash = existing[h], EventType.NONE, h
            else:
                d.id = existing[h] = new_id()
        new = [d for d in drafts if d.event is EventType.ADD]
        todo = list(dict.fromkeys(d.text for d in new if d.text not in embedded))
        if todo:
            embedded.update(zip(todo, self.embedder.embed(todo), strict=True))
        matrix = np.stack([embedded[d.text] for d in new]) if new else np.zeros((0, self.embedder.dims), np.float32)
        by_id = {d.id: v for d, v in zip(new, matrix, strict=True)}
        threshold = self.config.dedup.memory_similarity
        if near and threshold < 1.0 and new:
            # across the requests of an add_many, as if each earlier one had been stored already
            items = np.array([d.item for d in new])
            across = len(set(items.tolist())) > 1
            unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12) if across else matrix
            kept: list[int] = []  # new drafts that stay new, in order
            moved: dict[str | None, str] = {}  # a new draft's id -> the stored memory it duplicates
            for j, (d, hit) in enumerate(zip(new, self.store.nearest(scope, matrix), strict=True)):
                if hit is not None and hit[1] >= threshold:
                    moved[d.id] = hit[0]
                    d.id, d.event, d.hash = hit[0], EventType.NONE, ""
                    continue
                if across and kept:
                    sims = np.where(items[kept] != d.item, unit[kept] @ unit[j], -np.inf)
                    best = int(sims.argmax())
                    if sims[best] >= threshold:
                        d.id, d.event, d.hash = new[kept[best]].id, EventType.NONE, ""
                        continue
                kept.append(j)
            for d in drafts:  # the same text twice: the second follows the first to the stored memory
                if d.event is EventType.NONE and d.id in moved:
                    d.id, d.hash = moved[d.id], ""
        return [by_id.get(d.id) if d.event is EventType.ADD else None for d in drafts]

    def _plan(self, scope: Scope, drafts: list[Draft], facts: list[Fact], now: datetime,
              extracted: _Extracted | None, embedded: Mapping[str, Any]) -> GraphPlan:
        ids = [d.id or "" for d in drafts]
        mentions = [(m.name, m.type, list(dict.fromkeys(ids[i] for i in m.drafts)))
                    for m in (extracted.mentions if extracted is not None else [])]
        if not facts and not mentions:  # nothing for the graph: no need to load the ontology
            return GraphPlan()
        return self.parts.planner.plan(PlanRequest(
            scope, [f.triple for f in facts], [list(dict.fromkeys(ids[i] for i in f.drafts)) for f in facts],
            now, times=[f.time for f in facts], mentions=mentions,
            aliases=extracted.aliases if extracted is not None else {}, vectors=embedded,
        ))

    def _repair(self, scope: Scope, drafts: list[Draft], facts: list[Fact], first: GraphPlan,
                ex: _Extracted, now: datetime, asked: dict[Any, list[ExtractedTriple]],
                embedded: Mapping[str, Any]) -> GraphPlan:
        """One re-ask per chunk with the SHACL messages, then one more plan of the accepted facts plus
        the corrections. The first round's rejected triples stay quarantined either way: what the
        model first said is kept with its reasons, never lost. ``asked``: the model's answers by
        chunk and rejections, so a re-plan after a write conflict asks again only what changed."""
        extractor = self.parts.extractor
        rejected = [i for i, v in enumerate(first.verdicts) if not v.accepted and facts[i].chunk is not None]
        by_chunk: dict[int, list[int]] = {}
        for i in rejected:
            by_chunk.setdefault(facts[i].chunk or 0, []).append(i)
        repaired: list[Fact] = []
        for c, idx in by_chunk.items():
            rejections = [Rejection(_as_extracted(facts[i].triple), tuple(first.verdicts[i].reasons())) for i in idx]
            provenance = sorted({d for i in idx for d in facts[i].drafts})
            question = (c, tuple((r.triple.model_dump_json(), r.reasons) for r in rejections))
            if question not in asked:
                asked[question] = extractor.repair(ex.chunks[c], ex.contexts[c], ex.extractions[c], rejections)
            for t in asked[question]:
                try:
                    triple = TripleInput(source=t.source, relation=t.relation, target=t.target,
                                         valid_from=_maybe_iso(t.valid_from), valid_to=_maybe_iso(t.valid_to))
                except (ValueError, InvalidInputError) as exc:
                    log.warning("repaired triple dropped, not a valid triple: %s", exc)
                    continue
                repaired.append(Fact(triple, provenance, c, facts[idx[0]].time))
        if not repaired:
            return first
        failed = {i for i, v in enumerate(first.verdicts) if not v.accepted}
        second = self._plan(scope, drafts, [f for i, f in enumerate(facts) if i not in failed] + repaired, now, ex,
                            embedded)
        second.change.quarantine[:0] = first.change.quarantine
        second.change.events[:0] = [e for e in first.change.events if e.event is EventType.REJECT]
        second.rejected[:0] = first.rejected
        return second

    def _extract(self, req: AddRequest, texts: list[tuple[Message, str]], now: datetime) -> Steps[_Extracted]:
        out = _Extracted()
        reference = req.event_time or now
        roles = {m.name or m.role: m.role for m, _ in texts}  # speaker label -> the role it speaks in
        speakers = sorted(roles)
        lines = [render(m, t) for m, t in texts]
        pieces = yield Work(lambda: self.parts.chunk(lines))
        out.chunks = [c.text for c in pieces]
        out.counter = pieces[0].counter if pieces else ""
        extractor = yield Work(lambda: self.parts.extractor)
        ontology = yield Work(lambda: self.parts.planner.ontology)
        # chunk vectors only serve to show the extractor related memories; the rule extractor reads none
        vectors = (yield Embed(out.chunks)) if extractor.uses_known_memories and out.chunks \
            else [None] * len(out.chunks)
        for c, (chunk, vec) in enumerate(zip(out.chunks, vectors, strict=True)):
            ctx = ExtractionContext(
                ontology=ontology, reference_time=reference, speakers=speakers, roles=roles, user=req.scope.user_id,
                memories=(yield from self._known_memories(req.scope, chunk, vec)) if vec is not None else [],
                entities=(yield from self._known_entities(req.scope, chunk)),
                chunk_index=c, chunk_count=len(out.chunks), usage=out.usage, instructions=req.instructions,
            )
            result = yield from extraction(chunk, ctx)
            out.contexts.append(ctx)
            out.extractions.append(result)
            self._collect(req, c, roles, ctx, result, out)
        return out

    def _collect(self, req: AddRequest, c: int, roles: dict[str, str], ctx: ExtractionContext,
                 result: Extraction, out: _Extracted) -> None:
        """Turn one chunk's extraction into drafts, mentions and facts. What fails validation is
        dropped but reported (``out.dropped``, shown in the add result), never lost silently."""
        from pydantic import ValidationError

        from ..errors import clip
        from .planner import triple_problems

        def shown(text: object) -> str:  # printable and JSON-safe, however broken the text is
            return clip(str(text).encode("utf-8", "backslashreplace").decode("utf-8"), 100)

        limits = self.config.limits
        out.skipped += [{"text": shown(s.text), "reason": s.reason, "chunk": c} for s in result.skipped]
        first = len(out.drafts)
        for m in result.memories:
            try:
                text = clean_text(m.text, what="extracted memory", max_chars=limits.max_memory_chars)
            except InvalidInputError as exc:
                log.warning("extracted memory dropped: %s", exc)
                out.dropped.append({"memory": shown(m.text), "reason": str(exc), "chunk": c})
                continue
            when = _maybe_time(m.event_time)
            speaker = m.attributed_to
            role = roles.get(speaker) if speaker else None
            actor = speaker if speaker and speaker not in ("user", "assistant", "tool") else None
            out.drafts.append(Draft(text, role, actor, req.memory_type or m.memory_type, when or req.event_time, c))
        count = len(out.drafts) - first
        known = {k.number: k.name for k in ctx.entities}
        types: dict[str, str] = {}
        rename: dict[str, str] = {}
        for e in result.entities:
            if e.existing is not None and e.existing in known:
                rename[e.name] = known[e.existing]
            canonical = norm_name(rename.get(e.name, e.name))
            if e.type:
                types[canonical] = e.type
            if e.aliases:
                out.aliases.setdefault(canonical, []).extend(e.aliases)
        everything = list(range(first, first + count))
        for e in result.entities:
            forms = [_word_pattern(f) for f in (e.name, *e.aliases) if f.strip()]
            named = [i for i in everything if any(p.search(out.drafts[i].text) for p in forms)]
            if named:
                name = rename.get(e.name, e.name)
                out.mentions.append(Mention(name, types.get(norm_name(name)), named))
        for t in result.triples:
            src, tgt = rename.get(t.source, t.source), rename.get(t.target, t.target)
            try:
                triple = TripleInput.model_validate(
                    {"source": src, "relation": t.relation, "target": tgt, "valid_from": _maybe_iso(t.valid_from),
                     "valid_to": _maybe_iso(t.valid_to),
                     "source_type": types.get(norm_name(src)), "target_type": types.get(norm_name(tgt))},
                    context={"max_chars": limits.max_entity_chars})
            except (ValueError, InvalidInputError) as exc:
                reason = triple_problems(exc) if isinstance(exc, ValidationError) else str(exc)
                log.warning("extracted triple dropped, not a valid triple: %s", reason)
                out.dropped.append({"triple": {"source": shown(src), "relation": shown(t.relation),
                                               "target": shown(tgt)}, "reason": reason, "chunk": c})
                continue
            drafts = [first + t.memory] if t.memory is not None and 0 <= t.memory < count else everything
            out.facts.append(Fact(triple, drafts or everything, c, req.event_time))

    def _known_memories(self, scope: Scope, chunk: str, vector: Any) -> Steps[list[KnownMemory]]:
        cands = yield Call.of(Store.candidates, scope, None, vector, chunk, 5)
        ids = list(dict.fromkeys([i for i, _ in cands.vector] + [i for i, _ in cands.fulltext]))[:8]
        return [KnownMemory(n, cands.records[i].memory) for n, i in enumerate(ids)]

    def _known_entities(self, scope: Scope, chunk: str) -> Steps[list[KnownEntity]]:
        """Stored entities named in the chunk (its 1-4 word n-grams looked up by normalized name)."""
        words = [w.casefold() for w in _WORD.findall(chunk)]
        keys = {" ".join(words[i : i + n]) for n in range(1, 5) for i in range(len(words) - n + 1)}
        found = (yield Call.of(Store.find_entities, scope, sorted(keys))) if keys else {}
        unique = {e.id: e for e in found.values()}
        return [KnownEntity(n, e.name, tuple(e.classes), tuple(e.aliases))
                for n, e in enumerate(sorted(unique.values(), key=lambda e: e.name)[:64])]


GROUP_MEMORIES = 1000
"""Memories per transaction of ``add_many`` (a request is never split); bench/add_many.py measures it."""


def _groups(reqs: Sequence[AddRequest], drafts: list[list[Draft]]) -> list[list[int]]:
    """Consecutive requests of one scope and one ``infer``, up to GROUP_MEMORIES drafts a group."""
    groups: list[list[int]] = []
    size = 0
    for n, req in enumerate(reqs):
        head = reqs[groups[-1][0]] if groups else None
        if head is None or (head.scope, head.infer) != (req.scope, req.infer) or size + len(drafts[n]) > GROUP_MEMORIES:
            groups.append([])
            size = 0
        groups[-1].append(n)
        size += len(drafts[n])
    return groups


@dataclass
class _Batch:
    """The requests of one write: their drafts and facts side by side (indexes shifted), planned and
    written as one, and the plan's summary told back to each request."""

    reqs: Sequence[AddRequest]
    items: list[int]
    scope: Scope
    infer: bool
    drafts: list[Draft]
    facts: list[Fact]
    extracted: _Extracted | None
    parts: dict[int, _Extracted]

    @classmethod
    def of(cls, reqs: Sequence[AddRequest], items: list[int], drafts: list[list[Draft]],
           extracted: list[_Extracted | None]) -> _Batch:
        head = reqs[items[0]]
        batch = cls(reqs, items, head.scope, head.infer, [], [], _Extracted() if head.infer else None, {})
        for n in items:
            req, ex, at = reqs[n], extracted[n], len(batch.drafts)
            batch.drafts += drafts[n]
            everything = list(range(at, at + len(drafts[n])))
            batch.facts += [Fact(t, everything, None, req.event_time) for t in req.triples]
            if ex is None or batch.extracted is None:
                continue
            merged, chunk = batch.extracted, len(batch.extracted.chunks)
            batch.parts[n] = ex
            batch.facts += [Fact(f.triple, [at + i for i in f.drafts], None if f.chunk is None else chunk + f.chunk,
                                 f.time) for f in ex.facts]
            merged.mentions += [Mention(m.name, m.type, [at + i for i in m.drafts]) for m in ex.mentions]
            for name, aliases in ex.aliases.items():
                merged.aliases.setdefault(name, []).extend(aliases)
            merged.chunks += ex.chunks
            merged.contexts += ex.contexts
            merged.extractions += ex.extractions
        return batch

    def results(self, plan: GraphPlan) -> list[dict[str, Any]]:
        """Each request's ``add`` result; a fact is told to every request whose memories state it."""
        summaries = self._split(plan) if len(self.items) > 1 else {self.items[0]: plan.summary()}
        outs = []
        for n in self.items:
            out: dict[str, Any] = {
                "results": [{"id": d.id, "memory": d.text, "event": d.event.value} for d in self.drafts if d.item == n],
                "relations": summaries[n],
            }
            ex = self.parts.get(n)
            if ex is not None:
                out["chunks"] = len(ex.chunks)
                out["token_counter"] = ex.counter
                out["dropped"] = ex.dropped
                out["skipped"] = ex.skipped
                out["usage"] = ex.usage.as_dict()
            outs.append(out)
        return outs

    def _split(self, plan: GraphPlan) -> dict[int, dict[str, list[dict[str, Any]]]]:
        owners: dict[str, set[int]] = {}
        for d in self.drafts:
            owners.setdefault(d.id or "", set()).add(d.item)

        def told(memory_ids: Sequence[str]) -> set[int]:
            return {n for m in memory_ids for n in owners.get(m, ())} or set(self.items)

        by_fact = {r.id: told(r.memory_ids) for r in plan.change.relations}
        by_entry = {q.id: told(q.memory_ids) for q in plan.change.quarantine}
        out: dict[int, dict[str, list[dict[str, Any]]]] = {
            n: {"added": [], "superseded": [], "ended": [], "rejected": []} for n in self.items}
        for key, entries, owners_of, field_ in (("added", plan.added, by_fact, "id"),
                                                ("superseded", plan.superseded, by_fact, "by"),
                                                ("ended", plan.ended, {}, "id"),  # told to every request
                                                ("rejected", plan.rejected, by_entry, "quarantine_id")):
            for e in entries:
                for n in sorted(owners_of.get(e[field_]) or self.items):
                    out[n][key].append(e)
        return out


def _as_extracted(t: TripleInput) -> ExtractedTriple:
    return ExtractedTriple(source=t.source, relation=t.relation, target=str(t.target),
                           valid_from=str(t.valid_from) if t.valid_from is not None else None,
                           valid_to=str(t.valid_to) if t.valid_to is not None else None)


def _maybe_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_datetime(value, what="event_time")
    except InvalidInputError:
        return None


def _maybe_iso(value: str | None) -> str | None:
    return value if _maybe_time(value) is not None else None
