"""The extraction prompt's vocabulary pruned to the chunk, its stable prefix and its size bound."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.chunking import ESTIMATE, TiktokenCounter, token_counter
from graphmem.config import LLMConfig
from graphmem.extraction import ExtractionContext, prompt
from graphmem.extraction.llm import LLMExtractor
from graphmem.extraction.llm.answers import EXTRACTION
from graphmem.extraction.vocabulary import index_for, select
from graphmem.ontology import Ontology
from graphmem.testing import Reply, StandinServer

GM = "https://graphmem.dev/ontology#"
LONG_CHUNK = "\n".join([
    "Maya: Hi, I'm Maya Lopez. I moved from Beijing to Lisbon in March and I work at Northwind as a designer.",
    "Maya: My husband David is a nurse; our daughter Lily goes to Riverside High School and my brother Tom "
    "studied at Imperial College.",
    "Maya: I'm allergic to peanuts, I love hiking and I hate pork. I speak Portuguese, English and Mandarin.",
    "Maya: My manager Ana runs the Atlas project; I report to her and I'm working on the billing migration.",
    "Maya: Next Friday we have a sync with the vendor, then I'm going to PyCon in Pittsburgh on May 14.",
    "Maya: We adopted a dog called Biscuit. I'm 34, born on 1991-02-03 in Porto, and I'm Portuguese.",
    "Maya: Northwind is a subsidiary of Globex, founded in 2010, headquartered in Munich, and it operates in fintech.",
    "Maya: My email is maya@example.com, my phone is +351 555 0100 and my website is https://maya.example.com.",
    "Maya: The task is assigned to Pete, status active, priority high, due 2026-04-01; I wrote the design doc.",
    "Maya: I'm a member of the chess club, friends with Zoe, a colleague of Sam, and I know Dr Hale.",
    "assistant: Thanks Maya, I'll remember all of that.",
])


def context(ontology: Ontology) -> ExtractionContext:
    return ExtractionContext(ontology=ontology, reference_time=datetime(2026, 3, 2, 10, tzinfo=UTC),
                             speakers=["Maya"])


def names(ontology: Ontology, iris: frozenset[str] | tuple[str, ...]) -> set[str]:
    return {(ontology.classes.get(i) or ontology.relations[i]).name for i in iris}


def test_relations_named_by_a_synonym_are_kept_and_others_left_out(ontology: Ontology) -> None:
    sel = select(ontology, "Nora: My coworker Sam and my husband David are both allergic to cats.")
    rels = names(ontology, sel.all_relations)
    assert {"colleagueOf", "marriedTo", "allergicTo"} <= rels  # altLabels "coworker of", "husband of"; label
    assert "coworker of" in sel.matched[GM + "colleagueOf"] and "husband of" in sel.matched[GM + "marriedTo"]
    assert not {"speaks", "studiedAt", "foundingDate", "population", "authored"} & rels
    quiet = names(ontology, select(ontology, "Nora: Thanks, that's all for today.").relations)
    assert "colleagueOf" not in quiet and "marriedTo" not in quiet


def test_lemmas_match_inflected_text_and_verb_phrases_need_their_preposition(ontology: Ontology) -> None:
    assert "graduated from" in select(ontology, "Ola graduates from Uppsala in June.").matched[GM + "studiedAt"]
    assert GM + "speaks" in select(ontology, "Wei is fluent in Cantonese.").all_relations
    # "works with" is colleagueOf only when "with" follows the verb; "I work for" says nothing of colleagues
    assert GM + "colleagueOf" not in select(ontology, "Ben: I work for Acme with pleasure.").all_relations
    assert GM + "colleagueOf" in select(ontology, "Ben: I work with Sara.").all_relations


def test_closure_brings_domain_range_superclasses_and_inverse(ontology: Ontology) -> None:
    sel = select(ontology, "Felix graduated from Uppsala.")
    assert GM + "studiedAt" in sel.relations
    # range School, its superclasses (the class lines name their parents), domain Person (core)
    assert {"School", "Organization", "Agent", "Thing", "Person"} <= names(ontology, sel.all_classes)
    assert GM + "School" in sel.closure_only  # listed only to read studiedAt: no definition
    family = select(ontology, "Iris: My daughter Lily is six.")
    assert {"childOf", "parentOf"} <= names(ontology, family.all_relations)  # "daughter of" names childOf
    [line] = [x for x in prompt.chunk_vocabulary(ontology, "Iris: My daughter Lily is six.").splitlines()
              if x.startswith("- childOf:")]
    assert line.startswith("- childOf: Person -> Person [inverse of parentOf]: ")
    assert line.endswith("(text: daughter of)")


def test_dates_and_numbers_bring_the_literal_relations(ontology: Ontology) -> None:
    dated = names(ontology, select(ontology, "The review is next Friday.").all_relations)
    assert {"startDate", "endDate"} <= dated and "age" not in dated
    assert "age" in names(ontology, select(ontology, "Lucas: I'm 34.").all_relations)


def test_a_chunk_without_any_match_still_gets_the_core(ontology: Ontology) -> None:
    sel = select(ontology, "Kai: hmm ok")
    assert not sel.relations
    assert {"worksFor", "livesIn", "jobTitle", "knows"} <= names(ontology, sel.core_relations)
    assert {"Person", "City", "Company"} <= names(ontology, sel.core_classes)
    assert prompt.chunk_vocabulary(ontology, "Kai: hmm ok") == ""
    core = prompt.core_vocabulary(ontology)
    assert "- jobTitle: Person -> xsd:string [functional]" in core and "- Person < Agent|Organism:" in core


def test_prefix_is_byte_identical_across_chunks(ontology: Ontology) -> None:
    ctx = context(ontology)
    for shape in (None, EXTRACTION.shape):
        prefix = prompt.static_prompt(ontology, shape)
        a = prompt.system_prompt(ctx, shape, "Maya: I moved to Lisbon.")
        b = prompt.system_prompt(ctx, shape, "Ben: My sister Ana is allergic to shellfish.")
        assert a.startswith(prefix + "\n\n") and b.startswith(prefix + "\n\n")
        assert a != b and "siblingOf" in b[len(prefix):] and "siblingOf" not in a
        assert "Reference time:" not in prefix and "MORE VOCABULARY" not in prefix
    assert prompt.static_prompt(ontology, None) is prompt.static_prompt(ontology, None)  # built once
    assert index_for(ontology) is index_for(ontology)


def _real_counters() -> list[TiktokenCounter]:
    """tiktoken's encodings where their files can be loaded (its cache, ``TIKTOKEN_CACHE_DIR``); this
    machine has no network, so without them only the offline bounds below are checked."""
    found = [token_counter(name, timeout_s=2) for name in ("cl100k_base", "o200k_base")]
    return [c for c in found if isinstance(c, TiktokenCounter)]


def test_size_bound_holds_for_the_default_ontology_on_a_long_varied_chunk(ontology: Ontology) -> None:
    sel = select(ontology, LONG_CHUNK)
    assert len(sel.all_relations) >= 40  # the chunk names most of the ontology: the bound is really tested
    ctx = context(ontology)
    system = prompt.system_prompt(ctx, EXTRACTION.shape, LONG_CHUNK)  # JSON mode: the larger prompt
    whole = prompt.system_prompt(ctx, EXTRACTION.shape)
    more = prompt.chunk_vocabulary(ontology, LONG_CHUNK)
    assert ESTIMATE.count(more) <= prompt.MAX_CHUNK_VOCABULARY_TOKENS  # shortened: no definitions, no notes
    assert ": The " not in more and "(text:" not in more
    assert ESTIMATE.count(system) < 0.6 * ESTIMATE.count(whole)
    for counter in _real_counters():
        assert counter.count(system) <= 1500, counter.name
    # every relation the chunk can use is still listed, definitions went first
    for iri in sel.relations:
        assert f"- {ontology.relations[iri].name}:" in system


def test_custom_ontology_prunes_by_its_own_labels(tmp_path: Path) -> None:
    ttl = tmp_path / "care.ttl"
    ttl.write_text("""\
