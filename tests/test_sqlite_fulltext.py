"""SQLite full-text candidates in a big scope: the bounded ranking keeps the right answers.

A scope of more rows than the ranking budget (``_RANKED``) takes the bounded paths: rare terms
ranked alone, else the scope's newest matches. Each test would fail if a path
lost the row a person would expect first, or let another tenant's row through.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from graphmem.embedding import HashingEmbedder
from graphmem.models import EventType, HistoryEvent, MemoryRecord, Scope, text_hash
from graphmem.stores.base import NewMemory
from graphmem.stores.sqlite.store import _RANKED, SQLiteStore

COMMON = "coffee budget meeting travel garden music dinner family".split()
ROWS = 3 * _RANKED  # the scope outgrows the budget, and so does each common word (in half the rows)


def _fill(store: SQLiteStore, user: str, texts: list[str]) -> None:
    emb = HashingEmbedder(64)
    now = datetime.now(UTC)
    vectors = emb.embed(texts)
    mems, events = [], []
    for i, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
        rec = MemoryRecord(id=f"{user}-{i:05d}", memory=text, hash=text_hash(text), user_id=user, created_at=now)
        mems.append(NewMemory(rec, np.asarray(vec, dtype=np.float32)))
        events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=text, user_id=user,
                                   created_at=now))
    store.insert(mems, events)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    rng = random.Random(7)
    s = SQLiteStore(Path(tmp_path_factory.mktemp("fts")) / "fts.db")
    s.open("hashing-64", 64)
    texts = [" ".join(rng.sample(COMMON, 4)) + f" note{i}" for i in range(ROWS)]
    texts[10] = "coffee with the zanzibar consul about the budget"
    texts[11] = "travel meeting budget coffee"  # old: past the newest matches the bound ranks
    texts[-2] = "coffee budget meeting travel"
    _fill(s, "big", texts)
    _fill(s, "other", ["the quokka budget", "coffee budget meeting travel garden"])
    return s


def _ids(store: SQLiteStore, text: str, user: str = "big", k: int = 5) -> list[str]:
    return [i for i, _ in store.candidates(Scope(user_id=user), None, None, text, k).fulltext]


def test_a_rare_term_ranks_its_row_first(store: SQLiteStore) -> None:
    assert _ids(store, "zanzibar coffee budget")[0] == "big-00010"


def test_common_words_rank_the_scope_s_newest_matches(store: SQLiteStore) -> None:
    hits = _ids(store, "coffee budget meeting travel", k=20)
    assert hits[0] == f"big-{ROWS - 2:05d}"  # every term, the shortest such row among the newest
    assert "big-00011" not in hits  # an old row of every term lies past the bound
    texts = {m.id: m.memory for m in store.list_memories(Scope(user_id="big"), None, ROWS)}
    assert all(set("coffee budget meeting travel".split()) <= set(texts[h].split()) for h in hits[:5])
    assert len(hits) == 20


def test_a_rare_term_of_another_tenant_falls_back_to_the_scope_s_own_matches(store: SQLiteStore) -> None:
    hits = _ids(store, "quokka budget")
    assert hits and all(h.startswith("big-") for h in hits)
    assert _ids(store, "quokka budget", user="other") == ["other-00000", "other-00001"]  # a small scope: exact


def test_terms_nowhere_in_the_store_give_no_candidates(store: SQLiteStore) -> None:
    assert _ids(store, "xylophone") == []
