"""The graph signal of ``search`` on both backends: multi-hop answers through typed facts, the
ontology honoured at read time (inverse, symmetric, transitive), scores and paths explained, scopes
never crossed.

Memory texts share no word with the queries, so the hashing embedder and full text cannot find them:
only the facts they support lead there.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphmem import Memory
from graphmem.config import SearchConfig

GRAPH_ONLY = {"vector": 0.0, "fulltext": 0.0, "graph": 1.0}
TRAVERSAL_ONLY: dict[str, Any] = {"traversal_weight": 1.0, "bridge_weight": 0.0}
"""The graph score is then the traversal score itself, which these tests pin."""


def fact(source: str, relation: str, target: str, source_type: str, target_type: str) -> dict[str, str]:
    return {"source": source, "relation": relation, "target": target, "source_type": source_type,
            "target_type": target_type}


def add(mem: Memory, text: str, *triples: dict[str, str], **scope: Any) -> str:
    out = mem.add(text, infer=False, triples=list(triples), **scope)
    assert out["relations"]["rejected"] == [], out["relations"]["rejected"]
    assert len(out["relations"]["added"]) == len(triples)
    mid: str = out["results"][0]["id"]
    return mid


def world(mem: Memory, **scope: Any) -> dict[str, str]:
    """Ana lives in Niterói (in Rio de Janeiro State, in Brazil), works for Acme; Bruno knows Ana and
    works for Globex."""
    return {
        "home": add(mem, "She commutes by ferry every day", fact("Ana", "livesIn", "Niterói", "Person", "City"),
                    **scope),
        "job": add(mem, "Her badge opens the third floor", fact("Ana", "worksFor", "Acme", "Person", "Organization"),
                   **scope),
        "met": add(mem, "They met at a chess club", fact("Bruno", "knows", "Ana", "Person", "Person"), **scope),
        "bjob": add(mem, "He signed with a startup last spring",
                    fact("Bruno", "worksFor", "Globex", "Person", "Organization"), **scope),
        "city": add(mem, "A bridge crosses the water there",
                    fact("Niterói", "locatedIn", "Rio de Janeiro State", "City", "Region"), **scope),
        "state": add(mem, "Carnival draws crowds each February",
                     fact("Rio de Janeiro State", "locatedIn", "Brazil", "Region", "Country"), **scope),
        "noise": add(mem, "Where friends live matters to Bruno and Acme and Brazil", **scope),
    }


def search(mem: Memory, query: str, weights: dict[str, float] | None = None, scoring: str = "walk",
           **scope: Any) -> dict[str, dict[str, Any]]:
    """Walk scoring by default, alone in the graph score (no bridge): these tests pin its exact path
    scores."""
    if weights is not None:
        mem.config.search = SearchConfig(weights=weights, graph={"scoring": scoring, **TRAVERSAL_ONLY})
    out = mem.search(query, explain=True, top_k=20, **scope)
    return {r["id"]: r for r in out["results"]}


def graph_of(hit: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = hit["score_details"]["graph"]
    return details


def test_two_hop_question_answered_only_through_the_graph(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid)
    query = "Where do Bruno's friends live?"
    without = search(mem, query, {"vector": 0.6, "fulltext": 0.4, "graph": 0.0}, user_id=uid)
    home = without.get(ids["home"])
    assert home is None or home["score"] < 0.1  # neither vector nor full text finds it
    if home is not None:
        assert "fulltext" not in home["score_details"] and "graph" not in home["score_details"]

    hits = search(mem, query, {"vector": 0.6, "fulltext": 0.4, "graph": 0.3}, user_id=uid)
    home = hits[ids["home"]]
    assert "fulltext" not in home["score_details"]
    assert home["score_details"].get("vector", {}).get("raw", 0.0) < 0.15
    g = graph_of(home)
    assert g["raw"] == pytest.approx(0.25)  # two hops: decay ** 2
    assert g["path"]["text"] == "Bruno -[knows]-> Ana -[livesIn]-> Niterói"
    assert [(s["source"], s["relation"], s["target"], s["direction"]) for s in g["path"]["path"]] == [
        ("Bruno", "knows", "Ana", "forward"), ("Ana", "livesIn", "Niterói", "forward")]
    assert home["score"] > (without[ids["home"]]["score"] if ids["home"] in without else 0.0)

    only = search(mem, query, GRAPH_ONLY, user_id=uid)
    assert graph_of(only[ids["met"]])["raw"] == pytest.approx(0.5)  # one hop beats two
    assert only[ids["met"]]["score"] > only[ids["home"]]["score"]
    assert "graph" not in only.get(ids["noise"], {"score_details": {}})["score_details"]  # supports no fact


def test_inverse_relation_found_from_the_other_end(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid)
    # Stored as (Ana worksFor Acme); from Acme it is read backwards as employs.
    hits = search(mem, "Acme staff", GRAPH_ONLY, user_id=uid)
    g = graph_of(hits[ids["home"]])
    assert g["path"]["text"] == "Acme <-[worksFor]- Ana -[livesIn]-> Niterói"
    assert g["raw"] == pytest.approx(0.25)
    # Naming the inverse relation boosts the fact read backwards.
    named = search(mem, "Acme employs", GRAPH_ONLY, user_id=uid)
    boost = mem.config.search.graph.relation_boost
    assert graph_of(named[ids["job"]])["raw"] == pytest.approx(min(1.0, 0.5 * boost))
    assert graph_of(named[ids["home"]])["raw"] == pytest.approx(0.25)  # the boost does not carry on


def test_symmetric_relation_found_from_the_other_end(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid)
    # Stored as (Bruno knows Ana): from Ana it is walked backwards, then on to Bruno's employer.
    hits = search(mem, "Ana", GRAPH_ONLY, user_id=uid)
    g = graph_of(hits[ids["bjob"]])
    assert g["path"]["text"] == "Ana <-[knows]- Bruno -[worksFor]-> Globex"
    assert g["raw"] == pytest.approx(0.25)
    # livesIn is neither symmetric, inverse nor transitive: from Niterói the fact is reached (it is
    # about Niterói) but Ana is not, so Ana's other facts are not.
    from_city = search(mem, "Niterói", GRAPH_ONLY, user_id=uid)
    reached = {mid for mid, hit in from_city.items() if "graph" in hit["score_details"]}
    assert ids["home"] in reached
    assert ids["job"] not in reached and ids["met"] not in reached


def test_transitive_chain(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid)
    # Niterói locatedIn Rio de Janeiro State locatedIn Brazil: a question about Brazil finds the
    # memory about Niterói, the chain continuing without extra decay.
    hits = search(mem, "Brazil", GRAPH_ONLY, user_id=uid)
    g = graph_of(hits[ids["city"]])
    assert g["path"]["text"] == "Brazil <-[locatedIn]- Rio de Janeiro State <-[locatedIn]- Niterói"
    assert g["path"]["hops"] == 2
    assert g["raw"] == pytest.approx(mem.config.search.graph.decay)
    assert graph_of(hits[ids["state"]])["raw"] == pytest.approx(mem.config.search.graph.decay)
    assert "graph" not in hits.get(ids["home"], {"score_details": {}})["score_details"]  # 3 hops, depth 2
    mem.config.search = SearchConfig(weights=GRAPH_ONLY, graph={"depth": 3})
    deeper = {r["id"]: r for r in mem.search("Brazil", user_id=uid, explain=True)["results"]}
    assert graph_of(deeper[ids["home"]])["path"]["text"].endswith("Niterói <-[livesIn]- Ana")


def test_relation_weights_and_filters(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid)
    mem.config.search = SearchConfig(weights=GRAPH_ONLY, graph={"relation_weights": {"knows": 0.0},
                                                                    "scoring": "walk", **TRAVERSAL_ONLY})
    hits = {r["id"] for r in mem.search("Bruno", user_id=uid, explain=True)["results"]
            if "graph" in r["score_details"]}
    assert ids["bjob"] in hits and ids["met"] not in hits and ids["home"] not in hits
    # Graph hits obey the caller's filters like every other signal.
    mem.config.search = SearchConfig(weights=GRAPH_ONLY)
    kept = {r["id"] for r in mem.search("Bruno", user_id=uid, filters={"id": {"nin": [ids["met"]]}},
                                        explain=True)["results"] if "graph" in r["score_details"]}
    assert ids["met"] not in kept and ids["bjob"] in kept


def test_scope_never_crossed(mem: Memory, uid: str) -> None:
    other = f"{uid}-other"
    mine = world(mem, user_id=uid)
    theirs = world(mem, user_id=other)
    for query in ("Where do Bruno's friends live?", "Acme staff", "Ana", "Brazil"):
        got = {mid for mid, hit in search(mem, query, GRAPH_ONLY, user_id=uid).items()
               if "graph" in hit["score_details"]}
        assert got and got <= set(mine.values())
        assert not got & set(theirs.values())
    mem.delete_all(user_id=other)


def test_read_scope_links_entities_of_narrower_scopes(mem: Memory, uid: str) -> None:
    ids = world(mem, user_id=uid, agent_id="planner")
    hits = search(mem, "Where do Bruno's friends live?", GRAPH_ONLY, user_id=uid)
    assert graph_of(hits[ids["home"]])["path"]["text"] == "Bruno -[knows]-> Ana -[livesIn]-> Niterói"
    assert search(mem, "Where do Bruno's friends live?", GRAPH_ONLY, user_id=uid, agent_id="other") == {}


def test_class_named_in_the_query_widens_to_subclasses(mem: Memory, uid: str) -> None:
    """"places" names gm:Place; Niterói is a City, a subclass, so the fact reaching it is boosted."""
    ids = world(mem, user_id=uid)
    plain = search(mem, "Ana", GRAPH_ONLY, user_id=uid)
    assert graph_of(plain[ids["home"]])["raw"] == pytest.approx(graph_of(plain[ids["job"]])["raw"])
    out = mem.search("Ana and places", user_id=uid, explain=True, top_k=20)
    assert [x["name"] for x in out["graph"]["linked"]] == ["Ana"]
    hits = {r["id"]: r for r in out["results"]}
    assert graph_of(hits[ids["home"]])["raw"] == pytest.approx(graph_of(hits[ids["job"]])["raw"] * 1.5)


def test_bridge_reaches_the_second_hop_through_a_shared_entity(mem: Memory, uid: str) -> None:
    """The best text hit names an entity the query does not; a memory sharing that entity is the
    second hop, found by neither text signal nor by any path from a query entity."""
    hop1 = add(mem, "The lighthouse keeper logbook describes winter storms",
               fact("Farol Velho", "locatedIn", "Cabo Frio", "Venue", "City"), user_id=uid)
    hop2 = add(mem, "Its harbour fills with sardine boats",
               fact("Cabo Frio", "locatedIn", "Rio de Janeiro State", "City", "Region"), user_id=uid)
    query = "lighthouse keeper logbook"
    mem.config.search = SearchConfig(weights={"vector": 0.6, "fulltext": 0.4, "graph": 0.0})
    text_only = {r["id"]: r for r in mem.search(query, user_id=uid, top_k=20, explain=True)["results"]}
    assert hop2 not in text_only or (text_only[hop2]["score"] < 0.1
                                     and "fulltext" not in text_only[hop2]["score_details"])

    for scoring in ("ppr", "walk"):  # whichever traversal scoring runs beside it
        mem.config.search = SearchConfig(weights={"vector": 0.6, "fulltext": 0.4, "graph": 0.8},
                                         graph={"traversal_weight": 0.0, "scoring": scoring})
        hits = {r["id"]: r for r in mem.search(query, user_id=uid, top_k=20, explain=True)["results"]}
        assert next(iter(hits)) == hop1
        assert hits[hop2]["score"] > text_only.get(hop2, {"score": 0.0})["score"] + 0.2
        g = graph_of(hits[hop2])
        assert g["raw"] == pytest.approx(3**-0.5)  # top seed (1.0) x specificity of a name two memories carry
        assert g["path"]["bridge"] == {"memory": hop1, "entity": "Cabo Frio", "continues": 0.0}  # nothing left over
        assert g["path"]["text"] == f"shares Cabo Frio with memory {hop1}"

    # A name the query itself carries does not bridge (the text signals already weigh it) ...
    named = {r["id"]: r for r in mem.search(f"{query} Cabo Frio", user_id=uid, top_k=20, explain=True)["results"]}
    assert "graph" not in named.get(hop2, {"score_details": {}})["score_details"]
    # ... nor does a name more memories carry than graph.bridge_max_degree.
    add(mem, "Tourists crowd the dunes in January",
        fact("Dunas", "locatedIn", "Cabo Frio", "Venue", "City"), user_id=uid)
    mem.config.search = SearchConfig(weights={"vector": 0.6, "fulltext": 0.4, "graph": 0.8},
                                     graph={"traversal_weight": 0.0, "bridge_max_degree": 2})
    crowded = {r["id"]: r for r in mem.search(query, user_id=uid, top_k=20, explain=True)["results"]}
    assert "graph" not in crowded.get(hop2, {"score_details": {}})["score_details"]


def test_the_scope_user_does_not_bridge(mem: Memory, uid: str) -> None:
    """Every memory of a user's scope is about that user: sharing them is no second hop, however few
    memories there are (an entity named by the scope's ``user_id`` never bridges)."""
    user = f"{uid}-kari"
    hop1 = add(mem, "The lighthouse keeper logbook describes winter storms",
               fact(user, "livesIn", "Cabo Frio", "Person", "City"), user_id=user)
    other = add(mem, "Its harbour fills with sardine boats",
                fact(user, "worksFor", "Sardinha Lda", "Person", "Organization"), user_id=user)
    mem.config.search = SearchConfig(weights={"vector": 0.6, "fulltext": 0.4, "graph": 0.8},
                                     graph={"traversal_weight": 0.0})
    hits = {r["id"]: r for r in mem.search("lighthouse keeper logbook", user_id=user, top_k=20,
                                           explain=True)["results"]}
    assert next(iter(hits)) == hop1
    assert "graph" not in hits.get(other, {"score_details": {}})["score_details"]
