"""Property-based fuzz of every public ``Memory`` method with hostile arguments, on both backends.

For each method, hypothesis draws keyword arguments where every argument is either plausible or
hostile (wrong types, huge sizes, lone surrogates and control characters, NaN and infinity, huge
integers, deep nesting). Each drawn call runs on the SQLite store and, when a server answers, on
Neo4j, and must hold three properties:

* only ``GraphmemError`` subclasses escape;
* a call that raises writes nothing (a snapshot of the scope's stored rows, nodes and edges is the
  same before and after);
* both backends agree: the call succeeds on both, or fails on both with the same error class.

``GRAPHMEM_FUZZ_EXAMPLES`` sets the examples per method (default 40; e.g. 2000 for a long run).
The number of calls run per method and backend, and the time each backend took, are written to
``.cache/fuzz-count.json`` and printed (``pytest -s``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sqlite3
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import GraphmemError, StoreError, StoreUnavailableError, short
from graphmem.models import MAX_ID_CHARS, Scope
from graphmem.pipeline.browse import encode_cursor

from .conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER, make_config

EXAMPLES = int(os.environ.get("GRAPHMEM_FUZZ_EXAMPLES", "40"))
DIMS = 384
COUNT_FILE = Path(__file__).resolve().parent.parent / ".cache" / "fuzz-count.json"
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.large_base_example, HealthCheck.filter_too_much],
)
LIMITS = {"max_memory_chars": 20_000}
"""Smaller than the default so that valid-but-big texts stay cheap to embed and extract."""


# -- tokens resolved per backend ----------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    """Stands for a value that differs per backend (an existing memory's id, the ontology)."""

    name: str

    def __repr__(self) -> str:
        return f"<{self.name}>"


EXISTING = Token("existing memory id")
QUARANTINED = Token("existing quarantine id")
ONTOLOGY = Token("the store's ontology")
UID = Token("the test's user id")
DUMP = Token("a dump of the test's scope")
TARGET = Token("a new SQLite store to migrate to")
CHECKPOINT = Token("a new checkpoint path")


# -- hostile values -------------------------------------------------------------------------------
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
CONTROL = st.one_of(st.characters(max_codepoint=0x1F), st.characters(min_codepoint=0x7F, max_codepoint=0x9F))
ODD = st.sampled_from(["\u200b", "\ufeff", "\u0301", "😀", "ß", "İ", "ﬁ", " ", "\n", "\t", "\u2028", "'", '"',
                       "`", "$", "\\", "{", "}", "%", "_", "*", ":", "-"])
CHARS = st.one_of(st.characters(codec=None), SURROGATE, CONTROL, ODD, st.characters(max_codepoint=0x7F))
SMALL_TEXT = st.text(CHARS, max_size=24)
BIG_TEXT = st.sampled_from(["x" * 1_000_000, "é" * 30_000, "😀" * 25_000, " " * 5_000, "a\x00" * 2_000,
                            "\ud800" * 10, "word " * 3_000])
TEXT = st.one_of(SMALL_TEXT, SMALL_TEXT, SMALL_TEXT, BIG_TEXT)
HUGE_INTS = st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**20, -(10**20), 10**400, 2**1024])
INTS = st.one_of(st.integers(-(2**70), 2**70), st.integers(-3, 3), HUGE_INTS)
FLOATS = st.one_of(st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]))


class DeepDict(dict[str, Any]):
    """A dict nested too deep to print: shown by its depth (hypothesis and pytest print examples)."""

    depth = 0

    def __repr__(self) -> str:
        return f"<dict nested {self.depth} deep>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


class DeepList(list[Any]):
    depth = 0

    def __repr__(self) -> str:
        return f"<list nested {self.depth} deep>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def _nested(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth - 1):
        value = {"a": value} if kind == "dict" else [value]
    out = DeepDict(a=value) if kind == "dict" else DeepList([value])
    out.depth = depth
    return out


DEEP = st.builds(_nested, st.sampled_from([33, 100, 3_000, 20_000]), st.sampled_from(["dict", "list"]))


class _Weird:
    """Breaks ``str()``, ``==`` and hashing (``repr`` works: hypothesis reports with it)."""

    def __repr__(self) -> str:
        return "<weird>"

    def __str__(self) -> str:
        raise RuntimeError("hostile str")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("hostile eq")

    __hash__ = None  # type: ignore[assignment]


WEIRD = st.sampled_from([
    object(), _Weird(), b"bytes", bytearray(b"x"), {1, 2}, frozenset(), (1, 2), np.array([1.0, 2.0]),
    np.int64(7), np.bool_(True), Decimal("1.5"), Decimal("NaN"), complex(1, 2), datetime.max,
    datetime.min, date(2024, 1, 1), timedelta(days=1), print, Path("/etc/passwd"), Ellipsis, type, range(3),
])
# (no subclasses of str or float: hypothesis replays drawn values by their exact type and fails on them)
SCALAR = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
JSON_LIKE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(SMALL_TEXT, inner, max_size=4)),
                         max_leaves=10)
