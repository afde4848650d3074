"""Shared set-up for the per-part rule tests: the default ontology's resources and a prepared chunk."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

from graphmem.extraction import ExtractionContext, KnownEntity
from graphmem.extraction.rules import entities
from graphmem.extraction.rules.resources import Resources, load
from graphmem.extraction.rules.state import ChunkState, Sentence
from graphmem.extraction.rules.text import tokenize
from graphmem.ontology import Ontology

REF = datetime(2024, 6, 15, 12, 0, tzinfo=UTC)


@cache
def resources() -> Resources:
    return load(Ontology.load())


def prepare(text: str, speakers: tuple[str, ...] = (), known: tuple[KnownEntity, ...] = (),
            *, mentions: bool = True) -> ChunkState:
    """A chunk as the extractor has it before finding triples: registry, sentences and (optionally) mentions."""
    res = resources()
    state = ChunkState(ExtractionContext(res.ontology, REF, list(speakers), entities=list(known)))
    messages = tokenize(text, list(speakers), res.nlp, res.english)
    entities.register_known(res, state, messages)
    state.known = entities.known_table(res, state)
    state.sentences = Sentence.split(messages)
    if mentions:
        for sent in state.sentences:
            entities.add_mentions(res, state, sent)
        entities.merge_short_forms(res, state)
    return state


def mention_names(state: ChunkState, sent: int = 0) -> list[tuple[str, str]]:
    """(entity name, kind) of each mention of one sentence, left to right."""
    return [(state.entities[m.key].name, m.kind) for m in state.sentences[sent].mentions]
