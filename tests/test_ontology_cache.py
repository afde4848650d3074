"""The compiled ontology cached on disk: a hit is the same ontology, anything changed or broken is a miss."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from rdflib.compare import isomorphic

from graphmem.ontology import Guard, Ontology, OntologyError, Triple, cache

ROOT = Path(__file__).resolve().parents[1]
CLINIC = Path(__file__).parent / "data" / "ontology" / "clinic"
PREFIXES = """@prefix ex: <https://example.org/x#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", str(folder))
    return folder / "ontology"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the default ontology and shapes that a test may change."""
    onto, shapes = tmp_path / "ontology", tmp_path / "shapes"
    shutil.copytree(ROOT / "ontology", onto)
    shutil.copytree(ROOT / "shapes", shapes)
    return onto, shapes


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def assert_same(cached: Ontology, fresh: Ontology) -> None:
    assert cached.to_dict() == fresh.to_dict()
    assert cached.problems == fresh.problems
    assert cached.ambiguities == fresh.ambiguities
    assert cached.prefixes == fresh.prefixes
    assert cached.unresolved_imports == fresh.unresolved_imports
    assert cached.ontology_iris == fresh.ontology_iris
    assert [s.path for s in cached.sources] == [s.path for s in fresh.sources]
    assert [s.path for s in cached.shape_sources] == [s.path for s in fresh.shape_sources]
    for surface in ("works for", "WORKS_FOR", "city", "gm:Person", "Organisation", "nothing at all"):
        assert cached.resolve_relation(surface) == fresh.resolve_relation(surface)
        assert cached.resolve_class(surface) == fresh.resolve_class(surface)
    for iri in fresh.classes:
        assert cached.subclasses(iri) == fresh.subclasses(iri)
    for iri in fresh.relations:
        assert cached.sub_properties(iri) == fresh.sub_properties(iri)
    assert set(cached.tbox) == set(fresh.tbox)
    assert isomorphic(cached.shapes_graph, fresh.shapes_graph)
    assert isomorphic(cached.graph, fresh.graph)
    assert isomorphic(cached.inferred, fresh.inferred)


def test_a_cache_hit_equals_a_fresh_compile(cache_dir: Path) -> None:
    first = Ontology.load()
    (entry,) = entries(cache_dir)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    cached = Ontology.load()
    assert cached._graph is None and cached._shapes_graph is None  # came from the entry, graphs not parsed yet
    assert_same(cached, Ontology.load(use_cache=False))
    assert_same(cached, first)
    assert entries(cache_dir) == [entry]


def test_a_cached_ontology_judges_like_a_compiled_one(cache_dir: Path) -> None:
    Ontology.load()
    cached, fresh = Ontology.load(), Ontology.load(use_cache=False)
    assert cached._shapes_graph is None
    batch = [Triple("ana", "worksFor", "acme"), Triple("ana", "livesIn", "bob"), Triple("ana", "marriedTo", "bob"),
             Triple("ana", "bornIn", "acme")]
    types = {"ana": "Person", "acme": "Organization", "bob": "Person"}
    got, want = Guard(cached).check(batch, types), Guard(fresh).check(batch, types)
    assert [(v.accepted, v.reasons()) for v in got.verdicts] == [(v.accepted, v.reasons()) for v in want.verdicts]
    assert not got.ok and got.accepted


def test_the_rule_extractor_reads_a_cached_ontology_without_parsing_it(cache_dir: Path) -> None:
    """The lexicon's labels, altLabels and hiddenLabels come from the compiled tables: the first add of
    a process parses no Turtle for them (``bench/startup.py``)."""
    from graphmem.extraction.rules.lexicon import OntologyLexicon
    from graphmem.extraction.rules.resources import pipeline

    Ontology.load()
    cached = Ontology.load()
    patterns = OntologyLexicon.build(cached, pipeline()).patterns
    assert cached._graph is None
    assert patterns == OntologyLexicon.build(Ontology.load(use_cache=False), pipeline()).patterns


def test_imports_and_problems_come_back_from_the_cache(cache_dir: Path) -> None:
    ontology = CLINIC / "ontology" / "clinic.ttl"
    Ontology.load(ontology, CLINIC / "shapes")
    cached = Ontology.load(ontology, CLINIC / "shapes")
    assert cached._graph is None
    assert {s.path.name for s in cached.sources} == {"clinic.ttl", "places.ttl"}
    assert_same(cached, Ontology.load(ontology, CLINIC / "shapes", use_cache=False))


def test_a_strict_load_refuses_a_cached_ontology_with_errors(cache_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text(PREFIXES + "ex:Memory a owl:Class .\n", encoding="utf-8")
    assert any(p.code == "reserved-name" for p in Ontology.load(bad, strict=False).problems)
    assert len(entries(cache_dir)) == 1
    with pytest.raises(OntologyError, match="graphmem uses") as err:
        Ontology.load(bad)
    assert err.value.path == bad and err.value.line == 4


def test_a_changed_shape_file_invalidates_the_cache(cache_dir: Path, files: tuple[Path, Path]) -> None:
    onto, shapes = files
    before = Ontology.load(onto, shapes)
    shape_file = shapes / "graphmem.shapes.ttl"
    shape_file.write_text(shape_file.read_text("utf-8") + """
