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

Statements of a relation whose values follow one another (functional, or ``gm:oneAtATime``) are put
in the order the question asks for by :func:`by_time`: the latest first about the present, the value
of then about the past ("before Porto", "in 2021"). A memory states the relation by a fact it
supports or by its label's words, so memories without facts (``infer=False``, or what extraction
missed) take part too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from ..models import MemoryRecord, MemoryType, iso

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..extraction.rules.reading import Statement
    from ..models import Relation
    from ..ontology import Ontology
    from ..stores.base import FactStates, Subgraph

SUPERSEDED: Final = 0.5
"""Score factor of a superseded memory in a question about the present (``bench/updates.py``)."""

_LETTERS: Final = re.compile(r"[^\W\d_]+")
"""Words of letters, any alphabet's ("Lucía" is one word, not "luc" and "a")."""
_ALNUM: Final = re.compile(r"[^\W_]+")

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
                                    "is", "was", "were", "are", "am", "will", "has", "have", "had", "been", "be",
                                    "as"})


def _stem(word: str) -> str:
    """Crude, and enough to tell "lives"/"live"/"living" apart from "works"."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _LETTERS.findall(text.casefold())}


_PARTICLES: Final = frozenset({"in", "at", "to", "for", "of", "on", "by", "with", "from", "as"})
_DETERMINERS: Final = frozenset({"a", "an", "the", "my", "your", "his", "her", "its", "our", "their"})


@dataclass(frozen=True)
class _Label:
    content: frozenset[str]
    """Its stemmed content words."""
    particles: frozenset[str]
    """Its function words ("for" of "works for"): a question that has them names it more surely."""
    past: frozenset[str]
    """The stems of its "-ed" words ("lived in"): said of a question in the present tense, a weaker match."""


@functools.lru_cache(maxsize=8)
def _labels(ontology: Ontology) -> dict[str, tuple[_Label, ...]]:
    """Each relation's labels and altLabels, once per ontology (search reads them on every question)."""
    out: dict[str, tuple[_Label, ...]] = {}
    for iri, info in ontology.relations.items():
        labels = []
        for label in (info.label, *info.alt_labels):
            words = _LETTERS.findall(label.casefold())
            content = frozenset(_stem(w) for w in words if w not in _FUNCTION_WORDS)
            if content:
                labels.append(_Label(content, frozenset(w for w in words if w in _PARTICLES),
                                     frozenset(_stem(w) for w in words if w.endswith("ed"))))
        out[iri] = tuple(labels)
    return out


def _says(words: set[str], iri: str, ontology: Ontology) -> bool:
    """Whether the words hold every content word of one of the relation's labels."""
    return any(label.content <= words for label in _labels(ontology).get(iri, ()))


_ANSWER_KIND: Final = (
    (re.compile(r"\bwhere\b|\b(?:what|which) (?:city|town|country|place|neighbou?rhood)\b", re.IGNORECASE),
     ("place", "location")),
    (re.compile(r"\b(?:what|which) (?:company|companies|organi[sz]ation|employer|firm|business)\b", re.IGNORECASE),
     ("organization",)),
    (re.compile(r"\bwho(?:m)?\b", re.IGNORECASE), ("person", "organization", "agent")),
)
"""What a question's opening says its answer is ("where" a place, "who" a person or an organization),
as class names the ontology resolves; a relation whose range is none of them is not what is asked."""


_ANSWER_OPENING: Final = re.compile(
    r"\b(?:what|which) (?:city|town|country|place|neighbou?rhood|company|companies|organi[sz]ation|employer|firm|"
    r"business)\b", re.IGNORECASE)
_NOW_WORDS: Final = frozenset({"now", "currently", "these", "days", "today", "still", "moment"})


_XSD: Final = "http://www.w3.org/2001/XMLSchema#"
_TIMES: Final = frozenset(_XSD + t for t in ("date", "dateTime", "dateTimeStamp", "gYear", "gYearMonth", "time",
                                             "duration"))
_NUMBERS: Final = frozenset(_XSD + t for t in ("integer", "int", "long", "short", "decimal", "float", "double",
                                               "nonNegativeInteger", "positiveInteger"))
_ASKS_TIME: Final = re.compile(r"^\W*when\b|\b(?:what|which) (?:date|day|year|month|time)\b|\bhow long\b",
                               re.IGNORECASE)
_ASKS_NUMBER: Final = re.compile(r"\bhow (?:old|many|much|tall|far)\b|\bwhat (?:age|number)\b", re.IGNORECASE)


def _value_kind(ranges: tuple[str, ...]) -> str | None:
    return "time" if _TIMES & set(ranges) else "number" if _NUMBERS & set(ranges) else None


