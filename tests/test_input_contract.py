"""One input contract for every public method of ``Memory``, on both backends.

Every argument is checked before the store is touched; a bad one raises a ``GraphmemError``
subclass with a short message (echoed input cut to about a hundred characters), and the store is
unchanged. Each case here was a raw Python exception (or silently accepted) before.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import (
    GraphmemError,
    InvalidFilterError,
    InvalidInputError,
    NotFoundError,
    ScopeError,
    UnsupportedError,
    short,
)
from graphmem.extraction import Extraction, ExtractionContext, Extractor
from graphmem.extraction.contract import ExtractedEntity, ExtractedMemory, ExtractedTriple
from graphmem.models import Scope, parse_datetime
from graphmem.pipeline import parse_triples

from .conftest import make_config

S = "\ud800"  # a lone surrogate: a valid Python str that no UTF-8 store can hold
MAX_MESSAGE = 300


def _nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"a": leaf}
    for _ in range(depth - 1):
        out = {"a": out}
    return out


def _not_chain(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n": 1}
    for _ in range(depth):
        out = {"NOT": out}
    return out


def _triple(**kw: Any) -> list[dict[str, Any]]:
    return [{"source": "Alice", "relation": "livesIn", "target": "Lisbon", **kw}]


Call = Callable[[Memory, str, str], Any]
"""(memory, user id, an existing memory's id) -> the call under test."""

REFUSED: list[tuple[str, Call, type[GraphmemError]]] = [
    # huge integers, NaN and infinity
    ("filter int beyond 64 bits", lambda m, u, i: m.get_all(user_id=u, filters={"n": 2**70}), InvalidFilterError),
    ("filter gte beyond 64 bits", lambda m, u, i: m.search("x", user_id=u, filters={"n": {"gte": -2**70}}),
     InvalidFilterError),
    ("filter in beyond 64 bits", lambda m, u, i: m.get_all(user_id=u, filters={"n": {"in": [1, 2**64]}}),
     InvalidFilterError),
    ("filter contains beyond 64 bits", lambda m, u, i: m.get_all(user_id=u, filters={"n": {"contains": 2**70}}),
     InvalidFilterError),
    ("filter NaN", lambda m, u, i: m.get_all(user_id=u, filters={"n": math.nan}), InvalidFilterError),
    ("filter inf", lambda m, u, i: m.get_all(user_id=u, filters={"n": {"lt": math.inf}}), InvalidFilterError),
    ("filter time NaN", lambda m, u, i: m.get_all(user_id=u, filters={"created_at": {"gte": math.nan}}),
     InvalidFilterError),
    ("filter time out of range", lambda m, u, i: m.get_all(user_id=u, filters={"created_at": {"gte": 10**20}}),
     InvalidFilterError),
    ("timestamp NaN", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=math.nan), InvalidInputError),
    ("timestamp inf", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=-math.inf), InvalidInputError),
    ("timestamp 10**20", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=10**20), InvalidInputError),
    ("timestamp 10**400", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=10**400), InvalidInputError),
    ("timestamp in milliseconds", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=1714557600000),
     InvalidInputError),
    ("timestamp bool", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=True), InvalidInputError),
    ("timestamp list", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp=[1]), InvalidInputError),
    ("timestamp huge string", lambda m, u, i: m.add("t1", infer=False, user_id=u, timestamp="2" * 10**6),
     InvalidInputError),
    ("as_of overflows into UTC", lambda m, u, i: m.search("x", user_id=u, as_of="9999-12-31T23:59:59-05:00"),
     InvalidInputError),
    ("since underflows into UTC", lambda m, u, i: m.search("x", user_id=u, since="0001-01-01T00:00:00+05:00"),
     InvalidInputError),
    ("until datetime overflows", lambda m, u, i: m.search(
        "x", user_id=u, until=datetime.max.replace(tzinfo=timezone(timedelta(hours=-5)))), InvalidInputError),
    ("expires_at overflows", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                   expires_at="9999-12-31T23:59:59-05:00"), InvalidInputError),
    ("expires_at 10**20", lambda m, u, i: m.add("t1", infer=False, user_id=u, expires_at=10**20), InvalidInputError),
    ("expires_at a dict", lambda m, u, i: m.add("t1", infer=False, user_id=u, expires_at={}), InvalidInputError),
    ("threshold NaN", lambda m, u, i: m.search("x", user_id=u, threshold=math.nan), InvalidInputError),
    ("threshold a string", lambda m, u, i: m.search("x", user_id=u, threshold="0.5"), InvalidInputError),
    ("threshold a bool", lambda m, u, i: m.search("x", user_id=u, threshold=True), InvalidInputError),
    ("top_k beyond 64 bits", lambda m, u, i: m.search("x", user_id=u, top_k=2**70), InvalidInputError),
    ("top_k over limits.max_top_k", lambda m, u, i: m.search("x", user_id=u, top_k=10**9), InvalidInputError),
    ("top_k a float", lambda m, u, i: m.search("x", user_id=u, top_k=5.0), InvalidInputError),
    ("limit beyond 64 bits", lambda m, u, i: m.get_all(user_id=u, limit=2**70), InvalidInputError),
    ("limit a bool", lambda m, u, i: m.get_all(user_id=u, limit=True), InvalidInputError),
    # lone surrogates
    ("surrogate memory id: get", lambda m, u, i: m.get(S, user_id=u), InvalidInputError),
    ("surrogate memory id: delete", lambda m, u, i: m.delete("a" + S, user_id=u), InvalidInputError),
    ("surrogate memory id: history", lambda m, u, i: m.history(S, user_id=u), InvalidInputError),
    ("surrogate memory id: update", lambda m, u, i: m.update(S, "new", user_id=u), InvalidInputError),
    ("surrogate user_id", lambda m, u, i: m.get_all(user_id=S), ScopeError),
    ("surrogate agent_id", lambda m, u, i: m.add("t1", infer=False, agent_id="a" + S), ScopeError),
    ("surrogate run_id", lambda m, u, i: m.delete_all(user_id=u, run_id=S), ScopeError),
    ("surrogate metadata key", lambda m, u, i: m.add("t1", infer=False, user_id=u, metadata={S: 1}),
     InvalidInputError),
    ("surrogate metadata value", lambda m, u, i: m.add("t1", infer=False, user_id=u, metadata={"k": [S]}),
     InvalidInputError),
    ("surrogate in update metadata", lambda m, u, i: m.update(i, metadata={"k": S}, user_id=u), InvalidInputError),
    ("surrogate filter value", lambda m, u, i: m.get_all(user_id=u, filters={"k": S}), InvalidFilterError),
    ("surrogate filter in", lambda m, u, i: m.get_all(user_id=u, filters={"k": {"in": ["a", S]}}),
     InvalidFilterError),
    ("surrogate filter icontains", lambda m, u, i: m.search("x", user_id=u, filters={"k": {"icontains": S}}),
     InvalidFilterError),
    ("surrogate triple target", lambda m, u, i: m.add("t1", infer=False, user_id=u, triples=_triple(target=S)),
     InvalidInputError),
    ("surrogate message name", lambda m, u, i: m.add({"role": "user", "content": "hi", "name": S}, infer=False,
                                                     user_id=u), InvalidInputError),
    ("surrogate recheck id", lambda m, u, i: m.recheck(user_id=u, ids=[S]), InvalidInputError),
    ("surrogate cypher query", lambda m, u, i: m.cypher("RETURN '" + S + "'"), InvalidInputError),
    # wrong types
    ("delete a list of ids", lambda m, u, i: m.delete(["id"], user_id=u), InvalidInputError),
    ("get an int id", lambda m, u, i: m.get(5, user_id=u), InvalidInputError),
    ("history an empty id", lambda m, u, i: m.history("", user_id=u), InvalidInputError),
    ("recheck ids=5", lambda m, u, i: m.recheck(user_id=u, ids=5), InvalidInputError),
    ("recheck ids a string", lambda m, u, i: m.recheck(user_id=u, ids="abc"), InvalidInputError),
    ("recheck ids of ints", lambda m, u, i: m.recheck(user_id=u, ids=[1]), InvalidInputError),
    ("dry_run(None)", lambda m, u, i: m.dry_run(None, user_id=u), InvalidInputError),
    ("dry_run a path", lambda m, u, i: m.dry_run("ontology.ttl"), InvalidInputError),
    ("cypher an int", lambda m, u, i: m.cypher(5), InvalidInputError),
    ("cypher empty", lambda m, u, i: m.cypher("  "), InvalidInputError),
    ("cypher params a list", lambda m, u, i: m.cypher("RETURN 1", [1]), InvalidInputError),
    ("cypher param name an int", lambda m, u, i: m.cypher("RETURN 1", {1: 1}), InvalidInputError),
    ("infer a string", lambda m, u, i: m.add("t1", user_id=u, infer="no"), InvalidInputError),
    ("update infer a string", lambda m, u, i: m.update(i, "new text", user_id=u, infer="no"), InvalidInputError),
    ("explain a string", lambda m, u, i: m.search("x", user_id=u, explain="yes"), InvalidInputError),
    ("include_released a string", lambda m, u, i: m.rejected(user_id=u, include_released="yes"),
     InvalidInputError),
    ("memory_type a dict", lambda m, u, i: m.add("t1", infer=False, user_id=u, memory_type={}), InvalidInputError),
    ("memory_type unknown", lambda m, u, i: m.add("t1", infer=False, user_id=u, memory_type="dream"),
     InvalidInputError),
    ("vector a string", lambda m, u, i: m.search("x", user_id=u, vector="1" * 384), InvalidInputError),
    ("vector of strings", lambda m, u, i: m.search("x", user_id=u, vector=["1"] * 384), InvalidInputError),
    ("vector of bools", lambda m, u, i: m.search("x", user_id=u, vector=[True] * 384), InvalidInputError),
    ("vector all zeros", lambda m, u, i: m.search("x", user_id=u, vector=[0.0] * 384), InvalidInputError),
    ("vector wrong size", lambda m, u, i: m.search("x", user_id=u, vector=[1.0] * 3), InvalidInputError),
    ("vector of objects", lambda m, u, i: m.search("x", user_id=u, vector=np.array([object()] * 384)),
     InvalidInputError),
    ("vector with NaN", lambda m, u, i: m.search("x", user_id=u, vector=[math.nan] + [1.0] * 383),
     InvalidInputError),
    ("filters a list", lambda m, u, i: m.get_all(user_id=u, filters=[{"a": 1}]), InvalidFilterError),
    ("filters an array", lambda m, u, i: m.get_all(user_id=u, filters=np.array([1])), InvalidFilterError),
    ("filters unknown operator", lambda m, u, i: m.get_all(user_id=u, filters={"a": {"like": 1}}),
     InvalidFilterError),
    ("filters a bad key", lambda m, u, i: m.get_all(user_id=u, filters={"a b": 1}), InvalidFilterError),
    ("filters object value", lambda m, u, i: m.get_all(user_id=u, filters={"a": object()}), InvalidFilterError),
    ("scope an int", lambda m, u, i: m.get_all(user_id=5), ScopeError),
    ("scope too long", lambda m, u, i: m.get_all(user_id="u" * 257), ScopeError),
    ("scope with a C1 control", lambda m, u, i: m.search("x", user_id="u\x85"), ScopeError),
    ("scope with a newline", lambda m, u, i: m.add("t1", infer=False, user_id="a\nb"), ScopeError),
    ("triples a dict", lambda m, u, i: m.add("t1", infer=False, user_id=u, triples=_triple()[0]),
     InvalidInputError),
    ("triples of lists", lambda m, u, i: m.add("t1", infer=False, user_id=u, triples=[[1]]), InvalidInputError),
    ("messages bytes", lambda m, u, i: m.add(b"x", infer=False, user_id=u), InvalidInputError),
    # deep nesting
    ("metadata nested 3000 deep", lambda m, u, i: m.add("t1", infer=False, user_id=u, metadata=_nested(3000)),
     InvalidInputError),
    ("metadata nested in a list", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                        metadata={"k": [_nested(3000)]}), InvalidInputError),
    ("update metadata nested", lambda m, u, i: m.update(i, metadata=_nested(3000), user_id=u), InvalidInputError),
    ("filters nested 3000 deep", lambda m, u, i: m.get_all(user_id=u, filters=_not_chain(3000)),
     InvalidFilterError),
    ("filters too many terms", lambda m, u, i: m.get_all(user_id=u, filters={"n": {"in": list(range(10_000))}}),
     InvalidFilterError),
    # unchecked input (item 6)
    ("empty triple target", lambda m, u, i: m.add("t1", infer=False, user_id=u, triples=_triple(target="")),
     InvalidInputError),
    ("blank triple target", lambda m, u, i: m.add("t1", infer=False, user_id=u, triples=_triple(target="  ")),
     InvalidInputError),
    ("NUL in triple target", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                   triples=_triple(target="Lis\x00bon")), InvalidInputError),
    ("control char in target", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                     triples=_triple(target="Lis\x1bbon")), InvalidInputError),
    ("1 MB triple target", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                 triples=_triple(target="L" * 1_000_000)), InvalidInputError),
    ("NaN literal target", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                 triples=_triple(relation="age", target=math.nan)), InvalidInputError),
    ("literal target beyond 64 bits", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                            triples=_triple(relation="age", target=2**70)),
     InvalidInputError),
    ("triple valid_from garbage", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                        triples=_triple(valid_from="garbage")), InvalidInputError),
    ("triple valid_from overflows", lambda m, u, i: m.add("t1", infer=False, user_id=u,
                                                          triples=_triple(valid_from="9999-12-31T23:59:59-05:00")),
     InvalidInputError),
    ("2 MB metadata", lambda m, u, i: m.add("t1", infer=False, user_id=u, metadata={"k": "v" * 2_000_000}),
     InvalidInputError),
    ("2 MB metadata in update", lambda m, u, i: m.update(i, metadata={"k": "v" * 2_000_000}, user_id=u),
     InvalidInputError),
    ("long message name", lambda m, u, i: m.add({"role": "user", "content": "hi", "name": "n" * 100_000},
                                                infer=False, user_id=u), InvalidInputError),
    ("control char in name", lambda m, u, i: m.add({"role": "user", "content": "hi", "name": "a\x01b"},
                                                   infer=False, user_id=u), InvalidInputError),
    ("newline in name", lambda m, u, i: m.add({"role": "user", "content": "hi", "name": "a\nb"},
                                              infer=False, user_id=u), InvalidInputError),
    ("1 MB role", lambda m, u, i: m.add({"role": "r" * 1_000_000, "content": "hi"}, infer=False, user_id=u),
     InvalidInputError),
    ("1 MB memory id", lambda m, u, i: m.get("i" * 1_000_000, user_id=u), InvalidInputError),
    # the edges of issue 41: the same size bound with extraction, vectors within float32
    ("1 MB text with extraction", lambda m, u, i: m.add("x" * 1_000_000, user_id=u), InvalidInputError),
    ("1 MB message among others", lambda m, u, i: m.add(
        [{"role": "user", "content": "I live in Oslo."}, {"role": "user", "content": "y " * 500_000}], user_id=u),
     InvalidInputError),
    ("vector beyond float32", lambda m, u, i: m.search("x", vector=[1e39] * 384, user_id=u),
     InvalidInputError),
]


