"""The SHACL write guard on the real write path (``add(triples=...)``), on both backends: what is
rejected and why, what is accepted, supersession of functional properties, quarantine and recheck."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem import InvalidInputError, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import Scope
from graphmem.ontology import default_paths
from graphmem.pipeline import PlanRequest, TripleInput
from tests.conftest import make_config

GM = "https://graphmem.dev/ontology#"
SH = "http://www.w3.org/ns/shacl#"


def constraints(entry: dict[str, Any]) -> set[str]:
    return {r["constraint"].removeprefix(SH) for r in entry["reasons"]}


def open_facts(mem: Memory, uid: str) -> set[tuple[str, str, str]]:
    scope = Scope(user_id=uid)
    names = {}
    for r in mem.store.relations(scope):
        for eid in (r.source_id, r.target_id):
            if eid and eid not in names:
                names[eid] = mem.store.graph_context(scope, [eid]).entities[eid].name
    return {(names[r.source_id], r.relation.removeprefix(GM), names[r.target_id] if r.target_id else str(r.value))
            for r in mem.store.relations(scope, include_closed=False)}


def test_guard_rejects_with_the_right_constraint(mem: Memory, uid: str) -> None:
    ok = mem.add("Li is married to Mei", infer=False, user_id=uid, triples=[
        {"source": "Li", "relation": "married to", "target": "Mei", "source_type": "Person", "target_type": "Person"},
    ])
    assert ok["relations"]["rejected"] == [] and len(ok["relations"]["added"]) == 1
    result = mem.add("Li told us many things", infer=False, user_id=uid, triples=[
        # wrong range class: a person does not live in a person
        {"source": "Li", "relation": "lives in", "target": "Bob", "target_type": "Person"},
        # second value of a property only its shape limits to one (marriedTo is not functional)
        {"source": "Li", "relation": "marriedTo", "target": "Yan", "target_type": "Person"},
        # not a relation of the ontology
        {"source": "Li", "relation": "teleports to", "target": "Mars"},
        # datatype mismatch and malformed literal
        {"source": "Li", "relation": "birthDate", "target": "yesterday"},
        {"source": "Li", "relation": "gm:birthDate", "target": "2020-13-45"},
        # accepted: a City is a Place (subclass instance passes sh:class of the superclass)
        {"source": "Li", "relation": "bornIn", "target": "Chengdu", "target_type": "City"},
    ])
    rejected = {r["target"]: r for r in result["relations"]["rejected"]}
    assert set(rejected) == {"Bob", "Yan", "Mars", "yesterday", "2020-13-45"}
    assert "ClassConstraintComponent" in constraints(_q(mem, uid, "Bob"))
    assert constraints(_q(mem, uid, "Yan")) == {"MaxCountConstraintComponent"}
    assert [c.rsplit("#", 1)[-1] for c in constraints(_q(mem, uid, "Mars"))] == ["UnknownRelation"]
    assert constraints(_q(mem, uid, "yesterday")) >= {"DatatypeConstraintComponent"}
    assert constraints(_q(mem, uid, "2020-13-45")) >= {"DatatypeConstraintComponent"}
    assert [a["target"] for a in result["relations"]["added"]] == ["Chengdu"]
    assert open_facts(mem, uid) == {("Li", "marriedTo", "Mei"), ("Li", "bornIn", "Chengdu")}
    assert all(r["reasons"] for r in result["relations"]["rejected"])  # readable reasons come back
    # the same names in another tenant see none of this
    assert mem.rejected(user_id=uid + "-other") == []


def _q(mem: Memory, uid: str, target: str) -> dict[str, Any]:
    return next(q for q in mem.rejected(user_id=uid) if q["triple"]["target"] == target)


def test_functional_property_supersedes_instead_of_rejecting(mem: Memory, uid: str) -> None:
    mem.add("I live in Beijing", infer=False, user_id=uid, timestamp="2021-05-01", triples=[
        {"source": "Wei", "relation": "lives in", "target": "Beijing", "source_type": "Person", "target_type": "City"}])
    moved = mem.add("I moved from Beijing to Shanghai", infer=False, user_id=uid, timestamp="2024-02-01", triples=[
        {"source": "Wei", "relation": "moved to", "target": "Shanghai", "target_type": "City"}])
    assert moved["relations"]["rejected"] == []
    [sup] = moved["relations"]["superseded"]
    assert sup["valid_to"].startswith("2024-02-01")
    facts = mem.store.relations(Scope(user_id=uid))
    lives = sorted((f for f in facts if f.relation == GM + "livesIn"), key=lambda f: f.created_at)
    assert [f.valid_to is None for f in lives] == [False, True]
    assert lives[0].valid_to is not None and lives[0].valid_to.isoformat().startswith("2024-02-01")
    assert open_facts(mem, uid) == {("Wei", "livesIn", "Shanghai")}
    events = [e["event"] for e in mem.history(moved["results"][0]["id"], user_id=uid)]
    assert events == ["ADD", "SUPERSEDE"]


def test_rejected_value_does_not_close_the_old_edge(mem: Memory, uid: str) -> None:
    mem.add("I live in Oslo", infer=False, user_id=uid, triples=[
        {"source": "Kari", "relation": "livesIn", "target": "Oslo", "source_type": "Person", "target_type": "City"}])
    bad = mem.add("I live in my friend Ola", infer=False, user_id=uid, triples=[
        {"source": "Kari", "relation": "livesIn", "target": "Ola", "target_type": "Person"}])
    assert len(bad["relations"]["rejected"]) == 1 and bad["relations"]["superseded"] == []
    assert open_facts(mem, uid) == {("Kari", "livesIn", "Oslo")}


def test_caller_triples_are_validated_input(mem: Memory, uid: str) -> None:
    for bad in [[{"source": "a"}], [{"source": "a", "relation": "knows", "target": "b", "extra": 1}], "x",
                [{"source": "", "relation": "knows", "target": "b"}],
                [{"source": "a", "relation": "knows\x00", "target": "b"}]]:
        with pytest.raises(InvalidInputError):
            mem.add("text", infer=False, user_id=uid, triples=bad)  # type: ignore[arg-type]
    assert mem.get_all(user_id=uid)["results"] == []
    # Cypher-looking names are just unknown relation names: quarantined as data, never run
    sneaky = mem.add("text", infer=False, user_id=uid, triples=[
        {"source": "a", "relation": "x]->() DETACH DELETE n //", "target": "b"}])
    assert len(sneaky["relations"]["rejected"]) == 1
    assert mem.get_all(user_id=uid)["results"]


def test_quarantine_recheck_after_relaxing_a_shape(backend: str, tmp_path: Path, uid: str) -> None:
    onto_dirs, shape_dirs = default_paths()
    relaxed = tmp_path / "shapes"
    shutil.copytree(shape_dirs[0], relaxed, ignore=shutil.ignore_patterns("tests"))
    shapes_file = relaxed / "graphmem.shapes.ttl"
    text = shapes_file.read_text()
    strict = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384))
    strict.add("Li is married to Mei", infer=False, user_id=uid, triples=[
        {"source": "Li", "relation": "marriedTo", "target": "Mei", "source_type": "Person", "target_type": "Person"}])
    strict.add("and to Yan", infer=False, user_id=uid, timestamp="2025-03-09T10:00:00Z", triples=[
        {"source": "Li", "relation": "marriedTo", "target": "Yan", "target_type": "Person"}])
    [entry] = strict.rejected(user_id=uid)
    assert strict.recheck(user_id=uid)["released"] == []  # same shapes: still rejected
    strict.close()

    marker = "gmsh:Person-marriedTo"
    assert marker in text
    shapes_file.write_text(_drop_max_count(text, marker))
    cfg = make_config(backend, tmp_path, ontology={"ontology": [str(p) for p in onto_dirs], "shapes": [str(relaxed)]})
    relaxed_mem = Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384))
    assert relaxed_mem.ontology.fingerprint != entry["ontology"]
    out = relaxed_mem.recheck(user_id=uid)
    assert [r["quarantine_id"] for r in out["released"]] == [entry["id"]]
    assert relaxed_mem.rejected(user_id=uid) == []
    assert [q["status"] for q in relaxed_mem.rejected(user_id=uid, include_released=True)] == ["released"]
    assert ("Li", "marriedTo", "Yan") in open_facts(relaxed_mem, uid)
    [yan] = [f for f in relaxed_mem.facts(user_id=uid, relation="marriedTo")["results"] if f["target"]["name"] == "Yan"]
    assert yan["valid_from"].startswith("2025-03-09T10:00:00")  # when its memory said it, not the recheck's time
    relaxed_mem.close()


def _drop_max_count(text: str, shape: str) -> str:
    """Remove ``sh:maxCount`` from one named property shape (its block runs to the next blank line)."""
    start = text.index(shape + "\n") if shape + "\n" in text else text.index(shape + " ")
    end = text.index("\n\n", start)
    block = "\n".join(line for line in text[start:end].split("\n") if "sh:maxCount" not in line)
    return text[:start] + block + text[end:]


def test_dry_run_reports_stored_facts_a_stricter_shape_rejects(backend: str, tmp_path: Path, uid: str) -> None:
    from graphmem.ontology import Ontology

    onto_dirs, _ = default_paths()
    mem = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384))
    mem.add("facts", infer=False, user_id=uid, triples=[
        {"source": "Ana", "relation": "knows", "target": "Bo", "source_type": "Person", "target_type": "Person"},
        {"source": "Ana", "relation": "knows", "target": "Cy", "target_type": "Person"},
        {"source": "Ana", "relation": "livesIn", "target": "Rome", "target_type": "City"},
    ])
    assert mem.dry_run(mem.ontology, user_id=uid)["invalid"] == []  # unchanged shapes: all still valid
    stricter = tmp_path / "stricter.shapes.ttl"
    stricter.write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix gm: <https://graphmem.dev/ontology#> .\n"
        "<urn:x:KnowsOne> a sh:NodeShape ; sh:targetClass gm:Person ;\n"
        "  sh:property [ sh:path gm:knows ; sh:maxCount 1 ; sh:message \"one acquaintance only\" ] .\n"
    )
    report = mem.dry_run(Ontology.load(onto_dirs, [stricter]), user_id=uid)
    assert report["checked"] == 3
    assert sorted(r["target"] for r in report["invalid"]) == ["Bo", "Cy"]
    assert all("one acquaintance only" in r["reasons"][0] for r in report["invalid"])
    assert len(mem.store.relations(Scope(user_id=uid))) == 3  # nothing written
    mem.close()


def test_entity_resolution_by_alias_and_by_similar_name(backend: str, tmp_path: Path, uid: str) -> None:
    mem = Memory(MemoryConfig.load(make_config(backend, tmp_path, dedup={"entity_similarity": 0.8})),
                 embedder=HashingEmbedder(384))
    scope = Scope(user_id=uid)
    mem.add("Ana works for Northwind Traders", infer=False, user_id=uid, triples=[
        {"source": "Ana", "relation": "worksFor", "target": "Northwind Traders", "source_type": "Person",
         "target_type": "Company"}])
    # a similar name of a compatible type is the same company; the new spelling becomes an alias
    mem.add("Bo works for Northwind Traders Ltd", infer=False, user_id=uid, triples=[
        {"source": "Bo", "relation": "worksFor", "target": "Northwind Traders Ltd", "source_type": "Person",
         "target_type": "Company"}])
    company = mem.store.find_entities(scope, ["northwind traders ltd"])["northwind traders ltd"]
    assert company.name == "Northwind Traders" and "Northwind Traders Ltd" in company.aliases
    employers = {r.target_id for r in mem.store.relations(scope) if r.relation == GM + "worksFor"}
    assert employers == {company.id}
    # the same similarity with an incompatible type stays a different entity
    mem.add("Northwind Traders Ltd the person", infer=False, user_id=uid + "-2", triples=[
        {"source": "Northwind Traders", "relation": "headquarteredIn", "target": "Lisbon", "source_type": "Company",
         "target_type": "City"}])
    mem.add("x", infer=False, user_id=uid + "-2", triples=[
        {"source": "Cy", "relation": "knows", "target": "Northwind Traders Ltd", "source_type": "Person",
         "target_type": "Person"}])
    other = Scope(user_id=uid + "-2")
    both = mem.store.find_entities(other, ["northwind traders", "northwind traders ltd"])
    assert len({e.id for e in both.values()}) == 2
    # aliases given with a batch (as extractors do) resolve later mentions of the short name
    plan = mem._parts.planner.plan(PlanRequest.shared(
        scope, [TripleInput(source="Melanie Brooks", relation="knows", target="Ana", source_type="Person")], [],
        datetime.now(UTC), aliases={"melanie brooks": ["Mel"]}))
    mem.store.write(scope, plan.change)
    later = mem._parts.planner.plan(PlanRequest.shared(
        scope, [TripleInput(source="Mel", relation="knows", target="Bo")], [], datetime.now(UTC)))
    assert later.change.entities == []  # no new entity: "Mel" is Melanie Brooks
    assert {r.source_id for r in later.change.relations} == {plan.change.relations[0].source_id}
    mem.close()


def test_users_own_ontology_and_shapes_from_config(backend: str, tmp_path: Path, uid: str) -> None:
    """A small clinic domain (not the default ontology), given as folders in the config."""
    clinic = Path(__file__).parent / "data" / "ontology" / "clinic"
    cfg = make_config(backend, tmp_path, ontology={"ontology": [str(clinic / "ontology")],
                                                   "shapes": [str(clinic / "shapes")]})
    mem = Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384))
    assert mem.ontology.resolve_class("Physician") == "https://example.org/clinic#Physician"
    ok = mem.add("Ann is admitted to St Mary", infer=False, user_id=uid, triples=[
        {"source": "Ann", "relation": "admittedTo", "target": "St Mary", "source_type": "Patient",
         "target_type": "Hospital"},
        {"source": "Ann", "relation": "hasPrimaryPhysician", "target": "Dr Bob", "target_type": "Physician"},
    ])
    assert len(ok["relations"]["added"]) == 2 and ok["relations"]["rejected"] == []
    bad = mem.add("Nina the nurse is Ann's primary physician", infer=False, user_id=uid, triples=[
        {"source": "Ann", "relation": "hasPrimaryPhysician", "target": "Nina", "target_type": "Nurse"},
        {"source": "Ann", "relation": "bornIn", "target": "Porto"},  # a default-ontology relation: unknown here
    ])
    kinds = sorted(c.rsplit("#", 1)[-1] for r in mem.rejected(user_id=uid) for c in constraints(r))
    assert len(bad["relations"]["rejected"]) == 2
    assert kinds == ["ClassConstraintComponent", "UnknownRelation"]  # a Nurse is no Physician
    assert bad["relations"]["superseded"] == []  # the rejected value did not replace Dr Bob
    mem.close()


def test_a_fact_stated_twice_in_one_add_is_one_fact(mem: Memory, uid: str) -> None:
    """The rule extractor and the caller both state Wei livesIn Shanghai: one fact, listed once, under
    the id the store holds, supported by the memory."""
    r = mem.add([{"role": "user", "content": "I live in Shanghai", "name": "Wei"}], user_id=uid, triples=[
        {"source": "Wei", "relation": "livesIn", "target": "Shanghai", "source_type": "Person", "target_type": "City"},
        {"source": "Wei", "relation": "lives in", "target": "Shanghai"},
    ])
    added = [a for a in r["relations"]["added"] if a["relation"] == "livesIn"]
    assert len(added) == 1
    stored = [f for f in mem.store.relations(Scope(user_id=uid)) if f.relation == GM + "livesIn"]
    assert [f.id for f in stored] == [added[0]["id"]]
    assert stored[0].memory_ids == [r["results"][0]["id"]]


def test_sh_in_of_plain_strings_admits_a_listed_value(mem: Memory, uid: str) -> None:
    """gm:status ranges over xsd:string and its shape lists plain strings: RDF 1.1 makes them one
    value, so a listed status is stored and only an unlisted one is refused (issue 17's notebooks
    found every status refused)."""
    ok = mem.add("Project Apollo is active.", user_id=uid, infer=False,
                 triples=[{"source": "Apollo", "relation": "status", "target": "active", "source_type": "Project"}])
    assert [a["target"] for a in ok["relations"]["added"]] == ["active"] and not ok["relations"]["rejected"]
    bad = mem.add("Project Zeus is sleepy.", user_id=uid, infer=False,
                  triples=[{"source": "Zeus", "relation": "status", "target": "sleepy", "source_type": "Project"}])
    (refused,) = bad["relations"]["rejected"]
    assert "sh:InConstraintComponent" in " ".join(refused["reasons"])