def _asked_kind(question: str) -> str | None:
    """A time ("when ...?") or a number ("how old ...?"): only a relation with such values answers it,
    and a relation with such values answers nothing else ("start making videos" asks no start date)."""
    return "time" if _ASKS_TIME.search(question) else "number" if _ASKS_NUMBER.search(question) else None


def _answer_classes(question: str, ontology: Ontology) -> tuple[str, ...] | None:
    for pattern, names in _ANSWER_KIND:
        if pattern.search(question):
            found = tuple(c for c in map(ontology.resolve_class, names) if c is not None)
            return found or None
    return None


def asked_relations(question: str, ontology: Ontology) -> frozenset[str]:
    """The relations the question names: every content word of a label or ``skos:altLabel`` occurs
    in it, inflection aside ("where does she live?" names ``livesIn``, "lives in"), its values are
    the kind the question asks for (a time, a number, else anything but those: :func:`_asked_kind`),
    the range fits what the question's opening asks for ("where": a place; "who": a person or an
    organization), and of those, the best named: the most label words, its particles too ("who does she work for?":
    ``worksFor``, not ``colleagueOf``'s "works with"), its tense ("lived in" is weaker in a question
    about the present)."""
    raw = _LETTERS.findall(question.casefold())
    words = {_stem(w) for w in raw}
    # "her work", "a living room": nouns, not the verbs of "works for", "lives in"
    verbs = {_stem(w) for n, w in enumerate(raw) if n == 0 or raw[n - 1] not in _DETERMINERS}
    past = {_stem(w) for w in raw if w.endswith("ed")}
    best: dict[str, tuple[int, int, int]] = {}
    value = _asked_kind(question)
    for iri, labels in _labels(ontology).items():
        if _value_kind(ontology.relations[iri].range) != value:
            continue
        for label in labels:
            if label.content <= (verbs if label.particles and len(label.content) == 1 else words):
                rank = (len(label.content), len(label.particles & set(raw)), -len(label.past - past))
                best[iri] = max(best.get(iri, rank), rank)
    kinds = _answer_classes(question, ontology)
    fitting = {iri: rank for iri, rank in best.items() if kinds is not None and any(
        ontology.is_subclass(r, k) or ontology.is_subclass(k, r) for r in ontology.relations[iri].range for k in kinds)}
    best = fitting or best  # "where does she work?" asks worksFor all the same
    top = max(best.values(), default=None)
    named = {iri for iri, rank in best.items() if rank == top}
    return frozenset(named | {inverse for iri in named if (inverse := ontology.relations[iri].inverse)})


RESTATED_GAP: Final = timedelta(days=1)
"""How far apart two statements must be said for the later one to count as the newer: a document
loaded in one go states nothing "later"."""


_NAME: Final = re.compile(r"\b[^\W\d_][\w'-]+")
"""A word that may be a name: :func:`_named` keeps those with a capital ("Lucía", "Émile")."""
_QUESTION_WORDS: Final = frozenset({"what", "where", "who", "whom", "which", "when", "how", "why", "is", "does",
                                    "do", "i", "my", "the", "a", "an", "can", "could", "would", "tell", "whose"})


def _by_or_naming(rec: MemoryRecord, name: str) -> bool:
    """Whether the memory was said by ``name`` (casefolded) or names them."""
    return (rec.actor_id or "").casefold() == name or re.search(
        rf"\b{re.escape(name)}\b", rec.memory.casefold()) is not None


def _said(rec: MemoryRecord, dated: bool) -> datetime | None:
    """When the memory was said: its message's time (``event_time`` of a semantic or procedural
    memory), else when it was stored. An episodic memory's ``event_time`` is when what it tells
    happened: in a conversation whose messages carry times (``dated``) that is its message's time
    moved by what it says ("we relocated last week"), a fair time of saying; in a document without
    times it is content time ("in 1995 ..."), which does not count."""
    if rec.memory_type is MemoryType.EPISODIC and not dated:
        return None
    return rec.event_time or rec.created_at


def _dated(records: list[MemoryRecord]) -> bool:
    """Whether the memories come from messages with times (``timestamp``): some non-episodic one has one."""
    return any(r.event_time is not None and r.memory_type is not MemoryType.EPISODIC for r in records)


def said_apart(records: list[MemoryRecord]) -> bool:
    """Whether the memories were said at least :data:`RESTATED_GAP` apart: only then can one
    statement be newer than another (a document loaded in one go states nothing later)."""
    dated = _dated(records)
    times = [t for t in (_said(r, dated) for r in records) if t is not None]
    return len(times) > 1 and max(times) - min(times) >= RESTATED_GAP