@pytest.mark.parametrize(("case", "call", "error"), REFUSED, ids=[c[0] for c in REFUSED])
def test_bad_argument_is_a_typed_error_with_a_short_message(
        mem: Memory, uid: str, case: str, call: Call, error: type[GraphmemError]) -> None:
    existing = mem.add("Alice lives in Lisbon", infer=False, user_id=uid, metadata={"k": "v"})["results"][0]["id"]
    before = (mem.store.count(Scope(user_id=uid)), mem.get(existing, user_id=uid),
              len(mem.history(existing, user_id=uid)))
    with pytest.raises(error) as info:
        call(mem, uid, existing)
    assert len(str(info.value)) <= MAX_MESSAGE, f"{case}: {len(str(info.value))} characters"
    after = (mem.store.count(Scope(user_id=uid)), mem.get(existing, user_id=uid),
             len(mem.history(existing, user_id=uid)))
    assert after == before


def test_cypher_on_sqlite_is_unsupported_not_a_raw_error(tmp_path: Path) -> None:
    with Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(384)) as m:
        with pytest.raises(UnsupportedError):
            m.cypher("RETURN $x", {"x": object()})
        with pytest.raises(InvalidInputError):  # the arguments are checked first, whatever the store
            m.cypher(None)  # type: ignore[arg-type]


