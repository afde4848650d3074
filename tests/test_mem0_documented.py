"""mem0's publicly documented Python ``Memory`` API, call by call, against graphmem's drop-in.

Written in our own words from mem0's documentation (github.com/mem0ai/mem0, ``docs/``, mem0ai 2.0.18):

- ``open-source/features/metadata-filtering.mdx``: the operators eq, ne, gt, gte, lt, lte, in, nin,
  contains, icontains, the ``"*"`` wildcard, ``AND``/``OR``/``NOT`` (``NOT`` takes a list), and an
  unknown operator raising ``ValueError``;
- ``core-concepts/memory-operations/{add,search,update,delete}.mdx``: ``explain=True`` and its
  ``score_details``, ``run_id: "*"``, ``update`` with metadata only or an ``expiration_date``, and
  ``delete_all`` by ``agent_id`` / ``run_id``;
- ``core-concepts/memory-types.mdx``: only ``"procedural_memory"`` is a valid ``memory_type``, and
  ``add`` needs at least one of user_id / agent_id / run_id;
- ``platform/features/memory-expiration.mdx`` (its OSS ``Memory`` parts): ``update(expiration_date=...)``,
  ``expiration_date=None`` clears it, and ``show_expired`` on ``search`` / ``get_all``;
- ``open-source/features/async-memory.mdx``: invalid ids and empty queries raise ``ValueError``,
  ``delete_all`` with all three ids narrows to one session.

Parameter names and return keys were checked against ``mem0/memory/main.py``. What
``test_mem0_compat.py`` and ``test_mem0_quickstart.py`` already check is not repeated. Every test
asserts mem0's documented behaviour, except the two where graphmem differs on purpose (memory type
names, ``score_details`` keys), which say so and check graphmem's side.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import AsyncMemory, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import utcnow
from tests.conftest import make_config

# name -> (text, metadata): four memories whose metadata every filter case below reads
ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "plan": ("Quarterly planning meeting with the design team", {
        "category": "work", "priority": 8, "status": "active", "title": "Weekly meeting",
        "description": "An IMPORTANT review", "rating": 4.5, "archived": False, "created_date": "2024-03-05"}),
    "dinner": ("Dinner at the noodle bar on Friday", {
        "category": "food", "priority": 3, "status": "archived", "title": "Dinner plans",
        "description": "nothing urgent", "rating": 2, "archived": True, "created_date": "2023-12-31"}),
    "flight": ("Flight to Lisbon booked for May", {
        "category": "travel", "priority": 5, "status": "deleted", "title": "Lisbon trip",
        "description": "important: passport", "rating": 3.5, "archived": False, "created_date": "2024-01-01"}),
    "novel": ("Reading a fantasy novel before bed", {
        "category": "personal", "priority": 9, "status": "completed", "title": "Book club Meeting",
        "description": "Just for fun", "rating": 4.0, "archived": False, "created_date": "2025-06-30"}),
}
NAME_OF = {text: name for name, (text, _) in ROWS.items()}
EVERY = frozenset(ROWS)


def seed(mem: Memory, uid: str) -> None:
    for text, metadata in ROWS.values():
        mem.add(text, user_id=uid, metadata=metadata, infer=False)


def searched(mem: Memory, uid: str, flt: dict[str, Any]) -> set[str]:
    """What a search lets through the filter: threshold 0 and a large top_k, so only the filter decides."""
    out = mem.search("plans for the week", filters={"user_id": uid, **flt}, top_k=50, threshold=0.0)
    return {NAME_OF[r["memory"]] for r in out["results"]}


def listed(mem: Memory, uid: str, flt: dict[str, Any]) -> set[str]:
    return {NAME_OF[r["memory"]] for r in mem.get_all(filters={"user_id": uid, **flt}, top_k=50)["results"]}


def texts(out: dict[str, Any]) -> list[str]:
    return [r["memory"] for r in out["results"]]


def one_id(out: dict[str, Any]) -> str:
    (item,) = out["results"]
    return str(item["id"])


# -- metadata-filtering.mdx: comparison, list and string operators (search and get_all) ------------
COMPARISONS: list[tuple[str, dict[str, Any], set[str]]] = [
    ("eq", {"status": {"eq": "active"}}, {"plan"}),
    ("ne", {"status": {"ne": "archived"}}, {"plan", "flight", "novel"}),
    ("ne-bool", {"archived": {"ne": True}}, {"plan", "flight", "novel"}),
    ("gt", {"priority": {"gt": 5}}, {"plan", "novel"}),
    ("gte", {"priority": {"gte": 5}}, {"plan", "flight", "novel"}),
    ("lt", {"priority": {"lt": 5}}, {"dinner"}),
    ("lte", {"priority": {"lte": 5}}, {"dinner", "flight"}),
    ("gte-float", {"rating": {"gte": 4.0}}, {"plan", "novel"}),
    ("lt-float", {"rating": {"lt": 3}}, {"dinner"}),
    ("gte-date-string", {"created_date": {"gte": "2024-01-01"}}, {"plan", "flight", "novel"}),
    ("in", {"category": {"in": ["food", "travel", "entertainment"]}}, {"dinner", "flight"}),
    ("nin", {"status": {"nin": ["deleted", "archived"]}}, {"plan", "novel"}),
    ("contains-is-case-sensitive", {"title": {"contains": "meeting"}}, {"plan"}),
    ("icontains", {"description": {"icontains": "important"}}, {"plan", "flight"}),
    ("siblings-are-anded", {"priority": {"gte": 5}, "status": {"ne": "deleted"}}, {"plan", "novel"}),
]


@pytest.mark.parametrize("call", ["search", "get_all"])
@pytest.mark.parametrize(("flt", "expected"), [c[1:] for c in COMPARISONS], ids=[c[0] for c in COMPARISONS])
def test_comparison_operators(mem: Memory, uid: str, call: str, flt: dict[str, Any], expected: set[str]) -> None:
    """The page shows every operator on ``search`` and says ``get_all`` takes the same comparison filters."""
    seed(mem, uid)
    assert (searched if call == "search" else listed)(mem, uid, flt) == expected


# -- metadata-filtering.mdx: logical trees and the wildcard (search) -------------------------------
LOGIC: list[tuple[str, dict[str, Any], set[str]]] = [
    ("AND", {"AND": [{"category": "work"}, {"priority": {"gte": 7}}, {"status": {"ne": "completed"}}]}, {"plan"}),
    ("OR", {"OR": [{"category": "food"}, {"priority": {"gte": 9}}, {"title": {"contains": "Lisbon"}}]},
     {"dinner", "flight", "novel"}),
    ("NOT-one", {"NOT": [{"status": "archived"}]}, {"plan", "flight", "novel"}),
    ("NOT-each-item-excluded", {"NOT": [{"category": "food"}, {"status": "deleted"}]}, {"plan", "novel"}),
    ("nested", {"AND": [{"OR": [{"category": "work"}, {"category": "personal"}]}, {"priority": {"gte": 5}},
                        {"NOT": [{"status": "archived"}]}]}, {"plan", "novel"}),
    ("wildcard", {"category": "*"}, set(EVERY)),
]


@pytest.mark.parametrize(("flt", "expected"), [c[1:] for c in LOGIC], ids=[c[0] for c in LOGIC])
def test_logic_and_wildcard(mem: Memory, uid: str, flt: dict[str, Any], expected: set[str]) -> None:
    seed(mem, uid)
    assert searched(mem, uid, flt) == expected


def test_an_unknown_operator_is_a_value_error(mem: Memory, uid: str) -> None:
    seed(mem, uid)
    with pytest.raises(ValueError):
        mem.search("test query", filters={"user_id": uid, "invalid_operator": {"unknown": "value"}})


def test_a_wildcard_scope_id_matches_every_run(mem: Memory, uid: str) -> None:
    """search.mdx's tips: a wildcard on a scope id (``run_id: "*"``) widens the match to any value."""
    mem.add("Booked the hotel in Porto", user_id=uid, run_id=f"{uid}-r1", infer=False)
    mem.add("Booked the hotel in Faro", user_id=uid, run_id=f"{uid}-r2", infer=False)
    found = mem.search("hotel", filters={"user_id": uid, "run_id": "*"}, threshold=0.0)
    assert sorted(texts(found)) == ["Booked the hotel in Faro", "Booked the hotel in Porto"]


