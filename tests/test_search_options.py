"""Search options on both backends: as_of, time windows, expiry, decay, reranker, PPR graph scoring."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graphmem import Memory
from graphmem.config import SearchConfig
from graphmem.errors import InvalidInputError
from graphmem.models import Scope

GRAPH_ONLY = {"vector": 0.0, "fulltext": 0.0, "graph": 1.0}
TRAVERSAL_ONLY: dict[str, Any] = {"traversal_weight": 1.0, "bridge_weight": 0.0}


def ids(out: dict[str, Any]) -> list[str]:
    return [r["id"] for r in out["results"]]


def lives(city: str) -> dict[str, str]:
    return {"source": "Ana", "relation": "livesIn", "target": city, "source_type": "Person", "target_type": "City"}


def test_as_of_ranks_what_was_known_then(mem: Memory, uid: str) -> None:
    old = mem.add("Moved for a new job", infer=False, user_id=uid, triples=[lives("Beijing")])["results"][0]["id"]
    time.sleep(0.01)
    between = datetime.now(UTC)
    time.sleep(0.01)
    new = mem.add("Moved again, closer to family", infer=False, user_id=uid,
                  triples=[lives("Shanghai")])["results"][0]["id"]
    mem.config.search = SearchConfig(weights=GRAPH_ONLY, graph={"scoring": "walk", **TRAVERSAL_ONLY})
    now = mem.search("Where does Ana live?", user_id=uid, explain=True)
    assert ids(now) == [new]  # the Beijing fact was closed by the move: no longer walked
    then = mem.search("Where does Ana live?", user_id=uid, as_of=between, explain=True)
    assert ids(then) == [old]  # the Shanghai memory did not exist yet; the Beijing fact was valid
    path = then["results"][0]["score_details"]["graph"]["path"]["text"]
    assert path == "Ana -[livesIn]-> Beijing"
    assert ids(mem.search("Where does Ana live?", user_id=uid, as_of="2001-01-01")) == []


def test_time_window_uses_event_time_else_created_at(mem: Memory, uid: str) -> None:
    jan = mem.add("Went skiing in the Alps", infer=False, user_id=uid, timestamp="2024-01-05T10:00:00Z")
    mar = mem.add("Went skiing in Norway", infer=False, user_id=uid, timestamp="2024-03-10T10:00:00Z")
    untimed = mem.add("Went skiing indoors", infer=False, user_id=uid)
    first = {k: v["results"][0]["id"] for k, v in (("jan", jan), ("mar", mar), ("untimed", untimed))}
    march = mem.search("skiing", user_id=uid, since="2024-03-01", until="2024-04-01")
    assert ids(march) == [first["mar"]]
    recent = mem.search("skiing", user_id=uid, since=datetime.now(UTC) - timedelta(days=1))
    assert ids(recent) == [first["untimed"]]
    assert set(ids(mem.search("skiing", user_id=uid, until="2024-03-01"))) == {first["jan"]}
    with pytest.raises(InvalidInputError):
        mem.search("skiing", user_id=uid, since="2024-04-01", until="2024-03-01")


def test_a_time_the_question_names_lifts_what_happened_then(mem: Memory, uid: str) -> None:
    said = {month: mem.add(f"We went hiking by the lake with the kids {words}", infer=False, user_id=uid,
                           timestamp=f"2023-{month:02d}-12T10:00:00Z")["results"][0]["id"]
            for month, words in ((3, "again"), (6, "and got lost"), (10, "one more time"))}
    asked = "2023-11-20T09:00:00Z"

    def top(question: str, **kw: Any) -> str:
        return ids(mem.search(question, user_id=uid, now=asked, **kw))[0]

    assert top("When did we go hiking by the lake in June?") == said[6]
    assert top("Where did we go hiking in March 2023?") == said[3]
    assert top("Did we go hiking last month?") == said[10]  # October, against the time asked
    out = mem.search("When did we go hiking by the lake in June?", user_id=uid, now=asked, explain=True)
    details = {r["id"]: r["score_details"] for r in out["results"]}
    assert "outside_asked_time" not in details[said[6]]
    assert details[said[3]]["outside_asked_time"] == mem.config.search.outside_asked_time
    mem.config.search = SearchConfig(outside_asked_time=1.0)  # the time named is ignored: no memory moves
    plain = mem.search("When did we go hiking by the lake in June?", user_id=uid, now=asked, explain=True)
    assert all("outside_asked_time" not in r["score_details"] for r in plain["results"])


def test_the_answer_after_a_question_that_matched_is_lifted(mem: Memory, uid: str) -> None:
    """A hit that asks passes a share of its score to the memory said after it; a statement does not."""
    turns = ["Nate: That road trip sounds great! Where did you go?", "Joanna: Woodhaven, up the coast.",
             "Nate: Road trips with friends are great fun.", "Joanna: I adore long drives at night.",
             "Nate: My turtles ate lettuce today."]
    said = [mem.add([{"role": "user", "content": t}], infer=False, user_id=uid)["results"][0]["id"] for t in turns]
    question = "Where did Joanna go on her road trip?"
    out = mem.search(question, user_id=uid, top_k=5, explain=True)["results"]
    order = [r["id"] for r in out]
    assert set(order[:2]) == {said[0], said[1]}, [r["memory"] for r in out]
    details = {r["id"]: r["score_details"] for r in out}
    assert details[said[1]]["reply"]["follows"] == said[0]
    assert "reply" not in details.get(said[3], {})  # it follows a statement, not a question
    mem.config.search = SearchConfig(reply_share=0.0)
    off = mem.search(question, user_id=uid, top_k=5, explain=True)["results"]
    assert all("reply" not in r["score_details"] for r in off)
    assert [r["id"] for r in off].index(said[1]) > 1


def test_the_bridge_favours_the_memory_that_continues_the_question(mem: Memory, uid: str) -> None:
    """Two memories share Bruno Keller with the hit that names Ana's mentor; the one that holds the
    question's word the hit lacks ("live") receives the larger bridge."""
    def fact(source: str, relation: str, target: str) -> dict[str, str]:
        return {"source": source, "relation": relation, "target": target, "source_type": "Person",
                "target_type": "City" if relation == "livesIn" else "Person"}

    seed = mem.add("Ana's mentor is Bruno Keller.", infer=False, user_id=uid,
                   triples=[fact("Ana", "knows", "Bruno Keller")])["results"][0]["id"]
    chess = mem.add("Bruno Keller plays chess with Dmitri on Sundays.", infer=False, user_id=uid,
                    triples=[fact("Bruno Keller", "knows", "Dmitri")])["results"][0]["id"]
    home = mem.add("Bruno Keller and his two cats live in Oslo.", infer=False, user_id=uid,
                   triples=[fact("Bruno Keller", "livesIn", "Oslo")])["results"][0]["id"]
    mem.config.search = SearchConfig(weights=GRAPH_ONLY, graph={"traversal_weight": 0.0})
    out = mem.search("Where does the mentor of Ana live?", user_id=uid, explain=True)["results"]
    bridges = {r["id"]: r["score_details"]["graph"]["path"]["bridge"] for r in out
               if "bridge" in r["score_details"].get("graph", {}).get("path", {})}
    assert bridges[home] == {"memory": seed, "entity": "Bruno Keller", "continues": 1.0}
    assert bridges[chess]["continues"] == 0.0
    assert [r["id"] for r in out].index(home) < [r["id"] for r in out].index(chess)