def test_cypher_bad_param_value_is_typed(mem: Memory) -> None:
    with pytest.raises(GraphmemError):
        mem.cypher("RETURN $x AS x", {"x": object()})


def test_not_found_message_echoes_a_short_id(mem: Memory, uid: str) -> None:
    long_id = "x" * 256
    for call in (mem.get, mem.delete, mem.history):
        with pytest.raises(NotFoundError) as info:
            call(long_id, user_id=uid)
        assert len(str(info.value)) < 200 and "…" in str(info.value)
    with pytest.raises(NotFoundError):
        mem.update(long_id, "new text", user_id=uid)


def test_short_cuts_echoed_values() -> None:
    assert short("abc") == "'abc'"
    assert len(short("x" * 10**6)) == 100 and short("x" * 10**6).endswith("…")
    assert short(S) == "'\\ud800'"

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert short(Hostile()) == "<Hostile>"


@pytest.mark.parametrize("value", [0, -1, 1714557600, 1714557600.5, 253402300799, -62135596800,
                                   "2024-05-01T10:00:00Z", "2024-05-01T10:00:00", "2024-05-01",
                                   datetime(2024, 5, 1), datetime(2024, 5, 1, tzinfo=UTC), np.float64(5.0)])
def test_accepted_times_stay_accepted(value: Any) -> None:
    when = parse_datetime(value, what="t")
    assert when.tzinfo is UTC


