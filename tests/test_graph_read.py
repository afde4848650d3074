"""The graph read API (``Memory.entities``, ``Memory.facts``) on both backends: pages and cursors,
name and type lookups, the ontology read into facts (sub-properties, inverses, symmetry), validity,
provenance, and the tenant fence."""

from __future__ import annotations

import pytest

from graphmem import InvalidInputError, Memory, NotFoundError

GM = "https://graphmem.dev/ontology#"

TRIPLES = [
    {"source": "Maya Patel", "relation": "worksFor", "target": "Acme", "source_type": "Person",
     "target_type": "Company"},
    {"source": "Acme", "relation": "employs", "target": "Bob", "target_type": "Person"},
    {"source": "Bob", "relation": "marriedTo", "target": "Maya Patel"},
    {"source": "Maya Patel", "relation": "memberOf", "target": "Chess Club", "target_type": "Organization"},
    {"source": "Maya Patel", "relation": "livesIn", "target": "Porto", "target_type": "City",
     "valid_from": "2019-01-01"},
]


@pytest.fixture
def graph(mem: Memory, uid: str) -> dict[str, str]:
    """The graph of :data:`TRIPLES` in ``uid``'s scope, and another tenant's look-alike; entity ids by name."""
    out = mem.add("Maya Patel works for Acme, which employs Bob; Bob is married to Maya.", user_id=uid,
                  infer=False, triples=TRIPLES)
    assert len(out["relations"]["added"]) == len(TRIPLES)
    mem.add("Maya Patel moved to Lisbon.", user_id=uid, infer=False,
            triples=[{"source": "Maya Patel", "relation": "livesIn", "target": "Lisbon", "target_type": "City",
                      "valid_from": "2024-06-01"}])
    mem.add("Maya Patel works for Globex.", user_id=uid + "-other", infer=False,
            triples=[{"source": "Maya Patel", "relation": "worksFor", "target": "Globex", "source_type": "Person",
                      "target_type": "Company"}])
    return {e["name"]: e["id"] for e in mem.entities(user_id=uid, limit=100)["results"]}


def names(page: dict[str, object]) -> list[str]:
    return sorted(e["name"] for e in page["results"])  # type: ignore[attr-defined,index]


def statements(page: dict[str, object]) -> set[tuple[str, str, str]]:
    return {(f["source"]["name"], f["relation_name"], f["target"]["name"])  # type: ignore[index]
            for f in page["results"]}  # type: ignore[attr-defined]


def test_entities_pages_by_name_and_type(mem: Memory, uid: str, graph: dict[str, str]) -> None:
    assert sorted(graph) == ["Acme", "Bob", "Chess Club", "Lisbon", "Maya Patel", "Porto"]
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = mem.entities(user_id=uid, limit=4, cursor=cursor)
        seen += [e["id"] for e in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(graph.values()) and len(seen) == len(set(seen))  # each once, over 2 pages
    assert names(mem.entities(user_id=uid, name="patel")) == ["Maya Patel"]
    assert names(mem.entities(user_id=uid, name="PATEL")) == ["Maya Patel"]  # names are matched normalized
    assert names(mem.entities(user_id=uid, name="no such")) == []
    assert names(mem.entities(user_id=uid, type="Person")) == ["Bob", "Maya Patel"]
    # a class finds its subclasses: companies are organizations
    assert names(mem.entities(user_id=uid, type="Organization")) == ["Acme", "Chess Club"]
    maya = mem.entities(user_id=uid, name="maya")["results"][0]
    assert maya["types"] == ["gm:Person"] and maya["mentions"] == 2
    assert names(mem.entities(user_id=uid + "-other")) == ["Globex", "Maya Patel"]


def test_facts_read_through_the_ontology(mem: Memory, uid: str, graph: dict[str, str]) -> None:
    works = mem.facts(user_id=uid, relation="works for")
    assert statements(works) == {("Maya Patel", "gm:worksFor", "Acme"), ("Bob", "gm:worksFor", "Acme")}
    bob = next(f for f in works["results"] if f["source"]["name"] == "Bob")
    assert bob["derived"] == {"from": "inverse", "stored_relation": GM + "employs"}
    assert [m["memory"] for m in bob["memories"]] == [
        "Maya Patel works for Acme, which employs Bob; Bob is married to Maya."]
    # the parent relation finds its sub-property (worksFor) and, through the inverse, employs
    member = statements(mem.facts(user_id=uid, relation="memberOf"))
    assert member == {("Maya Patel", "gm:worksFor", "Acme"), ("Bob", "gm:memberOf", "Acme"),
                      ("Maya Patel", "gm:memberOf", "Chess Club")}
    married = mem.facts(user_id=uid, entity="Maya Patel", relation="marriedTo")["results"]
    assert [(f["source"]["name"], f["target"]["name"], f["derived"]["from"]) for f in married] == [
        ("Maya Patel", "Bob", "symmetric")]
    about = mem.facts(user_id=uid, entity=graph["Bob"])  # by id; stored direction without a relation
    assert statements(about) == {("Acme", "gm:employs", "Bob"), ("Bob", "gm:marriedTo", "Maya Patel")}
    assert all(f["derived"] is None for f in about["results"])


def test_facts_validity_and_paging(mem: Memory, uid: str, graph: dict[str, str]) -> None:
    lives = mem.facts(user_id=uid, entity="maya patel", relation="livesIn")["results"]
    assert [f["target"]["name"] for f in lives] == ["Lisbon"]
    history = mem.facts(user_id=uid, entity="maya patel", relation="livesIn", include_closed=True)["results"]
    assert [(f["target"]["name"], f["valid_to"] is None) for f in history] == [("Porto", False), ("Lisbon", True)]
    then = mem.facts(user_id=uid, entity="maya patel", relation="livesIn", as_of="2020-06-01")["results"]
    assert [f["target"]["name"] for f in then] == ["Porto"]
    everything = mem.facts(user_id=uid, include_closed=True, limit=100)["results"]
    paged: list[str] = []
    cursor = None
    while True:
        page = mem.facts(user_id=uid, include_closed=True, limit=2, cursor=cursor)
        assert len(page["results"]) <= 2
        paged += [f["id"] for f in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert paged == [f["id"] for f in everything] and len(paged) == 6


def test_tenant_fence_and_bad_input(mem: Memory, uid: str, graph: dict[str, str]) -> None:
    other = mem.entities(user_id=uid + "-other", name="globex")["results"][0]["id"]
    with pytest.raises(NotFoundError):
        mem.facts(user_id=uid, entity=other)  # another tenant's entity is as missing
    with pytest.raises(NotFoundError):
        mem.facts(user_id=uid, entity="Globex")
    assert ("Maya Patel", "gm:worksFor", "Globex") not in statements(mem.facts(user_id=uid, relation="worksFor"))
    for bad in ({"relation": "teleportsTo"}, {"relation": ""}, {"cursor": "not-a-cursor"}, {"limit": 0},
                {"include_closed": "yes"}, {"entity": 7}):
        with pytest.raises(InvalidInputError):
            mem.facts(user_id=uid, **bad)  # type: ignore[arg-type]
    for bad in ({"type": "Spaceship"}, {"name": "  "}, {"cursor": "eyJ4IjoxfQ"}):
        with pytest.raises(InvalidInputError):
            mem.entities(user_id=uid, **bad)
