"""Fusion rules (``search.fusion``) and the read plan of the search stages."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from graphmem import Memory, MemoryConfig
from graphmem.config import SearchConfig
from graphmem.errors import ConfigError
from graphmem.models import Scope
from graphmem.search import fusion
from graphmem.search.engine import SearchRequest, plan_read
from graphmem.search.fusion import Fusion, Hits

TEXT = {"vector": 0.5, "fulltext": 0.5, "graph": 0.0}
# "a" leads the vector signal by far; "b" leads full text by a hair over "c" and "a"
SIGNALS: dict[str, list[tuple[str, float]]] = {
    "vector": [("a", 0.9), ("b", 0.2), ("c", 0.1)],
    "fulltext": [("b", 10.0), ("c", 9.9), ("a", 9.8)],
}


def order(rule: str, signals: dict[str, list[tuple[str, float]]] = SIGNALS, **extra: Any) -> list[str]:
    return [mid for mid, _ in Fusion(signals, SearchConfig(weights=TEXT, fusion=rule, **extra)).ranked()]


def test_rules_rank_the_same_candidates_differently() -> None:
    assert order("weighted") == ["a", "b", "c"]  # a's cosine margin counts, full text barely separates
    assert order("rrf") == ["b", "a", "c"]  # ranks only: b is 2nd and 1st, a 1st and 3rd
    assert order("minmax") == ["b", "a", "c"]  # full text's 0.2 spread becomes the whole [0, 1]
    # cosines close together: a's 0.02 lead stays small by score, minmax makes it the whole span
    close = {"vector": [("a", 0.50), ("b", 0.48), ("c", 0.45)], "fulltext": [("b", 10.0), ("c", 9.0), ("a", 2.0)]}
    assert order("weighted", close) == ["b", "c", "a"]
    assert order("minmax", close) == ["b", "a", "c"]


def test_rrf_shares_follow_ranks_and_k() -> None:
    fused = Fusion(SIGNALS, SearchConfig(weights=TEXT, fusion="rrf", rrf_k=60))
    assert fused.details("b")["fulltext"]["normalized"] == pytest.approx(1.0)  # first of its signal
    assert fused.details("b")["vector"]["normalized"] == pytest.approx(61 / 62)
    assert fused.scores["b"] == pytest.approx((1 + 61 / 62) / 2)
    assert fused.rule == "rrf"
    # a small k separates the first ranks more: the third of a signal keeps less of its share
    sharp = Fusion(SIGNALS, SearchConfig(weights=TEXT, fusion="rrf", rrf_k=1))
    assert sharp.details("a")["fulltext"]["normalized"] == pytest.approx(2 / 4)
    with pytest.raises(ConfigError):
        MemoryConfig.load({"search": {"rrf_k": 0}})


def test_a_weight_of_zero_leaves_its_signal_out_of_every_rule() -> None:
    for rule in ("weighted", "minmax", "rrf"):
        fused = Fusion(SIGNALS, SearchConfig(weights={"vector": 1.0, "fulltext": 0.0, "graph": 0.0}, fusion=rule))
        assert [m for m, _ in fused.ranked()] == ["a", "b", "c"], rule
        assert "fulltext" not in fused.details("b")


def test_a_registered_rule_is_chosen_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fusion, "_RULES", dict(fusion._RULES))  # registrations end with the test

    def last_first(signal: str, hits: Hits, cfg: SearchConfig) -> dict[str, float]:
        return {mid: rank / len(hits) for rank, (mid, _) in enumerate(hits, start=1)}

    fusion.register("last_first", last_first)
    assert "last_first" in fusion.rules()
    assert order("last_first") == ["c", "a", "b"]  # c: 3rd and 2nd; a: 1st and 3rd; b: 2nd and 1st
    with pytest.raises(ValueError, match="exists"):
        fusion.register("rrf", last_first)
    with pytest.raises(ValueError, match="letter"):
        fusion.register("last first", last_first)
    fusion.register("rrf", last_first, replace=True)
    assert order("rrf") == order("last_first")


def test_an_unknown_rule_fails_naming_the_known_ones(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fusion, "_RULES", {n: fusion._RULES[n] for n in ("weighted", "minmax", "rrf")})
    with pytest.raises(ConfigError, match=r"search\.fusion"):
        MemoryConfig.load({"search": {"fusion": "min max"}})  # not a name at all: at load
    config = {"home": str(tmp_path), "embedder": {"provider": "hashing", "dims": 64}}
    with pytest.raises(ConfigError, match="no fusion rule 'rff'; available: minmax, rrf, weighted"):
        Memory(MemoryConfig.load({**config, "search": {"fusion": "rff"}}))  # when the Memory is made
    assert not (tmp_path / "graphmem.db").exists(), "a refused configuration opened a store"
    mem = Memory(MemoryConfig.load(config))
    try:
        mem.config.search = SearchConfig(fusion="rff")  # changed afterwards: at the next search
        with pytest.raises(ConfigError, match="no fusion rule 'rff'; available: minmax, rrf, weighted"):
            mem.search("anything", user_id="u")
    finally:
        mem.close()


@pytest.mark.parametrize("rule", ["weighted", "minmax", "rrf"])
def test_explain_names_the_rule_that_ranked(mem: Memory, uid: str, rule: str) -> None:
    mem.add("Ana plays the cello in a quartet", infer=False, user_id=uid)
    mem.add("Bruno repairs old bicycles", infer=False, user_id=uid)
    mem.config.search = SearchConfig(fusion=rule)
    out = mem.search("who plays the cello?", user_id=uid, explain=True)
    assert out["results"][0]["memory"].startswith("Ana plays the cello")
    assert all(r["score_details"]["fusion"] == rule for r in out["results"])
    details = out["results"][0]["score_details"]
    shares = {s: details[s] for s in ("vector", "fulltext", "graph") if s in details}
    assert out["results"][0]["score"] == pytest.approx(sum(d["contribution"] for d in shares.values()))
    if rule != "weighted":  # first in both text signals: the largest share in each
        assert shares["vector"]["normalized"] == shares["fulltext"]["normalized"] == 1.0


def test_the_graph_is_seeded_alike_whatever_the_rule(mem: Memory, uid: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.search import engine

    seen: list[dict[str, float]] = []
    walk = engine.graph_candidates

    def spy(*args: Any) -> Any:
        seen.append(args[5])  # the seeds: memory id -> score
        return walk(*args)

    monkeypatch.setattr(engine, "graph_candidates", spy)
    for text in ("Ana plays the cello in a quartet", "Ana moved to Porto", "Bruno plays the drums"):
        mem.add(text, infer=False, user_id=uid)
    for rule in ("weighted", "minmax", "rrf"):
        mem.config.search = SearchConfig(fusion=rule)
        mem.search("what does Ana play?", user_id=uid)
    assert len(seen) == 3 and seen[0] and seen[0] == seen[1] == seen[2]


def test_the_plan_reads_only_what_fusion_or_the_graph_needs() -> None:
    req = SearchRequest(scope=Scope.of("u"), text="where does Ana live?", k=5)
    vec = np.ones(4, dtype=np.float32) / 2
    vector_only = plan_read(req, SearchConfig(weights={"vector": 1.0, "fulltext": 0.0, "graph": 0.0}), vec, None)
    assert vector_only.text is None and vector_only.graph is None and vector_only.vector is not None
    # the graph is weighed: both text signals are read to seed it, even at weight 0
    graph_only = plan_read(req, SearchConfig(weights={"vector": 0.0, "fulltext": 0.0, "graph": 1.0}), vec, None)
    assert graph_only.text == req.text and graph_only.vector is not None and graph_only.graph is not None
    assert graph_only.n == 60 and graph_only.timed is None  # no ontology loaded: decided after the read
    blank = plan_read(req, SearchConfig(), np.zeros(4, dtype=np.float32), None)
    assert blank.vector is None  # a text with no features has no direction