@pytest.mark.parametrize(("question", "spans"), [
    ("Where did I go in March?", [("2023-03-01", "2023-04-15")]),
    ("What did I buy two weeks ago?", [("2023-05-14", "2023-06-04")]),
    ("Who won on 3 May, 2023?", [("2023-04-26", "2023-05-06")]),
    ("What did I do last year?", [("2022-01-01", "2023-02-01")]),
    ("Can you recommend a film for tonight?", []),  # from today on: nothing said before is lowered
    ("What is planned next month?", []),
    ("What time did I reach the clinic on Monday?", []),  # which Monday?
    ("What did I do two weeks before the wedding?", []),  # counted from the wedding, not from now
    ("Who is Caroline?", []),
])
def test_the_spans_a_question_names(question: str, spans: list[tuple[str, str]]) -> None:
    from graphmem.search.when import asked_spans

    got = asked_spans(question, datetime(2023, 5, 28, 12, tzinfo=UTC))
    assert [(s.start.date().isoformat(), s.end.date().isoformat()) for s in got] == spans


def test_expired_memories_are_not_returned(mem: Memory, uid: str) -> None:
    added = datetime.now(UTC)
    gone = mem.add("The door code is 4812", infer=False, user_id=uid,
                   expires_at=added + timedelta(hours=1))["results"][0]["id"]
    kept = mem.add("The door code changes monthly", infer=False, user_id=uid)["results"][0]["id"]
    assert set(ids(mem.search("door code", user_id=uid))) == {gone, kept}
    assert ids(mem.search("door code", user_id=uid, as_of=added + timedelta(hours=2))) == [kept]
    assert mem.get(gone, user_id=uid)["expires_at"]  # expired is not deleted
    with pytest.raises(InvalidInputError):
        mem.add("too late", infer=False, user_id=uid, expires_at="2001-01-01")