@prefix ex: <https://example.org/care#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
ex:Human a owl:Class ; rdfs:label "human" .
ex:Doctor a owl:Class ; rdfs:subClassOf ex:Human ; rdfs:label "doctor" ; skos:altLabel "physician" .
ex:Patient a owl:Class ; rdfs:subClassOf ex:Human ; rdfs:label "patient" .
ex:Drug a owl:Class ; rdfs:label "drug" ; skos:altLabel "medicine" .
ex:underCareOf a owl:ObjectProperty ; rdfs:label "under care of" ; skos:altLabel "patient of" ;
    rdfs:domain ex:Patient ; rdfs:range ex:Doctor ; skos:definition "The patient is treated by the doctor." .
ex:prescribes a owl:ObjectProperty ; rdfs:label "prescribes" ; rdfs:domain ex:Doctor ; rdfs:range ex:Drug .
ex:peerOf a owl:ObjectProperty, owl:SymmetricProperty ; rdfs:label "peer of" ; skos:altLabel "colleague of" ;
    rdfs:domain ex:Doctor ; rdfs:range ex:Doctor .
""", encoding="utf-8")
    onto = Ontology.load(ttl, use_cache=False)
    sel = select(onto, "Ken: I'm a patient of Dr Hale.")
    assert {r.split("#")[1] for r in sel.all_relations} == {"underCareOf"}
    assert {"Patient", "Doctor", "Human"} <= {c.split("#")[1] for c in sel.all_classes}
    assert "Drug" not in {c.split("#")[1] for c in sel.all_classes}
    assert sel.core_classes and not sel.core_relations  # no default core terms: its busiest class instead
    assert GM + "worksFor" not in sel.all_relations
    peers = select(onto, "Hale: Dr Ruiz is a colleague of mine.")
    assert "https://example.org/care#peerOf" in peers.relations
    text = prompt.system_prompt(ExtractionContext(onto, datetime(2026, 1, 5, tzinfo=UTC)), None,
                                "Ken: I'm a patient of Dr Hale.")
    assert "- underCareOf: Patient -> Doctor: The patient is treated by the doctor. (text: patient of)" in text
    assert "prescribes" not in text and "peerOf" not in text


def test_requests_share_the_prefix_and_carry_their_own_vocabulary(server: StandinServer, ontology: Ontology) -> None:
    """Over real HTTP: two chunks, two system messages that start alike and differ after the prefix."""
    empty = '{"memories": [], "entities": [], "triples": []}'
    server.chat_script.extend([Reply(content=empty), Reply(content=empty)])
    cfg = LLMConfig.model_validate({"provider": "openai", "model": "standin-model", "api_key": "test",
                                    "base_url": server.base_url, "max_retries": 0, "timeout_s": 5})
    ex = LLMExtractor(cfg)
    ex.extract("Maya: I speak Portuguese.", context(ontology))
    ex.extract("Ben: My sister Ana lives in Porto.", context(ontology))
    first, second = (str(body["messages"][0]["content"]) for body in server.chat_requests)
    prefix = prompt.static_prompt(ontology, None)
    assert first.startswith(prefix) and second.startswith(prefix)
    assert "- speaks: Person -> Language" in first and "- speaks:" not in second
    assert "- siblingOf:" in second and "- siblingOf:" not in first
    assert len(first) < 0.6 * len(prompt.system_prompt(context(ontology), None))


@pytest.mark.parametrize(("text", "relation"), [
    ("Sara: My mom lives in Cork.", "parentOf"),  # altLabel "mom of"
    ("Jon: I'm married to Eva.", "marriedTo"),
    ("Li: I'm learning Korean.", "speaks"),  # "is learning"
    ("Ida: My boss is Karl.", "reportsTo"),
    ("Al: I can't stand cilantro.", "dislikes"),  # "can't stand", contraction read as "ca not"
    ("Bo: I co-founded Zest in 2019.", "founded"),
    ("Di: I'm a member of the rowing club.", "memberOf"),
    ("Fay: I wrote a book on bees.", "authored"),
    ("Ivy: Ken and I are cousins.", "relativeOf"),  # "cousin of", plural in the text
    ("Kim: I'm Canadian.", "citizenOf"),  # a demonym
])
def test_phrasings_outside_the_gold_set_name_their_relation(ontology: Ontology, text: str, relation: str) -> None:
    assert relation in names(ontology, select(ontology, text).all_relations)
