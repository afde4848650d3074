"""The public API: :class:`Memory` (sync) and :class:`AsyncMemory`, mem0-compatible where mem0 has
the same operation.

Every call takes a scope (``user_id``, ``agent_id`` and/or ``run_id``). Ids from another scope behave
exactly like ids that do not exist, so a tenant cannot even learn that another tenant's memory exists.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from pydantic import ValidationError

from . import inputs
from . import mem0 as compat
from .config import EmbedderConfig, MemoryConfig, display_uri
from .embedding import Embedder, EmbedderPin, create_embedder
from .embedding.pin import reembed_args
from .errors import EmbedderMismatchError, InvalidInputError, NotFoundError, ScopeError, short
from .extraction import Extractor
from .filters import And
from .filters import parse as parse_filters
from .inputs import MessagesInput
from .models import (
    EventType,
    HistoryEvent,
    Keep,
    MemoryRecord,
    MemoryType,
    Scope,
    check_id,
    clean_text,
    iso,
    utcnow,
)
from .pipeline import TripleInput, parse_triples
from .pipeline.ingest import AddRequest, Ingestor
from .pipeline.parts import Parts
from .pipeline.recheck import recheck as recheck_quarantine
from .pipeline.steps import Call, Steps, Work, arun, run
from .pipeline.update import update as update_memory
from .search.access import AccessLog
from .search.fusion import fusion_rule
from .stores import Store, create_store
from .stores.base import StoreInfo

if TYPE_CHECKING:
    from .embedding.reembed import ReembedProgress
    from .ontology import Guard, Ontology
    from .search.rerank import CrossEncoderReranker, Reranker
    from .transfer import BatchDone
    from .transfer.targets import StoreTarget

log = logging.getLogger("graphmem")
P = ParamSpec("P")
T = TypeVar("T")


def _operation(fn: Callable[Concatenate[Memory, P], Steps[T]]) -> Callable[Concatenate[Memory, P], T]:
    """A :class:`Memory` operation written once as steps (:mod:`graphmem.pipeline.steps`): ``Memory``
    runs them on its sync parts, :class:`AsyncMemory` awaits the same steps (:func:`_steps_of`)."""
    @functools.wraps(fn)
    def sync(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(fn(self, *args, **kwargs), self._engines)

    return sync


def _steps_of(operation: Callable[..., Any]) -> Callable[..., Steps[Any]]:
    steps: Callable[..., Steps[Any]] = operation.__wrapped__  # type: ignore[attr-defined]
    return steps


def _batch(size: int) -> int:
    """A batch size for export, import and migration (rows per transaction)."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= _MAX_BATCH:
        raise InvalidInputError(f"batch_size is an integer from 1 to {_MAX_BATCH}, got {short(size)}")
    return size


_ADD_ITEM_KEYS = frozenset({"messages", "user_id", "agent_id", "run_id", "metadata", "infer", "memory_type", "prompt",
                            "timestamp", "triples", "expires_at", "expiration_date", "speaker"})
"""What an ``add_many`` item may hold: ``add``'s arguments."""

