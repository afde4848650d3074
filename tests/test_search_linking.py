"""Query linking on both backends: exact names and aliases, partial names through the entity full-text
index (scored by how much of the name the query carries), names by embedding, their thresholds and
caps, the scope, and the SQLite entity full-text table of stores written before it existed.

Memory texts share no word with the queries, so the hashing embedder and full text cannot find them:
only a linked entity leads there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, MemoryConfig
from graphmem.config import SearchConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import Scope
from graphmem.stores.base import GraphWrite

from .conftest import make_config
from .test_search_graph import GRAPH_ONLY, fact

TEXT_ONLY = {"vector": 0.6, "fulltext": 0.4, "graph": 0.0}


def add(mem: Memory, text: str, *triples: dict[str, str], **scope: Any) -> str:
    out = mem.add(text, infer=False, triples=list(triples), **scope)
    assert out["relations"]["rejected"] == [], out["relations"]["rejected"]
    mid: str = out["results"][0]["id"]
    return mid


def search(mem: Memory, query: str, weights: dict[str, float] | None = None, **kw: Any) -> dict[str, Any]:
    scope = {k: kw.pop(k) for k in ("user_id", "agent_id", "run_id") if k in kw}
    kw.setdefault("graph_link_fulltext", 4)  # off by default (see SearchConfig)
    mem.config.search = SearchConfig(weights=weights or SearchConfig().weights, **kw)
    out: dict[str, Any] = mem.search(query, explain=True, top_k=20, **scope)
    return out


def linked(out: dict[str, Any]) -> dict[str, tuple[str, float]]:
    return {x["name"]: (x["how"], x["score"]) for x in out["graph"]["linked"]}


def ids(out: dict[str, Any]) -> set[str]:
    return {r["id"] for r in out["results"]}


def test_partial_name_finds_what_neither_text_signal_finds(mem: Memory, uid: str) -> None:
    home = add(mem, "He signed the lease on a flat near the river",
               fact("Barack Obama", "livesIn", "Kalorama", "Person", "City"), user_id=uid)
    add(mem, "The committee met on Thursday afternoon", user_id=uid)
    query = "Where does Obama sleep?"
    text = search(mem, query, TEXT_ONLY, user_id=uid)
    hit = next((r for r in text["results"] if r["id"] == home), None)
    assert hit is None or (hit["score"] < 0.1 and "fulltext" not in hit["score_details"])

    exact_only = search(mem, query, GRAPH_ONLY, user_id=uid, graph_link_fulltext=0)
    assert linked(exact_only) == {} and home not in ids(exact_only)

    out = search(mem, query, user_id=uid)
    assert linked(out) == {"Barack Obama": ("fulltext", 0.5)}
    assert out["graph"]["linked"][0]["key"] == "barack obama"
    hit = next(r for r in out["results"] if r["id"] == home)
    assert "graph" in hit["score_details"] and "fulltext" not in hit["score_details"]
    assert home in ids(search(mem, query, GRAPH_ONLY, user_id=uid))


def test_exact_names_and_aliases_link_as_exact(mem: Memory, uid: str) -> None:
    add(mem, "He signed the lease on a flat near the river",
        fact("Barack Obama", "livesIn", "Kalorama", "Person", "City"), user_id=uid)
    scope = Scope(user_id=uid)
    obama = mem.store.find_entities(scope, ["barack obama"])["barack obama"]
    mem.store.write(scope, GraphWrite(entity_updates=[obama.model_copy(update={"aliases": ["The Senator"]})]))
    assert linked(search(mem, "Barack Obama", GRAPH_ONLY, user_id=uid)) == {"Barack Obama": ("exact", 1.0)}
    out = search(mem, "What did the senator say", GRAPH_ONLY, user_id=uid)
    assert out["graph"]["linked"] == [{"name": "Barack Obama", "key": "the senator", "how": "exact", "score": 1.0}]
    # an alias word alone is a partial name: "senator" is the only content word of "the senator"
    out = search(mem, "Senators", GRAPH_ONLY, user_id=uid)  # plural: its singular is looked up too
    assert out["graph"]["linked"] == [{"name": "Barack Obama", "key": "the senator", "how": "fulltext",
                                       "score": 1.0}]


def test_only_capitalized_words_look_for_partial_names(mem: Memory, uid: str) -> None:
    add(mem, "He signed the lease on a flat near the river",
        fact("Barack Obama", "livesIn", "Kalorama", "Person", "City"), user_id=uid)
    assert linked(search(mem, "where does obama sleep", GRAPH_ONLY, user_id=uid)) == {}
    out = search(mem, "where does obama sleep", GRAPH_ONLY, user_id=uid, graph_link_names_only=False)
    assert linked(out) == {"Barack Obama": ("fulltext", 0.5)}


def test_threshold_keeps_an_unrelated_name_out(mem: Memory, uid: str) -> None:
    center = add(mem, "Its library opened after years of planning",
                 fact("Obama Presidential Center Foundation", "locatedIn", "Chicago", "Organization", "City"),
                 user_id=uid)
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid)  # covers a quarter of the name
    assert linked(out) == {} and center not in ids(out)
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid, graph_link_min_cover=0.25)
    assert linked(out) == {"Obama Presidential Center Foundation": ("fulltext", 0.25)}
    assert center in ids(out)


def test_caps_hold_best_cover_then_oldest(mem: Memory, uid: str) -> None:
    family = ["Michelle Obama", "Malia Obama", "Sasha Obama", "Marian Obama", "Auma Obama", "Barack Obama Sr"]
    for i, name in enumerate(family):
        add(mem, f"Entry {i} of the family album", fact(name, "livesIn", "Chicago", "Person", "City"), user_id=uid)
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid, graph_link_fulltext=2)
    assert linked(out) == {"Michelle Obama": ("fulltext", 0.5), "Malia Obama": ("fulltext", 0.5)}
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid, graph_link_fulltext=10)
    assert [x["name"] for x in out["graph"]["linked"]] == family[:5]  # a third of "barack obama sr" is too little
    out = search(mem, "Sasha and Obama", GRAPH_ONLY, user_id=uid, graph_link_fulltext=2)
    assert [x["name"] for x in out["graph"]["linked"]] == ["Sasha Obama", "Michelle Obama"]  # best cover first
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid, graph_link_fulltext=0)
    assert linked(out) == {}


def test_partial_links_never_cross_the_scope(mem: Memory, uid: str) -> None:
    other = f"{uid}-other"
    theirs = add(mem, "He signed the lease on a flat near the river",
                 fact("Barack Obama", "livesIn", "Kalorama", "Person", "City"), user_id=other)
    narrow = add(mem, "The agent booked a table for two",
                 fact("Michelle Obama", "livesIn", "Chicago", "Person", "City"), user_id=uid, agent_id="planner")
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid)
    assert linked(out) == {"Michelle Obama": ("fulltext", 0.5)}  # a narrower scope is inside the read scope
    assert narrow in ids(out) and theirs not in ids(out)
    assert linked(search(mem, "Obama", GRAPH_ONLY, user_id=uid, agent_id="other")) == {}
    assert linked(search(mem, "Obama", GRAPH_ONLY, user_id=other)) == {"Barack Obama": ("fulltext", 0.5)}
    mem.delete_all(user_id=other)


VECTOR = {"graph_link_fulltext": 0, "graph_link_vector": 2, "graph_link_min_similarity": 0.5}
"""Vector links alone; hashing embeddings of two spellings share words and trigrams, not meaning,
so their cosines are lower than a language model's."""


