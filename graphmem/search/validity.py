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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..models import iso

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


def _says(words: set[str], iri: str, ontology: Ontology) -> bool:
    """Whether the words hold every content word of one of the relation's labels."""
    info = ontology.relations[iri]
    for label in (info.label, *info.alt_labels):
        content = {_stem(w) for w in re.findall(r"[a-z]+", label.casefold()) if w not in _FUNCTION_WORDS}
        if content and content <= words:
            return True
    return False


def asked_relations(question: str, ontology: Ontology) -> frozenset[str]:
    """The relations whose label or ``skos:altLabel`` words all occur in the question, inflection
    aside ("where does she live?" names ``livesIn``, "lives in"; "who does she work for?" ``worksFor``)."""
    words = _words(question)
    return frozenset(iri for iri in ontology.relations if _says(words, iri, ontology))


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
