"""One naming rule from IRIs to Neo4j labels and relationship types, shared by the ontology (which
checks names for clashes) and the store (which writes them)."""

from __future__ import annotations

import pytest

from graphmem.ontology.naming import local_name, neo4j_label, neo4j_type
from graphmem.stores.neo4j.naming import class_labels, rel_type


@pytest.mark.parametrize(("iri", "label", "rtype"), [
    ("https://ex.org/onto#ResearchOrganization", "ResearchOrganization", "RESEARCH_ORGANIZATION"),
    ("https://ex.org/onto/research-organization", "ResearchOrganization", "RESEARCH_ORGANIZATION"),
    ("https://ex.org/onto/Person/", "Person", "PERSON"),
    ("https://ex.org/onto/worksFor#", "WorksFor", "WORKS_FOR"),
    ("urn:ex:livesIn", "LivesIn", "LIVES_IN"),
])
def test_the_ontology_and_the_store_name_alike(iri: str, label: str, rtype: str) -> None:
    assert neo4j_label(iri) == label and class_labels([iri]) == [label]
    assert neo4j_type(iri) == rtype == rel_type(iri)


def test_local_name_of_an_iri_ending_in_a_separator() -> None:
    assert local_name("https://ex.org/onto/Person/") == "Person"
    assert local_name("https://ex.org/onto#") == "onto"
    assert local_name("plain") == "plain"