def test_vector_link_finds_another_spelling(mem: Memory, uid: str) -> None:
    museum = add(mem, "Its halls hold three million works",
                 fact("Hermitage", "locatedIn", "St Petersburg", "Place", "City"), user_id=uid)
    query = "What did they see in Saint Petersburg?"
    text = search(mem, query, TEXT_ONLY, user_id=uid)
    hit = next((r for r in text["results"] if r["id"] == museum), None)
    assert hit is None or "fulltext" not in hit["score_details"]
    assert linked(search(mem, query, GRAPH_ONLY, user_id=uid, graph_link_fulltext=0)) == {}

    out = search(mem, query, GRAPH_ONLY, user_id=uid, **VECTOR)
    assert out["graph"]["linked"] == [{"name": "St Petersburg", "key": "saint petersburg", "how": "vector",
                                       "score": pytest.approx(0.5915, abs=1e-3)}]
    assert museum in ids(out)
    # below the threshold, off, or a name that links exactly: no vector link
    assert linked(search(mem, query, GRAPH_ONLY, user_id=uid, **{**VECTOR, "graph_link_min_similarity": 0.6})) == {}
    assert linked(search(mem, query, GRAPH_ONLY, user_id=uid, **{**VECTOR, "graph_link_vector": 0})) == {}
    exact = search(mem, "What did they see in St Petersburg?", GRAPH_ONLY, user_id=uid, **VECTOR)
    assert linked(exact) == {"St Petersburg": ("exact", 1.0)}