# -- add ------------------------------------------------------------------------------------------
def test_add_without_infer_stores_each_message_as_given(mem: Memory, uid: str) -> None:
    messages = [{"role": "user", "content": "I switched to oat milk"},
                {"role": "assistant", "content": "Noted: oat milk from now on"}]
    added = mem.add(messages, user_id=uid, infer=False)
    assert [(r["memory"], r["event"]) for r in added["results"]] == [
        ("I switched to oat milk", "ADD"), ("Noted: oat milk from now on", "ADD")]
    assert [mem.get(r["id"])["role"] for r in added["results"]] == ["user", "assistant"]


@pytest.mark.parametrize(("memory_type", "stored"), [("semantic_memory", "semantic"), ("episodic_memory", "episodic")])
def test_the_other_memory_types_are_graphmem_s_own(mem: Memory, uid: str, memory_type: str, stored: str) -> None:
    """memory-types.mdx: mem0 validates only ``"procedural_memory"``. graphmem differs on purpose (the
    README's mem0 table): the other two names are its semantic and episodic types, which decay apart."""
    mid = one_id(mem.add("Prefers short answers", user_id=uid, infer=False, memory_type=memory_type))
    assert mem.get(mid)["memory_type"] == stored


def test_add_needs_an_identifier(mem: Memory) -> None:
    with pytest.raises(ValueError):
        mem.add("Has no owner", infer=False)


