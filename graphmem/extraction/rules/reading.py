"""``StatementReader``: what a stored text states, read again when a search needs to know.

A memory stored without facts (``infer=False``, or a sentence extraction found nothing in) still
says things: "Left Nubank for iFood" says where its speaker works. Search asks this only of the few
memories it ranks, and only when a question asks a relation whose values follow one another
(:func:`graphmem.search.validity.by_time`); the answer is the rule extractor's reading of the text,
never written anywhere.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from ..schema import ExtractionContext

if TYPE_CHECKING:
    from .extractor import RuleExtractor

Statement = tuple[str, str, str]
"""(relation IRI, subject name, object name or value), names casefolded."""

CACHED: Final = 4096
"""Texts whose readings are kept: a scope's memories are ranked again and again."""


class StatementReader:
    """Reads a text (said by ``speaker``) into the statements the extractor finds in it, each also
    as its inverse, remembered per text. Thread-safe, as the extractor is."""

    def __init__(self, extractor: RuleExtractor) -> None:
        self.extractor = extractor
        self._read = functools.lru_cache(maxsize=CACHED)(self._statements)

    def __call__(self, text: str, speaker: str | None) -> frozenset[Statement]:
        return self._read(text, speaker)

    def warm(self) -> None:
        self.extractor.warm()

    def _statements(self, text: str, speaker: str | None) -> frozenset[Statement]:
        label = speaker or "user"
        onto = self.extractor.ontology
        found = self.extractor.extract(f"{label}: {text}",
                                       ExtractionContext(onto, datetime.now(UTC), [label], roles={label: "user"}))
        out: set[Statement] = set()
        for triple in found.triples:
            iri = onto.resolve_relation(triple.relation)
            if iri is None:
                continue
            source, target = triple.source.casefold(), triple.target.casefold()
            out.add((iri, source, target))
            if (inverse := onto.relations[iri].inverse) is not None:
                out.add((inverse, target, source))
        return frozenset(out)
