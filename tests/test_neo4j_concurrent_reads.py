"""What a graph read sees when a concurrent transaction deletes what it matched: Neo4j hands the
deleted nodes back with null properties, so the subgraph must leave them out rather than carry a
``None`` id into scoring (the soak test once failed with ``KeyError: None`` this way)."""

from __future__ import annotations

from typing import Any

from graphmem.config import GraphSearchConfig
from graphmem.ontology import Ontology
from graphmem.search.graph import graph_candidates, graph_query
from graphmem.stores.neo4j.graph import read_subgraph

GM = "https://graphmem.dev/ontology#"
T0 = 1_700_000_000_000_000  # epoch microseconds, as the projections return times


def _entity(eid: str | None, name: str | None, created: int | None = T0) -> dict[str, Any]:
    return {"id": eid, "name": name, "classes": [f"{GM}Person"], "aliases": [], "user_id": "u", "agent_id": None,
            "run_id": None, "created_at": created, "updated_at": None}


def _fact(fid: str, source: str | None, target: str | None, mids: list[str]) -> dict[str, Any]:
    return {"fact": {"id": fid, "relation": f"{GM}knows", "memory_ids": mids, "valid_from": None, "valid_to": None,
                     "created_at": T0, "user_id": "u", "agent_id": None, "run_id": None},
            "source": source, "target": target, "value": None, "datatype": None}


def _row_with_a_deleted_entity() -> dict[str, Any]:
    """Ada and Bruno linked by the query; Bruno deleted (and his memory m2) while the query ran."""
    return {
        "g_linked": [["ada", "e1"], ["bruno", None]],
        "g_seed_pairs": [["m1", "e1"], ["m2", None], [None, "e1"]],
        "g_ents": [{"e": _entity("e1", "Ada"), "deg": 2, "mids": ["m1", None]},
                   {"e": _entity(None, None, None), "deg": 1, "mids": ["m2"]}],
        "g_rels": [_fact("f1", "e1", None, ["m1"]), _fact("f2", None, "e1", ["m2"]), _fact("f3", "e1", "e1", ["m1"])],
        "g_recs": [],
    }


def test_deleted_nodes_leave_no_dangling_ids_in_the_subgraph() -> None:
    sub, _ = read_subgraph(_row_with_a_deleted_entity())
    assert set(sub.entities) == {"e1"}
    assert sub.linked == {"ada": "e1"}
    assert sub.seeds == ["e1"]
    assert sub.mentions == [("m1", "e1")]
    # f1 names a deleted object, f2 a deleted subject: only f3 is whole
    assert [r.id for r in sub.relations] == ["f3"]


def test_graph_scoring_runs_on_a_subgraph_read_during_a_delete() -> None:
    sub, _ = read_subgraph(_row_with_a_deleted_entity())
    cfg = GraphSearchConfig()
    result = graph_candidates(sub, graph_query("where do ada and bruno live", cfg), Ontology.load(), 5, cfg,
                              seeds={"m1": 0.9})
    assert [link["name"] for link in result.linked] == ["Ada"]
