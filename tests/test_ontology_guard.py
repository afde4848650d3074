"""The write guard: one verdict per new triple, with the SHACL results that concern it.

Runs against the clinic test ontology (a user's own ontology and shapes) and the default one.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from graphmem.ontology import (
    UNKNOWN_CLASS,
    UNKNOWN_RELATION,
    WRONG_PROPERTY_KIND,
    Guard,
    GuardReport,
    Ontology,
    Triple,
    TypedLiteral,
    entity_iri,
    entity_key,
)

DATA = Path(__file__).parent / "data" / "ontology"
ROOT = Path(__file__).resolve().parents[1]
CL = "https://example.org/clinic#"
GM = "https://graphmem.dev/ontology#"
SH = "http://www.w3.org/ns/shacl#"
XSD_DATE = URIRef("http://www.w3.org/2001/XMLSchema#date")

TYPES = {
    "ann": "Patient", "ben": "Patient", "dr-bob": "Physician", "nina": "Nurse", "st-mary": "Hospital",
    "city-general": "Hospital", "oak-clinic": "Clinic", "flu": "Condition", "lisbon": "City", "porto": "town",
}


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard(Ontology.load(DATA / "clinic" / "ontology", DATA / "clinic" / "shapes"))


@pytest.fixture(scope="module")
def default_guard() -> Guard:
    if not any((ROOT / "ontology").glob("*.ttl")) or not any((ROOT / "shapes").glob("*.ttl")):
        pytest.skip("the default ontology and shapes are not in this checkout")
    return Guard(Ontology.load())


def constraints(report: GuardReport, i: int) -> set[str]:
    return {r.constraint for r in report.verdicts[i].results}


def one(guard: Guard, triple: Triple, context: list[Triple] | None = None,
        types: dict[str, str] | None = None) -> GuardReport:
    report = guard.check([triple], types or TYPES, context or [])
    assert len(report.verdicts) == 1 and report.verdicts[0].triple == triple
    return report


# ---------------------------------------------------------------- clinic ontology


def test_valid_batch_is_accepted(guard: Guard) -> None:
    batch = [Triple("dr-bob", "treats", "ann"), Triple("ann", "admitted to", "st-mary"),
             Triple("ann", "birthDate", TypedLiteral("1990-05-01", "xsd:date")), Triple("ann", "lives in", "lisbon"),
             Triple("nina", "colleagueOf", "dr-bob"), Triple("oak-clinic", "partOf", "city-general")]
    report = guard.check(batch, TYPES)
    assert report.ok and all(not v.results for v in report.verdicts), [str(v) for v in report.verdicts]
    assert report.verdicts[1].relation == CL + "admittedTo"
    assert report.fingerprint == guard.ontology.fingerprint and report.elapsed_ms > 0


def test_wrong_range_class_is_rejected(guard: Guard) -> None:
    report = one(guard, Triple("ann", "hasPrimaryPhysician", "nina"))
    v = report.verdicts[0]
    assert not v.accepted and SH + "ClassConstraintComponent" in constraints(report, 0)
    res = v.violations[0]
    assert res.focus == entity_iri("ann") and res.path == CL + "hasPrimaryPhysician" and res.value == entity_iri("nina")
    assert "must be a physician" in res.message and "ann" in res.text and "nina" in res.text


def test_subclass_instance_is_accepted(guard: Guard) -> None:
    # sh:class cl:Place with a cl:City (cl:City is declared in the imported file), and cl:Organization
    # with a cl:Clinic: the subclass closure is in the data graph although inference is off.
    assert one(guard, Triple("ann", "livesIn", "porto")).ok
    assert one(guard, Triple("nina", "worksAt", "oak-clinic")).ok
    assert one(guard, Triple("ann", "hasPrimaryPhysician", "dr-bob")).ok


def test_second_value_of_shape_limited_property_counts_the_stored_value(guard: Guard) -> None:
    stored = [Triple("ann", "admittedTo", "st-mary")]
    report = one(guard, Triple("ann", "admittedTo", "city-general"), context=stored)
    v = report.verdicts[0]
    assert not v.accepted and constraints(report, 0) == {SH + "MaxCountConstraintComponent"}
    assert v.violations[0].value is None and "one hospital at a time" in v.violations[0].message
    # the same triple without the stored value passes: it is the stored fact that is counted
    assert one(guard, Triple("ann", "admittedTo", "city-general")).ok
    # re-asserting the stored value is not a second value
    assert one(guard, Triple("ann", "admittedTo", "st-mary"), context=stored).ok


def test_functional_property_after_conflict_resolution_is_accepted(guard: Guard) -> None:
    # The write path closes the old value of a functional property before the guard runs, so the
    # context it passes no longer holds it: the new value is an update, not a violation.
    assert guard.ontology.relations[CL + "hasPrimaryPhysician"].functional
    assert one(guard, Triple("ann", "hasPrimaryPhysician", "dr-bob"), context=[]).ok


def test_unknown_relation_is_rejected_before_shacl(guard: Guard) -> None:
    report = one(guard, Triple("ann", "lives_inn", "lisbon"))
    v = report.verdicts[0]
    assert not v.accepted and v.relation is None and constraints(report, 0) == {str(UNKNOWN_RELATION)}
    assert "did you mean livesIn" in v.violations[0].message


def test_wrong_property_kind_is_rejected(guard: Guard) -> None:
    report = one(guard, Triple("ann", "livesIn", TypedLiteral("Lisbon")))
    assert constraints(report, 0) == {str(WRONG_PROPERTY_KIND)}
    report = one(guard, Triple("ann", "birthDate", "lisbon"))
    assert constraints(report, 0) == {str(WRONG_PROPERTY_KIND)}
    assert "takes a literal value (xsd:date)" in report.verdicts[0].violations[0].message


def test_unknown_class_is_rejected(guard: Guard) -> None:
    report = one(guard, Triple("ann", "treatedBy", "zed"), types={**TYPES, "zed": "Wizard"})
    assert constraints(report, 0) == {str(UNKNOWN_CLASS)}
    assert report.verdicts[0].violations[0].focus == entity_iri("zed")


@pytest.mark.parametrize("literal", [
    TypedLiteral("1990-05-01"),  # a plain string where a date is required
    TypedLiteral("1990-05-01", "http://www.w3.org/2001/XMLSchema#string"),
    TypedLiteral("2020-13-45", "xsd:date"),  # malformed: month 13, day 45
    Literal("2020-13-45", datatype=XSD_DATE),
])
def test_datatype_mismatch_and_malformed_literal(guard: Guard, literal: TypedLiteral | Literal) -> None:
    report = one(guard, Triple("ann", "birthDate", literal))
    assert not report.ok and constraints(report, 0) == {SH + "DatatypeConstraintComponent"}


def test_literal_for_types_by_range(guard: Guard) -> None:
    assert guard.literal_for("birth date", "1990-05-01") == Literal("1990-05-01", datatype=XSD_DATE)
    assert one(guard, Triple("ann", "birthDate", guard.literal_for("birthDate", "1990-05-01"))).ok
    assert not one(guard, Triple("ann", "birthDate", guard.literal_for("birthDate", "May 1st"))).ok


def test_warning_is_attached_but_accepted(guard: Guard) -> None:
    report = one(guard, Triple("ann", "email", TypedLiteral("ann-at-example")))
    v = report.verdicts[0]
    assert v.accepted and not v.violations
    assert [w.severity for w in v.warnings] == ["Warning"]
    assert v.warnings[0].constraint == SH + "PatternConstraintComponent"


@pytest.mark.parametrize("optimize", [True, False])
def test_unrelated_new_triple_next_to_stored_violation_is_accepted(guard: Guard, optimize: bool) -> None:
    # ann already has two stored admissions (a violation in stored data) and a stored wrong-class
    # physician; the new, unrelated diagnosis must not be rejected for them.
    g = guard if optimize else Guard(guard.ontology, optimize=False)
    assert g.optimized is optimize
    stored = [Triple("ann", "admittedTo", "st-mary"), Triple("ann", "admittedTo", "city-general"),
              Triple("ann", "hasPrimaryPhysician", "nina")]
    report = one(g, Triple("ann", "diagnosedWith", "flu"), context=stored)
    assert report.ok and not report.verdicts[0].results
    if not optimize:  # the full run comes across the stored problems and reports them aside
        assert {r.constraint for r in report.unattributed} == {SH + "MaxCountConstraintComponent",
                                                              SH + "ClassConstraintComponent"}
    # a third admission does add to the violation
    report = one(g, Triple("ann", "admittedTo", "oak-clinic"), context=stored)
    assert not report.ok


def test_object_side_results_map_to_the_triple(guard: Guard) -> None:
    # The inverse-path shape on cl:Physician reports on dr-bob (the object): mapped to nina's triple.
    report = one(guard, Triple("nina", "hasPrimaryPhysician", "dr-bob"))
    v = report.verdicts[0]
    assert not v.accepted
    inverse = [r for r in v.violations if r.focus == entity_iri("dr-bob")]
    assert inverse and inverse[0].value == entity_iri("nina") and "^cl:hasPrimaryPhysician" in inverse[0].text
    # The node-level shape (sh:targetObjectsOf cl:treats + sh:class cl:Patient) on the object side.
    report = one(guard, Triple("dr-bob", "treats", "nina"))
    focus_nina = [r for r in report.verdicts[0].violations if r.focus == entity_iri("nina") and r.path is None]
    assert focus_nina and focus_nina[0].constraint == SH + "ClassConstraintComponent"


def test_node_level_result_is_limited_to_its_target_predicates(guard: Guard) -> None:
    # nina is stored as treated (she is not a patient): a node-level violation from stored data; a new
    # triple that touches nina with another predicate is not concerned.
    stored = [Triple("dr-bob", "treats", "nina")]
    assert one(guard, Triple("nina", "worksAt", "st-mary"), context=stored).ok
    report = one(Guard(guard.ontology, optimize=False), Triple("nina", "worksAt", "st-mary"), context=stored)
    assert report.ok and [r.constraint for r in report.unattributed] == [SH + "ClassConstraintComponent"]


def test_results_map_only_to_their_own_triple_in_a_batch(guard: Guard) -> None:
    batch = [Triple("ann", "hasPrimaryPhysician", "nina"), Triple("ann", "diagnosedWith", "flu"),
             Triple("ben", "birthDate", TypedLiteral("yesterday")), Triple("ben", "email", TypedLiteral("x")),
             Triple("ben", "treatedBy", "nina"), Triple("ann", "likes", "ben")]
    report = guard.check(batch, TYPES, [])
    assert [v.accepted for v in report.verdicts] == [False, True, False, True, True, False]
    assert [len(v.results) for v in report.verdicts] == [1, 0, 1, 1, 0, 1]
    assert len(report.rejected) == 3 and len(report.accepted) == 3


def test_complex_path_results_map_along_the_walk(tmp_path: Path) -> None:
    shapes = tmp_path / "seq.shapes.ttl"
    shapes.write_text("""@prefix cl: <https://example.org/clinic#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
