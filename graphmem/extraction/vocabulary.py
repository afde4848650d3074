"""The part of an ontology one chunk can use: what the extraction prompt lists instead of everything.

Sending every class and relation costs thousands of tokens per call, and most of them cannot apply to
a short conversation. A term is kept when one of its surface forms (local name, label, altLabels) has
all its content words in the chunk, compared by lemma ("moved to" matches "moving to", "my sister"
matches "sister of"). Kept terms bring what is needed to use them: the domain and range of a relation,
its inverse (text that says "my daughter" names childOf, the fact may be stated as parentOf), and every
superclass of a kept class (the class lines name their parents). A small core is always on, so a chunk
without any match still gets a usable vocabulary. The index is built once per ontology.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from ..ontology import Ontology
from ..ontology.model import ClassInfo, RelationInfo
from .rules.words import (
    CONJUNCTIONS,
    COUNTRY_OF_DEMONYM,
    DETERMINERS,
    FIRST_PERSON,
    MONTHS,
    OTHER_PRONOUNS,
    PREPOSITIONS,
    WEEKDAYS,
    english,
)

CORE_CLASSES: Final = ("Person", "City", "Company")
"""Always listed when the ontology has them: who most memories are about, and the places and employers
named most (so "Lisbon" and "Northwind" get their specific class, not just Place and Organization)."""
CORE_RELATIONS: Final = ("worksFor", "livesIn", "locatedIn", "jobTitle", "likes", "knows")
"""Always listed when the ontology has them: the facts people state most, often without a word that
names the relation ("I'm a nurse at St Mary's in Leeds", "lunch with Dr Hale")."""
CUES: Final[Mapping[str, tuple[str, ...]]] = {
    "livedIn": ("moved from", "grew up", "used to live", "originally from"),
    "worksOn": ("helping with", "helps with", "helping out", "migration", "rewrite", "building"),
    "colleagueOf": ("team", "colleague", "coworker", "helping out"),
    "siblingOf": ("kids", "children", "siblings", "brothers", "sisters", "twins"),
    "parentOf": ("kids", "children", "son", "daughter", "baby", "mum", "mom", "dad", "twins"),
    "owns": ("adopted", "pet", "dog", "cat", "bought"),
    "dislikes": ("don't eat", "don't like", "hate", "not a fan"),
    "heldAt": ("going to", "trip", "dinner", "party", "conference", "speaking at"),
    "attended": ("going to", "meeting", "sync", "check-up", "appointment", "booked", "party", "dinner", "trip",
                 "speaking at", "here for"),
    "Event": ("party", "offsite", "dinner", "appointment", "cleaning", "wedding", "reunion", "trip"),
    "Conference": ("conf", "kubecon", "pycon"),
    "status": ("on hold", "paused", "cancelled", "done"),
    "hasSkill": ("hobby", "hobbies", "good with"),
    "citizenOf": ("citizen", "passport", "nationality", *COUNTRY_OF_DEMONYM),
    "studiedAt": ("thesis", "degree", "student", "studying", "phd", "master's", "year at", "high"),
    "Food": ("allergic", "allergy", "eat", "intolerant", "vegetarian", "vegan", "cook", "recipe"),
    "Pet": ("adopted", "beagle", "terrier", "labrador", "poodle", "parrot", "hamster"),
    "Topic": ("hiking", "chess", "climbing", "running", "painting", "photography"),
    "University": ("college", "phd", "thesis", "lab"),
    "manages": ("lab", "supervises", "my manager"),
}
"""Surface forms of default-ontology terms beyond their labels and altLabels, found missing by
``bench/prompt_size.py`` on the gold set; only for terms in the default namespace (an ontology's own
forms belong in its ``skos:altLabel``s)."""
DEFAULT_NAMESPACE: Final = "https://graphmem.dev/ontology#"
MAX_CLASS_RELATIONS: Final = 6
"""A class named in the text brings the relations that start or end at it, unless it has more than this
many (Person: its relations must be named themselves)."""
_DATE_WORDS: Final = frozenset({*MONTHS, *WEEKDAYS, "today", "tomorrow", "yesterday", "tonight", "week", "month",
                                "year", "weekend", "due", "deadline", "since", "until", "born", "birthday", "noon"})
_DATE_PATTERN: Final = re.compile(
    r"\b\d{4}-\d{2}(?:-\d{2})?\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b\d{1,2}\s*(?:am|pm)\b", re.I)
_NUMBER: Final = re.compile(r"(?<![\d.:/-])\d{1,3}(?:[.,]\d+)?(?![\d:/-])")
_XSD: Final = "http://www.w3.org/2001/XMLSchema#"
_DATE_RANGES: Final = frozenset({_XSD + "date", _XSD + "dateTime"})
_NUMBER_RANGES: Final = frozenset({_XSD + "integer", _XSD + "decimal", _XSD + "nonNegativeInteger", _XSD + "int",
                                   _XSD + "positiveInteger", _XSD + "double", _XSD + "float"})

_WORD: Final = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_FUNCTION_WORDS: Final = frozenset({
    *PREPOSITIONS, *CONJUNCTIONS, *DETERMINERS, *FIRST_PERSON, *OTHER_PRONOUNS,
    "be", "is", "are", "was", "were", "been", "am", "has", "have", "had", "do", "does", "did", "will", "the",
})
"""Words a surface form needs no match for: "is the manager of" matches any text that says "manager"."""


def _words(text: str) -> list[str]:
    """Lower-case words, camelCase split, "don't" read as "do not"."""
    out = []
    for w in _WORD.findall(_CAMEL.sub(" ", text)):
        w = w.casefold().replace("’", "'")
        if w.endswith("n't") and len(w) > 3:
            out += [w[:-3], "not"]
        else:
            out.append(w)
    return out


def mentions_date(text: str) -> bool:
    """Whether ``text`` states a date or time ("next Friday", "2026-03-13", "3pm")."""
    return _DATE_PATTERN.search(text) is not None or not _DATE_WORDS.isdisjoint(_words(text))


def text_lemmas(text: str) -> frozenset[str]:
    """Every word of ``text`` in lower case and as its lemma."""
    eng = english()
    words = _words(text)
    return frozenset(words) | {eng.lemma(w) for w in words}


@dataclass(frozen=True)
class _Form:
    iri: str
    surface: str
    needs: tuple[frozenset[str], ...]
    """One set per content word: the word and its lemma; any of them in the chunk matches the word."""
    then: str | None = None
    """For a verb with its preposition ("works with"): the preposition must follow the verb, else
    "works with" would match every text about work."""


@dataclass(frozen=True)
class Selection:
    """Terms (IRIs) for one chunk: the always-on ``core_*`` and the chunk's own ``classes``/``relations``
    (disjoint from the core); ``matched`` says which surface forms were found, per term."""

    core_classes: tuple[str, ...]
    core_relations: tuple[str, ...]
    classes: tuple[str, ...]
    relations: tuple[str, ...]
    matched: Mapping[str, tuple[str, ...]]
    closure_only: frozenset[str] = frozenset()
    """Classes listed only to read others (superclasses, domains, ranges): shown without a definition."""

    @property
    def all_classes(self) -> frozenset[str]:
        return frozenset(self.core_classes) | frozenset(self.classes)

    @property
    def all_relations(self) -> frozenset[str]:
        return frozenset(self.core_relations) | frozenset(self.relations)


class VocabularyIndex:
    """The surface forms of one ontology, tokenized once, and the always-on core with its closure."""

    def __init__(self, ontology: Ontology) -> None:
        self.ontology = ontology
        eng = english()
        forms: list[_Form] = []
        items: list[ClassInfo | RelationInfo] = [*ontology.classes.values(), *ontology.relations.values()]
        for item in items:
            seen: set[tuple[tuple[frozenset[str], ...], str | None]] = set()
            cues = CUES.get(item.name, ()) if item.iri.startswith(DEFAULT_NAMESPACE) else ()
            for surface in dict.fromkeys((item.name, item.label, *item.alt_labels, *cues)):
                words = _words(surface)
                content = [w for w in words if w not in _FUNCTION_WORDS] or words
                needs = tuple(frozenset({w, eng.lemma(w)}) for w in content)
                then = words[1] if len(words) == 2 and len(content) == 1 and words[0] == content[0] \
                    and eng.lemma(words[0]) != words[0] and words[1] in PREPOSITIONS and words[1] != "of" else None
                if needs and (needs, then) not in seen:
                    seen.add((needs, then))
                    forms.append(_Form(item.iri, surface, needs, then))
        self._forms = tuple(forms)
        self._dated = self._valued(_DATE_RANGES)
        self._counted = self._valued(_NUMBER_RANGES)
        self._by_class = self._relations_by_class()
        core_c = {iri for name in CORE_CLASSES if (iri := ontology.resolve_class(name))}
        core_r = {iri for name in CORE_RELATIONS if (iri := ontology.resolve_relation(name))}
        if not core_c and not core_r:
            core_c = set(self._busiest_class())
        self.core_classes, self.core_relations = self._closure(core_c, core_r)
        self._core_named = frozenset(core_c)

    def _busiest_class(self) -> list[str]:
        """For an ontology without the default core: the class most relations start or end at."""
        uses: dict[str, int] = {}
        for r in self.ontology.relations.values():
            for c in (*r.domain, *(r.range if r.kind == "object" else ())):
                if c in self.ontology.classes:
                    uses[c] = uses.get(c, 0) + 1
        return [max(sorted(uses), key=lambda c: uses[c])] if uses else []

    def _valued(self, ranges: frozenset[str]) -> frozenset[str]:
        return frozenset(r.iri for r in self.ontology.relations.values()
                         if r.kind == "datatype" and not ranges.isdisjoint(r.range))

    def _relations_by_class(self) -> dict[str, frozenset[str]]:
        """Class -> relations that start or end at it or at one of its specific ancestors: text that names
        a meeting can state who attended it and where it was held. Classes above a quarter of the
        classes (``Thing``) or at more than ``MAX_CLASS_RELATIONS`` relations (``Person``) say too little."""
        onto = self.ontology
        ends: dict[str, set[str]] = {}
        for r in onto.relations.values():
            for c in (*r.domain, *(r.range if r.kind == "object" else ())):
                ends.setdefault(c, set()).add(r.iri)
        general = {c for c in onto.classes if 4 * len(onto.subclasses(c)) > len(onto.classes)
                   or len(ends.get(c, ())) > MAX_CLASS_RELATIONS}
        out: dict[str, frozenset[str]] = {}
        for c, info in onto.classes.items():
            specific = [x for x in (c, *info.ancestors) if x not in general]
            out[c] = frozenset(r for x in specific for r in ends.get(x, ()))
        return out

    def _closure(self, classes: Iterable[str], relations: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
        """Add inverses, then every domain and range class, then every superclass."""
        onto = self.ontology
        rels = set(relations)
        rels |= {inv for r in rels if (inv := onto.relations[r].inverse) in onto.relations}
        cls = set(classes)
        for r in rels:
            info = onto.relations[r]
            cls |= {c for c in (*info.domain, *(info.range if info.kind == "object" else ())) if c in onto.classes}
        cls |= {a for c in cls for a in onto.classes[c].ancestors if a in onto.classes}
        return frozenset(cls), frozenset(rels)

    def select(self, text: str) -> Selection:
        """The core plus every term the text names, with their closure."""
        eng = english()
        words = _words(text)
        have = frozenset(words) | {eng.lemma(w) for w in words}
        pairs = {(a, b) for w, b in pairwise(words) for a in (w, eng.lemma(w))}
        matched: dict[str, list[str]] = {}
        for form in self._forms:
            if all(not need.isdisjoint(have) for need in form.needs) and (
                    form.then is None or any((a, form.then) in pairs for a in form.needs[0])):
                matched.setdefault(form.iri, []).append(form.surface)
        onto = self.ontology
        named_classes = [i for i in matched if i in onto.classes]
        named = {i for i in matched if i in onto.relations}
        named |= {r for c in named_classes for r in self._by_class[c]}
        if self._dated and mentions_date(text):
            named |= self._dated
        if self._counted and _NUMBER.search(text):
            named |= self._counted
        classes, relations = self._closure(named_classes, named)
        return Selection(
            core_classes=self._ordered(self.core_classes),
            core_relations=self._ordered(self.core_relations),
            classes=self._ordered(classes - self.core_classes),
            relations=self._ordered(relations - self.core_relations),
            matched={iri: tuple(s) for iri, s in matched.items()},
            closure_only=frozenset(classes | self.core_classes) - set(named_classes) - self._core_named,
        )

    def _ordered(self, iris: Iterable[str]) -> tuple[str, ...]:
        onto = self.ontology

        def name(iri: str) -> str:
            item = onto.classes.get(iri) or onto.relations[iri]
            return item.name.casefold()

        return tuple(sorted(iris, key=lambda i: (name(i), i)))


class _Cache:
    def __init__(self, size: int = 8) -> None:
        self._items: OrderedDict[str, VocabularyIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, ontology: Ontology) -> VocabularyIndex:
        with self._lock:
            found = self._items.get(ontology.fingerprint)
            if found is not None:
                self._items.move_to_end(ontology.fingerprint)
                return found
        built = VocabularyIndex(ontology)
        with self._lock:
            self._items[ontology.fingerprint] = built
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return built


_CACHE: Final = _Cache()


def index_for(ontology: Ontology) -> VocabularyIndex:
    """The index of ``ontology``, built on first use and kept for the process (per fingerprint)."""
    return _CACHE.get(ontology)


def select(ontology: Ontology, text: str) -> Selection:
    return index_for(ontology).select(text)
