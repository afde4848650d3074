"""The parts every write operation of one :class:`~graphmem.memory.Memory` shares, built once.

The ontology, the guard, the extractor and the chunker are loaded on first use, not when the
``Memory`` is made: a process that only searches never compiles shapes or loads spaCy. A part given
by the caller (``Memory(extractor=...)``) is used as it is. Memory objects are shared by the threads
of a server, so each part is built under a lock, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import MemoryConfig
from ..embedding import Embedder
from ..stores.base import Store

if TYPE_CHECKING:
    from ..chunking import Chunk
    from ..extraction import Extractor
    from ..extraction.rules import StatementReader
    from ..ontology import Guard, Ontology
    from .planner import GraphPlanner
    from .steps import Engines

log = logging.getLogger("graphmem")
T = TypeVar("T")


class Parts:
    """What ``add``, ``update`` and ``recheck`` are made of, for one store and one configuration."""

    def __init__(self, config: MemoryConfig, store: Store, embedder: Embedder, *,
                 extractor: Extractor | None = None) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        if extractor is None:
            from ..extraction.registry import check_extractor

            check_extractor(config)
        self._built: dict[str, Any] = {} if extractor is None else {"extractor": extractor}
        self._lock = threading.RLock()  # a part is built from others (the planner from the guard)

    def engines(self) -> Engines:
        """What the pipeline's steps (:mod:`.steps`) are answered by."""
        from .steps import Engines

        return Engines(self.store, self.embedder, lambda: self.extractor)

    def built(self, name: str) -> Any:
        """The part named ``name`` if it was built (or given), else ``None``: closing builds nothing."""
        return self._built.get(name)

    def _once(self, name: str, build: Callable[[], T]) -> T:
        part = self._built.get(name)
        if part is None:
            with self._lock:
                part = self._built.get(name)
                if part is None:
                    part = self._built[name] = build()
        return part

    @property
    def ontology(self) -> Ontology:
        """The compiled ontology and shapes of ``config.ontology``."""
        def build() -> Ontology:
            from ..ontology import Ontology

            return Ontology.load(self.config.ontology.ontology, self.config.ontology.shapes)

        return self._once("ontology", build)

    @property
    def guard(self) -> Guard:
        def build() -> Guard:
            from ..ontology import Guard

            return Guard(self.ontology)

        return self._once("guard", build)

    @property
    def planner(self) -> GraphPlanner:
        def build() -> GraphPlanner:
            from .planner import GraphPlanner

            return GraphPlanner(self.ontology, self.guard, self.store, self.embedder,
                                type_untyped=self.config.ontology.type_untyped_entities,
                                similarity=self.config.dedup.entity_similarity)

        return self._once("planner", build)

    @property
    def extractor(self) -> Extractor:
        """The one given, else the one ``extraction.provider`` names (:mod:`graphmem.extraction.registry`)."""
        def build() -> Extractor:
            from ..extraction.registry import create_extractor

            extractor = create_extractor(self.config, self.ontology, self.embedder)
            log.info("graphmem extractor: %s", extractor.name)
            return extractor

        return self._once("extractor", build)

    @property
    def reader(self) -> StatementReader:
        """What search reads in a memory's text (:mod:`graphmem.extraction.rules.reading`): the rule
        extractor's reading, whichever extractor writes."""
        def build() -> StatementReader:
            from ..extraction.rules import RuleExtractor, StatementReader

            extractor = self.extractor
            if not isinstance(extractor, RuleExtractor):
                extractor = RuleExtractor(self.ontology, embedder=self.embedder if self.embedder.semantic else None)
            return StatementReader(extractor)

        return self._once("reader", build)

    def warm(self) -> None:
        """Build every part and run the embedder, the extractor and search's reader once (see
        :meth:`Memory.warm`)."""
        self.planner  # noqa: B018 - builds the ontology and the guard too
        self.guard.warm()
        self.extractor.warm()
        if self.reader.extractor is not self.extractor:
            self.reader.warm()
        self.chunk(["user: warm"])
        self.embedder.embed(["warm"])

    def chunk(self, lines: list[str]) -> list[Chunk]:
        """The conversation's lines cut into chunks within the extractor's token budget."""
        def build() -> Any:
            from ..chunking import from_config
            from ..extraction.registry import chosen

            model = self.config.llm.model if chosen(self.config) == "llm" else None
            return from_config(self.config.chunking, model, embed=self.embedder.embed)

        chunks: list[Chunk] = self._once("chunker", build).chunk_messages(lines)
        return chunks
