"""The compiled ontology: tables, surface-form resolution, the naming function pair, loading errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.ontology import Ontology, OntologyError, is_safe, local_name, normalize_surface, to_label, to_rel_type

DATA = Path(__file__).parent / "data" / "ontology"
CLINIC = DATA / "clinic"
ROOT = Path(__file__).resolve().parents[1]
CL = "https://example.org/clinic#"
GM = "https://graphmem.dev/ontology#"
PREFIXES = """@prefix ex: <https://example.org/x#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
"""


@pytest.fixture(scope="module")
def clinic() -> Ontology:
    return Ontology.load(CLINIC / "ontology" / "clinic.ttl", CLINIC / "shapes")


@pytest.fixture(scope="module")
def default() -> Ontology:
    if not (ROOT / "ontology").is_dir() or not any((ROOT / "ontology").glob("*.ttl")):
        pytest.skip("the default ontology is not in this checkout")
    return Ontology.load()


def write(tmp_path: Path, text: str, name: str = "x.ttl") -> Path:
    path = tmp_path / name
    path.write_text(PREFIXES + text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- tables


def test_local_imports_are_followed(clinic: Ontology) -> None:
    assert {s.path.name for s in clinic.sources} == {"clinic.ttl", "places.ttl"}
    assert CL + "City" in clinic.classes and clinic.is_subclass("city", "place")
    assert clinic.unresolved_imports == []


def test_class_hierarchy(clinic: Ontology) -> None:
    physician = clinic.classes[CL + "Physician"]
    assert physician.parents == (CL + "Clinician",)
    assert set(physician.ancestors) == {CL + "Clinician", CL + "Person"}
    assert physician.label == "physician" and "doctor" in physician.alt_labels
    assert physician.definition and physician.definition.startswith("A clinician")
    assert clinic.is_subclass(CL + "Physician", CL + "Person")
    assert clinic.is_subclass("Physician", "Physician")
    assert not clinic.is_subclass("Person", "Physician")
    assert not clinic.is_subclass("Nope", "Person")
    assert clinic.is_subclass("nurse", "http://www.w3.org/2002/07/owl#Thing")
    assert set(clinic.subclasses(CL + "Person")) == {CL + x for x in ("Clinician", "Physician", "Nurse", "Patient")}


def test_relation_characteristics(clinic: Ontology) -> None:
    r = clinic.relations
    # inverse both ways, although owl:inverseOf is stated once
    assert r[CL + "treats"].inverse == CL + "treatedBy" and r[CL + "treatedBy"].inverse == CL + "treats"
    assert r[CL + "hasPrimaryPhysician"].inverse == CL + "primaryPhysicianOf"
    assert r[CL + "primaryPhysicianOf"].inverse == CL + "hasPrimaryPhysician"
    assert r[CL + "colleagueOf"].symmetric and not r[CL + "treats"].symmetric
    assert r[CL + "partOf"].transitive and not r[CL + "worksAt"].transitive
    assert r[CL + "hasPrimaryPhysician"].functional and not r[CL + "admittedTo"].functional
    # super-properties: the closure of a chain, and through inverses
    assert set(r[CL + "primaryPhysicianOf"].super_properties) == {CL + "treats", CL + "caresFor"}
    assert r[CL + "treats"].super_properties == (CL + "caresFor",)
    assert r[CL + "hasPrimaryPhysician"].super_properties == (CL + "treatedBy",)
    assert set(clinic.sub_properties(CL + "caresFor")) == {CL + "treats", CL + "primaryPhysicianOf"}
    # domains and ranges are the most specific ones (inherited superclass domains are dropped)
    assert r[CL + "primaryPhysicianOf"].domain == (CL + "Physician",)
    assert r[CL + "livesIn"].range == (CL + "City",)
    # kinds and Neo4j names
    assert r[CL + "birthDate"].kind == "datatype" and r[CL + "birthDate"].neo4j_type is None
    assert r[CL + "birthDate"].range == ("http://www.w3.org/2001/XMLSchema#date",)
    assert r[CL + "worksAt"].kind == "object" and r[CL + "worksAt"].neo4j_type == "WORKS_AT"


def test_tbox_holds_the_subclass_closure(clinic: Ontology) -> None:
    from rdflib import RDFS, URIRef

    assert (URIRef(CL + "Nurse"), RDFS.subClassOf, URIRef(CL + "Person")) in clinic.tbox
    assert all(p == RDFS.subClassOf for _, p, _ in clinic.tbox)


def test_default_ontology_tables(default: Ontology) -> None:
    assert not [p for p in default.problems if p.severity == "error"]
    assert default.is_subclass(GM + "City", GM + "Place")
    works_for = default.relations[GM + "worksFor"]
    assert works_for.neo4j_type == "WORKS_FOR" and works_for.kind == "object"
    employs = default.relations[GM + "employs"]
    assert employs.inverse == GM + "worksFor" and works_for.inverse == GM + "employs"
    married = default.relations[GM + "marriedTo"]
    assert married.symmetric and not married.functional
    assert default.relations[GM + "livesIn"].functional
    assert default.relations[GM + "birthDate"].kind == "datatype"
    assert any(r.transitive for r in default.relations.values())
    assert any(r.super_properties for r in default.relations.values())
    for c in default.classes.values():
        assert is_safe(c.neo4j_label) and default.class_for_label(c.neo4j_label) == c.iri
    for r in default.relations.values():
        if r.neo4j_type:
            assert is_safe(r.neo4j_type) and default.relation_for_type(r.neo4j_type) == r.iri


# ---------------------------------------------------------------- resolution


@pytest.mark.parametrize("surface", ["works at", "worksAt", "WORKS_AT", "Works-At", " works_at ", "cl:worksAt",
                                     f"{CL}worksAt", f"<{CL}worksAt>", "employed by", "EMPLOYED BY"])
def test_resolve_relation_surface_forms(clinic: Ontology, surface: str) -> None:
    assert clinic.resolve_relation(surface) == CL + "worksAt"


@pytest.mark.parametrize("surface", ["doctor", "GP", "physician", "Physician", "cl:Physician", f"{CL}Physician"])
def test_resolve_class_surface_forms(clinic: Ontology, surface: str) -> None:
    assert clinic.resolve_class(surface) == CL + "Physician"


def test_unknown_surface_forms_resolve_to_none(clinic: Ontology) -> None:
    assert clinic.resolve_relation("likes") is None
    assert clinic.resolve_relation("cl:likes") is None
    assert clinic.resolve_relation("zz:worksAt") is None  # unbound prefix: not guessed
    assert clinic.resolve_relation(f"{CL}Physician") is None  # a class is not a relation
    assert clinic.resolve_class("works at") is None
    assert clinic.resolve_class("") is None


def test_default_resolution(default: Ontology) -> None:
    for surface in ("works for", "worksFor", "WORKS_FOR", "gm:worksFor", GM + "worksFor"):
        assert default.resolve_relation(surface) == GM + "worksFor"
    assert default.resolve_class("person") == GM + "Person"


def test_ambiguous_synonyms_resolve_deterministically_and_are_reported(tmp_path: Path) -> None:
    path = write(tmp_path, """