HOSTILE = st.one_of(SCALAR, WEIRD, JSON_LIKE, DEEP)


_ID_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _never_valid_scope(value: Any) -> bool:
    """Hostile user ids that are neither absent nor, by chance, valid ids: either would let an add
    write outside the test's own scope on the shared Neo4j."""
    if value is None:
        return False
    return not (isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and not _ID_BAD.search(value))


def _nested_not(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n": 1}
    for _ in range(depth - 1):
        out = {"NOT": out}
    top = DeepDict(NOT=out)
    top.depth = depth
    return top


PRINTABLE = st.characters(codec="utf-8", exclude_categories=["Cc", "Cs", "Zl", "Zp"])
VALID_TEXT = st.one_of(st.sampled_from(["Alice lives in Lisbon", "Bob works for Acme", "I like green tea",
                                        "Ana: 😀 ß ﬁ İ", "  padded  "]),
                       st.text(PRINTABLE, min_size=1, max_size=40).filter(str.strip))
NAMES = st.sampled_from(["Ana", "Bob", "Dr. Ana Lúcia", ""])
ROLE = st.sampled_from(["user", "assistant", "system", "tool"])
VALID_MESSAGE = st.fixed_dictionaries({"role": ROLE, "content": VALID_TEXT}, optional={"name": NAMES})
VALID_MESSAGES = st.one_of(VALID_TEXT, VALID_MESSAGE, st.lists(VALID_MESSAGE, min_size=1, max_size=3))
HOSTILE_MESSAGE = st.fixed_dictionaries({"role": st.one_of(ROLE, HOSTILE), "content": st.one_of(TEXT, HOSTILE)},
                                        optional={"name": st.one_of(TEXT, HOSTILE), "extra": HOSTILE})
HOSTILE_MESSAGES = st.one_of(TEXT, HOSTILE_MESSAGE, st.lists(st.one_of(HOSTILE_MESSAGE, VALID_MESSAGE), max_size=3),
                             HOSTILE, st.just([]), st.just(["just a string"]))
SMALL_HOSTILE_MESSAGES = st.one_of(SMALL_TEXT, st.fixed_dictionaries(
    {"role": ROLE, "content": SMALL_TEXT}, optional={"name": SMALL_TEXT}))
"""For ``infer=True``: extraction reads every character, so only short hostile texts."""
SAFE_INT = st.integers(-(2**63), 2**63 - 1)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUE = st.recursive(st.one_of(st.none(), st.booleans(), SAFE_INT, FINITE, st.text(PRINTABLE, max_size=12)),
                          lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(st.text(PRINTABLE, max_size=8), inner, max_size=3)),
                          max_leaves=8)
VALID_METADATA = st.one_of(st.none(), st.dictionaries(st.sampled_from(["k", "n", "tags", "topic", "ünï", "a b"]),
                                                      JSON_VALUE, max_size=4))
HOSTILE_METADATA = st.one_of(st.dictionaries(SMALL_TEXT, JSON_LIKE, max_size=5), DEEP, st.just({"big": "v" * 70_000}),
                             st.just({1: "int key"}), st.just({"k": {2: 3}}), HOSTILE)
OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=14)),
                           timezone(timedelta(hours=-23, minutes=-59))])
VALID_TIME = st.one_of(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS),
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1)),
    st.sampled_from(["2024-05-01", "2024-05-01T10:00:00Z", "2024-05-01T10:00:00+02:00"]),
    st.integers(0, 4_000_000_000), st.floats(0, 4e9),
)
EXTREME_DATETIMES = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59), timezones=OFFSETS),
    st.sampled_from([datetime.max, datetime.min, datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))),
                     datetime.min.replace(tzinfo=timezone(timedelta(hours=5)))]),
)
HOSTILE_TIME = st.one_of(EXTREME_DATETIMES, EXTREME_DATETIMES.map(lambda d: d.isoformat()), INTS, FLOATS, TEXT,
                         st.sampled_from(["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "not a date",
                                          "", "2024-13-40", 1714557600000, -62135596801, 253402300800]), HOSTILE)
FUTURE = st.one_of(st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(9999, 12, 30),
                                timezones=OFFSETS), st.integers(4_102_444_800, 253_402_200_000))
RELATION = st.sampled_from(["livesIn", "worksFor", "knows", "age", "flurbs", "rdf:type", "MATCH (n) DETACH DELETE n"])
ENTITY = st.sampled_from(["Alice", "Bob", "Lisbon", "Acme", "😀", "!!!", "Ana Lúcia"])
CLASS = st.sampled_from(["Person", "City", "Organization", "Nope"])
VALID_TRIPLE = st.fixed_dictionaries(
    {"source": ENTITY, "relation": RELATION, "target": st.one_of(ENTITY, SAFE_INT, st.booleans(),
                                                                  st.floats(allow_nan=False, allow_infinity=False))},
    optional={"source_type": CLASS, "target_type": CLASS, "valid_from": VALID_TIME})
