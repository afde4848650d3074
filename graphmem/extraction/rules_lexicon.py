"""Word lists and ontology-derived tables for the rule-based extractor.

Everything here is built once per ontology (``OntologyLexicon``) or once per process (the English
lookups), so extracting a chunk only does dictionary look-ups. The English vocabulary and lemmas come
from ``spacy-lookups-data`` (no model download): a lemma table is enough to match "worked for" to the
label "works for", and its keys and values double as a list of common lowercase words, which tells a
sentence-initial "Painting" (a word) from "Tennessee" (a name).
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Final, Literal

from spacy.lang.en.stop_words import STOP_WORDS
from spacy.language import Language

from ..ontology import Ontology
from ..ontology.model import RelationInfo

Direction = Literal["of", "is"]
"""How a role noun reads: ``of`` = "<Y> is the <noun> of <X>" (Y R X); ``is`` = "<X>'s <noun> is <Y>" (X R Y)."""

PREPOSITIONS: Final = frozenset({
    "in", "at", "for", "to", "with", "from", "of", "on", "by", "about", "into", "under", "over", "near",
    "as", "after", "before", "during", "since", "until", "through", "across", "around", "between", "via",
    "against", "without", "within", "inside", "like", "than", "per", "toward", "towards", "upon", "behind",
})
CONJUNCTIONS: Final = frozenset({"and", "or", "but", "nor", "so", "yet", "because", "while", "although",
                                 "though", "if", "when", "whereas", "that", "which", "who", "whom", "whose"})
DETERMINERS: Final = frozenset({"the", "a", "an", "this", "that", "these", "those", "some", "any", "another",
                                "my", "your", "his", "her", "its", "our", "their", "each", "every", "no"})
POSSESSIVE_DETS: Final = frozenset({"my", "your", "his", "her", "its", "our", "their"})
FIRST_PERSON: Final = frozenset({"i", "me", "myself"})
OTHER_PRONOUNS: Final = frozenset({"he", "she", "it", "they", "we", "you", "him", "them", "us", "this", "that",
                                   "these", "those", "who", "which", "there", "here", "one", "someone",
                                   "everyone", "everybody", "somebody", "nobody", "anyone"})
NEGATIONS: Final = frozenset({"not", "n't", "never", "no", "nt", "neither", "nor", "hardly"})
INTERJECTIONS: Final = frozenset({
    "hey", "hi", "hello", "wow", "oh", "ooh", "ah", "aw", "aww", "yeah", "yep", "yes", "no", "nope", "ok", "okay",
    "thanks", "thank", "congrats", "congratulations", "omg", "lol", "haha", "hah", "hmm", "um", "uh", "well",
    "sure", "great", "awesome", "cool", "nice", "sorry", "please", "dear", "bye", "cheers", "welcome", "wait",
    "gosh", "whoa", "yay", "woah", "btw", "tbh", "alright", "absolutely", "definitely", "totally", "anyway",
    "anyways", "oops", "huh", "ya", "yup", "morning", "evening", "night", "good", "amazing", "gonna", "wanna",
    "gotta", "kinda", "sorta", "lemme", "gon", "guys", "guess", "also", "just", "really", "exactly", "true",
})
MONTHS: Final = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
})
WEEKDAYS: Final = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                             "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"})
NAME_CONNECTORS: Final = frozenset({"of", "de", "van", "von", "der", "den", "da", "di", "du", "la", "le", "del",
                                    "della", "des", "dos", "das", "y", "bin", "al", "for", "on", "upon", "am",
                                    "im", "zu", "&"})
NAME_SUFFIXES: Final = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv", "phd", "ph.d.", "md", "m.d."})
DEMONYMS: Final = frozenset({
    "american", "british", "english", "french", "german", "spanish", "italian", "chinese", "japanese", "korean",
    "indian", "african", "european", "asian", "australian", "canadian", "mexican", "brazilian", "russian",
    "swedish", "norwegian", "danish", "dutch", "irish", "scottish", "welsh", "portuguese", "greek", "turkish",
    "polish", "jewish", "christian", "catholic", "muslim", "islamic", "arab", "arabic", "latin", "hispanic",
    "african-american", "swiss", "austrian", "belgian", "finnish", "hungarian", "czech", "israeli", "iranian",
    "iraqi", "egyptian", "nigerian", "kenyan", "vietnamese", "thai", "filipino", "indonesian", "pakistani",
    "cuban", "argentine", "chilean", "colombian", "peruvian", "venezuelan", "ukrainian", "romanian",
    "bulgarian", "serbian", "croatian", "soviet", "roman", "byzantine", "ottoman", "persian", "anglican",
    "protestant", "lutheran", "baptist", "methodist", "orthodox", "republican", "democratic", "latino",
    "latina", "native", "western", "eastern", "northern", "southern", "nordic", "scandinavian", "celtic",
    "victorian", "medieval", "biblical", "buddhist", "hindu", "sikh", "mormon", "evangelical", "pentecostal",
    "puerto", "caribbean", "mediterranean", "balkan", "baltic", "slavic", "hawaiian", "texan", "californian",
    "parisian", "londoner"})
_COUNTRY_OF: Final = (
    "american:United_States british:United_Kingdom french:France german:Germany spanish:Spain italian:Italy "
    "chinese:China japanese:Japan korean:Korea indian:India australian:Australia canadian:Canada mexican:Mexico "
    "brazilian:Brazil russian:Russia swedish:Sweden norwegian:Norway danish:Denmark dutch:Netherlands "
    "irish:Ireland scottish:Scotland welsh:Wales portuguese:Portugal greek:Greece turkish:Turkey polish:Poland "
    "swiss:Switzerland austrian:Austria belgian:Belgium finnish:Finland hungarian:Hungary czech:Czech_Republic "
    "israeli:Israel iranian:Iran iraqi:Iraq egyptian:Egypt nigerian:Nigeria kenyan:Kenya vietnamese:Vietnam "
    "thai:Thailand filipino:Philippines indonesian:Indonesia pakistani:Pakistan cuban:Cuba argentine:Argentina "
    "argentinian:Argentina chilean:Chile colombian:Colombia peruvian:Peru venezuelan:Venezuela "
    "ukrainian:Ukraine romanian:Romania bulgarian:Bulgaria serbian:Serbia croatian:Croatia icelandic:Iceland "
    "jamaican:Jamaica haitian:Haiti ghanaian:Ghana ethiopian:Ethiopia moroccan:Morocco algerian:Algeria "
    "tunisian:Tunisia lebanese:Lebanon syrian:Syria saudi:Saudi_Arabia afghan:Afghanistan "
    "bangladeshi:Bangladesh nepalese:Nepal nepali:Nepal malaysian:Malaysia singaporean:Singapore "
    "taiwanese:Taiwan mongolian:Mongolia estonian:Estonia latvian:Latvia lithuanian:Lithuania slovak:Slovakia "
    "slovenian:Slovenia bosnian:Bosnia albanian:Albania armenian:Armenia guyanese:Guyana ecuadorian:Ecuador "
    "bolivian:Bolivia uruguayan:Uruguay paraguayan:Paraguay kazakh:Kazakhstan uzbek:Uzbekistan "
    "zimbabwean:Zimbabwe zambian:Zambia ugandan:Uganda tanzanian:Tanzania senegalese:Senegal sudanese:Sudan "
    "somali:Somalia cambodian:Cambodia burmese:Myanmar laotian:Laos belarusian:Belarus moldovan:Moldova "
    "cypriot:Cyprus maltese:Malta luxembourgish:Luxembourg qatari:Qatar kuwaiti:Kuwait omani:Oman "
    "yemeni:Yemen jordanian:Jordan libyan:Libya congolese:Congo angolan:Angola namibian:Namibia "
    "mozambican:Mozambique malagasy:Madagascar fijian:Fiji"
)
COUNTRY_OF_DEMONYM: Final = {d: c.replace("_", " ") for d, c in (x.split(":") for x in _COUNTRY_OF.split())}
"""Nationality adjective -> country: "a Mexican politician" mentions Mexico, so memories about Mexico
connect even when only one of them names the country."""
PERSON_TITLES: Final = frozenset({"mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "prof", "prof.", "sir",
                                  "dame", "lady", "lord", "president", "king", "queen", "prince", "princess",
                                  "senator", "governor", "mayor", "pope", "uncle", "aunt", "grandma",
                                  "grandpa", "miss", "madam", "captain", "general", "judge", "coach", "rev", "rev.",
                                  "reverend"})
DIRECTION_WORDS: Final = frozenset({"north", "south", "east", "west", "new", "upper", "lower", "great", "greater",
                                    "central", "northern", "southern", "eastern", "western", "united", "old",
                                    "little", "big", "saint", "st.", "san", "santa", "los", "las", "el", "port",
                                    "fort", "mount", "lake", "cape", "isle", "la", "le"})
GENERIC_HEADS: Final = frozenset({
    "time", "times", "lot", "lots", "bit", "way", "ways", "thing", "things", "stuff", "one", "ones", "day", "days",
    "week", "weeks", "year", "years", "month", "months", "kind", "sort", "type", "couple", "few", "bunch", "part",
    "piece", "moment", "while", "chance", "idea", "feeling", "feelings", "fun", "blast", "look", "place", "people",
    "person", "everything", "something", "anything", "nothing", "much", "more", "most", "all", "both",
    "point", "sense", "reason", "same", "other", "others", "number", "amount", "end", "start", "rest", "side",
    "work", "job", "home", "life", "world", "family", "friends", "friend", "kids", "kid", "guys",
})

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
LEGAL_SUFFIXES: Final = frozenset({"inc", "inc.", "corp", "corp.", "corporation", "ltd", "ltd.", "llc", "l.l.c.",
                                    "gmbh", "plc", "co.", "s.a.", "ag", "sa", "bv", "b.v.", "pty", "limited",
                                    "incorporated", "llp", "lp", "s.p.a.", "oy", "ab", "nv", "n.v."})
_HEAD_HEURISTICS: Final[dict[str, tuple[str, ...]]] = {
    **{w: ("University", "School", "Organization") for w in ("university", "universität", "université",
                                                              "universidad", "polytechnic")},
    **{w: ("School", "Organization") for w in ("school", "college", "academy", "institute", "seminary",
                                               "conservatory", "kindergarten")},
    **{w: ("Company", "Organization") for w in ("company", "corporation", "bank", "airlines", "airways",
                                                "group", "holdings", "industries", "technologies", "labs",
                                                "studios", "records", "publishing", "press", "motors")},
    **{w: ("GovernmentAgency", "Organization") for w in ("ministry", "agency", "department", "council",
                                                          "authority", "commission", "bureau", "parliament")},
    **{w: ("NonProfit", "Organization") for w in ("foundation", "charity", "trust", "society")},
    **{w: ("Organization",) for w in ("association", "federation", "union", "league", "club", "party",
                                      "church", "orchestra", "band", "institution", "organization",
                                      "organisation", "committee", "army", "navy", "team")},
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
                                       "museum", "theatre", "theater", "hospital", "station", "tavern", "hall",
                                       "cathedral", "temple", "mosque", "palace", "castle", "library", "mall",
                                       "center", "centre", "gallery", "opera")},
    **{w: ("Conference", "Event") for w in ("conference", "summit", "convention", "expo", "symposium",
                                            "festival", "olympics", "championship", "cup", "games", "war")},
}
_PREFIX_HEURISTICS: Final[dict[str, tuple[str, ...]]] = {
    **{w: ("Place",) for w in ("lake", "mount", "mt.", "mt", "river", "cape", "isle", "gulf", "port", "fort",
                               "mountains")},
    **{w: ("University", "School", "Organization") for w in ("university",)},
    **{w: ("City", "Place") for w in ("city",)},
    **{w: ("Country", "Place") for w in ("republic", "kingdom")},
    **{w: ("GovernmentAgency", "Organization") for w in ("ministry", "department")},
    **{w: ("Company", "Organization") for w in ("bank",)},
    **{w: ("Region", "Place") for w in ("county", "province", "state")},
}


EVALUATIVE: Final = frozenset({
    "great", "good", "nice", "awesome", "amazing", "huge", "big", "little", "small", "long", "short", "new", "old",
    "special", "real", "whole", "same", "other", "own", "best", "better", "bad", "hard", "tough", "fun", "cool",
    "lovely", "beautiful", "happy", "sad", "wonderful", "fantastic", "incredible", "perfect", "first", "last",
    "next", "few", "several", "many", "much", "more", "most", "such", "quite", "pretty", "super", "total", "true",
    "full", "high", "low", "right", "wrong", "sweet", "kind", "proud", "free", "busy", "quick", "quiet", "early",
    "late", "young", "main", "major", "favorite", "favourite", "tiny", "entire", "various", "different",
    "similar", "certain", "particular", "important", "positive", "negative", "strong", "deep", "warm", "cold",
    "hot", "safe", "close", "simple", "easy", "difficult", "fresh", "rough", "crazy", "wild", "brave", "hopeful",
    "powerful", "glad", "sure", "fine", "okay", "ok", "bright", "dark", "minor", "past",
    "future", "recent", "current", "daily", "weekly", "annual", "latest", "previous", "single", "double", "half",
    "lot", "bit", "top", "bottom", "front", "back", "side", "extra", "general", "usual", "regular",
    "normal", "typical", "common", "rare", "nearby", "local", "overall", "awful", "terrible", "horrible",
    "excellent", "brilliant", "gorgeous", "cute", "funny", "serious", "honest", "open", "ideal",
})


@dataclass(frozen=True)
class English:
    """The lemma table (lowercase form -> lemma), common lowercase words, and WordNet's lemma lists by part of
    speech (nouns and adjectives), used to spot noun compounds such as "support group"."""

    lemmas: dict[str, str]
    vocabulary: frozenset[str]
    nouns: frozenset[str] = frozenset()
    adjectives: frozenset[str] = frozenset()

    def lemma(self, lower: str) -> str:
        return self.lemmas.get(lower, lower)

    def is_common(self, lower: str) -> bool:
        return lower in self.vocabulary or lower in STOP_WORDS or lower in INTERJECTIONS


@cache
def english() -> English:
    """Read ``spacy-lookups-data``'s English lemma table once per process (~30 ms)."""
    import spacy_lookups_data  # type: ignore[import-untyped]

    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lemma_lookup.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        table: dict[str, str] = json.load(fh)
    lemmas = {k.lower(): v.lower() for k, v in table.items() if k == k.lower()}
    vocab = frozenset(w for w in (*lemmas, *lemmas.values()) if w.isalpha() and w == w.lower())
    with gzip.open(path.with_name("en_lemma_index.json.gz"), "rt", encoding="utf-8") as fh:
        index: dict[str, list[str]] = json.load(fh)
    return English(lemmas, vocab, frozenset(index.get("noun", ())), frozenset(index.get("adj", ())))


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
        classes_by_name = {c.name: c for c in ontology.classes.values()}

        def first_class(cands: tuple[str, ...]) -> str | None:
            for name in cands:
                iri = ontology.resolve_class(name)
                if iri is not None:
                    return ontology.classes[iri].name
            return None

        lex.legal_class = first_class(("Company", "Organization"))
        lex.person_class = first_class(("Person",))
        lex.country_class = first_class(("Country", "Place"))

        def toks(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
            lowers = tuple(t.lower_ for t in nlp.make_doc(text) if not t.is_space)
            return lowers, tuple(eng.lemma(x) for x in lowers)

        # Classes: label and synonyms as class words.
        for c in sorted(ontology.classes.values(), key=lambda c: c.iri):
            for surface in (c.label, *c.alt_labels, _split_camel(c.name)):
                _lowers, lemmas = toks(surface)
                if lemmas and lemmas not in lex.class_words:
                    lex.class_words[lemmas] = c.name
                    lex.max_class_len = max(lex.max_class_len, len(lemmas))
                if len(lemmas) == 1 and lemmas[0] not in _AMBIGUOUS_HEADS:
                    lex.head_words.setdefault(lemmas[0], c.name)
        for word, cands in _HEAD_HEURISTICS.items():
            if (name := first_class(cands)) is not None:
                lex.head_words.setdefault(word, name)
        for word, cands in _PREFIX_HEURISTICS.items():
            if (name := first_class(cands)) is not None:
                lex.prefix_words.setdefault(word, name)

        # Relations: surface forms as patterns, and role nouns.
        for rel in sorted(ontology.relations.values(), key=lambda r: r.iri):
            label_lowers, _ = toks(rel.label)
            seen: set[tuple[str, ...]] = set()
            for surface in (rel.label, *rel.alt_labels):
                lowers, lemmas = toks(surface)
                if not lowers or lowers in seen:
                    continue
                seen.add(lowers)
                lex._add_roles(rel, lowers, lemmas, eng)
                if len(lowers) >= 2 and lowers[0] in ("has", "have") and len(lowers) == 2:
                    cls_name = lex.class_words.get((lemmas[1],))
                    if cls_name is not None and cls_name in classes_by_name:
                        lex.has_relations.setdefault(cls_name, rel)
                if not _is_verbal(lowers, lemmas):
                    continue
                past = any(_is_past(lo, le) for lo, le in zip(lowers, lemmas, strict=True))
                gappable = (len(lowers) == 2 and lowers[1] in PREPOSITIONS and lemmas[0] != "be"
                            and lowers[0] not in PREPOSITIONS and lowers[0] not in DETERMINERS)
                passive_swap = (len(lowers) == 2 and lowers[1] == "by" and label_lowers[-1:] != ("by",)
                                and rel.inverse is None and rel.kind == "object")
                pat = RelationPattern(rel, surface, lowers, lemmas, past, gappable, passive_swap)
                lex.patterns.setdefault(lemmas[0], []).append(pat)
                if lowers[0] != lemmas[0]:
                    lex.exact_first.setdefault(lowers[0], []).append(pat)
        for table in (lex.patterns, lex.exact_first):
            for pats in table.values():
                pats.sort(key=lambda p: (-len(p.lemmas), p.relation.iri, p.surface))
        for roles in lex.roles.values():
            roles.sort(key=lambda rd: (0 if rd[1] == "of" else 1, rd[0].iri))
        return lex

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


def _single_noun(lowers: tuple[str, ...], lemmas: tuple[str, ...]) -> bool:
    """One uninflected word that is not a function word ("employer", "birthplace")."""
    low = lowers[0]
    return len(lowers) == 1 and low == lemmas[0] and low.isalpha() and low not in PREPOSITIONS \
        and low not in STOP_WORDS


def _multi_noun(rel: RelationInfo, lowers: tuple[str, ...], lemmas: tuple[str, ...]) -> bool:
    """A noun phrase label ("phone number", "place of birth"), not a verb phrase ("works at", "has a")."""
    return len(lowers) >= 2 and (rel.kind == "datatype" or lowers[-1] not in PREPOSITIONS) \
        and lowers[0] == lemmas[0] and lowers[0] not in PREPOSITIONS and lowers[0] not in DETERMINERS \
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
