"""``graphmem ontology check|show|test`` through Typer's test runner (the sub-app the main CLI mounts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from graphmem.ontology.cli import ontology_app

DATA = Path(__file__).parent / "data" / "ontology"
CLINIC = DATA / "clinic"
CLINIC_ARGS = ["--ontology", str(CLINIC / "ontology"), "--shapes", str(CLINIC / "shapes")]
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(ontology_app, list(args), env={"COLUMNS": "250"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# ---------------------------------------------------------------- check


def test_check_clean_files_exit_zero() -> None:
    code, out = run("check", *CLINIC_ARGS)
    assert code == 0, out
    assert "0 error(s)" in out


def test_check_default_files_exit_zero() -> None:
    code, out = run("check")
    assert code == 0, out


def test_check_reports_each_problem_with_file_and_line() -> None:
    broken = DATA / "broken.shapes.ttl"
    code, out = run("check", "--ontology", str(CLINIC / "ontology"), "--shapes", str(broken))
    assert code == 1
    lines = [ln for ln in out.splitlines() if ": error: " in ln]
    expected = {
        "sh:minlength": "sh:minlength is not a SHACL term",
        "sh:minCount -1": "cannot be negative",
        'sh:minCount "one"': 'must be an integer, got "one"',
        "sh:minCount 2": "sh:minCount 2 is greater than sh:maxCount 1",
        'sh:nodeKind "IRI"': "meta-SHACL: sh:nodeKind",
        "sh:path cl:hasInsurer": "cl:hasInsurer, which is not a property of the ontology",
        "sh:class cl:Insurer": "cl:Insurer, which is not a class of the ontology",
    }
    for needle, message in expected.items():
        where = f"broken.shapes.ttl:{line_of(broken, needle)}: error: "
        assert any(where in ln and message in ln for ln in lines), (needle, out)
    assert len(lines) == len(expected), out
    assert all(re.match(r"^\S+\.ttl:\d+: error: ", ln) for ln in lines)


def test_check_reports_parse_errors_with_line() -> None:
    bad = DATA / "broken-syntax.shapes.ttl"
    code, out = run("check", "--ontology", str(CLINIC / "ontology"), "--shapes", str(bad))
    assert code == 1
    assert f"broken-syntax.shapes.ttl:{line_of(bad, 'unterminated')}: error: Turtle syntax error" in out


def test_check_json_and_ontology_problems(tmp_path: Path) -> None:
    onto = tmp_path / "o.ttl"
    onto.write_text("@prefix ex: <https://example.org/x#> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
                    "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
                    "ex:A a owl:Class ; skos:altLabel \"thing\" .\nex:B a owl:Class ; skos:altLabel \"thing\" .\n"
                    "ex:knows a owl:ObjectProperty .\nex:Knows a owl:ObjectProperty .\n", encoding="utf-8")
    code, out = run("check", "--ontology", str(onto), "--shapes", str(onto), "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    codes = {(p["code"], p["severity"]) for p in data["problems"]}
    assert ("name-collision", "error") in codes and ("ambiguous-synonym", "warning") in codes
    assert all(p["line"] for p in data["problems"])


def test_check_missing_file() -> None:
    code, out = run("check", "--ontology", "does/not/exist.ttl", "--shapes", "nope")
    assert code == 1 and "does not exist" in out


# ---------------------------------------------------------------- show


def test_show_tables_and_json() -> None:
    code, out = run("show", *CLINIC_ARGS)
    assert code == 0, out
    for text in ("cl:Physician", "cl:Clinician", "HAS_PRIMARY_PHYSICIAN", "functional", "symmetric", "transitive",
                 "cl:treatedBy", "(node property)"):
        assert text in out, text
    code, out = run("show", *CLINIC_ARGS, "--json")
    data = json.loads(out)
    rels = {r["name"]: r for r in data["relations"]}
    assert rels["treats"]["neo4j_type"] == "TREATS" and rels["treats"]["inverse"].endswith("#treatedBy")
    assert {c["neo4j_label"] for c in data["classes"]} >= {"Physician", "Patient", "City"}
    assert len(data["fingerprint"]) == 64


def test_show_default() -> None:
    code, out = run("show", "--json")
    assert code == 0 and any(r["neo4j_type"] == "WORKS_FOR" for r in json.loads(out)["relations"])


# ---------------------------------------------------------------- test


def test_test_clinic_examples_pass() -> None:
    code, out = run("test", *CLINIC_ARGS)
    assert code == 0, out
    assert re.search(r"(\d+) passed, 0 failed", out)
    assert "PASS" in out and "FAIL" not in out


def test_test_default_manifest_passes() -> None:
    code, out = run("test")
    assert code == 0, out


def test_test_reports_a_failing_case(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.ttl"
    shapes = (CLINIC / "shapes" / "clinic.shapes.ttl").resolve().as_uri()
    manifest.write_text(f"""@prefix mf: <http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#> .
@prefix sht: <http://www.w3.org/ns/shacl-test#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix cl: <https://example.org/clinic#> .
@prefix ex: <https://example.org/data#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<> a mf:Manifest ; mf:entries ( <#wrong> ) .
<#wrong> a sht:Validate ; rdfs:label "expects conformance, but the physician is a nurse" ;
    mf:action [ sht:dataGraph <data.ttl> ; sht:shapesGraph <{shapes}> ] ;
    mf:result [ a sh:ValidationReport ; sh:conforms true ] .
""", encoding="utf-8")
    (tmp_path / "data.ttl").write_text("""@prefix cl: <https://example.org/clinic#> .
@prefix ex: <https://example.org/data#> .
ex:ann a cl:Patient ; cl:hasPrimaryPhysician ex:nina .
ex:nina a cl:Nurse .
""", encoding="utf-8")
    code, out = run("test", str(manifest), *CLINIC_ARGS)
    assert code == 1
    assert "FAIL expects conformance" in out and "0 passed, 1 failed" in out
    assert "unexpected: sh:Violation ex:ann cl:hasPrimaryPhysician ex:nina" in out
    code, out = run("test", str(manifest), *CLINIC_ARGS, "--json")
    data = json.loads(out)
    assert data["failed"] == 1 and data["cases"][0]["conforms"] is False


def test_test_merge_ontology_is_what_makes_subclasses_pass() -> None:
    # ex:bob is a cl:Physician where cl:Clinician is required: only the ontology's subclass closure
    # (merged by default, as in the guard) lets the example pass.
    code, _ = run("test", *CLINIC_ARGS)
    assert code == 0
    code, out = run("test", *CLINIC_ARGS, "--no-merge-ontology")
    assert code == 1 and "FAIL" in out