def test_decay_by_type_and_age(mem: Memory, uid: str) -> None:
    now = datetime.now(UTC)
    old = mem.add("Had coffee with Rui", infer=False, user_id=uid, memory_type="episodic",
                  timestamp=now - timedelta(days=60))["results"][0]["id"]
    fresh = mem.add("Had coffee with Rui", infer=False, user_id=f"{uid}-b", memory_type="episodic",
                    timestamp=now)["results"][0]["id"]
    rule = mem.add("Had coffee with Rui", infer=False, user_id=f"{uid}-c", memory_type="procedural",
                   timestamp=now - timedelta(days=60))["results"][0]["id"]
    mem.config.search = SearchConfig(decay={"half_life_days": {"episodic": 30}, "floor": 0.1})

    def top(user: str) -> dict[str, Any]:
        out: dict[str, Any] = mem.search("coffee with Rui", user_id=user, explain=True)["results"][0]
        return out

    a, b, c = top(uid), top(f"{uid}-b"), top(f"{uid}-c")
    assert (a["id"], b["id"], c["id"]) == (old, fresh, rule)
    assert a["score_details"]["decay"] == pytest.approx(0.25, rel=1e-3)  # two half-lives
    assert a["score"] == pytest.approx(b["score"] * 0.25, rel=1e-3)
    assert "decay" not in c["score_details"] and c["score"] == pytest.approx(b["score"], rel=1e-6)
    mem.config.search = SearchConfig(decay={"half_life_days": {"episodic": 1}, "floor": 0.3})
    assert top(uid)["score_details"]["decay"] == pytest.approx(0.3)


