"""SQLite full-text candidate latency at 100k memories: natural questions and common-word queries,
this checkout against a baseline commit.

    python bench/fulltext.py [--size 100000] [--queries 300] [--baseline-ref REF] [--out F]

Why (issue 19): FTS5 ranks every row a query matches, so a question made of words found in a third
of the rows, asked in a tenant holding most of the store, had a slow tail. This times the store's
candidate query alone (``SQLiteStore.candidates`` with text only: no vector, no fusion), k = 30, on
one store file read by both trees (the schema is the same), each in its own process, alternating
query blocks so load from other work on the machine falls on both alike.

Store: ``--size`` memories, sentences of LongMemEval_S turns (``../shared/data``), 70% in the queried
tenant and the rest in nine others. Query sets: ``natural``, LoCoMo questions (a seeded sample);
``common``, three to five words drawn from the 40 words found in the most rows of the store (the
query a generic chat corpus gets: "what did we say about the meeting"). Prints p50/p95 per set and
tree with the ratios and writes JSON.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / ".cache" / "fulltext"

CHILD = r"""
import json, sys, time
from pathlib import Path
from graphmem.models import Scope
from graphmem.stores.sqlite import SQLiteStore
import graphmem
assert graphmem.__file__.startswith(sys.argv[3]), (graphmem.__file__, sys.argv[3])
store = SQLiteStore(Path(sys.argv[1]))
store.open("hashing-v1-64", 64)
queries = json.loads(Path(sys.argv[2]).read_text())
scope = Scope(user_id="main")
for q in queries[:50]:  # warm the page cache and the statement cache
    store.candidates(scope, None, None, q, 30)
out = []
for q in queries:
    t0 = time.perf_counter()
    store.candidates(scope, None, None, q, 30)
    out.append((time.perf_counter() - t0) * 1000)
print(json.dumps(out))
"""


def build(path: Path, size: int, data: Path) -> list[str]:
    """The store file (kept in ``.cache/fulltext``) and its texts."""
    from graphmem.embedding import HashingEmbedder
    from graphmem.models import EventType, HistoryEvent, MemoryRecord, text_hash
    from graphmem.stores.base import NewMemory
    from graphmem.stores.sqlite import SQLiteStore

    texts: dict[str, str] = {}  # hash -> text: a scope holds a text once
    raw = json.loads(gzip.decompress((data / "longmemeval-s-dev.json.gz").read_bytes()))
    for coll in raw["collections"]:
        for doc in coll["docs"]:
            for sentence in re.split(r"(?<=[.!?])\s+", doc["text"]):
                if len(sentence) > 20:
                    texts.setdefault(text_hash(sentence[:500]), sentence[:500])
                if len(texts) >= size:
                    break
    rows = list(texts.values())[:size]
    if path.exists():
        return rows
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    store = SQLiteStore(tmp)
    store.open("hashing-v1-64", 64)
    emb, now, rng = HashingEmbedder(64), datetime.now(UTC), random.Random(3)
    users = ["main" if rng.random() < 0.7 else f"t{rng.randrange(1, 10)}" for _ in rows]
    for start in range(0, len(rows), 2000):
        by_user: dict[str, list[int]] = {}
        for i in range(start, min(start + 2000, len(rows))):
            by_user.setdefault(users[i], []).append(i)
        for user, part in by_user.items():
            vectors = emb.embed([rows[i] for i in part])
            recs = [MemoryRecord(id=f"m{i}", memory=rows[i], hash=text_hash(rows[i]), user_id=user,
                                 created_at=now) for i in part]
            store.insert([NewMemory(r, v) for r, v in zip(recs, vectors, strict=True)],
                         [HistoryEvent(memory_id=r.id, event=EventType.ADD, new_memory=r.memory, user_id=user,
                                       created_at=now) for r in recs])
    store.optimize()
    store.close()
    tmp.rename(path)
    return rows


def query_sets(texts: list[str], data: Path, n: int) -> dict[str, list[str]]:
    from graphmem.stores.text import STOPWORDS

    rng = random.Random(11)
    raw = json.loads(gzip.decompress((data / "locomo-dev.json.gz").read_bytes()))
    natural = [q["text"] for coll in raw["collections"] for q in coll["queries"]]
    rng.shuffle(natural)
    rows: Counter[str] = Counter()
    for t in texts:
        rows.update({w for w in re.findall(r"[a-z]+", t.lower()) if w not in STOPWORDS and len(w) > 2})
    top = [w for w, _ in rows.most_common(40)]
    common = [" ".join(rng.sample(top, rng.randint(3, 5))) for _ in range(n)]
    return {"natural": natural[:n], "common": common}


def run(tree: Path, store: Path, queries: list[str]) -> list[float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(queries, f)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # cwd elsewhere: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH
    argv = [sys.executable, "-c", CHILD, str(store.resolve()), f.name, str(tree.resolve())]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=1800,
                         cwd=tempfile.gettempdir())
    os.unlink(f.name)
    times: list[float] = json.loads(out.stdout)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--baseline-ref", default="1ba0d47", help="the commit to compare with (a temporary worktree)")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default="bench/results/fulltext.json")
    args = p.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    store = CACHE / f"store-{args.size}.db"
    t0 = time.perf_counter()
    texts = build(store, args.size, Path(args.data))
    print(f"store: {len(texts)} memories ({time.perf_counter() - t0:.0f} s to build or open)", file=sys.stderr)
    sets = query_sets(texts, Path(args.data), args.queries)
    base = Path(tempfile.mkdtemp(prefix="graphmem-fts-base-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(base / "tree"),
                    args.baseline_ref], check=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline_ref],
                            capture_output=True, text=True, check=True).stdout.strip()
    results: dict[str, Any] = {}
    try:
        for name, queries in sets.items():
            times: dict[str, list[float]] = {"current": [], "baseline": []}
            for start in range(0, len(queries), 100):  # alternate blocks of 100
                block = queries[start : start + 100]
                times["current"] += run(ROOT, store, block)
                times["baseline"] += run(base / "tree", store, block)
            row: dict[str, Any] = {}
            for tree, ts in times.items():
                qs = statistics.quantiles(ts, n=20)
                row[tree] = {"p50_ms": round(statistics.median(ts), 2), "p95_ms": round(qs[18], 2),
                             "max_ms": round(max(ts), 2)}
            row["ratio_p50"] = round(row["current"]["p50_ms"] / row["baseline"]["p50_ms"], 2)
            row["ratio_p95"] = round(row["current"]["p95_ms"] / row["baseline"]["p95_ms"], 2)
            results[name] = row
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base / "tree")], check=False)
    print(f"{'queries':<10}{'tree':<10}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for name, row in results.items():
        for tree in ("baseline", "current"):
            r = row[tree]
            print(f"{name:<10}{tree:<10}{r['p50_ms']:>9}{r['p95_ms']:>9}{r['max_ms']:>9}")
        print(f"{'':<10}{'ratio':<10}{row['ratio_p50']:>9}{row['ratio_p95']:>9}")
    out = {"benchmark": "SQLite full-text candidates (text only, k=30), tenant with 70% of the store",
           "size": len(texts), "queries": args.queries, "baseline": commit, "cpus": os.cpu_count(),
           "load_avg": [round(x, 2) for x in os.getloadavg()], "results": results}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
