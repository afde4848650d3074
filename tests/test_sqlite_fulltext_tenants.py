"""SQLite common-word full text with tenants interleaved: the scope's newest matches are ranked in
the index alone, and that must rank exactly as BM25 over the scope's rows joined in SQL does."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from graphmem.filters import parse
from graphmem.models import EventType, HistoryEvent, MemoryRecord, Scope, text_hash
from graphmem.stores.base import NewMemory
from graphmem.stores.sqlite.store import _BM25, _RANKED, SQLiteStore
from graphmem.stores.text import fts5_query, query_terms

WORDS = "coffee budget meeting travel garden music dinner family".split()
USERS = ("big", "mid", "small")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    """Three tenants written in alternating batches, so their rowids interleave; the first two
    hold more rows of every common word than the ranking budget."""
    rng = random.Random(5)
    s = SQLiteStore(Path(tmp_path_factory.mktemp("fts-tenants")) / "t.db")
    s.open("test-8", 8)
    now = datetime(2024, 1, 1, tzinfo=UTC)
    for batch in range(12):
        for user, n in zip(USERS, (400, 300, 40), strict=True):
            mems, events = [], []
            for i in range(n):
                text = " ".join(rng.sample(WORDS, rng.randint(2, 5))) + f" {user} batch{batch} row{i}"
                rec = MemoryRecord(id=f"{user}-{batch:02d}-{i:03d}", memory=text, hash=text_hash(text),
                                   user_id=user, created_at=now, metadata={"odd": i % 2 == 1})
                mems.append(NewMemory(rec, np.full(8, 0.35, dtype=np.float32)))
                events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=text, user_id=user,
                                           created_at=now))
            s.insert(mems, events)
    return s


def _joined(store: SQLiteStore, user: str, text: str, k: int) -> list[tuple[str, float]]:
    """BM25 over the scope's newest ``_RANKED`` matching rows, the scope tested on the joined table."""
    conn = store._conn()
    match = f"memory : ({fts5_query(query_terms(text))})"
    rows = conn.execute(
        "SELECT m.rowid FROM memories_fts JOIN memories AS m ON m.rowid = memories_fts.rowid "
        "WHERE memories_fts MATCH ? AND m.user_id = ? ORDER BY m.rowid DESC LIMIT ?", [match, user, _RANKED]).fetchall()
    edge = rows[-1][0] - 1
    hits = conn.execute(
        "SELECT m.id, -rank FROM memories_fts CROSS JOIN memories AS m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND rank MATCH {_BM25} AND memories_fts.rowid > ? AND m.user_id = ?",
        [match, edge, user]).fetchall()
    return sorted(((r[0], float(r[1])) for r in hits), key=lambda h: (-h[1], h[0]))[:k]


@pytest.mark.parametrize("user", ["big", "mid"])
@pytest.mark.parametrize("text", ["coffee budget meeting", "travel garden music dinner family", "coffee",
                                  "what about the family dinner and the music"])
def test_common_words_rank_as_bm25_over_the_scope_does(store: SQLiteStore, user: str, text: str) -> None:
    got = store.candidates(Scope(user_id=user), None, None, text, 30).fulltext
    want = _joined(store, user, text, 30)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-9)
    assert all(i.startswith(f"{user}-") for i, _ in got)


def test_a_filter_keeps_its_exact_path(store: SQLiteStore) -> None:
    flt = parse({"odd": True})
    got = store.candidates(Scope(user_id="big"), flt, None, "coffee budget meeting", 30).fulltext
    assert got and all(int(i.rsplit("-", 1)[1]) % 2 == 1 for i, _ in got)
    assert all(i.startswith("big-") for i, _ in got)