gmsh:ExtraShape a sh:NodeShape ;
    sh:targetClass gm:Person ;
    sh:property [ sh:path gm:worksFor ; sh:maxCount 1 ] .
""", encoding="utf-8")
    after = Ontology.load(onto, shapes)
    assert after.fingerprint != before.fingerprint
    assert len(after.shapes_graph) > len(before.shapes_graph)
    assert_same(after, Ontology.load(onto, shapes, use_cache=False))
    assert len(entries(cache_dir)) == 2


def test_a_changed_imported_file_invalidates_the_cache(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "onto"
    shutil.copytree(CLINIC / "ontology", folder)
    main = folder / "clinic.ttl"
    assert "Village" not in {c.name for c in Ontology.load(main).classes.values()}
    places = folder / "places.ttl"
    places.write_text(places.read_text("utf-8") + "\ncl:Village a owl:Class ; rdfs:subClassOf cl:Place .\n",
                      encoding="utf-8")
    cached = Ontology.load(main)
    assert "Village" in {c.name for c in cached.classes.values()}
    assert cached.is_subclass("Village", "Place")
    assert len(entries(cache_dir)) == 2


def test_a_corrupt_cache_file_is_ignored_and_rewritten(cache_dir: Path) -> None:
    fresh = Ontology.load(use_cache=False)
    Ontology.load()
    (entry,) = entries(cache_dir)
    good = json.loads(entry.read_text("utf-8"))
    for broken in ('{"format": 1, "key": "trunc', "\x00\xff not json", json.dumps([1, 2, 3]),
                   json.dumps({**good, "classes": [{"iri": 5}]}),
                   json.dumps({**good, "relations": [{**good["relations"][0], "functional": "yes"}]}),
                   json.dumps({**good, "format": 999})):
        entry.write_text(broken, encoding="utf-8", errors="surrogateescape")
        loaded = Ontology.load()
        assert loaded._graph is not None  # compiled, not read from the broken entry
        assert_same(loaded, fresh)
        assert json.loads(entry.read_text("utf-8")) == good


def test_an_entry_whose_listed_file_changed_is_not_used(cache_dir: Path, files: tuple[Path, Path]) -> None:
    onto, shapes = files
    Ontology.load(onto, shapes)
    (entry,) = entries(cache_dir)
    data = json.loads(entry.read_text("utf-8"))
    data["sources"][0][1] = "0" * 64  # as if the file had other bytes when it was compiled
    entry.write_text(json.dumps(data), encoding="utf-8")
    assert Ontology.load(onto, shapes)._graph is not None


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", "off")
    assert cache.cache_dir() is None
    assert Ontology.load()._graph is not None
    monkeypatch.delenv("GRAPHMEM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "graphmem" / "ontology"


def test_an_unwritable_cache_folder_only_costs_the_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GRAPHMEM_CACHE_DIR", str(blocker))
    assert Ontology.load().classes


def test_graphs_parsed_later_are_the_files_as_loaded(cache_dir: Path, files: tuple[Path, Path]) -> None:
    onto, shapes = files
    fresh = Ontology.load(onto, shapes)
    cached = Ontology.load(onto, shapes)
    assert cached._shapes_graph is None
    (shapes / "graphmem.shapes.ttl").write_text("this is not Turtle", encoding="utf-8")
    (onto / "graphmem.ttl").write_text("nor is this", encoding="utf-8")
    assert isomorphic(cached.shapes_graph, fresh.shapes_graph)  # the text read (and checked) at load time
    assert isomorphic(cached.graph, fresh.graph)
