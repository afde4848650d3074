"""Predicate keys: every surface form of every relation, reduced to the lemmas a clause is read by.

Built once per ontology from the ontology lexicon, so that reading a clause (:mod:`.clauses`) only looks
keys up. It lives apart from that reader because :class:`.resources.Resources` holds one and the reader
needs the resources: kept together, the two modules would import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ...ontology import Ontology
from ...ontology.model import RelationInfo
from .lexicon import OntologyLexicon, definition_examples
from .words import PREPOSITIONS

_SKIP_LEMMAS: Final = frozenset({"a", "an", "the", "be"})
LIGHT: Final = frozenset({"have", "take", "get", "go", "make", "do", "keep", "eat", "run", "see", "be", "use",
                           "put", "give", "come", "know", "hold", "play", "start", "join", "visit", "follow"})
"""Verbs too common to type a plain noun by themselves: "I take metformin" names a medication, "I take the
bus" does not, so after one of these a lowercase object needs evidence of its class."""


@dataclass
class ClauseLexicon:
    """Predicate key (lemmas) -> relations with a surface form of that key, most specific first."""

    keys: dict[tuple[str, ...], list[tuple[RelationInfo, bool]]] = field(default_factory=dict)
    """Key -> (relation, whether its surface form is in the past tense: "lived in" against "lives in")."""
    passive: set[tuple[tuple[str, ...], str]] = field(default_factory=set)
    """(key, relation IRI) spelled in the passive ("was put on"): said actively ("put me on"), the relation
    holds of the verb's object."""
    own: set[tuple[tuple[str, ...], str]] = field(default_factory=set)
    """(key, relation IRI) where the key is the relation's own label ("uses"), not a synonym or a part."""
    by_preposition: dict[str, list[RelationInfo]] = field(default_factory=dict)
    """Last word of a verb form -> object relations spelled with it ("studied at" under "at")."""
    examples: dict[str, str] = field(default_factory=dict)
    """Lowercase example -> class, from the examples a class's definition lists after its colon
    ("... a medicine or supplement: insulin, metformin, an inhaler")."""
    only_relation: dict[str, RelationInfo] = field(default_factory=dict)
    """Class name -> the one object relation whose range is that class, for the classes that have one."""

    @classmethod
    def build(cls, onto: Ontology, lexicon: OntologyLexicon) -> ClauseLexicon:
        lex = cls()
        depth = {iri: len(info.super_properties) for iri, info in onto.relations.items()}
        for pats in lexicon.patterns.values():
            for p in pats:
                if p.passive_swap:
                    continue
                key = tuple(w for w in p.lemmas if w not in _SKIP_LEMMAS)
                if not key:
                    continue
                if p.surface == p.relation.label:
                    lex.own.add((key, p.relation.iri))
                if len(p.lowers) > 2 and p.lowers[0] in ("was", "were", "is", "are", "been", "be", "got", "get"):
                    lex.passive.add((key, p.relation.iri))
                gerund = p.lowers[0].endswith("ing")  # "seeing clinician" names an appointment's side, not a verb
                for k in (key, None if gerund else _without_range_word(lexicon, p.relation, key)):
                    rels = lex.keys.setdefault(k, []) if k else []
                    if k and (p.relation, p.past) not in rels:
                        rels.append((p.relation, p.past))
        for key, rels in lex.keys.items():
            rels.sort(key=lambda r: (-depth.get(r[0].iri, 0), r[0].iri))
            for rel, _past in rels:
                by_prep = lex.by_preposition.setdefault(key[-1], [])
                if len(key) > 1 and key[-1] in PREPOSITIONS and rel.kind == "object" and rel not in by_prep:
                    by_prep.append(rel)
        for info in onto.classes.values():
            for example in definition_examples(info.definition):
                lex.examples.setdefault(example, info.name)
            ranged = [r for r in onto.relations.values() if r.kind == "object" and info.iri in r.range]
            if len(ranged) == 1:
                lex.only_relation[info.name] = ranged[0]
        return lex

    def lookup(self, key: tuple[str, ...], past: bool) -> list[RelationInfo]:
        """Relations of the key, those whose form agrees in tense first ("I lived in" -> lived in, "I'm
        moving to" -> moving to, "I moved to" -> lives in)."""
        found = self.keys.get(key, [])
        agree = [r for r, p in found if p == past]
        return list(dict.fromkeys([*agree, *(r for r, _ in found)]))

    def is_generic(self, key: tuple[str, ...]) -> bool:
        """A light verb or a copula with a preposition ("is on", "is in"): says too little to type a noun."""
        return key[0] == "be" or (len(key) == 1 and key[0] in LIGHT)


def _without_range_word(lexicon: OntologyLexicon, rel: RelationInfo, key: tuple[str, ...]) -> tuple[str, ...] | None:
    """"takes drug", "works at clinic": a form whose last word names the range class says the relation without
    it ("I take lisinopril", "she works at St. Olav's"); after a light verb the object must then show that
    class (a light verb's rule)."""
    if len(key) < 2 or rel.kind != "object":
        return None  # ("is on the drug" is keyed "on drug", "works at clinic" "work at clinic")
    words = lexicon.class_words
    cls = words.get((key[-1],))  # "is on the drug" -> "be on"
    if cls is None:  # "has diagnosis": the head of a class's longer name ("clinical diagnosis")
        heads = {c for form, c in words.items() if len(form) > 1 and form[-1] == key[-1]}
        cls = heads.pop() if len(heads) == 1 else None
    return key[:-1] if cls is not None and lexicon.compatible(cls, rel.range) else None