<urn:x:S> a sh:NodeShape ; sh:targetClass cl:Clinician ;
    sh:property [ sh:path ( cl:worksAt cl:partOf ) ; sh:class cl:Hospital ] .
""", encoding="utf-8")
    g = Guard(Ontology.load(DATA / "clinic" / "ontology", shapes))
    types = {**TYPES, "ward-7": "Department", "dr-cy": "Physician"}
    stored = [Triple("ward-7", "partOf", "oak-clinic"), Triple("st-mary", "partOf", "city-general")]
    report = g.check([Triple("nina", "worksAt", "ward-7"), Triple("dr-cy", "worksAt", "st-mary")], types, stored)
    assert [v.accepted for v in report.verdicts] == [False, True]
    assert report.verdicts[0].violations[0].value == entity_iri("oak-clinic")


def test_no_shapes_means_only_vocabulary_checks(tmp_path: Path) -> None:
    g = Guard(Ontology.load(DATA / "clinic" / "ontology"))
    report = g.check([Triple("ann", "hasPrimaryPhysician", "nina"), Triple("ann", "likes", "nina")], TYPES)
    assert [v.accepted for v in report.verdicts] == [True, False]


def test_verdicts_are_readable_and_parseable(guard: Guard) -> None:
    report = guard.check([Triple("ann", "hasPrimaryPhysician", "nina"),
                          Triple("ann", "birthDate", TypedLiteral("2020-13-45", "xsd:date"))], TYPES)
    data = json.loads(json.dumps(report.to_dict()))
    first = data["verdicts"][0]
    assert first["accepted"] is False and first["relation_iri"] == CL + "hasPrimaryPhysician"
    res = first["results"][0]
    assert res["focus_node"] == str(entity_iri("ann")) and res["path"] == CL + "hasPrimaryPhysician"
    assert res["value"] == str(entity_iri("nina")) and res["constraint"] == SH + "ClassConstraintComponent"
    assert res["severity"] == "Violation" and res["message"]
    assert res["shape"] is None and res["shape_label"] == "clsh:PatientShape[cl:hasPrimaryPhysician]"
    assert data["verdicts"][1]["results"][0]["value"] == '"2020-13-45"^^<http://www.w3.org/2001/XMLSchema#date>'
    text = str(report.verdicts[0])
    assert text.startswith("REJECTED: (ann, hasPrimaryPhysician, nina)") and "sh:ClassConstraintComponent" in text
    assert report.verdicts[1].reasons()[0].startswith('Violation: ann cl:birthDate "2020-13-45"^^xsd:date')


def test_entity_keys_round_trip() -> None:
    for key in ("ann", "Dr. Bob / St Mary's", "ü ß 東京", "a#b?c"):
        assert entity_key(entity_iri(key)) == key


def test_empty_batch(guard: Guard) -> None:
    assert guard.check([], TYPES).verdicts == []


# ---------------------------------------------------------------- default ontology


DEFAULT_TYPES = {"alice": "Person", "carol": "Person", "dana": "Person", "kyoto": "City", "acme": "Company",
                 "trip": "Trip"}


def test_default_wrong_range_and_subclass(default_guard: Guard) -> None:
    report = default_guard.check([Triple("alice", "livesIn", "carol"), Triple("alice", "works for", "acme")],
                                 DEFAULT_TYPES)
    assert [v.accepted for v in report.verdicts] == [False, True]
    assert SH + "ClassConstraintComponent" in constraints(report, 0)
    assert default_guard.check([Triple("alice", "lives in", "kyoto")], DEFAULT_TYPES).ok  # a City is a Place


def test_default_second_spouse_counts_stored_one(default_guard: Guard) -> None:
    stored = [Triple("alice", GM + "marriedTo", "carol")]
    report = default_guard.check([Triple("alice", "marriedTo", "dana")], DEFAULT_TYPES, stored)
    assert not report.ok and SH + "MaxCountConstraintComponent" in constraints(report, 0)


def test_default_malformed_date_and_unknown_relation(default_guard: Guard) -> None:
    report = default_guard.check([Triple("alice", "birthDate", TypedLiteral("2020-13-45", "xsd:date")),
                                  Triple("alice", "frobnicates", "kyoto")], DEFAULT_TYPES)
    assert constraints(report, 0) == {SH + "DatatypeConstraintComponent"}
    assert constraints(report, 1) == {str(UNKNOWN_RELATION)}


def test_default_property_pair_concerns_the_new_triple(default_guard: Guard) -> None:
    # The stored start date is after the new end date: sh:lessThanOrEquals reports on gm:startDate
    # (stored) but the new gm:endDate is what breaks it.
    stored = [Triple("trip", GM + "startDate", TypedLiteral("2024-05-02", "xsd:date"))]
    report = default_guard.check([Triple("trip", "endDate", TypedLiteral("2024-05-01", "xsd:date"))],
                                 DEFAULT_TYPES, stored)
    assert not report.ok and SH + "LessThanOrEqualsConstraintComponent" in constraints(report, 0)
    ok = default_guard.check([Triple("trip", "endDate", TypedLiteral("2024-05-03", "xsd:date"))],
                             DEFAULT_TYPES, stored)
    assert ok.ok


# What people commonly state (issue 36): each property accepts its range and refuses a wrong one.
STATED_TYPES = {**DEFAULT_TYPES, "diabetes": "HealthCondition", "metformin": "Medication", "vegan": "Diet",
                "marathon": "Goal", "biscuit": "Pet", "biology": "Topic", "duolingo": "Software",
                "lyon": "City", "pycon": "Conference", "ball": "Product"}
STATED = [  # (subject, relation, good object, wrong object)
    ("alice", "hasCondition", "diabetes", "metformin"),
    ("alice", "takesMedication", "metformin", "diabetes"),
    ("alice", "followsDiet", "vegan", "biology"),
    ("alice", "hasGoal", "marathon", "kyoto"),
    ("alice", "hasPet", "biscuit", "carol"),
    ("alice", "fieldOfStudy", "biology", "acme"),
    ("alice", "uses", "duolingo", "carol"),
    ("acme", "uses", "duolingo", "kyoto"),
    ("alice", "movingTo", "lyon", "acme"),
    ("alice", "visited", "lyon", "pycon"),
    ("alice", "plansToVisit", "kyoto", "pycon"),
    ("alice", "spokeAt", "pycon", "kyoto"),
    ("acme", "organized", "pycon", "kyoto"),
    ("biscuit", "likes", "ball", None),
]


@pytest.mark.parametrize(("subject", "relation", "good", "wrong"), STATED)
def test_default_stated_relations(default_guard: Guard, subject: str, relation: str, good: str,
                                  wrong: str | None) -> None:
    assert default_guard.check([Triple(subject, relation, good)], STATED_TYPES).ok
    if wrong is not None:
        report = default_guard.check([Triple(subject, relation, wrong)], STATED_TYPES)
        assert SH + "ClassConstraintComponent" in constraints(report, 0)


@pytest.mark.parametrize(("subject", "relation", "value", "ok"), [
    ("biscuit", "species", "beagle", True),
    ("alice", "species", "human", False),  # a person has no species in this ontology: domain Pet
    ("alice", "degree", "MSc in physics", True),
    ("biscuit", "degree", "PhD", False),
    ("alice", "hasPet", "biscuit", True),
    ("kyoto", "hasCondition", "diabetes", False),  # domain Person
])
def test_default_stated_values_and_domains(default_guard: Guard, subject: str, relation: str, value: str,
                                           ok: bool) -> None:
    obj: str | TypedLiteral = value if value in STATED_TYPES else TypedLiteral(value, "xsd:string")
    assert default_guard.check([Triple(subject, relation, obj)], STATED_TYPES).ok is ok


# ---------------------------------------------------------------- optimized == full validation


def _random_batches(onto: Ontology, seed: int, n_batches: int) -> list[tuple[list[Triple], dict[str, str],
                                                                              list[Triple]]]:
    """Random typed entities, a stored graph with its own violations, and batches mixing valid and
    invalid triples (wrong classes, second values, bad literals): the store hands over the context."""
    rng = random.Random(seed)
    classes = sorted(onto.classes)
    rels = sorted(onto.relations.values(), key=lambda r: r.iri)
    types = {f"e{i}": rng.choice(classes) for i in range(40)}
    keys = sorted(types)

    def literal(rel_range: tuple[str, ...]) -> TypedLiteral:
        dt = rel_range[0] if rel_range else None
        good = {"date": "2001-02-03", "integer": "7", "string": "x@example.org", "anyURI": "https://example.org"}
        local = (dt or "").rsplit("#", 1)[-1]
        return rng.choice([TypedLiteral(good.get(local, "1"), dt), TypedLiteral("2020-13-45", dt),
                           TypedLiteral("plain"), TypedLiteral("-3", str(XSD_DATE).replace("date", "integer"))])

    def triple() -> Triple:
        rel = rng.choice(rels)
        obj: str | TypedLiteral = rng.choice(keys) if rel.kind == "object" else literal(rel.range)
        return Triple(rng.choice(keys), rel.iri, obj)

    stored = [triple() for _ in range(150)]
    out = []
    for _ in range(n_batches):
        batch = [triple() for _ in range(12)]
        ends = {t.subject for t in batch} | {t.object for t in batch if isinstance(t.object, str)}
        context = [t for t in stored if t.subject in ends or t.object in ends]
        out.append((batch, types, context))
    return out


def _attributed(report: GuardReport) -> list[tuple[bool, frozenset[tuple[object, ...]]]]:
    return [(v.accepted, frozenset((r.constraint, r.focus, str(r.path), r.value, r.severity) for r in v.results))
            for v in report.verdicts]


@pytest.mark.parametrize("which", ["clinic", "default"])
def test_optimized_guard_gives_the_same_verdicts_as_full_validation(which: str, guard: Guard) -> None:
    if which == "default":
        if not any((ROOT / "shapes").glob("*.ttl")):
            pytest.skip("the default ontology and shapes are not in this checkout")
        onto = Ontology.load()
    else:
        onto = guard.ontology
    fast, full = Guard(onto), Guard(onto, optimize=False)
    assert fast.optimized and not full.optimized, fast.plan.why_not_flat
    rejected = 0
    for batch, types, context in _random_batches(onto, seed=11, n_batches=25):
        a, b = fast.check(batch, types, context), full.check(batch, types, context)
        assert _attributed(a) == _attributed(b)
        assert a.data_triples <= b.data_triples
        rejected += len(a.rejected)
    assert rejected > 20  # the batches did exercise the shapes


def test_shapes_that_are_not_flat_are_validated_in_full(tmp_path: Path) -> None:
    shapes = tmp_path / "or.shapes.ttl"
    shapes.write_text("""@prefix cl: <https://example.org/clinic#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
