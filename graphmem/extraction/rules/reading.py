"""``StatementReader``: what a stored text states, read again when a search needs to know.

A memory stored without facts (``infer=False``, or a sentence extraction found nothing in) still
says things: "Left Nubank for iFood" says where its speaker works. Search asks this only of the few
memories it ranks, and only when a question asks a relation whose values follow one another
(:func:`graphmem.search.validity.by_time`); the answer is the rule extractor's reading of the texts,
never written anywhere. As on the write path, a name one text types ("Started at Nubank": an
organization) is known to the others ("Left Nubank for iFood": a job left for another).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from ..contract import ExtractionContext, KnownEntity

if TYPE_CHECKING:
    from .extractor import RuleExtractor

Statement = tuple[str, str, str]
"""(relation IRI, subject name, object name or value), names casefolded."""

CACHED: Final = 4096
"""Texts whose readings are kept: a scope's memories are ranked again and again."""


@dataclass(frozen=True)
class Reading:
    statements: frozenset[Statement]
    types: tuple[tuple[str, str], ...]
    """(name, class) of each entity it types, the speaker aside."""


class StatementReader:
    """Reads texts (each said by a speaker) into the statements the extractor finds in them, each
    also as its inverse, remembered per text. Thread-safe, as the extractor is."""

    def __init__(self, extractor: RuleExtractor) -> None:
        self.extractor = extractor
        self._read = functools.lru_cache(maxsize=CACHED)(self._reading)

    def __call__(self, said: Sequence[tuple[str, str | None]]) -> list[frozenset[Statement]]:
        """The statements of each (text, speaker), read as the texts of one conversation."""
        first = [self._read(text, speaker, ()) for text, speaker in said]
        typed: dict[str, tuple[str, str]] = {}
        for reading in first:
            for name, cls in reading.types:
                typed.setdefault(name.casefold(), (name, cls))
        out = []
        for (text, speaker), reading in zip(said, first, strict=True):
            own = {name.casefold() for name, _ in reading.types}
            low = text.casefold()
            known = tuple(sorted(v for k, v in typed.items()
                                 if k not in own and re.search(rf"(?<!\w){re.escape(k)}(?!\w)", low)))
            out.append((self._read(text, speaker, known) if known else reading).statements)
        return out

    def warm(self) -> None:
        self.extractor.warm()

    def _reading(self, text: str, speaker: str | None, known: tuple[tuple[str, str], ...]) -> Reading:
        label = speaker or "user"
        onto = self.extractor.ontology
        context = ExtractionContext(onto, datetime.now(UTC), [label], roles={label: "user"},
                                    entities=[KnownEntity(n, name, (cls,)) for n, (name, cls) in enumerate(known)])
        found = self.extractor.extract(f"{label}: {text}", context)
        out: set[Statement] = set()
        for triple in found.triples:
            iri = onto.resolve_relation(triple.relation)
            if iri is None:
                continue
            source, target = triple.source.casefold(), triple.target.casefold()
            out.add((iri, source, target))
            if (inverse := onto.relations[iri].inverse) is not None:
                out.add((inverse, target, source))
        types = tuple((e.name, e.type) for e in found.entities if e.type is not None and e.name != label)
        return Reading(frozenset(out), types)
