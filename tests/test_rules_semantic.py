"""The rule extractor maps predicates and plain nouns the ontology does not spell by meaning, with the
store's embedder (all-MiniLM-L6-v2 by default): a modeller's labels and synonyms reach other phrasings.
The example ontology of a clinic has no "allergic to" and no drug named "penicillin"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem import Memory
from graphmem.config import EmbedderConfig
from graphmem.embedding.bert import OnnxEmbedder
from graphmem.extraction import ExtractionContext, RuleExtractor
from graphmem.extraction.rules.semantic import SemanticMap
from graphmem.ontology import Ontology

CLINIC = Path(__file__).resolve().parents[1] / "examples" / "ontologies" / "clinic"
REF = datetime(2026, 1, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def clinic() -> Ontology:
    return Ontology.load([CLINIC / "clinic.ttl"], [CLINIC / "clinic.shapes.ttl"])


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(EmbedderConfig(provider="onnx"))


def triples(extractor: RuleExtractor, text: str) -> set[tuple[str, str, str]]:
    context = ExtractionContext(extractor.ontology, REF, ["user"], roles={"user": "user"}, user="kari")
    return {(t.source, t.relation, t.target) for t in extractor.extract(f"user: {text}", context).triples}


def test_unspelled_predicates_and_nouns_map_by_meaning(clinic: Ontology, onnx: OnnxEmbedder) -> None:
    semantic = RuleExtractor(clinic, granularity="message", embedder=onnx)
    words = RuleExtractor(clinic, granularity="message")  # no embedder: only what the ontology spells
    assert triples(semantic, "I'm allergic to penicillin.") == {("kari", "hasAllergy", "penicillin")}
    assert triples(words, "I'm allergic to penicillin.") == set()
    # a light verb the ontology spells ("is taking"), its object typed by meaning; the speaker is never
    # made a drug to fit "taken for"; "my diabetes" is the speaker's condition (the one relation from a
    # patient to a condition)
    assert triples(semantic, "I take metformin twice a day for my diabetes.") == {
        ("kari", "takesDrug", "metformin"), ("kari", "hasDiagnosis", "diabetes")}
    assert triples(semantic, "I take the bus to work.") == set()


def test_a_preposition_must_agree(onnx: OnnxEmbedder) -> None:
    default = Ontology.load()
    semantic = SemanticMap(default, onnx)
    assert "manages" not in [r.name for r in semantic.relations(("manage", "at"))]  # "I manage three people at X"
    assert [r.name for r in semantic.relations(("study", "at"))][:1] == ["studiedAt"]
    clinic_map = SemanticMap(Ontology.load([CLINIC / "clinic.ttl"], [CLINIC / "clinic.shapes.ttl"]), onnx)
    assert [r.name for r in clinic_map.relations(("allergic", "to"))] == ["hasAllergy"]
    assert clinic_map.class_within("penicillin", clinic_map_range(clinic_map, "hasAllergy")) == "Drug"
    assert clinic_map.class_within("the bus", clinic_map_range(clinic_map, "takesDrug"), strict=True) is None


def clinic_map_range(semantic: SemanticMap, relation: str) -> tuple[str, ...]:
    return next(r.range for r in semantic._relations if r.name == relation)


def test_only_a_semantic_embedder_maps(tmp_path: Path) -> None:
    """Through Memory: the default embedder maps, the hashing one (words, not meaning) does not."""
    config = {"ontology": {"ontology": [str(CLINIC / "clinic.ttl")], "shapes": [str(CLINIC / "clinic.shapes.ttl")]}}
    found = {}
    for name, embedder in (("default", {"provider": "auto"}), ("hashing", {"provider": "hashing"})):
        with Memory({**config, "home": str(tmp_path / name), "embedder": embedder}) as m:
            m.add("I'm allergic to penicillin.", user_id="kari")
            found[name] = {(f["relation_name"], f["target"]["name"]) for f in m.facts(user_id="kari")["results"]}
    assert found == {"default": {("cl:hasAllergy", "penicillin")}, "hashing": set()}


def test_a_name_beside_a_kin_word_is_a_person_he_can_stand_for(clinic: Ontology, onnx: OnnxEmbedder) -> None:
    """The clinic ontology has no class for a father; "father" means no more than its person class, so
    Harold is a person and "he" is Harold."""
    semantic = RuleExtractor(clinic, granularity="message", embedder=onnx)
    got = triples(semantic, "I'm writing about my father, Harold Finch. He's on donepezil, 10 mg at night.")
    assert ("Harold Finch", "takesDrug", "donepezil") in got
    # a noun nearer a narrower class is not a kin word: "my GP, Dr. Lund" stays the GP
    got = triples(semantic, "My GP, Dr. Lund, is lovely. He's on holiday.")
    assert not any(t[0] == "Dr. Lund" and t[1] == "takesDrug" for t in got)
