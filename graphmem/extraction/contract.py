"""What an extractor returns for one chunk, and what it is given.

The same shapes serve the LLM extractor (as the JSON schema of its structured output) and the
rule-based one. Existing memories and entities are shown to extractors as small integers, never as
stored ids, so a model cannot invent or corrupt an id: the pipeline maps the integers back.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from ..models import MemoryType, Usage
from ..ontology import Ontology


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExtractedMemory(_Strict):
    text: str = Field(description="One self-contained fact, event or instruction, in the third person.")
    memory_type: MemoryType = Field(MemoryType.SEMANTIC, description="semantic, episodic or procedural.")
    event_time: str | None = Field(
        None, description="ISO-8601 date or datetime when the event happened (episodic), resolved against "
        "the reference time; null when unknown or not an event.")
    attributed_to: str | None = Field(None, description="Who said or holds this (a speaker name), if known.")
    replaces: int | None = Field(
        None, description="Number of an existing memory this one corrects or updates, else null.")


class ExtractedEntity(_Strict):
    name: str = Field(description="Canonical name as written (e.g. 'Maya Lopez', 'Acme Corp').")
    type: str | None = Field(None, description="Ontology class (local name, e.g. 'Person', 'City').")
    aliases: list[str] = Field(default_factory=list, description="Other names used for it in the text.")
    existing: int | None = Field(None, description="Number of the existing entity it is, else null.")


class ExtractedTriple(_Strict):
    source: str = Field(description="Subject entity name (as in entities).")
    relation: str = Field(description="Ontology relation (local name, e.g. 'worksFor', 'livesIn').")
    target: str = Field(description="Object entity name, or a literal value for datatype relations.")
    valid_from: str | None = Field(None, description="ISO-8601 date from which the fact holds, if stated.")
    valid_to: str | None = Field(None, description="ISO-8601 date on which the fact stopped holding, if the text "
                                 "says it ended (\"I left Acme in May\"); null while it holds.")
    memory: int | None = Field(None, description="Index (0-based) of the extracted memory that states it.")


class Skipped(_Strict):
    """Text of the chunk an extractor chose not to remember, and why ("assistant turn", "small talk",
    "question", "no content"): reported in the add result, so nothing is left out silently."""

    text: str
    reason: str


class Extraction(_Strict):
    memories: list[ExtractedMemory] = Field(default_factory=list)
    entities: list[ExtractedEntity] = Field(default_factory=list)
    triples: list[ExtractedTriple] = Field(default_factory=list)
    skipped: SkipJsonSchema[list[Skipped]] = Field(default_factory=list, exclude=True)
    """What the extractor left out on purpose; not part of the schema a model answers in."""


@dataclass(frozen=True)
class KnownMemory:
    number: int
    text: str


@dataclass(frozen=True)
class KnownEntity:
    number: int
    name: str
    types: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


@dataclass
class ExtractionContext:
    """Everything an extractor may use besides the chunk text."""

    ontology: Ontology
    reference_time: datetime
    """Relative dates ("last week") are resolved against this: the message time or ``reference_date``."""
    speakers: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    """Speaker label -> the role its messages have (``user``, ``assistant``, ``system``, ``tool``)."""
    user: str | None = None
    """The scope's user (its ``user_id``): whom "I" of a turn in the ``user`` role without a name stands
    for. A name the turn gives ("I'm Kari") becomes that entity's other name, never a second person."""
    memories: list[KnownMemory] = field(default_factory=list)
    entities: list[KnownEntity] = field(default_factory=list)
    chunk_index: int = 0
    chunk_count: int = 1
    """Where the chunk sits in its ``add`` (errors name it: "chunk 2 of 6")."""
    usage: Usage | None = None
    """The ``add``'s usage counters; an extractor that calls a model adds to them."""
    instructions: str | None = None
    """The caller's instructions for this ``add`` (mem0's ``prompt``): a model follows them within
    its own; the rule extractor cannot."""


@dataclass(frozen=True)
class Rejection:
    """A triple the guard refused, sent back to the extractor once with the SHACL messages."""

    triple: ExtractedTriple
    reasons: tuple[str, ...]


class Extractor(ABC):
    """Turns one chunk into memories, entities and triples."""

    name: str
    uses_known_memories: bool = True
    """Whether ``extract`` reads ``context.memories``; when not, the pipeline skips that lookup."""
    follows_instructions: bool = False
    """Whether ``extract`` reads ``context.instructions``; when not, ``add(prompt=)`` warns."""

    @abstractmethod
    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        """Raise :class:`~graphmem.errors.ExtractionError` when no valid extraction can be obtained."""

    def repair(self, chunk: str, context: ExtractionContext, previous: Extraction,
               rejected: list[Rejection]) -> list[ExtractedTriple]:
        """Corrected versions of the rejected triples (may be fewer, or none). Default: none."""
        return []

    def warm(self) -> None:  # noqa: B027 - optional: only extractors with local models load anything
        """Load what the first ``extract`` would (models, tables), so a server's first request costs
        what its hundredth does. Default: nothing."""

    async def aextract(self, chunk: str, context: ExtractionContext) -> Extraction:
        """:meth:`extract` for ``AsyncMemory``: in a worker thread unless the extractor waits on a
        remote model natively (:class:`~graphmem.extraction.llm.LLMExtractor`)."""
        return await asyncio.to_thread(self.extract, chunk, context)

    async def aclose(self) -> None:  # noqa: B027 - optional: only remote extractors hold an async client
        """Close the async client, if any."""