def test_decay_is_slower_for_memories_in_use(mem: Memory, uid: str) -> None:
    """With decay, each time search returns a memory lengthens its half-life: uses are buffered in the
    process (counted at once), then stored (counted by any process)."""
    now = datetime.now(UTC)

    def add(text: str, days: int, user: str = uid) -> str:
        out = mem.add(text, infer=False, user_id=user, memory_type="episodic", timestamp=now - timedelta(days=days))
        mid: str = out["results"][0]["id"]
        return mid

    tea, cafe, theirs = add("Drank green tea with Rui", 60), add("Drank green tea at the cafe", 10), \
        add("Drank green tea with Rui", 60, user=f"{uid}-b")
    buffered = {"half_life_days": {"episodic": 30}, "floor": 0.01, "flush_every": 1000, "flush_seconds": 3600}

    def decays(m: Memory, **kw: Any) -> dict[str, float]:
        out = m.search("green tea", user_id=uid, explain=True, **kw)
        return {r["id"]: r["score_details"].get("decay", 1.0) for r in out["results"]}

    def half_lives(days: int, uses: int) -> float:
        return float(0.5 ** (days / (30 * (1 + math.log2(1 + uses)))))

    mem.config.search = SearchConfig(decay={**buffered, "access": False})  # by age alone; nothing recorded
    assert decays(mem) == pytest.approx({tea: half_lives(60, 0), cafe: half_lives(10, 0)}, rel=1e-3)
    mem.config.search = SearchConfig(decay=buffered)
    assert ids(mem.search("green tea", user_id=uid, filters={"id": tea})) == [tea]  # one use: half-life x2
    assert decays(mem) == pytest.approx({tea: half_lives(60, 1), cafe: half_lives(10, 0)}, rel=1e-3)
    assert mem.get(tea, user_id=uid)["access_count"] == 0  # still buffered
    # what was known then: uses neither count nor are recorded
    assert decays(mem, as_of=datetime.now(UTC)) == pytest.approx({tea: 0.25, cafe: half_lives(10, 0)}, rel=1e-3)

    mem.config.search = SearchConfig(decay={**buffered, "flush_every": 1})
    mem.search("green tea", user_id=uid, filters={"id": tea})  # due: the buffer is written
    assert (mem.get(tea, user_id=uid)["access_count"], mem.get(cafe, user_id=uid)["access_count"]) == (3, 1)
    assert datetime.fromisoformat(mem.get(tea, user_id=uid)["last_accessed_at"]) >= now
    with Memory(mem.config, embedder=mem.embedder) as other:  # a fresh process counts the stored uses
        assert decays(other) == pytest.approx({tea: half_lives(60, 3), cafe: half_lives(10, 1)}, rel=1e-3)
    mem.store.touch(Scope(user_id=f"{uid}-b"), {tea: (5, now)})  # another tenant's id: skipped
    assert mem.get(tea, user_id=uid)["access_count"] == 4  # 3 + the fresh process's search
    assert mem.get(theirs, user_id=f"{uid}-b")["access_count"] == 0


def test_decay_reorders_beyond_the_first_k_fused(mem: Memory, uid: str) -> None:
    """Search stops reading hits once decay could not lift them into the top k: a fresh memory whose
    fused score is below an old one's must still win, and a small top_k must be a prefix of a big one."""
    now = datetime.now(UTC)
    for i in range(6):
        mem.add(f"Rui and Ana had coffee at the harbour cafe, visit {i}", infer=False, user_id=uid,
                memory_type="episodic", timestamp=now - timedelta(days=120 + i))
    fresh = mem.add("Rui had coffee", infer=False, user_id=uid, memory_type="episodic",
                    timestamp=now)["results"][0]["id"]
    query = "Rui and Ana coffee at the harbour cafe"
    undecayed = ids(mem.search(query, user_id=uid, top_k=7))
    assert undecayed.index(fresh) > 0  # by fused score alone it is not first
    mem.config.search = SearchConfig(decay={"half_life_days": {"episodic": 30}, "floor": 0.05})
    best = mem.search(query, user_id=uid, top_k=1, explain=True)["results"]
    assert [r["id"] for r in best] == [fresh]
    full = ids(mem.search(query, user_id=uid, top_k=7))
    for k in (1, 2, 3, 5):
        assert ids(mem.search(query, user_id=uid, top_k=k)) == full[:k]


class ByLength:
    """A reranker that prefers short texts: an order no fused score would give."""

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls += 1
        return [-float(len(t)) for t in texts]


