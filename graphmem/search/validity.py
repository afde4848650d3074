"""The current truth first: a memory whose facts a newer value replaced ranks below the memory that
states the newer value.

"Maya lives in Lisbon." then "Maya moved to Porto.": the planner closes ``livesIn Lisbon`` (``livesIn``
is functional) and opens ``livesIn Porto``. A memory is *superseded* when every fact it supports is
closed and each has a newer open value of the same subject and functional relation (a fact that only
ended, "I left Acme in May", has none: that memory still tells the truth); when the question names
relations the memory states, only those facts count. Unless the question is
about the past (``as_of``, or :func:`asks_about_past`), a superseded memory's score is multiplied by
:data:`SUPERSEDED` and kept below the memory stating the newer value when that one is ranked too.
Every superseded hit says so (``superseded_by``, the closed fact's ``valid_from``/``valid_to``),
whether it was moved or not.

Memories without facts (``infer=False``, or what extraction missed) *conflict* when they state the
same functional relation the question asks about, of the same person, said on different days:
:func:`newest_first` puts the later first in a question about the present.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from ..models import MemoryRecord, MemoryType, iso

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..models import Relation
    from ..ontology import Ontology
    from ..stores.base import FactStates

SUPERSEDED: Final = 0.5
"""Score factor of a superseded memory in a question about the present (``bench/updates.py``)."""

_PAST: Final = re.compile(
    r"\b(?:before|previous(?:ly)?|prior|former(?:ly)?|used to|originally|at first|earlier|ago|in the past|"
    r"old (?:job|home|address|place|house|flat|apartment|city|employer|company|team|role|title|boss|school)|"
    r"history|back (?:then|when|in)|last (?:year|month|week|time)|until|"
    r"did|was|were|had|lived|worked|(?:19|20)\d\d)\b",
    re.IGNORECASE)
"""Words that put a question in the past: a tense ("where did she live", "what was her job"), a
contrast ("before Porto", "her old job") or a date ("in 2023")."""


def asks_about_past(question: str) -> bool:
    """Whether the question asks what held before, not what holds now."""
    return _PAST.search(question) is not None


@dataclass(frozen=True)
class Superseded:
    fact: Relation
    """The closed fact the memory states (its first, when it states several)."""
    by: Relation
    """The open fact that replaced it."""

    def public(self, ontology: Ontology) -> dict[str, Any]:
        """What a hit carries: the replacing memory and fact, and the replaced fact's validity."""
        info = ontology.relations.get(self.by.relation)
        return {
            "superseded_by": {"memory_id": self.by.memory_ids[0] if self.by.memory_ids else None,
                              "fact_id": self.by.id, "relation": info.name if info else self.by.relation,
                              "valid_from": iso(self.by.valid_from) if self.by.valid_from else None},
            "valid_from": iso(self.fact.valid_from) if self.fact.valid_from else None,
            "valid_to": iso(self.fact.valid_to) if self.fact.valid_to else None,
        }


def superseded(states: dict[str, FactStates], ontology: Callable[[], Ontology], question: str = "",
               named: frozenset[str] = frozenset()) -> dict[str, Superseded]:
    """Memory id -> how it was superseded, for the memories every fact of which a newer value of a
    functional relation replaced; of a memory stating a relation the question names (``named``: IRIs
    the graph signal linked, else by :func:`asked_relations`), only those facts count ("I live in
    Lisbon and work at Acme" tells an old home even while Acme holds). The ontology loads only when
    needed."""
    out: dict[str, Superseded] = {}
    asked: frozenset[str] | None = None
    for mid, state in states.items():
        pairs, held = state.superseded, [*state.open, *state.ended]
        if not pairs:
            continue
        if held and asked is None:
            asked = named or asked_relations(question, ontology())
        if asked and asked & {*held, *(old.relation for old, _ in pairs)}:
            pairs, held = [p for p in pairs if p[0].relation in asked], [r for r in held if r in asked]
        if held or not pairs:
            continue
        if all((info := ontology().relations.get(old.relation)) is not None and info.functional for old, _ in pairs):
            out[mid] = Superseded(*pairs[0])
    return out


_FUNCTION_WORDS: Final = frozenset({"a", "an", "the", "in", "at", "to", "for", "of", "on", "by", "with", "from",
                                    "is", "has", "have", "been", "be", "as"})


def _stem(word: str) -> str:
    """Crude, and enough to tell "lives"/"live"/"living" apart from "works"."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z]+", text.casefold())}


@functools.lru_cache(maxsize=8)
def _label_words(ontology: Ontology) -> dict[str, tuple[frozenset[str], ...]]:
    """Each relation's labels as sets of stemmed content words, once per ontology (search reads
    them on every question about the present)."""
    out: dict[str, tuple[frozenset[str], ...]] = {}
    for iri, info in ontology.relations.items():
        sets = ({_stem(w) for w in re.findall(r"[a-z]+", label.casefold()) if w not in _FUNCTION_WORDS}
                for label in (info.label, *info.alt_labels))
        out[iri] = tuple(frozenset(c) for c in sets if c)
    return out


def _says(words: set[str], iri: str, ontology: Ontology) -> bool:
    """Whether the words hold every content word of one of the relation's labels."""
    return any(content <= words for content in _label_words(ontology).get(iri, ()))