ex:Car a owl:Class ; rdfs:label "car" ; skos:altLabel "vehicle" , "ride" .
ex:Truck a owl:Class ; rdfs:label "truck" ; skos:altLabel "vehicle" .
ex:Ride a owl:Class ; rdfs:label "ride" .
""")
    onto = Ontology.load(path)
    assert onto.resolve_class("vehicle") == "https://example.org/x#Car"  # tie: smallest IRI, every time
    assert onto.resolve_class("ride") == "https://example.org/x#Ride"  # a local name beats an altLabel
    assert {a.surface for a in onto.ambiguities} == {"vehicle", "ride"}
    warnings = [p for p in onto.problems if p.code == "ambiguous-synonym"]
    assert len(warnings) == 2 and all(p.severity == "warning" and p.line for p in warnings)


# ---------------------------------------------------------------- naming


@pytest.mark.parametrize(("name", "rel_type"), [
    ("worksFor", "WORKS_FOR"), ("works_for", "WORKS_FOR"), ("works-for", "WORKS_FOR"), ("WORKS_FOR", "WORKS_FOR"),
    ("hasURL", "HAS_URL"), ("URLOf", "URL_OF"), ("partOf2", "PART_OF2"), ("x", "X"),
])
def test_relationship_type(name: str, rel_type: str) -> None:
    assert to_rel_type(name) == rel_type


@pytest.mark.parametrize(("name", "label"), [
    ("Person", "Person"), ("person", "Person"), ("research_organization", "ResearchOrganization"),
    ("research-organization", "ResearchOrganization"), ("GovernmentAgency", "GovernmentAgency"),
])
def test_label(name: str, label: str) -> None:
    assert to_label(name) == label


def test_helpers() -> None:
    assert local_name("https://example.org/x#Foo") == "Foo"
    assert local_name("https://example.org/x/Foo") == "Foo"
    assert local_name("urn:x:Foo") == "Foo"
    assert normalize_surface("Works_For") == normalize_surface("works for") == "worksfor"
    assert not is_safe("Café") and not is_safe("3D") and not is_safe("A B") and not is_safe("A\n")
    assert is_safe("A_1")


def test_naming_round_trip(clinic: Ontology) -> None:
    for c in clinic.classes.values():
        assert clinic.class_for_label(clinic.neo4j_label(c.iri)) == c.iri
    for r in clinic.relations.values():
        if r.kind == "object":
            assert clinic.relation_for_type(clinic.relationship_type(r.iri)) == r.iri
    assert clinic.relationship_type(CL + "colleagueOf") == "COLLEAGUE_OF"
    assert clinic.neo4j_label(CL + "Physician") == "Physician"
    assert clinic.class_for_label("Nope") is None
    with pytest.raises(KeyError):
        clinic.relationship_type(CL + "birthDate")


def test_unsafe_name_is_refused_at_load(tmp_path: Path) -> None:
    path = write(tmp_path, "ex:Caf\u00e9 a owl:Class .\nex:ok a owl:ObjectProperty .\n")
    with pytest.raises(OntologyError) as err:
        Ontology.load(path)
    assert "not a safe identifier" in str(err.value) and err.value.path == path and err.value.line == 5


def test_unsafe_relation_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "<https://example.org/x#3dPrint> a owl:ObjectProperty .\n")
    with pytest.raises(OntologyError, match="not a safe identifier"):
        Ontology.load(path)


def test_colliding_names_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "ex:worksFor a owl:ObjectProperty .\nex:works_for a owl:ObjectProperty .\n")
    with pytest.raises(OntologyError, match="WORKS_FOR"):
        Ontology.load(path)
    path = write(tmp_path, "ex:Person a owl:Class .\n<https://other.org/Person> a owl:Class .\n", "y.ttl")
    with pytest.raises(OntologyError, match="both map to the Neo4j label Person"):
        Ontology.load(path)


def test_reserved_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OntologyError, match="graphmem uses"):
        Ontology.load(write(tmp_path, "ex:Memory a owl:Class .\n"))
    with pytest.raises(OntologyError, match="graphmem uses"):
        Ontology.load(write(tmp_path, "ex:mentions a owl:ObjectProperty .\n", "m.ttl"))


def test_non_strict_load_lists_every_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "ex:Memory a owl:Class .\nex:a_b a owl:ObjectProperty .\nex:aB a owl:ObjectProperty .\n")
    onto = Ontology.load(path, strict=False)
    assert {p.code for p in onto.problems if p.severity == "error"} == {"reserved-name", "name-collision"}


# ---------------------------------------------------------------- files


def test_parse_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "ex:A a owl:Class .\nex:B a owl:Class\nex:C a owl:Class .\n")
    with pytest.raises(OntologyError) as err:
        Ontology.load(path)
    assert err.value.path == path and err.value.line == 7
    assert str(err.value).startswith(f"{path}:7: Turtle syntax error")


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(OntologyError, match="does not exist"):
        Ontology.load(tmp_path / "nope.ttl")
    with pytest.raises(OntologyError, match="no ontology files"):
        Ontology.load(tmp_path)


def test_folders_load_one_level_and_remote_imports_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "<https://example.org/x> a owl:Ontology ; owl:imports <http://remote.example/o> .\n"
                    "ex:A a owl:Class .\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "ex:B a owl:Class .\n")
    onto = Ontology.load(tmp_path)
    assert set(onto.classes) == {"https://example.org/x#A"}
    assert onto.unresolved_imports == ["http://remote.example/o"]
    assert any(p.code == "unresolved-import" and p.line == 5 for p in onto.problems)


def test_fingerprint_ignores_layout_but_not_content(tmp_path: Path) -> None:
    text = "ex:A a owl:Class .\n"
    a = Ontology.load(write(tmp_path, text, "a.ttl"))
    b = Ontology.load(write(tmp_path, text.replace("\n", "   \r\n"), "b.ttl"))
    c = Ontology.load(write(tmp_path, "ex:B a owl:Class .\n", "c.ttl"))
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert len(a.fingerprint) == 64


def test_shapes_do_not_follow_imports_of_the_ontology(clinic: Ontology) -> None:
    assert len(clinic.shapes_graph) > 0
    assert clinic.fingerprint == Ontology.load(CLINIC / "ontology" / "clinic.ttl", CLINIC / "shapes").fingerprint


def test_to_dict_is_json_ready(clinic: Ontology) -> None:
    import json

    data = json.loads(json.dumps(clinic.to_dict()))
    assert {c["neo4j_label"] for c in data["classes"]} >= {"Physician", "Hospital"}
    assert any(r["neo4j_type"] == "WORKS_AT" for r in data["relations"])
