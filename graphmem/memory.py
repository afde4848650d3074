"""The public API: :class:`Memory` (sync) and :class:`AsyncMemory`, mem0-compatible where mem0 has
the same operation.

Every call takes a scope (``user_id``, ``agent_id`` and/or ``run_id``). Ids from another scope behave
exactly like ids that do not exist, so a tenant cannot even learn that another tenant's memory exists.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import numbers
import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from .chunking import Chunk
from .config import LimitsConfig, MemoryConfig
from .embedding import Embedder, create_embedder
from .errors import InvalidInputError, NotFoundError, clip, short
from .extraction import Extractor
from .filters import Filter
from .filters import parse as parse_filters
from .models import (
    EventType,
    MemoryRecord,
    MemoryType,
    Message,
    QuarantineEntry,
    Scope,
    check_id,
    clean_text,
    new_id,
    parse_datetime,
    refuse_controls,
    text_hash,
    utcnow,
)
from .pipeline import GraphPlanner, TripleInput, parse_triples
from .pipeline.graph import GraphPlan, triple_problems
from .pipeline.ingest import AddRequest, Ingestor
from .pipeline.retry import replanning
from .search.access import AccessLog
from .stores.base import MemoryPatch, Store

if TYPE_CHECKING:
    from .ontology import Guard, Ontology
    from .search.rerank import CrossEncoderReranker, Reranker

log = logging.getLogger("graphmem")

MessagesInput = str | dict[str, Any] | Sequence[dict[str, Any]]
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_DEFAULT_LIMITS = LimitsConfig()


def _when(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime | str | numbers.Real) or isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a datetime, ISO-8601 string or Unix seconds, "
                                f"got {type(value).__name__}")
    return parse_datetime(value, what=name)  # type: ignore[arg-type]  # any real number is seconds


def _create_store(config: MemoryConfig) -> Store:
    if config.store.provider == "neo4j":
        from .stores.neo4j import Neo4jStore

        return Neo4jStore(config.store)
    from .stores.sqlite import SQLiteStore

    return SQLiteStore(config.sqlite_path(), config.store.busy_timeout_ms)


def _messages(messages: MessagesInput, limits: LimitsConfig) -> list[Message]:
    if isinstance(messages, str):
        raw: list[Any] = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        raw = [messages]
    elif isinstance(messages, Sequence) and not isinstance(messages, bytes | bytearray):
        raw = list(messages)
    else:
        raise InvalidInputError(
            f"messages must be a string, a message dict or a list of message dicts, got {type(messages).__name__}"
        )
    if not raw:
        raise InvalidInputError("messages is an empty list")
    if len(raw) > limits.max_batch:
        raise InvalidInputError(f"{len(raw)} messages in one add; the limit is {limits.max_batch} (limits.max_batch)")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidInputError(f"messages[{i}] must be a dict with 'role' and 'content'")
        try:
            message = Message.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {clip(e['msg'])}"
                                 for e in exc.errors(include_url=False))
            raise InvalidInputError(
                f"messages[{i}] is not a valid message ({problems}); expected "
                "{'role': 'user'|'assistant'|'system'|'tool', 'content': str, 'name'?: str}"
            ) from None
        if message.name:
            _speaker(message.name, f"messages[{i}].name", limits.max_name_chars)
        out.append(message)
    return out


def _speaker(name: str, what: str, max_chars: int) -> None:
    """A message's ``name`` becomes the memory's ``actor_id`` and a speaker label in extraction
    prompts: one line of valid Unicode, bounded (``limits.max_name_chars``)."""
    if len(name) > max_chars:
        raise InvalidInputError(f"{what} has {len(name):,} characters, more than limits.max_name_chars "
                                f"({max_chars}): {short(name)}")
    refuse_controls(name, what)


def _metadata(metadata: object, limits: LimitsConfig | None = None) -> dict[str, Any]:
    """Metadata as stored: a dict that survives a JSON round trip unchanged (string keys at every
    level, finite numbers, valid Unicode), within ``limits`` (nesting and UTF-8 size) when given.
    The walk is iterative and bounded, so no input can exhaust the stack."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"metadata must be a dict with string keys, got {type(metadata).__name__}")
    max_depth = limits.max_metadata_depth if limits is not None else _DEFAULT_LIMITS.max_metadata_depth
    stack: list[tuple[object, int, str]] = [(metadata, 1, "metadata")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict | list | tuple):
            if depth > max_depth:
                raise InvalidInputError(f"{clip(where, 100)} is nested deeper than limits.max_metadata_depth "
                                        f"({max_depth})")
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise InvalidInputError(f"{where} has a key that is not a string: {short(k)}")
                    _no_surrogate(k, f"{where} key {short(k, 40)}")
                    stack.append((v, depth + 1, f"{where}[{short(k, 40)}]"))
            else:
                stack.extend((v, depth + 1, f"{where}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, str):
            _no_surrogate(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInputError(f"{where} is {value!r}; metadata numbers are finite (JSON has no NaN/inf)")
        elif not (value is None or isinstance(value, bool | int | float)):
            raise InvalidInputError(f"{where} is a {type(value).__name__}; metadata values are strings, numbers, "
                                    "booleans, null, lists and dicts")
    try:
        text = json.dumps(metadata, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serializable: {short(str(exc), 200)}") from None
    if limits is not None and len(text) > limits.max_metadata_bytes // 4:  # a char is at most 4 UTF-8 bytes
        size = len(text.encode("utf-8"))
        if size > limits.max_metadata_bytes:
            raise InvalidInputError(f"metadata is {size:,} bytes as JSON, more than limits.max_metadata_bytes "
                                    f"({limits.max_metadata_bytes:,}); keep documents in memories, labels in metadata")
    return dict(metadata)


def _no_surrogate(text: str, where: str) -> None:
    bad = _SURROGATE.search(text)
    if bad:
        raise InvalidInputError(f"{where} holds a lone surrogate (U+{ord(bad.group()):04X}) at offset {bad.start()}, "
                                "which is not valid Unicode")


def _threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"threshold must be a number, got {short(value)}")
    out = float(value)
    if not math.isfinite(out):
        raise InvalidInputError(f"threshold must be a finite number, got {short(value)}")
    return out


def _memory_type(value: object) -> MemoryType | None:
    if value is None or isinstance(value, MemoryType):
        return value
    if isinstance(value, str) and value in {t.value for t in MemoryType}:
        return MemoryType(value)
    raise InvalidInputError(f"memory_type {short(value)} is not one of {', '.join(t.value for t in MemoryType)}")


def _flag(value: object, name: str) -> bool:
    """Booleans are booleans: ``infer="no"`` would otherwise be true."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {short(value)}")
    return bool(value)


def _ids(ids: object, what: str) -> list[str] | None:
    if ids is None:
        return None
    if isinstance(ids, str | bytes | dict) or not isinstance(ids, Sequence | set | frozenset):
        raise InvalidInputError(f"{what} must be a list of id strings, got {type(ids).__name__}")
    return [check_id(i, f"{what}[{n}]") for n, i in enumerate(ids)]


class Memory:
    """A memory engine bound to one store and one embedder.

    ``Memory()`` opens the embedded SQLite store under ``$GRAPHMEM_HOME`` (``~/.graphmem``): no server.
    """

    def __init__(
        self,
        config: MemoryConfig | dict[str, Any] | None = None,
        *,
        embedder: Embedder | None = None,
        store: Store | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.config = MemoryConfig.load(config)
        self.embedder = embedder or create_embedder(self.config.embedder)
        self.store = store or _create_store(self.config)
        self.info = self.store.open(self.embedder.name, self.embedder.dims)
        self._ontology: Ontology | None = None
        self._guard: Guard | None = None
        self._extractor_instance: Extractor | None = None
        self._chunker: Any = None
        self._reranker_given = reranker
        self._reranker_loaded: CrossEncoderReranker | None = None
        self._access = AccessLog()

    @property
    def ontology(self) -> Ontology:
        """The compiled ontology and shapes, loaded on first use (compiling takes about a second)."""
        if self._ontology is None:
            from .ontology import Ontology

            cfg = self.config.ontology
            self._ontology = Ontology.load(cfg.ontology, cfg.shapes)
        return self._ontology

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            from .ontology import Guard

            self._guard = Guard(self.ontology)
        return self._guard

    def _planner(self) -> GraphPlanner:
        return GraphPlanner(self.ontology, self.guard, self.store, self.embedder,
                            type_untyped=self.config.ontology.type_untyped_entities,
                            similarity=self.config.dedup.entity_similarity)

    @classmethod
    def from_config(cls, config: MemoryConfig | dict[str, Any]) -> Memory:
        return cls(config)

    def close(self) -> None:
        self._access.flush(self.store)
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -----------------------------------------------------------------------------------
    def add(
        self,
        messages: MessagesInput,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        memory_type: MemoryType | str | None = None,
        timestamp: datetime | str | int | float | None = None,
        triples: Sequence[dict[str, Any] | TripleInput] | None = None,
        expires_at: datetime | str | None = None,
    ) -> dict[str, Any]:
        """Store what the messages say, and the facts in ``triples`` (checked by the ontology guard).

        System messages are instructions, not memories, and are skipped. Exact duplicates of a memory
        already in the same scope are not stored again; they come back with ``event: "NONE"`` and the
        existing id.

        ``infer=True`` (default) chunks the conversation by token budget and extracts memories, entities
        and triples from every chunk: with the configured LLM, else with the rule-based extractor.
        ``infer=False`` stores each message verbatim.

        ``triples`` (``{"source", "relation", "target", "source_type"?, "target_type"?, "valid_from"?}``)
        are linked to these memories as provenance. Facts that fail the SHACL shapes are not written to
        the graph but quarantined with their reasons (``relations.rejected``; see :meth:`rejected`).
        Everything is written in one transaction. ``expires_at``: after it, search no longer returns
        the memories stored by this call (they stay readable with ``get``/``get_all`` and history).
        """
        limits = self.config.limits
        scope = Scope.of(user_id, agent_id, run_id)
        now = utcnow()
        expires = _when(expires_at, "expires_at")
        if expires is not None and expires <= now:
            raise InvalidInputError(f"expires_at {expires.isoformat()} is not in the future")
        msgs = _messages(messages, limits)
        meta = _metadata(metadata, limits)
        mtype = _memory_type(memory_type)
        event_time = _when(timestamp, "timestamp")
        facts = parse_triples(triples, max_chars=limits.max_entity_chars, max_count=limits.max_batch)
        request = AddRequest(scope, msgs, meta, mtype, event_time, facts, _flag(infer, "infer"), expires)
        return self._ingestor().add(request, now)

    def _ingestor(self) -> Ingestor:
        return Ingestor(self.config, self.store, self.embedder, self._planner, self._extractor, self._chunk)

    @property
    def extractor(self) -> Extractor:
        """The extractor ``add(infer=True)`` uses: the configured LLM, else the rule-based one."""
        return self._extractor()

    def _extractor(self) -> Extractor:
        if self._extractor_instance is None:
            if self.config.llm.provider == "openai":
                from .extraction.llm import LLMExtractor

                self._extractor_instance = LLMExtractor(self.config.llm)
            else:
                from .extraction.rules import RuleExtractor

                self._extractor_instance = RuleExtractor(self.ontology, granularity=self.config.llm.rules_granularity)
            log.info("graphmem extractor: %s", self._extractor_instance.name)
        return self._extractor_instance

    def _chunk(self, lines: list[str]) -> list[Chunk]:
        if self._chunker is None:
            from .chunking import from_config

            model = self.config.llm.model if self.config.llm.provider == "openai" else None
            self._chunker = from_config(self.config.chunking, model, embed=self.embedder.embed)
        chunks: list[Chunk] = self._chunker.chunk_messages(lines)
        return chunks

    def rejected(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        include_released: bool = False,
    ) -> list[dict[str, Any]]:
        """Quarantined triples in the scope with their SHACL reasons, oldest first."""
        scope = Scope.of(user_id, agent_id, run_id)
        status = None if _flag(include_released, "include_released") else "quarantined"
        return [q.public() for q in self.store.quarantined(scope, status)]

    def dry_run(self, ontology: Ontology, *, user_id: str | None = None, agent_id: str | None = None,
                run_id: str | None = None) -> dict[str, Any]:
        """Judge the stored facts with another ontology and shapes; report what would become invalid.

        Without a scope every scope holding facts is checked (administration). Nothing is written.
        """
        from .ontology import Guard, Ontology
        from .pipeline.dryrun import dry_run

        if not isinstance(ontology, Ontology):
            raise InvalidInputError(f"dry_run needs an Ontology (graphmem.ontology.Ontology.load(...)), "
                                    f"got {type(ontology).__name__}")
        unscoped = user_id is None and agent_id is None and run_id is None
        scopes = None if unscoped else [Scope.of(user_id, agent_id, run_id)]
        return dry_run(self.store, Guard(ontology), scopes).to_dict()

    def recheck(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Validate quarantined triples again (after the ontology or shapes changed, or the graph
        grew) and write those that now pass, each entry in its own transaction."""
        scope = Scope.of(user_id, agent_id, run_id)
        ids = _ids(ids, "ids")
        wanted = set(ids) if ids is not None else None
        released: list[dict[str, Any]] = []
        still: list[dict[str, Any]] = []
        planner = self._planner()
        for entry in self.store.quarantined(scope):
            if wanted is not None and entry.id not in wanted:
                continue
            try:
                given = TripleInput.model_validate({k: v for k, v in entry.triple.items() if k != "relation_iri"})
            except ValidationError as exc:  # quarantined before today's input checks: it stays
                still.append({"quarantine_id": entry.id, "reasons": [triple_problems(exc)]})
                continue
            exact = Scope(user_id=entry.user_id, agent_id=entry.agent_id, run_id=entry.run_id)
            tries = 0

            def attempt(entry: QuarantineEntry = entry, given: TripleInput = given, exact: Scope = exact) -> bool:
                """Plan and write one entry; ``False`` when another recheck released it meanwhile."""
                nonlocal tries
                tries += 1
                if tries > 1 and entry.id not in {q.id for q in self.store.quarantined(exact)}:
                    return False
                records = {m: self.store.get(m, exact) for m in entry.memory_ids}
                live = {m: r.hash for m, r in records.items() if r is not None}
                plan = planner.plan(exact, [given], list(live), utcnow())
                if plan.rejected:
                    still.append({"quarantine_id": entry.id, "reasons": plan.rejected[0]["reasons"]})
                    return True
                plan.change.released = [entry.id]
                plan.change.expect.memories.update(live)
                self.store.write(exact, plan.change)
                released.append({"quarantine_id": entry.id, **plan.added[0]})
                return True

            replanning(self.config.store.conflict_retries, attempt, key=(id(self.store), *exact.items()))
        return {"released": released, "still_rejected": still}

    def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        infer: bool = True,
    ) -> dict[str, Any]:
        """Replace the text (re-embedded) and/or merge ``metadata`` (a ``None`` value removes a key).

        A new text is also re-extracted (``infer``): the graph facts the old text alone supported
        go, the new text's facts are checked and linked, in the same transaction as the update.
        """
        scope = Scope.of(user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        _metadata(metadata, self.config.limits)
        _flag(infer, "infer")
        if data is None and metadata is None:
            raise InvalidInputError("update needs new text (data) and/or metadata")
        max_chars = self.config.limits.max_memory_chars
        text = clean_text(data, what="data", max_chars=max_chars) if data is not None else None
        patch = MemoryPatch(
            updated_at=utcnow(), event_id=new_id(), text=text,
            hash=text_hash(text) if text is not None else None,
            vector=self.embedder.embed_one(text) if text is not None else None,
            metadata=_metadata(metadata) if metadata is not None else None,
            max_metadata_bytes=self.config.limits.max_metadata_bytes,
        )
        replan = None
        if text is not None and infer:
            current = self.store.get(memory_id, scope)
            if current is None:
                raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
            replan = self._ingestor().relink(current.scope, current, text, patch.updated_at)

        def attempt() -> tuple[MemoryRecord | None, GraphPlan | None]:
            relink = replan() if replan is not None else None
            return self.store.update(memory_id, scope, patch, relink.change if relink else None), relink

        record, relink = replanning(self.config.store.conflict_retries, attempt, key=(id(self.store), *scope.items()))
        if record is None:
            raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
        relations = relink.summary() if relink else {"added": [], "superseded": [], "rejected": []}
        return {**record.public(), "event": EventType.UPDATE.value, "relations": relations}

    def delete(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        scope = Scope.of(user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        if not self.store.delete([memory_id], scope, utcnow()):
            raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
        return {"id": memory_id, "event": EventType.DELETE.value}

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Delete every memory in the scope, and nothing outside it."""
        scope = Scope.of(user_id, agent_id, run_id)
        return {"deleted": self.store.delete_scope(scope, utcnow()), "scope": dict(scope.items())}

    def reset(self) -> None:
        """Delete every memory and history event of every tenant. Administration only."""
        self.store.reset()

    def optimize(self) -> dict[str, Any]:
        """Compact the store's search indexes (see :meth:`Store.optimize`); run it when the store is
        quiet, e.g. after a bulk load or nightly. Administration only: it spans every tenant."""
        return self.store.optimize()

    # -- reads ------------------------------------------------------------------------------------
    def get(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        scope = Scope.of(user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        record = self.store.get(memory_id, scope)
        if record is None:
            raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
        return record.public()

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        scope = Scope.of(user_id, agent_id, run_id)
        flt = self._filters(filters)
        limits = self.config.limits
        n = self._positive(limit, limits.get_all_limit, "limit", limits.max_list_limit, "limits.max_list_limit")
        return {"results": [r.public() for r in self.store.list_memories(scope, flt, n)]}

    def history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        scope = Scope.of(user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        events = self.store.history(memory_id, scope)
        if not events:
            raise NotFoundError(f"no history for memory {short(memory_id)} in scope {dict(scope.items())}")
        return [e.public() for e in events]

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        threshold: float | None = None,
        explain: bool = False,
        as_of: datetime | str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        vector: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Rank the scope's memories by fused vector, full-text and graph relevance to ``query``.

        The graph signal (when ``search.weights["graph"]`` is positive) walks from the entities the
        query names and from the best vector and full-text hits, over mentions and typed facts
        (:mod:`graphmem.search.graph`); its hits obey the same scope and filters. ``since``/``until``
        keep memories whose time (``event_time``, else ``created_at``) lies in ``[since, until)``;
        ``as_of`` ranks what was known at that instant (memories created by then and not expired,
        facts valid then). Expired memories (``expires_at``) are never returned. With ``explain``,
        each result carries its per-signal scores and graph path, and the answer its round trips.
        ``vector``: the query's embedding by this store's embedder, when the caller already has it
        (an agent that embedded the message for something else): search then does not embed again.
        """
        from .search.engine import SearchRequest, run_search

        scope = Scope.of(user_id, agent_id, run_id)
        limits = self.config.limits
        text = clean_text(query, what="query", max_chars=limits.max_memory_chars)
        times = {name: _when(value, name) for name, value in (("as_of", as_of), ("since", since), ("until", until))}
        if times["since"] and times["until"] and times["since"] >= times["until"]:
            raise InvalidInputError("since must be before until")
        req = SearchRequest(
            scope=scope, text=text,
            k=self._positive(top_k, self.config.search.top_k, "top_k", limits.max_top_k, "limits.max_top_k"),
            flt=self._filters(filters), threshold=self.config.search.threshold if threshold is None else
            _threshold(threshold), explain=_flag(explain, "explain"), as_of=times["as_of"], since=times["since"],
            until=times["until"], vector=None if vector is None else self._query_vector(vector),
        )
        cfg = self.config.search
        tracked = cfg.decay.access and bool(cfg.decay.half_life_days)
        out = run_search(self.store, self.embedder, lambda: self.ontology, cfg, req, self._reranker(),
                         self._access.uses if tracked else None)
        if tracked and req.as_of is None:  # a look at the past is not a use
            self._access.record(scope, (r["id"] for r in out["results"]), utcnow())
            if self._access.due(cfg.decay.flush_every, cfg.decay.flush_seconds):
                self._access.flush(self.store)
        return out

    def _filters(self, filters: object) -> Filter | None:
        limits = self.config.limits
        return parse_filters(filters, max_depth=limits.max_filter_depth,  # type: ignore[arg-type]  # checked there
                             max_terms=limits.max_filter_terms)

    def _query_vector(self, vector: object) -> npt.NDArray[np.float32]:
        """A caller's query embedding, checked (numbers only, dimensions, finite, not all zero) and
        L2-normalized as the embedder's are."""
        if isinstance(vector, np.ndarray):
            if vector.dtype.kind not in "iuf":
                raise InvalidInputError(f"vector must hold numbers, got an array of {vector.dtype}")
            values = vector.astype(np.float64).reshape(-1)
        elif isinstance(vector, Sequence) and not isinstance(vector, str | bytes | bytearray):
            if len(vector) != self.embedder.dims:
                raise InvalidInputError(f"vector has {len(vector)} dimensions; embedder {self.embedder.name} "
                                        f"makes {self.embedder.dims}")
            if not all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in vector):
                raise InvalidInputError("vector must be a sequence of numbers")
            try:
                values = np.asarray([float(v) for v in vector], dtype=np.float64)
            except OverflowError:
                raise InvalidInputError("vector holds a number too large for a float") from None
        else:
            raise InvalidInputError(f"vector must be a sequence of numbers, got {type(vector).__name__}")
        if values.shape[0] != self.embedder.dims:
            raise InvalidInputError(f"vector has {values.shape[0]} dimensions; embedder {self.embedder.name} "
                                    f"makes {self.embedder.dims}")
        if not np.isfinite(values).all():
            raise InvalidInputError("vector holds NaN or infinite values")
        scale = float(np.abs(values).max())
        if scale == 0.0:
            raise InvalidInputError("vector is all zeros; it has no direction to compare with")
        values = values / scale  # no overflow in the norm, however large the values
        arr: npt.NDArray[np.float32] = (values / float(np.linalg.norm(values))).astype(np.float32)
        return arr

    def _reranker(self) -> Reranker | None:
        """The reranker given to the constructor, else the configured cross-encoder (loaded once)."""
        name = self.config.search.rerank.model
        if self._reranker_given is not None or name is None:
            return self._reranker_given
        if self._reranker_loaded is None or self._reranker_loaded.name != name:
            from .search.rerank import CrossEncoderReranker

            self._reranker_loaded = CrossEncoderReranker(name)
        return self._reranker_loaded

    def cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Analysts' read-only Cypher (Neo4j store), for administrators: it is not scoped and sees
        every tenant, so give analysts their own Neo4j credentials rather than an agent's API.

        A query that would write raises ``ReadOnlyError``; one that reads but escapes the graph
        (``LOAD CSV`` of server files or URLs, ``SHOW``/``TERMINATE TRANSACTIONS``, ``SHOW
        SETTINGS``, another database, a procedure or non-built-in function outside the allow-list in
        :mod:`graphmem.stores.neo4j_cypher`) raises ``CypherRefusedError`` (a ``ReadOnlyError``).
        The server stops a query after ``store.cypher_timeout_s`` (``QueryTimeoutError``); more than
        ``store.cypher_max_rows`` rows raise ``RowLimitError`` instead of a silently cut result.
        ``params`` hold JSON-like values (plus dates and times); others raise ``InvalidInputError``.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"a Cypher query is a non-empty string, got {short(query)}")
        clean_text(query, what="the Cypher query", max_chars=self.config.limits.max_memory_chars)  # checked only
        if params is not None:
            if not isinstance(params, dict):
                raise InvalidInputError(f"Cypher params must be a dict of name to value, got {type(params).__name__}")
            for key in params:
                if not isinstance(key, str):
                    raise InvalidInputError(f"Cypher parameter names are strings, got {short(key)}")
                check_id(key, "a Cypher parameter name")
        return self.store.cypher(query, params)

    @staticmethod
    def _positive(value: object, default: int, name: str, maximum: int | None = None, setting: str = "") -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise InvalidInputError(f"{name} must be a positive integer, got {short(value)}")
        if maximum is not None and value > maximum:
            raise InvalidInputError(f"{name}={short(value)} is more than {setting} ({maximum}); ask for fewer or "
                                    "raise the limit")
        return int(value)


class AsyncMemory:
    """The same operations as :class:`Memory`, awaitable; blocking I/O runs in worker threads."""

    def __init__(
        self,
        config: MemoryConfig | dict[str, Any] | None = None,
        *,
        embedder: Embedder | None = None,
        store: Store | None = None,
    ) -> None:
        self.sync = Memory(config, embedder=embedder, store=store)

    @classmethod
    def from_config(cls, config: MemoryConfig | dict[str, Any]) -> AsyncMemory:
        return cls(config)

    async def add(self, messages: MessagesInput, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.add, messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.search, query, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get, memory_id, **kwargs)

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get_all, **kwargs)

    async def update(self, memory_id: str, data: str | None = None, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.update, memory_id, data, **kwargs)

    async def delete(self, memory_id: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete, memory_id, **kwargs)

    async def delete_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete_all, **kwargs)

    async def history(self, memory_id: str, **kwargs: Any) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.history, memory_id, **kwargs)

    async def rejected(self, **kwargs: Any) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.rejected, **kwargs)

    async def recheck(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.recheck, **kwargs)

    async def dry_run(self, ontology: Ontology, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.dry_run, ontology, **kwargs)

    async def cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.cypher, query, params)

    async def reset(self) -> None:
        await asyncio.to_thread(self.sync.reset)

    async def optimize(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.optimize)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)