def asked_relations(question: str, ontology: Ontology) -> frozenset[str]:
    """The relations whose label or ``skos:altLabel`` words all occur in the question, inflection
    aside ("where does she live?" names ``livesIn``, "lives in"; "who does she work for?" ``worksFor``)."""
    words = _words(question)
    return frozenset(iri for iri, labels in _label_words(ontology).items() if any(c <= words for c in labels))


RESTATED_GAP: Final = timedelta(days=1)
"""How far apart two statements must be said for the later one to count as the newer: a document
loaded in one go states nothing "later"."""


_NAME: Final = re.compile(r"\b[A-Z][\w'-]+")
_QUESTION_WORDS: Final = frozenset({"what", "where", "who", "whom", "which", "when", "how", "why", "is", "does",
                                    "do", "i", "my", "the", "a", "an", "can", "could", "would", "tell", "whose"})


def _by_or_naming(rec: MemoryRecord, name: str) -> bool:
    """Whether the memory was said by ``name`` (casefolded) or names them."""
    return (rec.actor_id or "").casefold() == name or re.search(
        rf"\b{re.escape(name)}\b", rec.memory.casefold()) is not None


def _said(rec: MemoryRecord) -> datetime | None:
    """When the memory was said: its message's time (``event_time`` of a semantic or procedural
    memory), else when it was stored. An episodic memory's ``event_time`` is when what it tells
    happened ("in 1995 ..."), not when it was said: it does not count."""
    if rec.memory_type is MemoryType.EPISODIC:
        return None
    return rec.event_time or rec.created_at


def newest_first(ranked: list[tuple[float, Any]], question: str, ontology: Callable[[], Ontology],
                 linked: frozenset[str] = frozenset()) -> dict[str, float]:
    """In a question about the present that names functional relations (one current value, so a
    later statement replaces an earlier one), the ranked memories whose text says one
    of them (the relation's label words) are put newest first, in the places they hold, when they
    were said at least :data:`RESTATED_GAP` apart: "We moved to Porto" (May) above "I live in
    Lisbon" (January), with or without facts (``infer=False``), so on every backend alike. When the
    question names someone whom ranked memories name or who said them, only their memories count.
    ``ranked``: (score, (memory id, fused, record, factor)), changed in place; ``linked``: the
    relations the graph signal linked in the question, else :func:`asked_relations`. Returns the
    score factor of each memory moved. The ontology loads only when the ranked memories were said
    on different days."""
    records = [item[2] for _, item in ranked]
    times = [t for t in map(_said, records) if t is not None]
    if len(times) < 2 or max(times) - min(times) < RESTATED_GAP:
        return {}
    onto = ontology()
    asked = frozenset(iri for iri in (linked or asked_relations(question, onto))
                      if (info := onto.relations.get(iri)) is not None and info.functional)
    if not asked:
        return {}
    named = {n.casefold() for n in _NAME.findall(question)} - _QUESTION_WORDS
    named = {n for n in named if any(_by_or_naming(r, n) for r in records)}
    said: dict[int, datetime] = {}
    for n, (_, item) in enumerate(ranked):
        rec = item[2]
        when = _said(rec)
        if when is None or (named and not any(_by_or_naming(rec, name) for name in named)):
            continue
        if any(_says(_words(rec.memory), iri, onto) for iri in asked):
            said[n] = when
    places = list(said)
    if len(places) < 2:
        return {}
    if max(said.values()) - min(said.values()) < RESTATED_GAP:
        return {}
    order = sorted(places, key=lambda n: said[n], reverse=True)
    moved: dict[str, float] = {}
    old = list(ranked)
    for place, n in zip(places, order, strict=True):
        if place != n:
            score, item = old[n]
            new = old[place][0]
            ranked[place] = (new, item)
            moved[item[0]] = new / score if score else 1.0
    return moved


def demote(ranked: list[tuple[float, Any]], replaced: dict[str, Superseded]) -> dict[str, float]:
    """Lower the superseded memories of ``ranked`` (score, (memory id, ...)) in place, each below
    the memory that replaced it when that one is ranked; returns the factor applied per memory."""
    score_of = {item[0]: score for score, item in ranked}
    factors: dict[str, float] = {}
    for n, (score, item) in enumerate(ranked):
        hit = replaced.get(item[0])
        if hit is None:
            continue
        new = score * SUPERSEDED
        newer = [score_of[m] for m in hit.by.memory_ids if m in score_of and m not in replaced]
        if newer:
            new = min(new, max(newer) * SUPERSEDED)
        ranked[n] = (new, item)
        factors[item[0]] = new / score if score else SUPERSEDED
    ranked.sort(key=lambda entry: (-entry[0], entry[1][0]))
    return factors