def timed_relations(question: str, ontology: Ontology) -> frozenset[str]:
    """The relations the question asks (:func:`asked_relations`) whose values follow one another
    in time: functional ones, and those marked ``gm:oneAtATime`` (a job: people may hold two, but
    the latest is what "who does she work for?" asks)."""
    def timed(iri: str) -> bool:
        info = ontology.relations.get(iri)
        return info is not None and (info.functional or info.one_at_a_time)

    asked = asked_relations(question, ontology)
    if asked:
        return _with_plans(frozenset(filter(timed, asked)), question, ontology)
    # none named, and the question says nothing but what it asks for ("what company is she with now?",
    # "where is he now?", not "where has she camped?"): the relations whose values are such things (a job);
    # not a time, a number or a person ("who is she with now?" may ask anything)
    kinds = _answer_classes(question, ontology)
    if kinds is None or _asked_kind(question) is not None or ontology.resolve_class("person") in kinds:
        return frozenset()
    said = {w.casefold() for w in _LETTERS.findall(_ANSWER_OPENING.sub(" ", question))
            if not w[0].isupper() or w.casefold() in _QUESTION_WORDS}
    if said - _FUNCTION_WORDS - _QUESTION_WORDS - _NOW_WORDS:
        return frozenset()
    fitting = {iri for iri, info in ontology.relations.items() if timed(iri) and _value_kind(info.range) is None
               and any(ontology.is_subclass(r, k) for r in info.range for k in kinds)}
    # with their inverses, as a named relation has them ("Tabby hired me": employs, of worksFor)
    fitting |= {inverse for iri in fitting if (inverse := ontology.relations[iri].inverse)}
    return _with_plans(frozenset(fitting), question, ontology)


def _with_plans(timed: frozenset[str], question: str, ontology: Ontology) -> frozenset[str]:
    """About the present, the relations of plans that become one of ``timed`` once they happen
    (``gm:becomes``: "we're moving to Kigali", said after the last home, tells where they live now)."""
    if not timed or asks_about_past(question):
        return timed
    return timed | {iri for iri, info in ontology.relations.items() if info.becomes in timed}


def to_read(ranked: list[tuple[float, Any]], question: str, relations: frozenset[str],
            states: dict[str, FactStates]) -> list[MemoryRecord]:
    """The ranked memories whose text :func:`by_time` needs read: those supporting no fact of
    ``relations``, said by or naming the person the question names, when they were said apart
    (else nothing is put in time order)."""
    records = [item[2] for _, item in ranked]
    if not relations or not said_apart(records):
        return []
    named = _named(question, records)
    return [rec for rec in records if not relations & _supported(states.get(rec.id))
            and (not named or any(_by_or_naming(rec, name) for name in named))]


def _named(question: str, records: list[MemoryRecord]) -> set[str]:
    """The people the question names (casefolded) whom ranked memories name or who said them."""
    named = {n.casefold() for n in _NAME.findall(question) if n[0].isupper()} - _QUESTION_WORDS
    return {n for n in named if any(_by_or_naming(r, n) for r in records)}


def _supported(state: FactStates | None) -> set[str]:
    """The relations of the facts a memory supports, open, ended or superseded."""
    return {*state.open, *state.ended, *(old.relation for old, _ in state.superseded)} if state else set()


def stating(sub: Subgraph, relations: frozenset[str]) -> frozenset[str]:
    """The memories supporting a fact of ``relations`` whose subject or object the question linked
    ("where does Maya live?": those of Maya's ``livesIn`` facts in the neighbourhood the store read)."""
    linked = set(sub.linked.values())
    if not relations or not linked:
        return frozenset()
    return frozenset(mid for fact in sub.relations if fact.relation in relations
                     and (fact.source_id in linked or fact.target_id in linked) for mid in fact.memory_ids)