def test_accepted_inputs_keep_working(mem: Memory, uid: str) -> None:
    """mem0-style calls accepted before the contract still work, on both backends alike."""
    limits = mem.config.limits
    wide = uid + "ü" * (256 - len(uid))  # the longest scope id, unique to this test on the shared Neo4j
    added = mem.add(
        [{"role": "user", "content": "I adopted a cat named Miso", "name": "Ana Lúcia"},
         {"role": "assistant", "content": "Lovely.", "name": ""}],
        infer=False, user_id=wide, agent_id="bot-1", metadata={"deep": _nested(limits.max_metadata_depth - 1),
                                                                     "big": 2**70, "tags": ["a", 1, None]},
        memory_type="episodic", timestamp=1714557600,
        triples=[{"source": "Ana Lúcia", "relation": "livesIn", "target": "Lisbon", "valid_from": "2024-01-01"},
                 {"source": "Ana Lúcia", "relation": "age", "target": 41}],
    )
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    scope = {"user_id": wide}
    assert mem.get_all(**scope, filters={"tags": {"contains": "a"}, "memory_type": {"in": ("episodic",)}},
                       limit=limits.max_list_limit)["results"]
    assert mem.search("cat", **scope, top_k=limits.max_top_k, threshold=0, explain=True,
                      since=datetime(2024, 1, 1), until="2030-01-01T00:00:00+02:00")["results"]
    assert mem.get_all(**scope, filters={"n": {"gte": -2**63, "lte": 2**63 - 1}})["results"] == []
    assert mem.rejected(**scope, include_released=True) == []
    assert mem.recheck(**scope, ids=()) == {"released": [], "still_rejected": []}
    first = added["results"][0]["id"]
    assert mem.update(first, metadata={"deep": None}, **scope, infer=False)["metadata"]["big"] == 2**70
    with pytest.raises(InvalidInputError):  # one level deeper than the limit
        mem.add("too deep", infer=False, user_id=uid, metadata=_nested(limits.max_metadata_depth + 1))
    with pytest.raises(InvalidFilterError):
        mem.get_all(user_id=uid, filters=_not_chain(limits.max_filter_depth + 1))
    assert mem.get_all(user_id=uid, filters=_not_chain(limits.max_filter_depth))["results"] == []
    big_in = {"n": {"in": list(range(limits.max_filter_terms))}}
    assert mem.get_all(user_id=uid, filters=big_in)["results"] == []
    assert mem.search("x", user_id=uid, filters=big_in)["results"] == []