HOSTILE_TRIPLE = st.fixed_dictionaries(
    {"source": st.one_of(ENTITY, TEXT, HOSTILE), "relation": st.one_of(RELATION, TEXT, HOSTILE),
     "target": st.one_of(ENTITY, TEXT, INTS, FLOATS, HOSTILE)},
    optional={"source_type": st.one_of(CLASS, TEXT, HOSTILE), "target_type": st.one_of(CLASS, TEXT, HOSTILE),
              "valid_from": HOSTILE_TIME, "extra": HOSTILE})
VALID_TRIPLES = st.one_of(st.none(), st.lists(VALID_TRIPLE, max_size=3))
HOSTILE_TRIPLES = st.one_of(st.lists(st.one_of(HOSTILE_TRIPLE, VALID_TRIPLE), min_size=1, max_size=3),
                            st.builds(lambda n: [{"source": "A", "relation": "knows", "target": "B"}] * n,
                                      st.just(10_001)), HOSTILE)
OPS = st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"])
FIELDS = st.sampled_from(["n", "k", "tags", "metadata.k", "user_id", "created_at", "event_time", "memory_type", "id"])
VALID_OPERAND = st.one_of(st.none(), st.booleans(), SAFE_INT, st.floats(allow_nan=False, allow_infinity=False),
                          st.text(PRINTABLE, max_size=10), VALID_TIME)
VALID_CONDITION = st.one_of(
    st.dictionaries(FIELDS, VALID_OPERAND, min_size=1, max_size=2),
    st.dictionaries(FIELDS, st.dictionaries(OPS, st.one_of(VALID_OPERAND, st.lists(VALID_OPERAND, min_size=1,
                                                                                    max_size=3)),
                                            min_size=1, max_size=2), min_size=1, max_size=2),
)
VALID_FILTERS = st.one_of(st.none(), st.just({}), st.recursive(
    VALID_CONDITION, lambda inner: st.one_of(st.builds(lambda xs: {"AND": xs}, st.lists(inner, min_size=1, max_size=3)),
                                             st.builds(lambda xs: {"OR": xs}, st.lists(inner, min_size=1, max_size=3)),
                                             st.builds(lambda x: {"NOT": x}, inner)), max_leaves=5))
HOSTILE_CONDITION = st.one_of(
    st.dictionaries(st.one_of(FIELDS, TEXT, HOSTILE.filter(lambda v: v.__hash__ is not None)), SCALAR,
                    min_size=1, max_size=2),
    st.dictionaries(FIELDS, st.dictionaries(st.one_of(OPS, st.sampled_from(["like", "$eq", "EQ", ""])),
                                            st.one_of(SCALAR, st.lists(SCALAR, max_size=3), HOSTILE_TIME, HOSTILE),
                                            min_size=0, max_size=2), min_size=1, max_size=2),
    st.builds(lambda n: {"n": {"in": list(range(n))}}, st.sampled_from([500, 501, 10_000])),
    st.builds(_nested_not, st.sampled_from([32, 33, 3_000])),
)
HOSTILE_FILTERS = st.one_of(st.recursive(
    HOSTILE_CONDITION, lambda inner: st.one_of(st.builds(lambda xs: {"AND": xs}, st.lists(inner, max_size=3)),
                                               st.builds(lambda xs: {"OR": xs}, st.lists(inner, max_size=3)),
                                               st.builds(lambda x: {"NOT": x}, inner)), max_leaves=4), HOSTILE)
VALID_VECTOR = st.one_of(st.none(), st.lists(st.floats(-1, 1), min_size=DIMS, max_size=DIMS),
                         st.just(np.linspace(-1, 1, DIMS, dtype=np.float32)))
