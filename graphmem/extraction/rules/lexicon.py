"""The ontology's vocabulary as the rules match it: relation surface forms, role nouns, class words.

Built once per ontology (``OntologyLexicon.build``), so extracting a chunk only does dictionary look-ups:
"works for" and its lemmas index the relation worksFor, "manager" names manages and reportsTo, and the
last word of "Avery County" says Region.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from spacy.lang.en.stop_words import STOP_WORDS

from ...ontology import Ontology
from ...ontology.model import RelationInfo
from .words import DETERMINERS, PREPOSITIONS, PROJECT_HEADS, English, english

if TYPE_CHECKING:
    from spacy.language import Language

_Tokenize = Callable[[str], tuple[tuple[str, ...], tuple[str, ...]]]
"""Text -> (lowercase tokens, their lemmas)."""
Direction = Literal["of", "is"]
"""How a role noun reads: ``of`` = "<Y> is the <noun> of <X>" (Y R X); ``is`` = "<X>'s <noun> is <Y>" (X R Y)."""


# Class words too ambiguous to type a capitalized name by its last word ("Soldier Field", "Galaxy Note").
_AMBIGUOUS_HEADS: Final = frozenset({
    "field", "note", "service", "model", "market", "theme", "subject", "call", "unit", "tool", "app", "program",
    "programme", "effort", "sync", "file", "paper", "book", "report", "article", "item", "thing", "entity",
    "interest", "topic", "activity", "occasion", "happening", "brand", "device", "gadget", "application",
    "library", "framework", "software", "product", "skill", "ability", "agent", "actor", "party", "individual",
    "human", "people", "user", "contact", "person", "spot", "area", "somewhere", "location", "place", "site",
    "office", "building", "state", "language", "tongue", "dialect", "food", "dish", "meal", "drink", "snack",
    "cuisine", "ingredient", "event", "meeting", "interview", "travel", "flight", "holiday", "vacation",
    "journey", "trip", "task", "ticket", "chore", "assignment", "project", "initiative", "organism", "creature",
    "animal", "plant", "pet", "dog", "cat", "puppy", "kitten", "industry", "sector", "vertical", "hobby",
    "document", "school", "college", "academy",
})

# Heuristic name endings and beginnings -> candidate classes (the first that the ontology resolves wins).
_HEAD_HEURISTICS: Final[dict[str, tuple[str, ...]]] = {
    **{w: ("University", "School", "Organization") for w in ("university", "universität", "université",
                                                              "universidad", "polytechnic")},
    **{w: ("School", "Organization") for w in ("school", "college", "academy", "institute", "seminary",
                                               "conservatory", "kindergarten")},
    **{w: ("Company", "Organization") for w in ("company", "corporation", "bank", "airlines", "airways",
                                                "group", "holdings", "industries", "technologies", "labs",
                                                "studios", "records", "publishing", "press", "motors",
                                                "logistics", "healthcare", "energy", "power", "pharma",
                                                "pharmaceuticals", "lifesciences", "laboratories", "software",
                                                "systems", "solutions", "consulting", "partners", "ventures",
                                                "insurance", "foods", "media", "telecom", "electronics",
                                                "networks", "robotics", "therapeutics", "semiconductors",
                                                "biotech", "shipping", "mining", "petroleum", "airline")},
    **{w: ("GovernmentAgency", "Organization") for w in ("ministry", "agency", "department", "council",
                                                          "authority", "commission", "bureau", "parliament")},
    **{w: ("NonProfit", "Organization") for w in ("foundation", "charity", "trust", "society")},
    **{w: ("Organization",) for w in ("association", "federation", "union", "league", "club", "party",
                                      "church", "orchestra", "band", "institution", "organization",
                                      "organisation", "committee", "army", "navy", "team",
                                      "hospital", "clinic")},  # where people work more than a place
    **{w: ("Region", "Place") for w in ("county", "province", "district", "region", "prefecture", "state",
                                        "territory", "oblast", "canton", "parish", "shire")},
    **{w: ("City", "Place") for w in ("city", "town", "village", "township", "borough", "municipality")},
    **{w: ("Country", "Place") for w in ("republic", "kingdom", "emirates", "federation")},
    **{w: ("Place",) for w in ("river", "lake", "mountain", "mountains", "mount", "falls", "island", "islands",
                               "sea", "ocean", "bay", "valley", "desert", "forest", "park", "beach", "peninsula",
                               "canyon", "gulf", "strait", "creek", "glacier", "coast", "hills", "plateau",
                               "basin", "harbor", "harbour", "street", "avenue", "road", "boulevard", "square",
                               "bridge", "highway", "route", "reservoir", "dam", "volcano")},
    **{w: ("Venue", "Place") for w in ("stadium", "arena", "airport", "hotel", "restaurant", "cafe", "café",
                                       "museum", "theatre", "theater", "station", "tavern", "hall",
                                       "cathedral", "temple", "mosque", "palace", "castle", "library", "mall",
                                       "center", "centre", "gallery", "opera")},
    **{w: ("Project",) for w in PROJECT_HEADS},
    **{w: ("Conference", "Event") for w in ("conference", "summit", "convention", "expo", "symposium",
                                            "festival", "olympics", "championship", "cup", "games", "war")},
}
_PREFIX_HEURISTICS: Final[dict[str, tuple[str, ...]]] = {
    **{w: ("Place",) for w in ("lake", "mount", "mt.", "mt", "river", "cape", "isle", "gulf", "port", "fort",
                               "mountains")},
    **{w: ("University", "School", "Organization") for w in ("university", "universidad", "universidade",
                                                             "université", "università", "universität",
                                                             "universiteit", "uniwersytet")},
    **{w: ("City", "Place") for w in ("city",)},
    **{w: ("Country", "Place") for w in ("republic", "kingdom")},
    **{w: ("GovernmentAgency", "Organization") for w in ("ministry", "department")},
    **{w: ("Company", "Organization") for w in ("bank",)},
    **{w: ("Region", "Place") for w in ("county", "province", "state")},
}


@dataclass(frozen=True)
class RelationPattern:
    """One surface form of a relation, tokenized."""

    relation: RelationInfo
    surface: str
    lowers: tuple[str, ...]
    lemmas: tuple[str, ...]
    past: bool
    gappable: bool
    """A two-word "verb preposition" form ("works at") that may match with words between ("work as a data
    engineer at")."""
    passive_swap: bool
    """"written by" listed under an active relation (authored): the subject is the object."""


@dataclass
class OntologyLexicon:
    """What the extractor matches in text, derived from the ontology's labels and synonyms."""

    ontology: Ontology
    patterns: dict[str, list[RelationPattern]] = field(default_factory=dict)
    """First lemma -> patterns starting with it, longest first."""
    exact_first: dict[str, list[RelationPattern]] = field(default_factory=dict)
    roles: dict[tuple[str, ...], list[tuple[RelationInfo, Direction]]] = field(default_factory=dict)
    """Role noun (lemmas) -> relations it names: "manager" -> (manages, of), (reportsTo, is)."""
    max_role_len: int = 1
    class_words: dict[tuple[str, ...], str] = field(default_factory=dict)
    """Lemmas of a class label or altLabel -> class local name."""
    max_class_len: int = 1
    head_words: dict[str, str] = field(default_factory=dict)
    """Last word of a capitalized name -> class local name ("Avery County" -> Region)."""
    prefix_words: dict[str, str] = field(default_factory=dict)
    legal_class: str | None = None
    person_class: str | None = None
    country_class: str | None = None
    has_relations: dict[str, RelationInfo] = field(default_factory=dict)
    """Class local name -> relation whose label is "has <class word>" ("has pet" -> owns)."""

    @classmethod
    def build(cls, ontology: Ontology, nlp: Language) -> OntologyLexicon:
        eng = english()
        lex = cls(ontology)

        def toks(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
            lowers = tuple(t.lower_ for t in nlp.make_doc(text) if not t.is_space)
            return lowers, tuple(eng.lemma(x) for x in lowers)

        lex.legal_class = lex.first_class(("Company", "Organization"))
        lex.person_class = lex.first_class(("Person",)) or _person_like(ontology)
        lex.country_class = lex.first_class(("Country", "Place"))
        lex._add_classes(toks)
        for rel in sorted(ontology.relations.values(), key=lambda r: r.iri):
            lex._add_relation(rel, toks, eng)
        for table in (lex.patterns, lex.exact_first):
            for pats in table.values():
                pats.sort(key=lambda p: (-len(p.lemmas), p.relation.iri, p.surface))
        for roles in lex.roles.values():
            roles.sort(key=lambda rd: (0 if rd[1] == "of" else 1, rd[0].iri))
        return lex

    def first_class(self, candidates: tuple[str, ...]) -> str | None:
        """The first candidate class the ontology has, so the heuristics work with smaller ontologies."""
        for name in candidates:
            iri = self.ontology.resolve_class(name)
            if iri is not None:
                return self.ontology.classes[iri].name
        return None

    def _add_classes(self, toks: _Tokenize) -> None:
        """Class labels and synonyms as class words; their heads and the heuristic tables as name endings."""
        for c in sorted(self.ontology.classes.values(), key=lambda c: c.iri):
            for surface in (c.label, *c.alt_labels, _split_camel(c.name)):
                _lowers, lemmas = toks(surface)
                if lemmas and lemmas not in self.class_words:
                    self.class_words[lemmas] = c.name
                    self.max_class_len = max(self.max_class_len, len(lemmas))
                if len(lemmas) == 1 and lemmas[0] not in _AMBIGUOUS_HEADS:
                    self.head_words.setdefault(lemmas[0], c.name)
        for word, cands in _HEAD_HEURISTICS.items():
            if (name := self.first_class(cands)) is not None:
                self.head_words.setdefault(word, name)
        for word, cands in _PREFIX_HEURISTICS.items():
            if (name := self.first_class(cands)) is not None:
                self.prefix_words.setdefault(word, name)

    def _add_relation(self, rel: RelationInfo, toks: _Tokenize, eng: English) -> None:
        """Each surface form of ``rel`` as a role noun, a "has <class>" form and (if verbal) a pattern."""
        classes_by_name = {c.name for c in self.ontology.classes.values()}
        label_lowers, _ = toks(rel.label)
        seen: set[tuple[str, ...]] = set()
        for surface in (rel.label, *rel.alt_labels, *rel.hidden_labels):
            lowers, lemmas = toks(surface)
            if not lowers or lowers in seen:
                continue
            seen.add(lowers)
            self._add_roles(rel, lowers, lemmas, eng)
            if len(lowers) >= 2 and lowers[0] in ("has", "have") and len(lowers) == 2:
                cls_name = self.class_words.get((lemmas[1],))
                if cls_name is not None and cls_name in classes_by_name:
                    self.has_relations.setdefault(cls_name, rel)
            if not _is_verbal(lowers, lemmas):
                continue
            past = any(_is_past(lo, le) for lo, le in zip(lowers, lemmas, strict=True))
            gappable = (len(lowers) == 2 and lowers[1] in PREPOSITIONS and lemmas[0] != "be"
                        and lowers[0] not in PREPOSITIONS and lowers[0] not in DETERMINERS)
            passive_swap = (len(lowers) == 2 and lowers[1] == "by" and label_lowers[-1:] != ("by",)
                            and rel.inverse is None and rel.kind == "object")
            pat = RelationPattern(rel, surface, lowers, lemmas, past, gappable, passive_swap)
            self.patterns.setdefault(lemmas[0], []).append(pat)
            if lowers[0] != lemmas[0]:
                self.exact_first.setdefault(lowers[0], []).append(pat)

    def _add_roles(self, rel: RelationInfo, lowers: tuple[str, ...], lemmas: tuple[str, ...], eng: English) -> None:
        noun: tuple[str, ...] | None = None
        direction: Direction = "is"
        body = list(lemmas)
        while body and body[0] in ("be", "the", "a", "an"):
            body.pop(0)
        if len(body) >= 2 and body[-1] == "of":
            noun, direction = tuple(body[:-1]), "of"
        elif len(body) >= 2 and body[-1] == "be":
            noun, direction = tuple(body[:-1]), "is"
        elif _single_noun(lowers, lemmas) or _multi_noun(rel, lowers, lemmas):
            noun = lemmas
        if noun is None or any(n in STOP_WORDS and n not in ("part",) for n in noun[-1:]):
            return
        self.roles.setdefault(noun, []).append((rel, direction))
        self.max_role_len = max(self.max_role_len, len(noun))

    # ------------------------------------------------------------------ types

    def class_iri(self, name: str | None) -> str | None:
        return self.ontology.resolve_class(name) if name else None

    def compatible(self, type_name: str | None, allowed: tuple[str, ...]) -> bool:
        """Could an entity of ``type_name`` be in ``allowed`` (a domain or range)? Unknown types always can."""
        if not type_name or not allowed:
            return True
        iri = self.class_iri(type_name)
        if iri is None:
            return True
        info = self.ontology.classes[iri]
        for a in allowed:
            if a == iri or a in info.ancestors:
                return True
            other = self.ontology.classes.get(a)
            if other is not None and iri in other.ancestors:
                return True
        return False

    def is_person(self, type_name: str | None) -> bool:
        return bool(type_name and self.person_class and self.ontology.is_subclass(type_name, self.person_class))


def _person_like(ontology: Ontology) -> str | None:
    """Without a Person class, the one class above every class its definition calls a person or a human
    being (a clinic's "care participant", above its patients and clinicians), if there is one."""
    people = {iri for iri, c in ontology.classes.items()
              if c.definition and re.search(r"\b(?:a|any) (?:person|human being|human)\b", c.definition, re.I)}
    tops = [iri for iri in people if not any(a in people for a in ontology.classes[iri].ancestors)]
    return ontology.classes[tops[0]].name if len(tops) == 1 else None


def _single_noun(lowers: tuple[str, ...], lemmas: tuple[str, ...]) -> bool:
    """One uninflected word that is not a function word ("employer", "birthplace")."""
    low = lowers[0]
    return len(lowers) == 1 and low == lemmas[0] and low.isalpha() and low not in PREPOSITIONS \
        and low not in STOP_WORDS


def _multi_noun(rel: RelationInfo, lowers: tuple[str, ...], lemmas: tuple[str, ...]) -> bool:
    """A noun phrase label ("phone number", "place of birth", "first language", whose "first" has the
    lemma "1"), not a verb phrase ("works at", "has a")."""
    return len(lowers) >= 2 and (rel.kind == "datatype" or lowers[-1] not in PREPOSITIONS) \
        and (lowers[0] == lemmas[0] or lemmas[0].isdigit()) and lowers[0] not in PREPOSITIONS \
        and lowers[0] not in DETERMINERS \
        and lemmas[0] not in ("be", "have", "do") and not any(x in ("is", "are") for x in lowers)


_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _split_camel(name: str) -> str:
    return _CAMEL.sub(" ", name)


def _is_past(lower: str, lemma: str) -> bool:
    return lower in ("was", "were", "had", "did") or (lower != lemma and lower.endswith(("ed", "ew", "ought")))


def _is_verbal(lowers: tuple[str, ...], lemmas: tuple[str, ...]) -> bool:
    """Forms that can be matched in running text: several words, or one inflected verb ("likes", "met")."""
    if len(lowers) >= 2:
        return True
    return lowers[0] != lemmas[0] and lowers[0] not in PREPOSITIONS and lowers[0].isalpha()


def definition_examples(definition: str | None) -> list[str]:
    """The comma-separated examples after a definition's colon, without articles, up to three words each."""
    if not definition or ":" not in definition:
        return []
    tail = definition.split(":", 1)[1].split(".")[0]
    out: list[str] = []
    for item in re.split(r",| or | and ", tail):
        words = [w for w in item.strip().casefold().split() if w not in ("a", "an", "the")]
        if 0 < len(words) <= 3:
            out.append(" ".join(words))
    return out