# -- search: explain ------------------------------------------------------------------------------
def test_explain_adds_score_details_only_when_asked(mem: Memory, uid: str) -> None:
    seed(mem, uid)
    plain = mem.search("planning meeting", filters={"user_id": uid})["results"]
    explained = mem.search("planning meeting", filters={"user_id": uid}, explain=True)["results"]
    assert plain and all("score_details" not in r for r in plain)
    assert explained and all(isinstance(r["score_details"], dict) for r in explained)


def test_score_details_name_graphmem_s_signals(mem: Memory, uid: str) -> None:
    """search.mdx names mem0's signals (semantic score, BM25 score, entity boost). graphmem differs on
    purpose (the README's mem0 table): its details name its own signals, each with its raw and
    normalised score, and the fused score the final one is made from."""
    seed(mem, uid)
    details = mem.search("planning meeting", filters={"user_id": uid}, explain=True)["results"][0]["score_details"]
    assert {"vector", "fulltext", "fused"} <= set(details)


# -- update ---------------------------------------------------------------------------------------
def test_update_metadata_alone_keeps_the_text_and_nothing_at_all_raises(mem: Memory, uid: str) -> None:
    mid = one_id(mem.add("Alex prefers decaf coffee", user_id=uid, infer=False))
    assert "message" in mem.update(memory_id=mid, metadata={"category": "preferences"})
    stored = mem.get(mid)
    assert stored["memory"] == "Alex prefers decaf coffee" and stored["metadata"] == {"category": "preferences"}
    with pytest.raises(ValueError):
        mem.update(memory_id=mid)