_MONTHS: Final = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                  "october", "november", "december")
_WHEN: Final = re.compile(
    r"\b(?:(?P<part>early|mid|late|(?:the )?(?:start|beginning|middle|end) of)[ -]+)?"
    r"(?:(?P<month>" + "|".join(_MONTHS) + r") +)?(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE)
_PART: Final = {"early": 3, "start": 1, "beginning": 1, "mid": 7, "middle": 7, "late": 11, "end": 12}
_BEFORE: Final = re.compile(r"\bbefore\b(?P<anchor>[^?.!]+)", re.IGNORECASE)
_ANCHOR_FILLER: Final = _FUNCTION_WORDS | {
    "i", "you", "he", "she", "we", "they", "her", "his", "my", "our", "their", "was", "were", "became", "become",
    "got", "get", "moved", "move", "did", "do", "does", "that", "this", "then"}


def question_time(question: str) -> datetime | None:
    """The time a question about the past asks about: "in 2021" (its middle), "in early 2021",
    "at the end of 2020", "in May 2022" (the middle of the month)."""
    found = _WHEN.search(question)
    if found is None:
        return None
    year = int(found["year"])
    if found["month"]:
        return datetime(year, _MONTHS.index(found["month"].casefold()) + 1, 15, tzinfo=UTC)
    month = _PART[(found["part"] or "mid").casefold().removeprefix("the ").removesuffix(" of")]
    return datetime(year, month, 28 if month == 12 else 1, tzinfo=UTC)


def _same_word(a: str, b: str) -> bool:
    """Inflection aside ("promotion", "promoted")."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a == b or (n >= 5 and n >= min(len(a), len(b)) - 3)


def _anchor_time(question: str, records: list[MemoryRecord], dated: bool) -> datetime | None:
    """When what follows "before" happened: the earliest-said ranked memory that holds its words
    ("before Jakarta": the first memory naming Jakarta; "before the promotion": the first telling of it)."""
    found = _BEFORE.search(question)
    if found is None:
        return None
    anchor = [w for w in _ALNUM.findall(found["anchor"].casefold()) if w not in _ANCHOR_FILLER]
    if not anchor:
        return None
    times = []
    for rec in records:
        words = _ALNUM.findall(rec.memory.casefold())
        if all(any(_same_word(a, w) for w in words) for a in anchor) and (when := _said(rec, dated)) is not None:
            times.append(when)
    return min(times, default=None)


def _states(mid: str, rec: MemoryRecord, relations: frozenset[str], states: dict[str, FactStates],
            readings: Mapping[str, frozenset[Statement]], named: set[str], onto: Ontology,
            about: frozenset[str]) -> bool:
    """Whether the memory states one of ``relations``: see :func:`by_time`."""
    facts = _supported(states.get(mid))
    if facts & relations:
        return not about or mid in about  # else a fact of someone else's ("my cousin moved to Dunedin")
    read = readings.get(mid, frozenset())
    who = named or ({rec.actor_id.casefold()} if rec.actor_id else set())
    if any(iri in relations and (not who or any(n in name.split() for n in who for name in (subject, value)))
           for iri, subject, value in read):
        return True
    if any(iri in relations for iri, _, _ in read):
        return False  # about someone else ("my partner got a job at NTNU")
    if any(_rival(iri, relations, onto) for iri in facts | {iri for iri, _, _ in read}):
        return False  # its words were read as a sibling relation ("back when I lived in Enugu": livedIn)
    words = _words(rec.memory)
    said = [iri for iri in relations if _says(words, iri, onto)
            and (onto.relations[iri].kind != "object" or _names_something(rec.memory))]
    return bool(said) and not _unstated(rec.memory, said, onto)


_WORD_INSIDE: Final = re.compile(r"(?<![.!?:]\s)(?<!^)(?<!^\W)\b(?!I\b|I['’])[^\W\d_]")


def _names_something(text: str) -> bool:
    """Whether a word inside a sentence has a capital: a name. "We moved last weekend" states no home
    (an object relation's value is a named thing), "We moved to Porto" (or "to Évora") does."""
    return any(m.group().isupper() for m in _WORD_INSIDE.finditer(text))


def _rival(iri: str, relations: frozenset[str], onto: Ontology) -> bool:
    """Whether ``iri`` is a sibling of an asked relation: another sub-property of one of its
    super-properties, with the same range (``livedIn``, ``visited`` beside ``livesIn``)."""
    info = onto.relations.get(iri)
    if info is None or iri in relations:
        return False
    return any(set(info.super_properties) & set(asked.super_properties) and info.range == asked.range
               for asked in (onto.relations[r] for r in relations if r in onto.relations))


_CLAUSE_TOKENS: Final = re.compile(r"(?:[^\W\d_]|['’])+|[.!?;:,]")
_FIRST_PERSON: Final = frozenset({"i", "we", "i'm", "we're", "i've", "we've", "i'd", "we'd", "i'll", "we'll",
                                  "i’m", "we’re", "i’ve", "we’ve", "i’d", "we’d", "i’ll", "we’ll", "me", "us"})
_OWNERS: Final = frozenset({"my", "our", "his", "her", "their", "your"})
_NOT_OWNERS: Final = frozenset({"it", "that", "there", "here", "what", "let", "who", "where"})
"""Words whose "'s" is "is" or "us" ("it's", "let's"), not a possessive."""


def _unstated(text: str, relations: list[str], onto: Ontology) -> bool:
    """Whether the clause of the first label word of ``relations`` states nothing of the speaker's:
    its subject is someone the speaker names by a relation to them ("My cousin just moved to Dunedin",
    "my sister's husband moved to Turku"), or it is hedged ("We might move to Aix next year", "maybe
    we'll move"): what the reader leaves unread, as it names no one or states nothing."""
    tokens = _CLAUSE_TOKENS.findall(text.casefold())
    content = {w for iri in relations for label in _labels(onto).get(iri, ()) for w in label.content}
    at = next((n for n, t in enumerate(tokens) if _stem(t) in content), None)
    if at is None:
        return False
    start = at
    while start > 0 and tokens[start - 1] not in ".!?;:,":
        start -= 1
    before = tokens[start:at]
    if any(t in _HEDGES for t in before):
        return True
    if any(t in _FIRST_PERSON for t in before):
        return False
    return any(t in _OWNERS or (t.endswith(("'s", "’s")) and t[:-2] not in _NOT_OWNERS) for t in before)


_HEDGES: Final = frozenset({"might", "may", "could", "maybe", "perhaps", "possibly", "if", "considering",
                            "thinking", "should", "would"})
"""Words before a label's in its clause that make it no statement ("we might move", "thinking of moving")."""


def by_time(ranked: list[tuple[float, Any]], question: str, relations: frozenset[str],
            ontology: Callable[[], Ontology], states: dict[str, FactStates], *, past: bool,
            about: frozenset[str] = frozenset(),
            readings: Mapping[str, frozenset[Statement]] | None = None) -> dict[str, float]:
    """Statements of one relation said at different times, in the order the question asks for.

    ``relations``: :func:`timed_relations` of the question. A ranked memory *states* one of them
    when it supports a fact of it (``states``; of the person asked, when the graph linked them:
    ``about``); else when the reading of its text (``readings``: memory id -> what the rule extractor
    reads in it, :func:`to_read`) has one about the person asked (or, when the question names no one,
    about who said it: "Left Nubank for iFood", ``worksFor``); else, unless that reading has one about
    someone else ("my partner Ole works at NTNU") or takes its words for a sibling relation ("back
    when I lived in Enugu": ``livedIn``), when its text holds the words of one of the relation's labels
    beside a name ("We moved to Porto", ``livesIn``; not "we moved last weekend"), in a clause not
    about someone the speaker names by kin ("my cousin just moved to Dunedin"). So memories without
    facts (``infer=False``) take part too. About the present, a plan states what it becomes
    (:func:`timed_relations`). When the question names someone whom ranked memories name or who said
    them, only theirs count, and those ``about`` them: memories
    supporting a fact of the relations whose subject or object the graph linked in the question.
    When the ranked memories were said at least :data:`RESTATED_GAP` apart (a document loaded in
    one go is left as ranked), those statements go to the top:

    - about the present, newest first ("where does she live?": the latest move);
    - about the past, at a time ("in 2021", "in early 2022"): the last said by then first, then the
      ones after it, oldest first;
    - about the past, before something ("before Jakarta", "before the promotion": the earliest ranked
      memory holding those words): the last said before it first.

    ``ranked``: (score, (memory id, fused, record, factor)), changed in place (the scores stay where
    they were: a moved memory takes its new place's). Returns the score factor of each memory moved."""
    records = [item[2] for _, item in ranked]
    if not relations or not said_apart(records):
        return {}
    readings = readings or {}
    dated = _dated(records)
    onto = ontology()
    named = _named(question, records)
    said: dict[int, datetime] = {}
    for n, (_, item) in enumerate(ranked):
        rec = item[2]
        when = _said(rec, dated)
        if when is None or (named and item[0] not in about and not any(_by_or_naming(rec, name) for name in named)):
            continue
        if _states(item[0], rec, relations, states, readings, named, onto, about):
            said[n] = when
    if not said:
        return {}
    newest = sorted(said, key=lambda n: said[n], reverse=True)
    if not past:
        first = newest
    elif (at := question_time(question)) is not None:
        first = [n for n in newest if said[n] <= at] + [n for n in reversed(newest) if said[n] > at]
    elif (anchor := _anchor_time(question, records, dated)) is not None:
        first = [n for n in newest if said[n] < anchor]
    else:
        return {}
    lifted = set(first)
    order = first + [n for n in range(len(ranked)) if n not in lifted]
    moved: dict[str, float] = {}
    old = list(ranked)
    for place, n in enumerate(order):
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