HOSTILE_VECTOR = st.one_of(
    st.lists(FLOATS, min_size=DIMS, max_size=DIMS),
    st.lists(st.one_of(INTS, FLOATS, st.booleans(), st.text(max_size=2)), min_size=DIMS, max_size=DIMS),
    st.builds(lambda n: [1.0] * n, st.sampled_from([0, 1, DIMS - 1, DIMS + 1, 100_000])),
    st.just(np.zeros(DIMS)), st.just(np.ones(DIMS, dtype=np.float16)), st.just(np.array(["a"] * DIMS)),
    st.just(np.ones((2, DIMS // 2))), st.just([1e300] * DIMS), st.just([2**70] * DIMS), HOSTILE,
)
MEMORY_ID = st.one_of(st.just(EXISTING), st.just(str(uuid.uuid4())))
HOSTILE_ID = st.one_of(TEXT, st.just("x" * 257), st.just(""), st.just([EXISTING]), HOSTILE)
QUERIES = st.sampled_from(["RETURN $x AS x", "RETURN 1 AS one", "MATCH (n:Memory {user_id: $u}) RETURN count(n) AS c"])
HOSTILE_QUERIES = st.one_of(st.sampled_from(["CREATE (n:Fuzz) RETURN n", "RETURN", "RETURN $x AS x //", "",
                                             "MATCH (n) WHERE n.user_id STARTS WITH $u DETACH DELETE n"]), TEXT,
                            HOSTILE)


@dataclass(frozen=True)
class Arg:
    """One argument: its plausible values and its hostile ones (``absent``: may be left out)."""

    valid: st.SearchStrategy[Any]
    hostile: st.SearchStrategy[Any]
    optional: bool = True


CURSOR = st.one_of(st.none(), st.builds(encode_cursor, st.datetimes(timezones=st.just(UTC)),
                                        st.text(PRINTABLE, max_size=8)))
SCOPE = {
    "user_id": Arg(st.one_of(st.just(UID), st.just(UID), st.just(UID), st.just(UID), st.text(
        PRINTABLE, min_size=1, max_size=8).map(lambda s: ("suffix", s))), HOSTILE.filter(_never_valid_scope),
        optional=False),
    # user_id is always given: a call with only agent_id/run_id would write outside the test's scope
    "agent_id": Arg(st.sampled_from([None, None, None, "bot", "ü" * 256]), HOSTILE),
    "run_id": Arg(st.sampled_from([None, None, None, "run-1"]), HOSTILE),
}
BOOL = Arg(st.booleans(), st.one_of(st.sampled_from([0, 1, "yes", "", None, np.bool_(True)]), HOSTILE))
VALID_ITEM = st.one_of(VALID_MESSAGES, st.fixed_dictionaries(
    {"messages": VALID_MESSAGES},
    optional={"timestamp": st.one_of(st.none(), VALID_TIME), "triples": VALID_TRIPLES, "metadata": VALID_METADATA,
              "infer": st.just(False)}))
HOSTILE_ITEM = st.one_of(
    SMALL_HOSTILE_MESSAGES,
    st.builds(lambda m, t: {"messages": m, "timestamp": t}, VALID_MESSAGES, HOSTILE_TIME),
    st.builds(lambda m, t: {"messages": m, "triples": t}, VALID_MESSAGES, HOSTILE_TRIPLES),
    st.builds(lambda m, meta: {"messages": m, "metadata": meta}, VALID_MESSAGES, HOSTILE_METADATA),
    st.builds(lambda m, u: {"messages": m, "user_id": u}, VALID_MESSAGES, HOSTILE.filter(_never_valid_scope)),
    st.builds(lambda m: {"messages": m, "usr_id": UID}, VALID_MESSAGES),
    st.just({"messages": []}), st.just({}), HOSTILE,
)
HOSTILE_ITEMS = st.one_of(
    st.builds(lambda ok, bad, at: [*ok[:at], bad, *ok[at:]], st.lists(VALID_ITEM, max_size=3), HOSTILE_ITEM,
              st.integers(0, 3)),
    st.builds(lambda n: ["x"] * n, st.just(10_001)), TEXT, HOSTILE,
)
SPECS: dict[str, dict[str, Arg]] = {
    "add_many": {"items": Arg(st.lists(VALID_ITEM, max_size=4), HOSTILE_ITEMS, optional=False), **SCOPE,
                 "metadata": Arg(VALID_METADATA, HOSTILE_METADATA),
                 "infer": Arg(st.sampled_from([False, False, True]), BOOL.hostile),
                 "memory_type": Arg(st.sampled_from([None, "semantic", "episodic", "procedural"]),
                                    st.one_of(TEXT, HOSTILE)),
                 "expires_at": Arg(st.one_of(st.none(), FUTURE), HOSTILE_TIME)},
    "add": {"messages": Arg(VALID_MESSAGES, HOSTILE_MESSAGES, optional=False), **SCOPE,
            "metadata": Arg(VALID_METADATA, HOSTILE_METADATA), "infer": Arg(st.sampled_from([False, False, True]),
                                                                             BOOL.hostile),
            "memory_type": Arg(st.sampled_from([None, "semantic", "episodic", "procedural"]),
                               st.one_of(TEXT, HOSTILE)),
            "timestamp": Arg(st.one_of(st.none(), VALID_TIME), HOSTILE_TIME),
            "triples": Arg(VALID_TRIPLES, HOSTILE_TRIPLES),
            "expires_at": Arg(st.one_of(st.none(), FUTURE), HOSTILE_TIME)},
    "search": {"query": Arg(VALID_TEXT, st.one_of(TEXT, HOSTILE), optional=False), **SCOPE,
               "filters": Arg(VALID_FILTERS, HOSTILE_FILTERS), "top_k": Arg(st.integers(1, 1000), INTS | HOSTILE),
               "threshold": Arg(st.one_of(st.none(), st.floats(-1, 1)), FLOATS | HOSTILE),
               "explain": BOOL, "as_of": Arg(VALID_TIME, HOSTILE_TIME), "since": Arg(VALID_TIME, HOSTILE_TIME),
               "until": Arg(VALID_TIME, HOSTILE_TIME), "vector": Arg(VALID_VECTOR, HOSTILE_VECTOR)},
    "get": {"memory_id": Arg(MEMORY_ID, HOSTILE_ID, optional=False), **SCOPE},
    "get_all": {**SCOPE, "filters": Arg(VALID_FILTERS, HOSTILE_FILTERS),
                "limit": Arg(st.integers(1, 10_000), INTS | HOSTILE)},
    "update": {"memory_id": Arg(MEMORY_ID, HOSTILE_ID, optional=False), **SCOPE,
               "data": Arg(st.one_of(st.none(), VALID_TEXT), st.one_of(SMALL_TEXT, st.just("x" * 30_000), HOSTILE)),
               "metadata": Arg(VALID_METADATA, HOSTILE_METADATA), "infer": BOOL},
    "delete": {"memory_id": Arg(MEMORY_ID, HOSTILE_ID, optional=False), **SCOPE},
    "delete_all": SCOPE,
    "history": {"memory_id": Arg(MEMORY_ID, HOSTILE_ID, optional=False), **SCOPE},
    "rejected": {**SCOPE, "include_released": BOOL},
    "recheck": {**SCOPE, "ids": Arg(st.one_of(st.none(), st.lists(st.sampled_from([QUARANTINED, EXISTING]), max_size=2),
                                              st.just(())),
                                    st.one_of(st.lists(HOSTILE_ID, min_size=1, max_size=2), HOSTILE))},
    "dry_run": {"ontology": Arg(st.just(ONTOLOGY), HOSTILE, optional=False), **SCOPE},
    "entities": {**SCOPE, "name": Arg(st.one_of(st.none(), ENTITY, st.just("li")), st.one_of(TEXT, HOSTILE)),
                 "type": Arg(st.one_of(st.none(), CLASS), st.one_of(TEXT, HOSTILE)),
                 "limit": Arg(st.integers(1, 10_000), INTS | HOSTILE), "cursor": Arg(CURSOR, st.one_of(TEXT, HOSTILE))},
    "facts": {**SCOPE, "entity": Arg(st.one_of(st.none(), ENTITY), st.one_of(TEXT, HOSTILE)),
              "relation": Arg(st.one_of(st.none(), RELATION), st.one_of(TEXT, HOSTILE)),
              "as_of": Arg(VALID_TIME, HOSTILE_TIME), "include_closed": BOOL,
              "limit": Arg(st.integers(1, 10_000), INTS | HOSTILE), "cursor": Arg(CURSOR, st.one_of(TEXT, HOSTILE))},
    "cypher": {"query": Arg(QUERIES, HOSTILE_QUERIES, optional=False),
               "params": Arg(st.one_of(st.none(), st.just({"x": 1, "u": UID}), st.just({"x": "😀"})),
                             st.one_of(st.dictionaries(st.sampled_from(["x", "u", "", "a b", "\ud800"]), HOSTILE,
                                                       max_size=2), HOSTILE))},
}

# files of the transfer methods: never a path outside this folder (an export replaces its target)
FILES = Path(tempfile.mkdtemp(prefix="graphmem-fuzz-"))
for _name, _text in {"empty.jsonl": "", "garbage.jsonl": "not json\n", "header.jsonl": '{"format": 99}\n',
                     "cut.jsonl": '{"format": 1, "kind": "header"'}.items():
    (FILES / _name).write_text(_text)
(FILES / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage")
OUT_PATH = st.builds(lambda n: str(FILES / f"out-{n}.dump"), st.integers(0, 3))
BAD_OUT = st.sampled_from([str(FILES), str(FILES / "missing" / "x.dump"), "", 42, None, b"x", ["a"], 1.5])
BAD_DUMP = st.one_of(st.sampled_from([str(FILES / n) for n in ("empty.jsonl", "garbage.jsonl", "header.jsonl",
                                                                 "cut.jsonl", "binary.jsonl", "missing.jsonl")]),
                     st.just(str(FILES)), HOSTILE)
BATCH = Arg(st.integers(1, 5_000), INTS | HOSTILE)
NOT_ALL = Arg(st.just(False), st.sampled_from([0, "yes", "", 2.5, None]))  # True: every tenant of the shared Neo4j
TRANSFER_SPECS: dict[str, dict[str, Arg]] = {
    "export": {"target": Arg(OUT_PATH, BAD_OUT, optional=False), **SCOPE, "all_scopes": NOT_ALL, "batch_size": BATCH},
    "export_rdf": {"target": Arg(OUT_PATH, BAD_OUT, optional=False), **SCOPE, "all_scopes": NOT_ALL,
                   "rdf_format": Arg(st.sampled_from(["turtle", "json-ld"]),
                                     st.one_of(st.sampled_from(["xml", "TURTLE", "", "n3"]), HOSTILE))},
    "import_": {"source": Arg(st.just(DUMP), BAD_DUMP, optional=False), "reembed": BOOL, "batch_size": BATCH},
    "migrate": {"to": Arg(st.just(TARGET), st.one_of(st.sampled_from(
                    ["", "sqlite://", "ftp://host/x", str(FILES / "no-such-config.yaml"), {"backend": "nope"},
                     {"path": 5}, 42]), HOSTILE.filter(lambda v: not isinstance(v, str))), optional=False),
                **SCOPE, "checkpoint": Arg(st.just(CHECKPOINT), st.sampled_from([str(FILES), "", 42, b"x"]),
                                           optional=False),
                "batch_size": BATCH},
    # a backup goes to a new file: the valid path here exists (a backup of the shared Neo4j would dump
    # every tenant of it), so both backends refuse it alike; a restore of the scope's own dump conflicts
    "backup": {"target": Arg(st.just(str(FILES / "empty.jsonl")), BAD_OUT, optional=False)},
    "restore": {"source": Arg(st.just(DUMP), BAD_DUMP, optional=False), "batch_size": BATCH},
    # a well-formed bookmark is Neo4j's to judge (SQLite has none): only the shape is fuzzed
    "read_after": {"bookmarks": Arg(st.just([]), st.one_of(
        st.sampled_from(["FB:x", [""], ["x" * 1001], [1], [None], ["a"] * 1001, b"x", {"a": 1}]), HOSTILE),
        optional=False)},
    # valid: the store's own embedder (nothing to do; another one would move the shared Neo4j's pin)
    "reembed": {"embedder": Arg(st.sampled_from(["hashing", {"provider": "hashing", "dims": 384}]),
                                st.one_of(st.sampled_from(["nope", "auto", {"dims": 3}, {"provider": "x"},
                                                           {"colour": 1}, 42, None, b"hashing"]), HOSTILE),
                                optional=False),
                **SCOPE, "all_scopes": NOT_ALL, "batch_size": BATCH,
                "progress": Arg(st.none(), st.sampled_from([1, "print", b"x"]))},
}
SPECS.update(TRANSFER_SPECS)


@st.composite
def call_args(draw: st.DrawFn, method: str) -> dict[str, Any]:
    """Keyword arguments for ``method``: none, one or several of them hostile, the others plausible,
    so every check is reached past the ones before it."""
    spec = SPECS[method]
    names = list(spec)
    bad = draw(st.sampled_from([None, "several", *names]))
    several = set(draw(st.lists(st.sampled_from(names), min_size=2, max_size=3))) if bad == "several" else set()
    out: dict[str, Any] = {}
    for name, arg in spec.items():
        hostile = name == bad or name in several
        if not hostile and arg.optional and draw(st.booleans()):
            continue
        out[name] = draw(arg.hostile if hostile else arg.valid)
    if method == "add" and out.get("infer") is not False and "messages" in several | {bad}:
        out["messages"] = draw(SMALL_HOSTILE_MESSAGES)  # extraction of megabytes: slow, not hostile
    return out


STRATEGIES = {method: call_args(method) for method in SPECS}
NO_ARGUMENTS = ("reset", "optimize", "warm", "bookmarks")
"""Public methods without arguments: called once per backend (SQLite only: on the shared Neo4j
they would wipe or re-index every other test's data)."""


# -- the stores under test ----------------------------------------------------------------------
@dataclass
class Backend:
    name: str
    mem: Memory
    uid: str
    path: Path | None = None
    existing: str = ""
    quarantined: str = ""
    seconds: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)

    def seed(self) -> None:
        """One memory with an accepted and a quarantined fact, so reads and rechecks find data."""
        out = self.mem.add("Alice lives in Lisbon", infer=False, user_id=self.uid, metadata={"k": "v", "n": 2},
                           triples=[{"source": "Alice", "relation": "livesIn", "target": "Lisbon",
                                     "source_type": "Person", "target_type": "City"},
                                    {"source": "Alice", "relation": "flurbs", "target": "Bob"}])
        self.existing = out["results"][0]["id"]
        rejected = self.mem.rejected(user_id=self.uid)
        self.quarantined = rejected[0]["id"] if rejected else str(uuid.uuid4())

    def resolve(self, value: Any, top: bool = True) -> Any:
        """Tokens at the top level or one level down (``ids=[...]``, ``params={...}``); deeper
        values are hostile data, passed as drawn (and may be nested too deep to walk)."""
        if value is DUMP:
            path = FILES / f"{self.name}-{self.uid}.jsonl"
            if not path.exists():
                self.mem.export(path, user_id=self.uid)
            return str(path)
        if value is TARGET or value is CHECKPOINT:
            fresh = FILES / f"{self.name}-{uuid.uuid4().hex}"
            return f"sqlite:///{fresh}.db" if value is TARGET else str(fresh) + ".checkpoint.json"
        if isinstance(value, Token):
            return {EXISTING: self.existing, QUARANTINED: self.quarantined, ONTOLOGY: self.mem.ontology,
                    UID: self.uid}[value]
        if type(value) is tuple and len(value) == 2 and value[0] == "suffix":
            return self.uid + value[1]
        if top and type(value) is list:
            return [self.resolve(v, False) for v in value]
        if top and type(value) is dict and any(isinstance(v, Token) for v in value.values()):
            return {k: self.resolve(v, False) for k, v in value.items()}
        return value

    def snapshot(self) -> str:
        """A digest of everything stored for this test: every table of its own SQLite file, or every
        node and edge whose scope starts with its user id on the shared Neo4j."""
        digest = hashlib.sha256()
        if self.path is not None:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as conn:
                tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                     "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
                for t in tables:
                    for row in conn.execute(f'SELECT * FROM "{t}" ORDER BY 1'):
                        digest.update(repr((t, row)).encode("utf-8", "backslashreplace"))
            return digest.hexdigest()
        nodes = _neo4j_rows("MATCH (n) WHERE n.user_id STARTS WITH $u "
                            "RETURN labels(n) AS l, properties(n) AS p ORDER BY n.id, n.key", self.uid)
        edges = _neo4j_rows("MATCH (a)-[r]->(b) WHERE a.user_id STARTS WITH $u "
                            "RETURN type(r) AS t, properties(r) AS p, a.id AS a, b.id AS b "
                            "ORDER BY a, b, t, r.id", self.uid)
        for row in nodes + edges:
            digest.update(repr(sorted((k, repr(v)) for k, v in row.items())).encode("utf-8", "backslashreplace"))
        return digest.hexdigest()


_NEO4J: Any = None


def _neo4j_rows(query: str, uid: str) -> list[dict[str, Any]]:
    global _NEO4J
    from neo4j import GraphDatabase

    if _NEO4J is None:
        _NEO4J = GraphDatabase.driver(NEO4J_URI, auth=(NEO4J_USER, NEO4J_PASSWORD))
    with _NEO4J.session() as session:
        return [dict(r) for r in session.run(query, u=uid)]


TOTALS: dict[str, dict[str, Any]] = {}
OUTCOMES: dict[str, Counter[str]] = {}
"""Per method, how the calls ended on SQLite: ``ok`` or the error class (to see what the fuzz reaches)."""


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    """Write and print how many fuzz calls ran, per method and backend, and how long each backend took."""
    yield
    if not TOTALS:
        return
    by_backend = {b: {"calls": sum(t["calls"].get(b, 0) for t in TOTALS.values()),
                      "seconds": round(sum(t["seconds"].get(b, 0.0) for t in TOTALS.values()), 2)}
                  for b in ("sqlite", "neo4j")}
    summary = {"examples_per_method": EXAMPLES, "backends": by_backend,
               "methods": {m: {"calls": dict(t["calls"]), "outcomes": dict(OUTCOMES.get(m, {}))}
                           for m, t in TOTALS.items()}}
    COUNT_FILE.parent.mkdir(exist_ok=True)
    COUNT_FILE.write_text(json.dumps(summary, indent=2) + "\n")
    parts = ", ".join(f"{b} {v['calls']} calls in {v['seconds']} s" for b, v in by_backend.items() if v["calls"])
    print(f"\ngraphmem fuzz: {parts} ({EXAMPLES} examples per method; {COUNT_FILE})")


@pytest.fixture
def backends(tmp_path: Path, uid: str, neo4j_available: bool) -> Iterator[list[Backend]]:
    out = []
    for name in ("sqlite", "neo4j") if neo4j_available else ("sqlite",):
        cfg = make_config(name, tmp_path, limits=LIMITS)
        b = Backend(name, Memory(MemoryConfig.load(cfg), embedder=HashingEmbedder(DIMS)), uid,
                    tmp_path / "graphmem.db" if name == "sqlite" else None)
        b.seed()
        out.append(b)
    yield out
    for b in out:
        b.mem.close()
    if neo4j_available:  # leave nothing behind on the shared server
        _neo4j_rows("MATCH (n) WHERE n.user_id STARTS WITH $u DETACH DELETE n", uid)


def _outcome(b: Backend, method: str, kwargs: dict[str, Any]) -> tuple[str, str]:
    """Run one call; return its outcome (``ok`` or the error class) and the error's message."""
    if not b.existing or b.mem.store.get(b.existing, Scope(user_id=b.uid)) is None:
        b.seed()  # an earlier example deleted it
    args = {k: b.resolve(v) for k, v in kwargs.items()}
    before = b.snapshot()
    started = time.perf_counter()
    try:
        getattr(b.mem, method)(**args)
    except GraphmemError as exc:
        b.seconds += time.perf_counter() - started
        b.calls[method] += 1
        after = b.snapshot()
        assert after == before, f"{b.name}: {method} raised {type(exc).__name__} ({exc}) but wrote to the store"
        message = str(exc)
        assert len(message) <= 1_000, f"{b.name}: {method}: a {len(message)}-character message"
        # A store error here means input reached the store unchecked (one writer: no conflicts, no
        # outage); only an analyst's Cypher is the server's to judge.
        assert method == "cypher" or not isinstance(exc, StoreError) or isinstance(exc, StoreUnavailableError), (
            f"{b.name}: {method} reached the store with input it refused: {type(exc).__name__}: {message[:300]}")
        return type(exc).__name__, message
    except BaseException as exc:  # the contract: nothing but GraphmemError escapes
        raise AssertionError(f"{b.name}: {method} raised {type(exc).__name__}: {str(exc)[:300]}") from exc
    b.seconds += time.perf_counter() - started
    b.calls[method] += 1
    return "ok", ""


def _record(method: str, backends: list[Backend]) -> None:
    total = TOTALS.setdefault(method, {"calls": {}, "seconds": {}})
    for b in backends:
        total["calls"][b.name] = total["calls"].get(b.name, 0) + b.calls[method]
        total["seconds"][b.name] = total["seconds"].get(b.name, 0.0) + b.seconds
        b.calls[method], b.seconds = 0, 0.0


def _check(method: str, backends: list[Backend], kwargs: dict[str, Any]) -> None:
    results = [(b.name, *_outcome(b, method, kwargs)) for b in backends]
    OUTCOMES.setdefault(method, Counter())[results[0][1]] += 1
    if os.environ.get("GRAPHMEM_FUZZ_DEBUG"):
        print(method, results[0][1], results[0][2][:150].replace("\n", " "), "|", short(kwargs, 600))
    if method != "cypher" and len({r[1] for r in results}) > 1:  # Cypher is Neo4j's alone
        raise AssertionError(f"{method}: the backends disagree: {results}")


def _fuzz(method: str) -> Callable[..., None]:
    @pytest.mark.slow
    @FUZZ_SETTINGS
    @given(kwargs=STRATEGIES[method])
    def test(backends: list[Backend], kwargs: dict[str, Any]) -> None:
        try:
            _check(method, backends, kwargs)
        finally:
            _record(method, backends)

    test.__name__ = f"test_fuzz_{method}"
    test.__doc__ = f"Hostile arguments to Memory.{method}: typed errors only, nothing written, backends agree."
    return test


test_fuzz_add = _fuzz("add")
test_fuzz_add_many = _fuzz("add_many")
test_fuzz_search = _fuzz("search")
test_fuzz_get = _fuzz("get")
test_fuzz_get_all = _fuzz("get_all")
test_fuzz_update = _fuzz("update")
test_fuzz_delete = _fuzz("delete")
test_fuzz_delete_all = _fuzz("delete_all")
test_fuzz_history = _fuzz("history")
test_fuzz_rejected = _fuzz("rejected")
test_fuzz_recheck = _fuzz("recheck")
test_fuzz_dry_run = _fuzz("dry_run")
test_fuzz_cypher = _fuzz("cypher")
test_fuzz_entities = _fuzz("entities")
test_fuzz_facts = _fuzz("facts")
test_fuzz_export = _fuzz("export")
test_fuzz_export_rdf = _fuzz("export_rdf")
test_fuzz_import = _fuzz("import_")
test_fuzz_migrate = _fuzz("migrate")
test_fuzz_reembed = _fuzz("reembed")
test_fuzz_backup = _fuzz("backup")
test_fuzz_restore = _fuzz("restore")
test_fuzz_read_after = _fuzz("read_after")


def test_every_public_method_is_fuzzed() -> None:
    public = {n for n in dir(Memory) if not n.startswith("_") and callable(getattr(Memory, n))}
    not_inputs = {"close", "from_config"}  # lifecycle, not part of the input contract
    assert public - not_inputs - set(NO_ARGUMENTS) <= set(STRATEGIES), public - set(STRATEGIES)


@pytest.mark.parametrize("method", NO_ARGUMENTS)
def test_methods_without_arguments(method: str, tmp_path: Path) -> None:
    with Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(DIMS)) as m:
        m.add("Alice lives in Lisbon", infer=False, user_id="u")
        getattr(m, method)()