def test_vector_links_cap_never_repeat_and_keep_to_the_scope(mem: Memory, uid: str) -> None:
    other = f"{uid}-other"
    add(mem, "Its halls hold three million works", fact("Hermitage", "locatedIn", "St Petersburg", "Place", "City"),
        user_id=uid)
    add(mem, "Snow lay on the square", fact("Red Square", "locatedIn", "Moscow City", "Place", "City"), user_id=uid)
    theirs = add(mem, "A ferry leaves at dawn", fact("Pier", "locatedIn", "Saint Petersberg", "Place", "City"),
                 user_id=other)
    query = "From Saint Petersburg to Moscow Town, then Saint-Petersburg"
    out = search(mem, query, GRAPH_ONLY, user_id=uid, **VECTOR)
    # mentions in reading order; the third one's nearest entity is linked already
    assert [(x["name"], x["key"], x["how"]) for x in out["graph"]["linked"]] == [
        ("St Petersburg", "saint petersburg", "vector"), ("Moscow City", "moscow town", "vector")]
    capped = search(mem, query, GRAPH_ONLY, user_id=uid, **{**VECTOR, "graph_link_vector": 1})
    assert [x["name"] for x in capped["graph"]["linked"]] == ["St Petersburg"]
    assert theirs not in ids(out)
    assert linked(search(mem, query, GRAPH_ONLY, user_id=uid, agent_id="none", **VECTOR)) == {}
    assert linked(search(mem, "Saint Petersberg", GRAPH_ONLY, user_id=other, **VECTOR)) == {
        "Saint Petersberg": ("exact", 1.0)}
    mem.delete_all(user_id=other)


def _fts_names(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return sorted(r[0] for r in conn.execute("SELECT names FROM entities_fts"))


def test_sqlite_entity_full_text_table_is_backfilled_and_kept_in_step(tmp_path: Path, uid: str) -> None:
    cfg = MemoryConfig.load(make_config("sqlite", tmp_path))
    path = tmp_path / "graphmem.db"
    mem = Memory(cfg, embedder=HashingEmbedder(384))
    home = add(mem, "He signed the lease on a flat near the river",
               fact("Barack Obama", "livesIn", "Kalorama", "Person", "City"), user_id=uid)
    mem.close()
    with sqlite3.connect(path) as conn:  # the store as an earlier graphmem left it
        conn.executescript("DROP TABLE entities_fts; DROP TRIGGER entities_fts_ai; DROP TRIGGER entities_fts_ad; "
                           "DROP TRIGGER entities_fts_au; DELETE FROM meta WHERE key = 'entity_fts';")
    mem = Memory(cfg, embedder=HashingEmbedder(384))
    assert _fts_names(path) == ["Barack Obama\n", "Kalorama\n"]
    out = search(mem, "Obama", GRAPH_ONLY, user_id=uid)
    assert linked(out) == {"Barack Obama": ("fulltext", 0.5)} and home in ids(out)

    scope = Scope(user_id=uid)
    obama = mem.store.find_entities(scope, ["barack obama"])["barack obama"]
    mem.store.write(scope, GraphWrite(entity_updates=[obama.model_copy(update={"aliases": ["Senator Barry"]})]))
    assert _fts_names(path) == ["Barack Obama\nSenator Barry", "Kalorama\n"]
    assert linked(search(mem, "Barry", GRAPH_ONLY, user_id=uid)) == {"Barack Obama": ("fulltext", 0.5)}
    with sqlite3.connect(path) as conn:  # a rename (no API renames yet; the trigger covers it)
        conn.execute("UPDATE entities SET name = 'B. H. Obama' WHERE id = ?", (obama.id,))
    assert _fts_names(path) == ["B. H. Obama\nSenator Barry", "Kalorama\n"]
    mem.delete(home, user_id=uid)  # the entities go with their only memory
    assert _fts_names(path) == []
    mem.close()