<urn:x:S> a sh:NodeShape ; sh:targetClass cl:Patient ;
    sh:or ( [ sh:path cl:email ; sh:minCount 1 ] [ sh:path cl:birthDate ; sh:minCount 1 ] ) .
""", encoding="utf-8")
    g = Guard(Ontology.load(DATA / "clinic" / "ontology", shapes))
    assert not g.optimized and "sh:or" in g.plan.why_not_flat
    # the stored e-mail satisfies sh:or: an optimized guard that dropped it would reject the new triple
    stored = [Triple("ann", "email", TypedLiteral("ann@example.org"))]
    assert g.check([Triple("ann", "livesIn", "lisbon")], TYPES, stored).ok


def test_node_level_results_caused_by_stored_data_do_not_block(tmp_path: Path) -> None:
    # Patients must not have an e-mail on record and must not be clinicians (node-level sh:not, a
    # targetClass shape): whether a result is the batch's doing is decided by validating without it.
    shapes = tmp_path / "not.shapes.ttl"
    shapes.write_text("""@prefix cl: <https://example.org/clinic#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
<urn:x:NoEmail> a sh:NodeShape ; sh:targetClass cl:Patient ; sh:not [ sh:path cl:email ; sh:minCount 1 ] .
<urn:x:NotStaff> a sh:NodeShape ; sh:targetClass cl:Patient ; sh:not [ sh:class cl:Clinician ] .
""", encoding="utf-8")
    g = Guard(Ontology.load(DATA / "clinic" / "ontology", shapes))
    stored = [Triple("ann", "email", TypedLiteral("ann@example.org"))]
    report = g.check([Triple("ann", "livesIn", "lisbon")], TYPES, stored)
    assert report.ok and [r.constraint for r in report.unattributed] == [SH + "NotConstraintComponent"]
    report = g.check([Triple("ann", "email", TypedLiteral("ann@example.org"))], TYPES)
    assert not report.ok and constraints(report, 0) == {SH + "NotConstraintComponent"}
    both = {**TYPES, "kim": ["Patient", "Nurse"]}
    assert g.check([Triple("kim", "livesIn", "lisbon")], both).ok  # a stored entity's old typing problem
    report = g.check([Triple("kim", "livesIn", "lisbon")], both, new_entities=["kim"])
    assert not report.ok  # the same typing arriving with the batch