def test_update_sets_and_clears_the_expiration_date(mem: Memory, uid: str) -> None:
    """memory-expiration.mdx: ``update(id, expiration_date=...)`` on its own; a passed date hides the
    memory from search and get_all (not from get); ``expiration_date=None`` brings it straight back."""
    mid = one_id(mem.add("Pro trial is active", user_id=uid, infer=False))
    yesterday = (utcnow().date() - timedelta(days=1)).isoformat()
    mem.update(mid, expiration_date=yesterday)
    assert mem.get_all(filters={"user_id": uid})["results"] == []
    assert mem.search("trial", filters={"user_id": uid}, threshold=0.0)["results"] == []
    assert mem.get(mid)["memory"] == "Pro trial is active"
    mem.update(mid, expiration_date=None)
    assert texts(mem.get_all(filters={"user_id": uid})) == ["Pro trial is active"]


def test_show_expired_returns_expired_memories(mem: Memory, uid: str) -> None:
    """add.mdx / memory-expiration.mdx: ``show_expired=True`` on search and get_all includes them."""
    # setup only: graphmem's own way to an already expired memory (its add refuses a past expiration_date)
    mem.add("Seasonal menu is on", user_id=uid, infer=False, expires_at=utcnow() + timedelta(seconds=1))
    time.sleep(1.2)
    assert mem.get_all(filters={"user_id": uid})["results"] == []
    assert texts(mem.get_all(filters={"user_id": uid}, show_expired=True)) == ["Seasonal menu is on"]
    found = mem.search("seasonal menu", filters={"user_id": uid}, show_expired=True, threshold=0.0)
    assert texts(found) == ["Seasonal menu is on"]


# -- delete_all and reset -------------------------------------------------------------------------
def test_delete_all_by_session_by_run_and_by_agent(mem: Memory, uid: str) -> None:
    agent_a, agent_b, run_1, run_2 = f"{uid}-a", f"{uid}-b", f"{uid}-r1", f"{uid}-r2"
    mem.add("Session one with agent A", user_id=uid, agent_id=agent_a, run_id=run_1, infer=False)
    mem.add("Session two with agent A", user_id=uid, agent_id=agent_a, run_id=run_2, infer=False)
    mem.add("Session one with agent B", user_id=uid, agent_id=agent_b, run_id=run_1, infer=False)
    mem.add("Profile note", user_id=uid, infer=False)

    def left() -> list[str]:
        return sorted(texts(mem.get_all(filters={"user_id": uid})))

    assert "message" in mem.delete_all(user_id=uid, agent_id=agent_a, run_id=run_1)  # one session only
    assert left() == ["Profile note", "Session one with agent B", "Session two with agent A"]
    mem.delete_all(run_id=run_2)
    assert left() == ["Profile note", "Session one with agent B"]
    mem.delete_all(agent_id=agent_b)
    assert left() == ["Profile note"]
    with pytest.raises(ValueError):
        mem.delete_all()


def test_reset_forgets_every_user_and_the_store_stays_usable(backend: str, mem: Memory, uid: str) -> None:
    if backend == "neo4j":
        pytest.skip("reset() wipes the whole database, and the Neo4j test server is shared with other runs")
    other = f"{uid}-other"
    mem.add("Likes jazz", user_id=uid, infer=False)
    mem.add("Likes opera", user_id=other, infer=False)
    assert mem.reset() is None
    assert mem.get_all(filters={"user_id": uid})["results"] == []
    assert mem.get_all(filters={"user_id": other})["results"] == []
    assert texts(mem.add("Likes blues", user_id=uid, infer=False)) == ["Likes blues"]


# -- async-memory.mdx: invalid input is a ValueError -----------------------------------------------
def test_async_get_of_an_unknown_id_and_an_empty_query_raise_value_error(backend: str, tmp_path: Path,
                                                                          uid: str) -> None:
    async def run() -> None:
        config = MemoryConfig.load(make_config(backend, tmp_path))
        async with AsyncMemory(config, embedder=HashingEmbedder(384)) as memory:
            with pytest.raises(ValueError):
                await memory.search(query="", filters={"user_id": uid})
            with pytest.raises(ValueError):
                await memory.get(memory_id=str(uuid.uuid4()))

    asyncio.run(run())
