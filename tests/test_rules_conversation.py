"""The rule extractor on chat input (issue 18): who "I" is, small talk, places after an organization,
titles, and a custom ontology the rules have never seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import Memory
from graphmem.extraction import Extraction, ExtractionContext, RuleExtractor
from graphmem.ontology import Ontology

from .rules_support import REF

CLINIC = """\
@prefix ex: <https://example.org/clinic#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .

ex:Person a owl:Class ; rdfs:label "person"@en .
ex:Patient a owl:Class ; rdfs:subClassOf ex:Person ; rdfs:label "patient"@en .
ex:Doctor a owl:Class ; rdfs:subClassOf ex:Person ; skos:prefLabel "doctor"@en ; skos:altLabel "physician"@en .
ex:Clinic a owl:Class ; rdfs:label "clinic"@en .

ex:treatedBy a owl:ObjectProperty ; rdfs:domain ex:Patient ; rdfs:range ex:Doctor ;
    skos:altLabel "is a patient of"@en .
ex:peerOf a owl:ObjectProperty, owl:SymmetricProperty ; rdfs:domain ex:Doctor ; rdfs:range ex:Doctor ;
    skos:prefLabel "is a colleague of"@en ; skos:hiddenLabel "practises alongside"@en .
ex:consultsAt a owl:ObjectProperty ; rdfs:domain ex:Doctor ; rdfs:range ex:Clinic ;
    rdfs:label "consults at"@en .
