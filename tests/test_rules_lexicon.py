"""rules.lexicon and rules.words: the ontology vocabulary the rules match, and the English tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.extraction.rules.lexicon import OntologyLexicon
from graphmem.extraction.rules.resources import broad_range
from graphmem.extraction.rules.words import english
from graphmem.ontology import Ontology

from .rules_support import resources

CLINIC = Path(__file__).parent / "data" / "ontology" / "clinic"


@pytest.fixture(scope="module")
def lex() -> OntologyLexicon:
    return resources().lexicon


def test_relation_forms_are_indexed_by_first_lemma(lex: OntologyLexicon) -> None:
    works = [p for p in lex.patterns["work"] if p.relation.name == "worksFor"]
    assert works and all(p.lemmas[0] == "work" for p in works)
    assert any(p.gappable for p in works)  # "works at": a verb and a preposition, words may come between
    for pats in lex.patterns.values():  # longest first, so "work for" wins over "work"
        assert [len(p.lemmas) for p in pats] == sorted((len(p.lemmas) for p in pats), reverse=True)
    written = [p for pats in lex.patterns.values() for p in pats if p.lowers == ("written", "by")]
    assert written and all(p.passive_swap and p.relation.name == "authored" for p in written)
    # an inflected first word is also indexed as written, for "published" that lemmatizes elsewhere
    assert any(p.relation.name == "authored" for p in lex.exact_first["published"])


def test_role_nouns_class_words_and_heads(lex: OntologyLexicon) -> None:
    manager = {(rel.name, d) for rel, d in lex.roles[("manager",)]}
    assert ("manages", "of") in manager
    assert lex.class_words[("city",)] == "City"
    assert lex.head_words["county"] == "Region"
    assert lex.prefix_words["lake"] == "Place"
    assert lex.has_relations["Pet"].name == "hasPet"  # the most specific relation whose range is Pet
    assert lex.person_class == "Person" and lex.legal_class == "Company"


def test_compatible_reads_domain_and_range_both_ways(lex: OntologyLexicon) -> None:
    onto = lex.ontology
    person, place = onto.resolve_class("Person"), onto.resolve_class("Place")
    assert person and place
    assert lex.compatible("City", (place,))  # a subclass fits
    assert lex.compatible("Place", (onto.resolve_class("City") or "",))  # a superclass might
    assert not lex.compatible("City", (person,))
    assert lex.compatible(None, (person,)) and lex.compatible("City", ())
    assert lex.is_person("Person") and not lex.is_person("City")


def test_noun_phrase_objects_only_for_broad_ranges() -> None:
    onto = resources().ontology
    likes, lives = onto.relation_info("likes"), onto.relation_info("livesIn")
    assert likes is not None and lives is not None
    assert broad_range(onto, likes) and not broad_range(onto, lives)


def test_a_custom_ontology_falls_back_to_the_classes_it_has() -> None:
    clinic = Ontology.load(CLINIC / "ontology", CLINIC / "shapes")
    lex = OntologyLexicon.build(clinic, resources().nlp)
    assert lex.class_words  # its own labels
    person = clinic.resolve_class("Person")
    assert lex.person_class == (clinic.classes[person].name if person else None)
    assert all(clinic.resolve_class(c) is not None for c in lex.head_words.values())


def test_english_tables() -> None:
    eng = english()
    assert eng.lemma("worked") == "work" and eng.lemma("xyzzy") == "xyzzy"
    assert eng.is_common("painting") and not eng.is_common("tennessee")
    assert "group" in eng.nouns and "mental" in eng.adjectives
