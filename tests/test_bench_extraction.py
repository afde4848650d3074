"""The extraction benchmark's scorer gives known precision/recall/F1 on a known prediction, and the
gold set is valid: it parses, and every gold relation is a property of the default ontology whose
domain and range admit the endpoint types the conversation gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from extraction_score import relations_of, scope_user, score  # noqa: E402

from graphmem.ontology import Ontology  # noqa: E402

GOLD = BENCH / "data" / "extraction-gold.jsonl"


def _entity(i: str, name: str, aliases: list[str] | None = None) -> dict[str, object]:
    return {"id": i, "name": name, "aliases": aliases or []}


def test_known_prediction_scores_known_prf(ontology: Ontology) -> None:
    gold = [{"id": "c1", "tags": ["t"], "memories": ["Maya is allergic to peanuts", "Maya lives in Porto"],
             "triples": [["Maya", "worksFor", "Northwind"], ["Maya", "livedIn", "Lisbon"],
                         ["Maya", "friendOf", "Tom"], ["Maya", "allergicTo", "peanuts"]],
             "aliases": {}}]
    run = {"entities": [_entity("m", "maya"), _entity("n", "Northwind"), _entity("l", "Lisbon"),
                        _entity("t", "Tom"), _entity("p", "peanut"), _entity("u", "user")],
           "facts": [
               {"relation_name": "gm:employs", "source": {"id": "n"}, "target": {"id": "m"}},  # inverse: match
               {"relation_name": "gm:livesIn", "source": {"id": "m"}, "target": {"id": "l"},
                "valid_to": "2026-01-01T00:00:00Z"},  # superseded livesIn reads as livedIn: match
               {"relation_name": "gm:friendOf", "source": {"id": "t"}, "target": {"id": "m"}},  # symmetric: match
               {"relation_name": "gm:dislikes", "source": {"id": "m"}, "target": {"id": "p"}},  # super-property: miss
               {"relation_name": "gm:livesIn", "source": {"id": "u"}, "target": {"id": "l"}},  # extra
           ],
           "memories": [{"memory": "I'm allergic to peanuts.", "actor_id": "Maya"},
                        {"memory": "How can I help today?"}]}
    result = score(gold, {"c1": run}, relations_of(ontology))
    assert result["triples"] == {"precision": 0.6, "recall": 0.75, "f1": 0.6667, "tp": 3, "gold": 4, "stored": 5}
    assert result["memories"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 1, "gold": 2, "stored": 2}
    row = result["per_conversation"][0]
    assert row["triples"]["missed"] == ["Maya allergicTo peanuts"]
    assert row["memories"]["extra"] == ["How can I help today?"]


def test_smalltalk_counts_anything_stored_as_false_positive(ontology: Ontology) -> None:
    gold = [{"id": "s", "tags": ["smalltalk"], "memories": [], "triples": []}]
    run = {"entities": [], "facts": [], "memories": [{"memory": "Hello! How can I help you today?"}]}
    result = score(gold, {"s": run}, relations_of(ontology))
    assert result["smalltalk"] == {"conversations": 1, "with_anything_stored": 1, "memories": 1, "facts": 0}
    assert result["memories"]["precision"] == 0.0


CLINIC = BENCH.parent / "examples" / "ontologies" / "clinic"


@pytest.mark.parametrize(("name", "at_least"), [("extraction-gold.jsonl", 30), ("extraction-holdout.jsonl", 25),
                                                ("extraction-holdout-2.jsonl", 40), ("extraction-clinic.jsonl", 20),
                                                ("extraction-dev-2.jsonl", 40), ("extraction-clinic-dev.jsonl", 20)])
def test_gold_sets_are_valid(ontology: Ontology, name: str, at_least: int) -> None:
    """Every gold set parses, and every triple and validity row uses a relation of its ontology whose
    domain and range admit the endpoint types the conversation gives."""
    if name.startswith("extraction-clinic"):
        ontology = Ontology.load(CLINIC / "clinic.ttl", CLINIC / "clinic.shapes.ttl")
    convs = [json.loads(line) for line in (BENCH / "data" / name).read_text(encoding="utf-8").splitlines()
             if line.strip()]
    assert len(convs) >= at_least
    assert len({c["id"] for c in convs}) == len(convs)
    for c in convs:
        assert {"id", "tags", "reference_time", "messages", "memories", "triples", "types"} <= c.keys(), c["id"]
        rows = [(s, r, t) for s, r, t in c["triples"]] + [(s, r, t) for s, r, t, _f, _u in c.get("validity", [])]
        for s, r, t in rows:
            info = ontology.relation_info(r)
            assert info is not None and info.name == r, (c["id"], r)
            assert all(ontology.is_subclass(c["types"][s], d) for d in info.domain), (c["id"], s, r)
            if info.kind == "object":
                assert all(ontology.is_subclass(c["types"][t], d) for d in info.range), (c["id"], r, t)


def test_user_endpoint_is_the_scope_user(ontology: Ontology) -> None:
    """``@user`` in gold stands for the scope the benchmark adds the conversation under."""
    gold = [{"id": "u1", "tags": [], "memories": [], "triples": [["@user", "livesIn", "Oslo"]], "aliases": {}}]
    run = {"entities": [_entity("u", scope_user("u1"), ["Kari"]), _entity("o", "Oslo")],
           "facts": [{"relation_name": "gm:livesIn", "source": {"id": "u"}, "target": {"id": "o"}}],
           "memories": []}
    assert score(gold, {"u1": run}, relations_of(ontology))["triples"]["tp"] == 1


def test_validity_rows_are_found_and_dated(ontology: Ontology) -> None:
    """A stated end is found on a closed fact and dated by its month; a fact without it is found, not dated."""
    gold = [{"id": "v1", "tags": [], "memories": [], "triples": [], "aliases": {},
             "validity": [["Kari", "worksFor", "Norrbrook", None, "2026-01-01"],
                          ["Kari", "worksFor", "Statnett", "2023-05-01", None],
                          ["Kari", "livesIn", "Oslo", "2020-01-01", None]]}]
    run = {"entities": [_entity("k", "Kari"), _entity("n", "Norrbrook"), _entity("s", "Statnett")],
           "facts": [{"relation_name": "gm:worksFor", "source": {"id": "k"}, "target": {"id": "n"},
                      "valid_from": "2024-02-01T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"},
                     {"relation_name": "gm:employs", "source": {"id": "s"}, "target": {"id": "k"},
                      "valid_from": "2026-02-01T00:00:00Z", "valid_to": None}],
           "memories": []}
    assert score(gold, {"v1": run}, relations_of(ontology))["validity"] == {"rows": 3, "found": 2, "dated": 1}


def test_a_gold_set_under_another_ontology_is_named_not_scored(ontology: Ontology) -> None:
    """The clinic set scored under the default ontology would be a silent F1 of 0: the benchmark names the
    relations the ontology lacks (and refuses to run) instead."""
    from extraction import _unknown_relations, load_gold

    clinic = load_gold(BENCH / "data" / "extraction-clinic-dev.jsonl")
    assert _unknown_relations(load_gold(GOLD), relations_of(ontology).names) == []
    unknown = _unknown_relations(clinic, relations_of(ontology).names)
    assert "takesDrug" in unknown
    with_clinic = Ontology.load(CLINIC / "clinic.ttl", CLINIC / "clinic.shapes.ttl")
    assert _unknown_relations(clinic, relations_of(with_clinic).names) == []