def test_reranker_reorders_the_head(backend: str, tmp_path: Any, uid: str) -> None:
    from graphmem import MemoryConfig
    from graphmem.embedding import HashingEmbedder

    from .conftest import make_config

    ranker = ByLength()
    mem = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384), reranker=ranker)
    try:
        texts = ["tea is a drink made from leaves, loved in many countries for centuries", "tea time",
                 "green tea and black tea come from the same plant"]
        for t in texts:
            mem.add(t, infer=False, user_id=uid)
        mem.config.search = SearchConfig(rerank={"top_n": 2})
        plain = mem.search("tea", user_id=uid, explain=True)["results"]
        head = sorted(plain[:2], key=lambda r: len(r["memory"]))
        assert [r["id"] for r in plain[:2]] == [r["id"] for r in head]
        assert all("rerank" in r["score_details"] for r in plain[:2]) and "rerank" not in plain[2]["score_details"]
        assert ranker.calls == 1
    finally:
        mem.close()


@pytest.mark.slow
def test_missing_cross_encoder_is_a_config_error(mem: Memory, uid: str) -> None:
    from graphmem.errors import ConfigError

    mem.add("tea", infer=False, user_id=uid)
    mem.config.search = SearchConfig(rerank={"model": "graphmem-tests/no-such-cross-encoder"})
    with pytest.raises(ConfigError):  # not installed, or not found offline: a config error either way
        mem.search("tea", user_id=uid)


def test_ppr_reaches_memories_through_shared_names(mem: Memory, uid: str) -> None:
    """Two hops over mentions: the question names the journal; the publisher's memory never does."""
    a = mem.add("The Journal of Quiet Physics is published by the Halvard Society.", user_id=uid)
    b = mem.add("The Halvard Society was founded by Ilse Brandt in 1921.", user_id=uid)
    for distractor in ("Who founded the physics journal publisher is a common quiz question.",
                       "A publisher of quiet journals was founded in Oslo.",
                       "The founder of the Physics Journal Club published a quiet memoir."):
        mem.add(distractor, infer=False, user_id=uid)
    journal, society = a["results"][0]["id"], b["results"][0]["id"]
    mem.config.search = SearchConfig(weights=GRAPH_ONLY, graph={"seed_memories": 0})  # the named entity only
    out = mem.search("Who founded the publisher of the Journal of Quiet Physics?", user_id=uid, explain=True)
    got = ids(out)
    assert got[:2] == [journal, society]
    assert "Journal of Quiet Physics" in [x["name"] for x in out["graph"]["linked"]]
    mem.config.search = SearchConfig(weights={"vector": 0.6, "fulltext": 0.4, "graph": 0.0})
    assert society not in ids(mem.search("Who founded the publisher of the Journal of Quiet Physics?",
                                         user_id=uid, top_k=2))


def test_search_takes_the_callers_query_vector(mem: Memory, uid: str) -> None:
    """A caller that already embedded the query passes the vector; search does not embed it again."""
    for t in ("Ana plays the cello", "Bo repairs bicycles", "The cafe opens at nine"):
        mem.add(t, infer=False, user_id=uid)
    query = "who plays music"
    plain = mem.search(query, user_id=uid, top_k=3, explain=True)["results"]
    given = mem.search(query, user_id=uid, top_k=3, explain=True, vector=list(mem.embedder.embed_one(query) * 3.0))
    assert [r["id"] for r in given["results"]] == [r["id"] for r in plain]
    assert [r["score"] for r in given["results"]] == pytest.approx([r["score"] for r in plain])
    other = mem.embedder.embed_one("bicycle repair shop")
    steered = mem.search(query, user_id=uid, top_k=3, explain=True, vector=other)["results"]
    bo = next(r for r in steered if r["memory"] == "Bo repairs bicycles")
    assert bo["score_details"]["vector"]["raw"] == pytest.approx(float(other @ mem.embedder.embed_one(bo["memory"])),
                                                                 abs=1e-5)
    for bad in ([1.0, 2.0], [float("nan")] * mem.embedder.dims, ["x"] * mem.embedder.dims):
        with pytest.raises(InvalidInputError):
            mem.search(query, user_id=uid, vector=bad)