def test_literal_and_entity_targets(mem: Memory, uid: str) -> None:
    for target in (41, 41.5, True):
        out = mem.add(f"Alice fact {target!r}", infer=False, user_id=uid,
                      triples=[{"source": "Alice", "relation": "age", "target": target}])
        assert len(out["relations"]["added"]) + len(out["relations"]["rejected"]) == 1
    with pytest.raises(InvalidInputError, match="max_entity_chars"):
        mem.add("long", infer=False, user_id=uid, triples=_triple(target="L" * 1001))
    assert parse_triples(_triple(target="L" * 1001), max_chars=2000)[0].target == "L" * 1001


def test_limits_are_config_values(backend: str, tmp_path: Path, uid: str) -> None:
    cfg = make_config(backend, tmp_path, limits={"max_metadata_bytes": 64, "max_name_chars": 3, "max_top_k": 2,
                                                 "max_list_limit": 2, "max_entity_chars": 5,
                                                 "max_metadata_depth": 2, "max_filter_depth": 1,
                                                 "max_filter_terms": 2})
    with Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(384)) as m:
        m.add("ok", infer=False, user_id=uid, metadata={"k": "v" * 40})
        checks: list[tuple[Callable[[], Any], str]] = [
            (lambda: m.add("x", infer=False, user_id=uid, metadata={"k": "v" * 64}), "max_metadata_bytes"),
            (lambda: m.add({"role": "user", "content": "x", "name": "Anna"}, infer=False, user_id=uid),
             "max_name_chars"),
            (lambda: m.search("x", user_id=uid, top_k=3), "max_top_k"),
            (lambda: m.get_all(user_id=uid, limit=3), "max_list_limit"),
            (lambda: m.add("x", infer=False, user_id=uid, triples=_triple()), "max_entity_chars"),
            (lambda: m.add("x", infer=False, user_id=uid, metadata={"a": {"b": {"c": 1}}}), "max_metadata_depth"),
            (lambda: m.get_all(user_id=uid, filters={"NOT": {"NOT": {"a": 1}}}), "max_filter_depth"),
            (lambda: m.get_all(user_id=uid, filters={"a": {"in": [1, 2, 3]}}), "max_filter_terms"),
        ]
        for call, setting in checks:
            with pytest.raises(InvalidInputError, match=setting):
                call()
        assert m.store.count(Scope(user_id=uid)) == 1