_MAX_BATCH = 100_000
"""Rows per transaction at most: one transaction holds a batch in memory."""

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
        extractor: Extractor | None = None,
    ) -> None:
        """Every part is optional: ``embedder``, ``store`` (unopened), ``reranker`` and ``extractor``
        replace what the configuration would build, e.g. a store of your own or an extractor for
        your domain (any :class:`~graphmem.extraction.Extractor`).

        A mem0-style ``config`` is translated (:mod:`graphmem.mem0`)."""
        self.config = compat.load_config(config)
        fusion_rule(self.config.search.fusion)  # an unknown rule fails here, before a store is opened
        self.store = store or create_store(self.config)
        self.embedder = self._pinned_embedder(embedder)
        self.info = self.store.open(self.embedder.name, self.embedder.dims)
        self._extractor_given = extractor
        self._parts = Parts(self.config, self.store, self.embedder, extractor=extractor)
        self._ingestor = Ingestor(self._parts)
        self._engines = self._parts.engines()
        self._reranker_given = reranker
        self._reranker_loaded: CrossEncoderReranker | None = None
        self._access = AccessLog()

    def _store_label(self) -> str:
        cfg = self.config.store
        return str(self.config.sqlite_path()) if cfg.provider == "sqlite" else display_uri(cfg.uri)

    def _pinned_embedder(self, given: Embedder | None) -> Embedder:
        """The embedder given or configured, checked against the one the store recorded at creation
        (``auto`` takes that one): another one raises before anything is opened or written."""
        recorded = self.store.recorded_embedder()
        pin = EmbedderPin.parse(*recorded) if recorded is not None else None
        embedder = given or create_embedder(self.config.embedder, pinned=pin, where=self._store_label())
        if pin is not None and (pin.name, pin.dims) != (embedder.name, embedder.dims):
            raise EmbedderMismatchError(
                f"the store at {self._store_label()} was created with the embedder {pin.describe()}, but "
                f"{embedder.name!r} ({embedder.dims} dimensions) is configured; set embedder.provider: auto "
                f"to keep the store's, or move the store with `graphmem reembed {reembed_args(embedder)}` "
                "(Memory.reembed)")
        return embedder

    def reembed(
        self, embedder: Embedder | dict[str, Any] | str, *, user_id: str | None = None, agent_id: str | None = None,
        run_id: str | None = None, all_scopes: bool = False, batch_size: int = 256,
        progress: Callable[[ReembedProgress], None] | None = None,
    ) -> dict[str, Any]:
        """Move the store to another embedder: every memory and entity name embedded again in batches
        of ``batch_size``, staged beside the live vectors, then switched together with the store's
        recorded embedder in one transaction (see :mod:`graphmem.embedding.reembed`). A failure midway
        leaves the store searchable on its old embedder; calling again resumes. ``all_scopes=True``
        does the whole store; with a scope only its rows are staged, and the switch waits until the
        other scopes are staged too (``switched``). ``embedder``: a provider name, embedder settings
        (``{"provider": "openai", "model": ...}``) or an embedder. Other processes that have the
        store open must open it again afterwards."""
        from .embedding.reembed import reembed as run_reembed

        scope = self._transfer_scope(user_id, agent_id, run_id, all_scopes)
        batch = _batch(batch_size)
        if progress is not None and not callable(progress):
            raise InvalidInputError(f"progress is a function, got {short(progress)}")
        new = self._embedder_of(embedder)
        previous = self.embedder.name
        if (new.name, new.dims) == (previous, self.embedder.dims):
            return {"embedder": previous, "dims": new.dims, "memories": 0, "entities": 0, "switched": True,
                    "left": 0, "previous": previous}
        out = run_reembed(self.store, new, scope, batch=batch, progress=progress)
        if out["switched"]:
            self.embedder = new
            self.info = StoreInfo(self.info.backend, self.info.location, new.name, new.dims)
            self._parts = Parts(self.config, self.store, new, extractor=self._extractor_given)
            self._ingestor = Ingestor(self._parts)
            self._engines = self._parts.engines()
        return {**out, "previous": previous}

    def _embedder_of(self, spec: Embedder | dict[str, Any] | str) -> Embedder:
        if isinstance(spec, Embedder):
            return spec
        if isinstance(spec, str):
            spec = {"provider": spec}
        if not isinstance(spec, dict):
            raise InvalidInputError(f"embedder is a provider name, embedder settings or an Embedder, got {short(spec)}")
        try:
            config = EmbedderConfig.model_validate({**self.config.embedder.model_dump(), **spec})
        except ValidationError as exc:  # names the fields, never the values (an api_key may be one)
            fields = ", ".join(".".join(map(str, e["loc"])) or "embedder" for e in exc.errors())
            raise InvalidInputError(f"invalid embedder settings: {fields}") from None
        if config.provider == "auto":
            raise InvalidInputError("reembed needs a provider (onnx, openai, sentence-transformers, hashing), not auto")
        return create_embedder(config, where=self._store_label())

    @property
    def ontology(self) -> Ontology:
        """The compiled ontology and shapes, loaded on first use."""
        return self._parts.ontology

    @property
    def guard(self) -> Guard:
        return self._parts.guard

    @property
    def extractor(self) -> Extractor:
        """The extractor ``add(infer=True)`` uses: the one given, else the configured LLM, else the
        rule-based one."""
        return self._parts.extractor

    @classmethod
    def from_config(cls, config: MemoryConfig | dict[str, Any]) -> Memory:
        """A graphmem configuration, or a mem0-style one (translated, with one ``Mem0ConfigWarning``
        naming what has no equivalent; see :mod:`graphmem.mem0`)."""
        return cls(config)

    def warm(self) -> Memory:
        """Load now what the first ``add`` and ``search`` would load (the compiled ontology and guard,
        the extractor's models, the embedder's first run, the search path's code and statements), so the
        first request of a server costs what the hundredth does. ``graphmem serve`` and ``graphmem mcp``
        call it before they answer."""
        self._parts.warm()
        # a scope nobody has: the read path runs end to end, finds nothing and writes nothing
        self.search("where does the user live now?", user_id=f"warm-{uuid.uuid4().hex}")
        return self

    def close(self) -> None:
        self._access.flush(self.store)
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -----------------------------------------------------------------------------------
    @_operation
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
        speaker: str | None = None,
        expiration_date: date | str | None = None,
        prompt: str | None = None,
    ) -> Steps[dict[str, Any]]:
        """Store what the messages say, and the facts in ``triples`` (checked by the ontology guard).

        System messages are instructions, not memories, and are skipped. Exact duplicates of a memory
        already in the same scope are not stored again; they come back with ``event: "NONE"`` and the
        existing id.

        ``memory_type`` also takes mem0's names (``"procedural_memory"``): the memories this call
        stores get that type (mem0 instead summarizes the messages into one procedural memory).

        ``infer=True`` (default) chunks the conversation by token budget and extracts memories, entities
        and triples from every chunk: with the configured LLM, else with the rule-based extractor.
        ``infer=False`` stores each message verbatim.

        ``triples`` (``{"source", "relation", "target", "source_type"?, "target_type"?, "valid_from"?}``)
        are linked to these memories as provenance. Facts that fail the SHACL shapes are not written to
        the graph but quarantined with their reasons (``relations.rejected``; see :meth:`rejected`).
        Everything is written in one transaction. ``expires_at``: after it, search no longer returns
        the memories stored by this call, nor ``get_all`` (``get`` by id and history still do);
        ``expiration_date`` is mem0's form of it (``"YYYY-MM-DD"``, the last day it holds, in UTC).
        ``speaker``: the name of whoever says the user messages that carry no ``name`` ("I live in
        Oslo" is then that person's fact); without one, "I" is the scope's user (``user_id``).
        Text the extractor leaves out (an assistant's turns, small talk, questions to the assistant)
        is listed under ``skipped`` with its reason. ``prompt`` (mem0's): instructions for this call's
        extraction, added to the LLM extractor's own (which the ontology and the guard need, so they
        are never replaced); the rule extractor cannot follow them (``Mem0CompatWarning``).
        """
        now = utcnow()
        request = self._add_request(now, messages, user_id=user_id, agent_id=agent_id, run_id=run_id,
                                    metadata=metadata, infer=infer, memory_type=memory_type, timestamp=timestamp,
                                    triples=triples, expires_at=expires_at, speaker=speaker,
                                    expiration_date=expiration_date, prompt=prompt)
        out = yield from self._ingestor.add_steps(request, now)
        return out

    @_operation
    def add_many(
        self,
        items: Sequence[dict[str, Any] | MessagesInput],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        memory_type: MemoryType | str | None = None,
        expires_at: datetime | str | None = None,
        speaker: str | None = None,
        expiration_date: date | str | None = None,
    ) -> Steps[dict[str, Any]]:
        """Many :meth:`add` calls in bulk: a conversation history, an import, an agent's backlog.

        Each item is a dict of :meth:`add`'s arguments (``{"messages": ..., "user_id"?, "timestamp"?,
        "triples"?, ...}``) or just its messages; the keyword arguments are every item's defaults.
        Every item is checked before anything is extracted or written (an error names ``items[i]``);
        then all texts are embedded in one batch, and consecutive items of one scope are written
        together, one transaction per group of up to a thousand memories, each planned from the
        store's state inside its write as ``add`` is. Items are extracted against the store as it
        was when the call began; a later item that restates an earlier one's memory or fact finds it
        as it would have been found after the earlier item's own ``add``.

        Returns ``{"items": [...]}``, each item's ``add`` result, in order. When a write fails
        (the store went away), the groups before it are stored: calling again with the same items
        is safe, since what was stored comes back as ``event: "NONE"``.
        """
        if not isinstance(items, Sequence) or isinstance(items, str | bytes | bytearray):
            raise InvalidInputError(f"items must be a list of add() argument dicts or messages, "
                                    f"got {type(items).__name__}")
        if len(items) > self.config.limits.max_batch:
            raise InvalidInputError(f"{len(items)} items in one add_many; the limit is "
                                    f"{self.config.limits.max_batch} (limits.max_batch)")
        defaults = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "metadata": metadata, "infer": infer,
                    "memory_type": memory_type, "expires_at": expires_at, "speaker": speaker,
                    "expiration_date": expiration_date}
        now = utcnow()
        requests = []
        for i, item in enumerate(items):
            args = dict(item) if isinstance(item, dict) and "messages" in item else {"messages": item}
            unknown = sorted(set(args) - _ADD_ITEM_KEYS)
            if unknown:
                raise InvalidInputError(f"items[{i}] has unknown key(s) {', '.join(map(repr, unknown))}; "
                                        f"an item takes {', '.join(sorted(_ADD_ITEM_KEYS))}")
            try:
                requests.append(self._add_request(now, **{**defaults, **args}))
            except InvalidInputError as exc:
                raise InvalidInputError(f"items[{i}]: {exc}") from None
        outs = yield from self._ingestor.add_many_steps(requests, now)
        return {"items": outs}

    def _add_request(
        self, now: datetime, messages: MessagesInput, *, user_id: str | None, agent_id: str | None,
        run_id: str | None, metadata: dict[str, Any] | None, infer: bool, memory_type: MemoryType | str | None,
        expires_at: datetime | str | None, timestamp: datetime | str | int | float | None = None,
        triples: Sequence[dict[str, Any] | TripleInput] | None = None, speaker: str | None = None,
        expiration_date: date | str | None = None, prompt: str | None = None,
    ) -> AddRequest:
        """``add``'s arguments checked (each with a typed error naming it)."""
        limits = self.config.limits
        scope = Scope.of(user_id, agent_id, run_id)
        if expires_at is not None and expiration_date is not None:
            raise InvalidInputError("give expires_at or expiration_date (mem0's name), not both")
        expires = inputs.when(expires_at, "expires_at") or inputs.expiration_date(expiration_date)
        if expires is not None and expires <= now:
            raise InvalidInputError(f"expires_at {expires.isoformat()} is not in the future")
        msgs = inputs.messages(messages, limits, speaker)
        meta = inputs.metadata(metadata, limits)
        mtype = inputs.memory_type(compat.memory_type(memory_type))
        event_time = inputs.when(timestamp, "timestamp")
        facts = parse_triples(triples, max_chars=limits.max_entity_chars, max_count=limits.max_batch)
        infer = inputs.flag(infer, "infer")
        instructions = None if prompt is None else clean_text(prompt, what="prompt", max_chars=limits.max_memory_chars)
        if instructions is not None and infer and not self._parts.extractor.follows_instructions:
            compat.warn_prompt_without_llm()
        return AddRequest(scope, msgs, meta, mtype, event_time, facts, infer, expires, instructions)

    def rejected(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        include_released: bool = False,
    ) -> list[dict[str, Any]]:
        """Quarantined triples in the scope with their SHACL reasons, oldest first."""
        scope = Scope.of(user_id, agent_id, run_id)
        status = None if inputs.flag(include_released, "include_released") else "quarantined"
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
        ids = inputs.ids(ids, "ids")
        return recheck_quarantine(self._parts, scope, set(ids) if ids is not None else None)

    def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        infer: bool = True,
        expires_at: datetime | str | Keep | None = Keep.KEEP,
        expiration_date: date | str | Keep | None = Keep.KEEP,
    ) -> dict[str, Any]:
        """Replace the text (re-embedded) and/or merge ``metadata`` (a ``None`` value removes a key),
        and/or set the expiry (``expires_at``, or mem0's ``expiration_date``, ``"YYYY-MM-DD"``
        inclusive; ``None`` clears it; a time already past hides the memory from search and
        ``get_all`` at once). ``text`` is mem0 2.x's name for ``data``.

        A new text is also re-extracted (``infer``): the graph facts the old text alone supported
        go, the new text's facts are checked and linked, in the same transaction as the update.
        """
        scope = self._scope_of(memory_id, user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        data = compat.pick_text(data, text)
        inputs.metadata(metadata, self.config.limits)
        infer = inputs.flag(infer, "infer")
        if expires_at is not Keep.KEEP and expiration_date is not Keep.KEEP:
            raise InvalidInputError("give expires_at or expiration_date (mem0's name), not both")
        expiry: datetime | Keep | None = (
            expires_at if expires_at is Keep.KEEP or expires_at is None else inputs.when(expires_at, "expires_at"))
        if expiration_date is not Keep.KEEP:
            expiry = inputs.expiration_date(expiration_date)
        if data is None and metadata is None and expiry is Keep.KEEP:
            raise InvalidInputError("update needs new text (data), metadata and/or an expiry")
        limit = self.config.limits.max_memory_chars
        text = clean_text(data, what="data", max_chars=limit) if data is not None else None
        meta = inputs.metadata(metadata) if metadata is not None else None
        out = update_memory(self._ingestor, memory_id, scope, text, meta, infer=infer, expiry=expiry)
        return {**out, "message": "memory updated"}

    def delete(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        scope = self._scope_of(memory_id, user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        if not self.store.delete([memory_id], scope, utcnow()):
            raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
        return {"id": memory_id, "event": EventType.DELETE.value, "message": "memory deleted"}

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Delete every memory in the scope, and nothing outside it."""
        scope = Scope.of(user_id, agent_id, run_id)
        n = self.store.delete_scope(scope, utcnow())
        return {"deleted": n, "scope": dict(scope.items()), "message": f"{n} memories deleted"}

    def reset(self) -> None:
        """Delete every memory and history event of every tenant. Administration only."""
        self.store.reset()

    def optimize(self) -> dict[str, Any]:
        """Compact the store's search indexes (see :meth:`Store.optimize`); run it when the store is
        quiet, e.g. after a bulk load or nightly. Administration only: it spans every tenant."""
        return self.store.optimize()

    # -- reads ------------------------------------------------------------------------------------
    @_operation
    def get(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Steps[dict[str, Any]]:
        scope = yield from self._scope_steps(memory_id, user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        record: MemoryRecord | None = yield Call.of(Store.get, memory_id, scope)
        if record is None:
            raise NotFoundError(f"no memory {short(memory_id)} in scope {dict(scope.items())}")
        return record.public()

    @_operation
    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        show_expired: bool = False,
    ) -> Steps[dict[str, Any]]:
        """The scope's memories, newest first, expired ones left out unless ``show_expired`` (as mem0).
        mem0-style, the scope may sit in ``filters`` (``filters={"user_id": "u1"}``) and the count be
        ``top_k`` (mem0 2.x) for ``limit``."""
        scope, filters = compat.split_scope(filters, user_id, agent_id, run_id)
        flt = inputs.filters(filters, self.config.limits)
        if not inputs.flag(show_expired, "show_expired"):
            live = parse_filters({"OR": [{"expires_at": None}, {"expires_at": {"gt": iso(utcnow())}}]})
            assert live is not None
            flt = live if flt is None else And((flt, live))
        limits = self.config.limits
        n = inputs.positive(compat.pick_count(top_k, limit), limits.get_all_limit, "limit", limits.max_list_limit,
                            "limits.max_list_limit")
        found: list[MemoryRecord] = yield Call.of(Store.list_memories, scope, flt, n)
        out = {"results": [r.public() for r in found]}
        return out

    @_operation
    def history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Steps[list[dict[str, Any]]]:
        scope = yield from self._scope_steps(memory_id, user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        events: list[HistoryEvent] = yield Call.of(Store.history, memory_id, scope)
        if not events:
            raise NotFoundError(f"no history for memory {short(memory_id)} in scope {dict(scope.items())}")
        return [compat.history_row(e.public()) for e in events]

    # -- the knowledge graph, read ------------------------------------------------------------------
    @_operation
    def entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        name: str | None = None, type: str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> Steps[dict[str, Any]]:
        """The scope's entities, oldest first, a page at a time (``next_cursor`` fetches the next).

        ``name``: a fragment of a name or alias (case and accents aside); ``type``: a class of the
        ontology (by name, label or IRI), its subclasses included. Each entity carries its ``types``
        (short names) and how many memories mention it.
        """
        from .pipeline import browse

        scope = Scope.of(user_id, agent_id, run_id)
        name, type_, n = inputs.optional_text(name, "name"), inputs.optional_text(type, "type"), self._page_limit(limit)
        ontology = yield Work(lambda: self.ontology)
        return (yield from browse.entities(ontology, scope, name=name, type_=type_, limit=n, cursor=cursor))

    @_operation
    def facts(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        entity: str | None = None, relation: str | None = None, as_of: datetime | str | None = None,
        include_closed: bool = False, limit: int | None = None, cursor: str | None = None,
    ) -> Steps[dict[str, Any]]:
        """Facts of the scope, oldest first, a page at a time, each with the memories that support it.

        ``entity``: an entity's id, name or alias: facts with it at either end. ``relation``: a
        property of the ontology; its sub-properties match too, and facts of its inverse (or, when it
        is symmetric, facts stated from the other end) are read in the asked direction, marked
        ``derived``. ``as_of``: the facts valid then; else the open ones, or every one with
        ``include_closed``.
        """
        from .pipeline import browse

        scope = Scope.of(user_id, agent_id, run_id)
        entity, relation = inputs.optional_text(entity, "entity"), inputs.optional_text(relation, "relation")
        when, closed = inputs.when(as_of, "as_of"), inputs.flag(include_closed, "include_closed")
        n = self._page_limit(limit)
        ontology = yield Work(lambda: self.ontology)
        return (yield from browse.facts(ontology, scope, entity=entity, relation=relation, as_of=when,
                                        include_closed=closed, limit=n, cursor=cursor))

    def _page_limit(self, limit: int | None) -> int:
        limits = self.config.limits
        return inputs.positive(limit, limits.get_all_limit, "limit", limits.max_list_limit, "limits.max_list_limit")

    @_operation
    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        rerank: bool | None = None,
        explain: bool = False,
        as_of: datetime | str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        vector: Sequence[float] | None = None,
        show_expired: bool = False,
        now: datetime | str | None = None,
    ) -> Steps[dict[str, Any]]:
        """Rank the scope's memories by fused vector, full-text and graph relevance to ``query``.

        The graph signal (when ``search.weights["graph"]`` is positive) walks from the entities the
        query names and from the best vector and full-text hits, over mentions and typed facts
        (:mod:`graphmem.search.graph`); its hits obey the same scope and filters. ``since``/``until``
        keep memories whose time (``event_time``, else ``created_at``) lies in ``[since, until)``;
        ``as_of`` ranks what was known at that instant (memories created by then and not expired,
        facts valid then). Expired memories (``expires_at``) are left out unless ``show_expired``. With ``explain``,
        each result carries its per-signal scores and graph path, and the answer its round trips.
        ``vector``: the query's embedding by this store's embedder, when the caller already has it
        (an agent that embedded the message for something else): search then does not embed again.
        ``now``: when the question is asked (default: the current time), what "two weeks ago" or "in
        June" in it resolve against; memories neither dated nor said in a time the question names rank
        lower (``search.outside_asked_time``).

        mem0's conventions work too: the scope inside ``filters`` (``filters={"user_id": "u1"}``),
        ``limit`` (mem0 1.x) for ``top_k``, and ``rerank``: ``None`` (default) reranks when a reranker
        is configured, ``False`` skips it for this call, ``True`` with none configured warns
        (``Mem0CompatWarning``) and keeps the fused order, as mem0 does without a reranker.
        """
        from .search.engine import SearchRequest, search_steps

        scope, filters = compat.split_scope(filters, user_id, agent_id, run_id)
        count = compat.pick_count(top_k, limit)
        limits = self.config.limits
        text = clean_text(query, what="query", max_chars=limits.max_memory_chars)
        times = {name: inputs.when(value, name) for name, value in (("as_of", as_of), ("since", since),
                                                                    ("until", until), ("now", now))}
        if times["since"] and times["until"] and times["since"] >= times["until"]:
            raise InvalidInputError("since must be before until")
        req = SearchRequest(
            scope=scope, text=text,
            k=inputs.positive(count, self.config.search.top_k, "top_k", limits.max_top_k, "limits.max_top_k"),
            flt=inputs.filters(filters, limits),
            threshold=self.config.search.threshold if threshold is None else inputs.threshold(threshold),
            explain=inputs.flag(explain, "explain"), as_of=times["as_of"], since=times["since"],
            until=times["until"],
            vector=None if vector is None else inputs.query_vector(vector, self.embedder.dims, self.embedder.name),
            show_expired=inputs.flag(show_expired, "show_expired"), now=times["now"],
        )
        rerank = None if rerank is None else inputs.flag(rerank, "rerank")
        reranker = None if rerank is False else (yield Work(self._reranker))
        if rerank and reranker is None:
            compat.warn_no_reranker()
        cfg = self.config.search
        tracked = cfg.decay.access and bool(cfg.decay.half_life_days)
        out = yield from search_steps(lambda: self.ontology, cfg, req, reranker, self._access.uses if tracked else None,
                                      lambda: self._parts.built("ontology"), lambda: self._parts.reader)
        if tracked and req.as_of is None:  # a look at the past is not a use
            self._access.record(scope, (r["id"] for r in out["results"]), utcnow())
            if self._access.due(cfg.decay.flush_every, cfg.decay.flush_seconds):
                yield Work(lambda: self._access.flush(self.store))
        return out

    def _scope_of(self, memory_id: str, user_id: str | None, agent_id: str | None, run_id: str | None) -> Scope:
        """A by-id call's scope: the one given, else the memory's own (as mem0, which does not scope
        by-id calls: the Python caller holds the whole store; REST and MCP keys stay scoped)."""
        return run(self._scope_steps(memory_id, user_id, agent_id, run_id), self._engines)

    def _scope_steps(
        self, memory_id: str, user_id: str | None, agent_id: str | None, run_id: str | None
    ) -> Steps[Scope]:
        if user_id is not None or agent_id is not None or run_id is not None:
            return Scope.of(user_id, agent_id, run_id)
        check_id(memory_id, "memory_id")
        scope: Scope | None = yield Call.of(Store.scope_of, memory_id)
        if scope is None:
            raise NotFoundError(f"no memory {short(memory_id)}")
        return scope

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
        :mod:`graphmem.stores.neo4j.analyst`) raises ``CypherRefusedError`` (a ``ReadOnlyError``).
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


    # -- export, import and migration (graphmem.transfer) ----------------------------------------
    def export(
        self, target: str | os.PathLike[str] | IO[str], *, user_id: str | None = None, agent_id: str | None = None,
        run_id: str | None = None, all_scopes: bool = False, batch_size: int = 1000,
    ) -> dict[str, Any]:
        """Write a lossless JSON Lines dump of the scope (every scope it contains) to ``target``, a
        path (written whole or not at all) or an open text file: memories with their vectors,
        history, entities, facts (closed ones too, with provenance) and the quarantine.
        ``all_scopes=True`` dumps the whole store (administration). Returns the counts written."""
        from .transfer import export_dump

        scope = self._transfer_scope(user_id, agent_id, run_id, all_scopes)
        onto = self.ontology
        return export_dump(self.store, target, scope=scope, embedder=self.embedder.name, dims=self.embedder.dims,
                           ontology={"fingerprint": onto.fingerprint, "iris": list(onto.ontology_iris)},
                           batch=_batch(batch_size))

    def import_(
        self, source: str | os.PathLike[str] | IO[str], *, reembed: bool = False, batch_size: int = 1000
    ) -> dict[str, Any]:
        """Import a dump written by :meth:`export` (into any backend), checked whole before the first
        write: a malformed or cut-off dump raises ``DumpFormatError``, vectors of other dimensions
        ``SchemaMismatchError``, ids (or a scope's text or entity name) this store already holds
        ``DumpConflictError``, and nothing is written. Then batches of ``batch_size`` rows, one
        transaction each. The dump's vectors are stored as they are; ``reembed=True`` recomputes
        them with this Memory's embedder (a dump of another model)."""
        from .transfer import import_dump

        embed = (lambda texts: self.embedder.embed(texts)) if reembed else None
        return import_dump(self.store, source, embedder=self.embedder.name, dims=self.embedder.dims,
                           batch=_batch(batch_size), embed=embed)

    def export_rdf(
        self, target: str | os.PathLike[str] | IO[str], *, user_id: str | None = None, agent_id: str | None = None,
        run_id: str | None = None, all_scopes: bool = False, rdf_format: str = "turtle",
    ) -> dict[str, Any]:
        """Write the scope's entities and facts as RDF (``turtle`` or ``json-ld``) in the ontology's
        IRIs, provenance and validity as RDF reification (see :mod:`graphmem.transfer.rdf`)."""
        from .transfer import export_rdf

        scope = self._transfer_scope(user_id, agent_id, run_id, all_scopes)
        return export_rdf(self.store, target, scope=scope, rdf_format=rdf_format, prefixes=self.ontology.prefixes)

    def migrate(
        self, to: StoreTarget, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        checkpoint: str | os.PathLike[str] | None = None, batch_size: int = 1000, progress: bool = False,
        on_batch: Callable[[BatchDone], None] | None = None,
    ) -> dict[str, Any]:
        """Copy this whole store (or the scopes a given scope contains) into the store ``to``
        describes (a dict of store settings, a config file, ``sqlite:///file.db`` or a Bolt URI),
        which must hold none of those scopes; vectors are carried, nothing
        is re-embedded. Each batch is one transaction followed by a save of ``checkpoint`` (default:
        ``<home>/migrate.checkpoint.json``): run it again after an interruption and it continues.
        ``on_batch`` is called after each saved batch. Counts are compared at the end."""
        from .transfer import migrate
        from .transfer.targets import store_config

        batch = _batch(batch_size)  # every argument checked before the target store is created
        if checkpoint is not None and (not isinstance(checkpoint, str | os.PathLike) or not os.fspath(checkpoint)):
            raise InvalidInputError(f"checkpoint is a file path, got {short(checkpoint)}")
        if not isinstance(progress, bool):
            raise InvalidInputError(f"progress is True or False, got {short(progress)}")
        if on_batch is not None and not callable(on_batch):
            raise InvalidInputError(f"on_batch is a function, got {short(on_batch)}")
        path = checkpoint if checkpoint is not None else self.config.home / "migrate.checkpoint.json"
        scope = None if user_id is None and agent_id is None and run_id is None else Scope.of(user_id, agent_id, run_id)
        target = create_store(self.config.model_copy(update={"store": store_config(to)}))
        try:
            info = target.open(self.embedder.name, self.embedder.dims)
            route = f"{self.info.backend}:{self.info.location} -> {info.backend}:{info.location}"
            return migrate(self.store, target, checkpoint=path, scope=scope, batch=batch,
                           progress=progress, on_batch=on_batch, route=route)
        finally:
            target.close()

    def backup(self, target: str | os.PathLike[str]) -> dict[str, Any]:
        """Back up the whole store (every tenant) to the new file ``target`` while writers go on.
        SQLite: a consistent snapshot, itself a store (``"snapshot": True``). Other backends: a dump
        as :meth:`export` writes (on Neo4j not a snapshot: the result's ``note`` says what it holds).
        Administration only."""
        from .transfer.backup import backup

        onto = self.ontology
        return backup(self.store, target, embedder=self.embedder.name, dims=self.embedder.dims,
                      ontology={"fingerprint": onto.fingerprint, "iris": list(onto.ontology_iris)})

    def restore(self, source: str | os.PathLike[str], *, batch_size: int = 1000) -> dict[str, Any]:
        """Copy a backup written by :meth:`backup` (either kind) into this store, which must hold
        none of its scopes; checked before anything is written. Administration only."""
        from .transfer.backup import restore

        return restore(self.store, source, embedder=self.embedder.name, dims=self.embedder.dims,
                       batch=_batch(batch_size))

    def bookmarks(self) -> list[str]:
        """Tokens naming this Memory's writes so far. On a Neo4j cluster (or Aura) a read may be
        served by a member that has not applied a write yet; within one Memory every read waits for
        its own writes. Another process reads them too once given these tokens (:meth:`read_after`).
        ``[]`` on a store where every read sees every commit (SQLite)."""
        return self.store.bookmarks()

    def read_after(self, bookmarks: Sequence[str]) -> None:
        """Make later reads wait until the writes ``bookmarks`` (another Memory's :meth:`bookmarks`)
        name are visible."""
        if (isinstance(bookmarks, str | bytes) or not isinstance(bookmarks, Sequence) or len(bookmarks) > 1000
                or not all(isinstance(b, str) and 0 < len(b) <= 1000 for b in bookmarks)):
            raise InvalidInputError(f"bookmarks is a list of strings another Memory's bookmarks() returned, got "
                                    f"{short(bookmarks)}")
        self.store.read_after(list(bookmarks))

    @staticmethod
    def _transfer_scope(user_id: str | None, agent_id: str | None, run_id: str | None, all_scopes: bool
                        ) -> Scope | None:
        if all_scopes:
            if user_id is not None or agent_id is not None or run_id is not None:
                raise ScopeError("give a scope or all_scopes=True, not both")
            return None
        return Scope.of(user_id, agent_id, run_id)



class AsyncMemory:
    """The same operations as :class:`Memory`, awaitable, over the same code.

    ``add``, ``search``, ``get``, ``get_all``, ``history``, ``entities`` and ``facts`` wait natively:
    the LLM and OpenAI embedder over ``openai.AsyncOpenAI``, Neo4j over its async driver (the same
    Cypher). CPU work (chunking, planning, the SHACL guard) and stores without an async client
    (SQLite, your own) run in worker threads, as do the other operations. Use ``async with`` or
    ``await m.close()`` to close the async clients and the store.

    Cancellation: a cancelled ``add`` writes all or nothing. Its memories, history events, facts and
    entities are one write at its end; cancelled before that commit, nothing is written (on Neo4j
    the async transaction is rolled back); a commit that already happened stays whole. On a store
    run in a worker thread (SQLite), a write that already started finishes, whole, after the task is
    cancelled.
    """

    def __init__(
        self,
        config: MemoryConfig | dict[str, Any] | None = None,
        *,
        embedder: Embedder | None = None,
        store: Store | None = None,
        reranker: Reranker | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.sync = Memory(config, embedder=embedder, store=store, reranker=reranker, extractor=extractor)
        self._store = self.sync.store.asynchronous()

    @classmethod
    def from_config(cls, config: MemoryConfig | dict[str, Any]) -> AsyncMemory:
        return cls(config)

    async def _run(self, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await arun(_steps_of(operation)(self.sync, *args, **kwargs), self.sync._engines, self._store)

    async def add(self, messages: MessagesInput, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.add, messages, **kwargs)
        return out

    async def add_many(self, items: Sequence[dict[str, Any] | MessagesInput], **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.add_many, items, **kwargs)
        return out

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.search, query, **kwargs)
        return out

    async def get(self, memory_id: str, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.get, memory_id, **kwargs)
        return out

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.get_all, **kwargs)
        return out

    async def history(self, memory_id: str, **kwargs: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = await self._run(Memory.history, memory_id, **kwargs)
        return out

    async def entities(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.entities, **kwargs)
        return out

    async def facts(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = await self._run(Memory.facts, **kwargs)
        return out

    async def update(self, memory_id: str, data: str | None = None, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.update, memory_id, data, **kwargs)

    async def delete(self, memory_id: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete, memory_id, **kwargs)

    async def delete_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete_all, **kwargs)

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

    async def backup(self, target: str | os.PathLike[str]) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.backup, target)

    async def restore(self, source: str | os.PathLike[str], *, batch_size: int = 1000) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.restore, source, batch_size=batch_size)

    def bookmarks(self) -> list[str]:
        return self.sync.bookmarks()

    def read_after(self, bookmarks: Sequence[str]) -> None:
        self.sync.read_after(bookmarks)

    async def warm(self) -> AsyncMemory:
        await asyncio.to_thread(self.sync.warm)
        return self

    async def close(self) -> None:
        """Close the async store client, the async OpenAI clients, then the store."""
        await self._store.close()
        await self.sync.embedder.aclose()
        extractor = self.sync._parts.built("extractor")
        if extractor is not None:
            await extractor.aclose()
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