"""


@pytest.fixture(scope="module")
def extractor() -> RuleExtractor:
    return RuleExtractor(Ontology.load())


def run(extractor: RuleExtractor, text: str, speakers: list[str]) -> Extraction:
    return extractor.extract(text, ExtractionContext(extractor.ontology, REF, speakers))


def triples(result: Extraction) -> set[tuple[str, str, str]]:
    return {(t.source, t.relation, t.target) for t in result.triples}


def test_role_speaker_is_no_entity_and_takes_the_name_it_introduces(extractor: RuleExtractor) -> None:
    anonymous = run(extractor, "user: I live in Shanghai.", ["user"])
    assert {e.name for e in anonymous.entities} == {"Shanghai"}  # no "user" entity
    assert not anonymous.triples  # who lives there is unknown: no fact rather than a wrong one
    assert anonymous.memories[0].attributed_to == "user"

    named = run(extractor, "user: Hi, my name is Wei Zhang.\nuser: I live in Shanghai and I work at Initech.",
                ["user"])
    assert triples(named) == {("Wei Zhang", "livesIn", "Shanghai"), ("Wei Zhang", "worksFor", "Initech")}
    assert {e.name: e.type for e in named.entities}["Wei Zhang"] == "Person"
    assert "user" not in {e.name.casefold() for e in named.entities}
    short = run(extractor, "user: I'm Maya. I moved to Porto.", ["user"])
    assert ("Maya", "livesIn", "Porto") in triples(short)


def test_pleasantries_are_not_memories(extractor: RuleExtractor) -> None:
    text = ("Maya: Hi!\nassistant: Hello Maya, how can I help you today?\n"
            "Maya: I moved to Porto last year.\nassistant: Noted: you live in Porto.\n"
            "Maya: Thanks!\nassistant: You're welcome! Let me know if you need anything else.")
    result = run(extractor, text, ["Maya", "assistant"])
    assert [m.text for m in result.memories] == ["I moved to Porto last year."]
    assert [s.reason for s in result.skipped] == ["small talk", "assistant turn", "assistant turn", "small talk",
                                                  "assistant turn"]  # the assistant's read-back is no memory
    keep = RuleExtractor(extractor.ontology, small_talk=True)
    assert len(run(keep, text, ["Maya", "assistant"]).memories) == 6


def test_small_talk_knob_reaches_the_extractor(tmp_path: Path) -> None:
    text = [{"role": "user", "content": "I moved to Porto.", "name": "Maya"},
            {"role": "assistant", "content": "Thanks for sharing! How can I help?"}]
    for keep, count in ((False, 1), (True, 2)):
        with Memory.from_config({"store": {"path": str(tmp_path / f"{keep}.db")}, "embedder": {"provider": "hashing"},
                                 "extraction": {"rules": {"small_talk": keep}}}) as m:
            out = m.add(text, user_id="maya")
            assert len(m.get_all(user_id="maya")["results"]) == count
            # what was not remembered is in the add result, with its reason
            assert [(s["text"], s["reason"]) for s in out["skipped"]] == \
                ([] if keep else [("Thanks for sharing! How can I help?", "assistant turn")])


def test_questions_to_the_assistant_are_not_memories_unless_they_say_something(extractor: RuleExtractor) -> None:
    text = ("Maya: Can you help me prep for the reviews?\nMaya: Any food tips for my trip to Porto?\n"
            "assistant: Try a francesinha.")
    result = run(extractor, text, ["Maya", "assistant"])
    assert [m.text for m in result.memories] == ["Any food tips for my trip to Porto?"]
    assert [s.reason for s in result.skipped] == ["question to the assistant", "assistant turn"]
    # between two people (no assistant), a question is part of the conversation and stays
    assert len(run(extractor, "Maya: Can you help me prep for the reviews?", ["Maya"]).memories) == 1
    # told to an assistant, the weather is not the user's world; the user's own news is
    chat = run(extractor, "Maya: ugh it's freezing today. My flat in Tromsø has no heating.\nassistant: Oh no!",
               ["Maya", "assistant"])
    assert [m.text for m in chat.memories] == ["My flat in Tromsø has no heating."]
    assert [s.reason for s in chat.skipped] == ["not about the user", "assistant turn"]


def test_place_after_an_organization_and_she(extractor: RuleExtractor) -> None:
    got = triples(run(extractor, "Maya: I work at Northwind in Lisbon. My sister Inês is a nurse. "
                                 "She lives in Porto.", ["Maya"]))
    assert {("Maya", "worksFor", "Northwind"), ("Northwind", "locatedIn", "Lisbon"),
            ("Inês", "siblingOf", "Maya"), ("Inês", "livesIn", "Porto")} <= got
    assert ("Maya", "livesIn", "Lisbon") not in got
    # a place relation's own object does not get a second place
    assert triples(run(extractor, "Ana lives in Porto in Portugal.", [])) == {("Ana", "livesIn", "Porto")}


def test_titles_stay_and_both_forms_are_one_entity(extractor: RuleExtractor) -> None:
    result = run(extractor, "Grace: I met Dr Hale yesterday. Hale works at the Elm Street Clinic.", ["Grace"])
    by_name = {e.name: e for e in result.entities}
    assert "Hale" not in by_name and "Hale" in by_name["Dr Hale"].aliases
    assert by_name["Dr Hale"].type == "Person"
    assert {("Grace", "knows", "Dr Hale"), ("Dr Hale", "worksFor", "Elm Street Clinic")} <= triples(result)
    first_bare = run(extractor, "Hale is kind. Dr. Hale lives in Leeds.", [])
    assert "Dr. Hale" in {e.name: e for e in first_bare.entities}["Hale"].aliases


def test_held_out_custom_ontology(tmp_path: Path) -> None:
    path = tmp_path / "clinic.ttl"
    path.write_text(CLINIC, encoding="utf-8")
    ex = RuleExtractor(Ontology.load([path], []))
    result = run(ex, "Grace: Ana is a patient of Dr Hale. Dr Hale is a colleague of Dr. Okafor. "
                     "Okafor practises alongside Imes. Hale consults at Elm Street Clinic.", ["Grace"])
    assert triples(result) == {("Ana", "treatedBy", "Dr Hale"), ("Dr Hale", "peerOf", "Dr. Okafor"),
                               ("Dr. Okafor", "peerOf", "Imes"), ("Dr Hale", "consultsAt", "Elm Street Clinic")}
    types = {e.name: e.type for e in result.entities}
    assert types["Ana"] == "Patient" and types["Dr Hale"] == "Doctor" and types["Imes"] == "Doctor"
    assert types["Elm Street Clinic"] == "Clinic"


def test_job_statement_without_a_relation_label(extractor: RuleExtractor) -> None:
    got = triples(run(extractor, "user: My name is Priya Raman and I'm a data engineer at Helix Labs in Bangalore.",
                      ["user"]))
    assert got == {("Priya Raman", "worksFor", "Helix Labs"), ("Priya Raman", "jobTitle", "data engineer"),
                   ("Helix Labs", "locatedIn", "Bangalore")}
    assert not run(extractor, "Maya: I'm a bit tired at the moment.", ["Maya"]).triples  # no organization
    assert not any(r == "worksFor" for _s, r, _o in triples(run(extractor, "Maya: I'm not a nurse at Initech.",
                                                                 ["Maya"])))


def test_age_and_nationality_after_a_bare_copula(extractor: RuleExtractor) -> None:
    got = triples(run(extractor, "Lucas: I'm 34, I was born in Curitiba and I'm Brazilian.", ["Lucas"]))
    assert got == {("Lucas", "age", "34"), ("Lucas", "bornIn", "Curitiba"), ("Lucas", "citizenOf", "Brazil")}
    assert ("Ana", "citizenOf", "Mexico") in triples(run(extractor, "Ana is Mexican and loves Lyon.", []))
    late = triples(run(extractor, "Lucas: I am 5 minutes late. Ana is Mexican-American.", ["Lucas"]))
    assert not any(r in ("age", "citizenOf") for _s, r, _o in late)


def test_plural_object_keeps_its_written_form_as_alias(extractor: RuleExtractor) -> None:
    result = run(extractor, "Maya: I'm allergic to peanuts.", ["Maya"])
    assert ("Maya", "allergicTo", "peanut") in triples(result)
    assert {e.name: e for e in result.entities}["peanut"].aliases == ["peanuts"]