class _Sloppy(Extractor):
    """An extractor that returns what a careless model might: text and names no store should hold."""

    name = "sloppy"
    uses_known_memories = False

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        return Extraction(
            memories=[ExtractedMemory(text="Alice lives in Lisbon"), ExtractedMemory(text="bad\x00text"),
                      ExtractedMemory(text="   ")],
            entities=[ExtractedEntity(name="Alice", type="Person"), ExtractedEntity(name="Lisbon", type="City")],
            triples=[ExtractedTriple(source="Alice", relation="livesIn", target="Lisbon", memory=0),
                     ExtractedTriple(source="Alice", relation="livesIn", target="", memory=0),
                     ExtractedTriple(source="Alice", relation="knows", target="B" * 5000, memory=0)],
        )


def test_dropped_extractions_are_reported(mem: Memory, uid: str) -> None:
    """An extractor given to ``Memory(extractor=...)`` is the one ``add`` uses."""
    with Memory(mem.config, embedder=mem.embedder, extractor=_Sloppy()) as own:
        assert isinstance(own.extractor, _Sloppy)
        out = own.add("Alice lives in Lisbon", user_id=uid)
        assert [r["memory"] for r in out["results"]] == ["Alice lives in Lisbon"]
        dropped = out["dropped"]
        assert [d.get("memory") for d in dropped if "memory" in d] == ["bad\x00text", "   "]
        triples = [d for d in dropped if "triple" in d]
        assert len(triples) == 2 and all(d["reason"] for d in dropped)
        assert len(triples[1]["triple"]["target"]) <= 100
        assert len(out["relations"]["added"]) == 1
        assert own.add("plain", infer=False, user_id=uid).get("dropped") is None


def test_identical_messages_in_one_add(mem: Memory, uid: str) -> None:
    """The second copy is a duplicate of the first (event NONE, the same id), not a write conflict."""
    out = mem.add([{"role": "user", "content": "same text"}, {"role": "assistant", "content": "same text"}],
                  infer=False, user_id=uid)
    assert [r["event"] for r in out["results"]] == ["ADD", "NONE"]
    assert out["results"][0]["id"] == out["results"][1]["id"]


def test_updates_cannot_grow_metadata_past_the_limit(backend: str, tmp_path: Path, uid: str) -> None:
    """Each patch is under limits.max_metadata_bytes, but merged they would not be: the update that
    crosses the bound is refused inside its transaction, and the stored metadata stays as it was."""
    cfg = MemoryConfig.load(make_config(backend, tmp_path, limits={"max_metadata_bytes": 300}))
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        mid = m.add("notes", user_id=uid, infer=False, metadata={"a": "x" * 100})["results"][0]["id"]
        m.update(mid, metadata={"b": "y" * 100}, user_id=uid)
        with pytest.raises(InvalidInputError, match="max_metadata_bytes"):
            m.update(mid, metadata={"c": "z" * 100}, user_id=uid)
        assert m.get(mid, user_id=uid)["metadata"] == {"a": "x" * 100, "b": "y" * 100}
        assert len(m.history(mid, user_id=uid)) == 2
