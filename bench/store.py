"""Store benchmark: batched vs one-write-per-memory inserts, and search latency at N memories.

    python bench/store.py [--n 10000] [--single 1000] [--queries 300] [--backends sqlite,neo4j]

For each backend, in one run and on the same generated data:
- insert throughput (memories/s) of batched writes (``--batch`` memories per transaction) against the
  baseline of one transaction per memory, measured in the same run;
- search latency p50/p95 of the store's candidate query (vector + full text, as ``Memory.search``
  issues it) plus fusion, with query embeddings computed beforehand (excluded), and the number of
  round trips per search.
Neo4j is reached through ``NEO4J_URI`` / ``NEO4J_USER`` / ``NEO4J_PASSWORD`` (``make bench-store``
starts the bundled server). Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.config import MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import EventType, HistoryEvent, MemoryRecord, Scope, text_hash
from graphmem.search import Fusion
from graphmem.stores.base import NewMemory, Store

WORDS = """
alice bob carol project budget meeting deadline travel paris berlin tokyo coffee tea python rust
graph memory agent database index vector search music guitar piano running yoga doctor dentist
invoice contract launch release bug outage customer support hiking camping birthday party dinner
allergy peanut manager team hiring interview offer salary apartment lease moving garden dog cat
""".split()


DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) + f" #{i}" for i in range(n)]


def corpus(n: int, n_queries: int, data: Path) -> tuple[list[str], list[str], str]:
    """Real chat turns and questions from the benchmark data when present, else synthetic text."""
    docs_file, query_file = data / "longmemeval-s-dev.json.gz", data / "locomo-dev.json.gz"
    if not (docs_file.exists() and query_file.exists()):
        return sentences(n, 1), [" ".join(random.Random(i).choices(WORDS, k=4)) for i in range(n_queries)], "synthetic"
    with gzip.open(docs_file) as f:
        texts = [d["text"] for c in json.load(f)["collections"] for d in c["docs"] if d["text"].strip()]
    with gzip.open(query_file) as f:
        queries = [q["text"] for c in json.load(f)["collections"] for q in c["queries"]]
    by_hash: dict[str, str] = {}
    for t in texts:  # one memory per normalized text: the store's identity (SPEC, concurrency)
        by_hash.setdefault(text_hash(t), t)
    texts = list(by_hash.values())
    if len(texts) < n:
        texts += sentences(n - len(texts), 1)
    return texts[:n], queries[:n_queries], f"{docs_file.name} turns, {query_file.name} questions"


def make_store(backend: str, tmp: Path) -> Store:
    if backend == "sqlite":
        from graphmem.stores.sqlite import SQLiteStore

        return SQLiteStore(tmp / "bench.db")
    from graphmem.stores.neo4j import Neo4jStore

    cfg = MemoryConfig.load({"store": {
        "provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
        "user": os.environ.get("NEO4J_USER", "neo4j"), "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test"),
    }})
    return Neo4jStore(cfg.store)


def items(texts: list[str], vectors: np.ndarray, scope: Scope) -> tuple[list[NewMemory], list[HistoryEvent]]:
    now = datetime.now(UTC)
    mems, events = [], []
    for text, vec in zip(texts, vectors, strict=True):
        rec = MemoryRecord(id=str(uuid.uuid4()), memory=text, hash=text_hash(text), user_id=scope.user_id,
                           role="user", metadata={"bench": True}, created_at=now)
        mems.append(NewMemory(rec, vec))
        events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=text, user_id=scope.user_id,
                                   created_at=now))
    return mems, events


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def run_backend(backend: str, args: argparse.Namespace, texts: list[str], vectors: np.ndarray,
                queries: list[str], qvecs: np.ndarray) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="graphmem-bench-"))
    store = make_store(backend, tmp)
    store.open("hashing-v1-384", 384)
    search_cfg = MemoryConfig.load().search
    scope = Scope(user_id=f"bench-{uuid.uuid4().hex[:8]}")
    single_scope = Scope(user_id=scope.user_id + "-single")
    try:
        # baseline: one transaction per memory
        mems, events = items(texts[: args.single], vectors[: args.single], single_scope)
        t0 = time.perf_counter()
        for m, e in zip(mems, events, strict=True):
            store.insert([m], [e])
        single_s = time.perf_counter() - t0
        store.delete_scope(single_scope, datetime.now(UTC))
        # batched
        mems, events = items(texts, vectors, scope)
        t0 = time.perf_counter()
        for i in range(0, len(mems), args.batch):
            store.insert(mems[i : i + args.batch], events[i : i + args.batch])
        batch_s = time.perf_counter() - t0
        assert store.count(scope) == len(texts)
        # search
        k = search_cfg.top_k * search_cfg.overfetch
        for q, v in zip(queries[:20], qvecs[:20], strict=True):  # warm caches and query plans
            store.candidates(scope, None, v, q, k)
        lat, trips = [], []
        for q, v in zip(queries, qvecs, strict=True):
            t0 = time.perf_counter()
            c = store.candidates(scope, None, v, q, k)
            Fusion({"vector": c.vector, "fulltext": c.fulltext}, search_cfg).ranked()
            lat.append((time.perf_counter() - t0) * 1000)
            trips.append(c.round_trips)
        flt_lat = []
        from graphmem.filters import parse

        flt = parse({"bench": True, "role": {"in": ["user", "assistant"]}})
        for q, v in zip(queries[:100], qvecs[:100], strict=True):
            t0 = time.perf_counter()
            store.candidates(scope, flt, v, q, k)
            flt_lat.append((time.perf_counter() - t0) * 1000)
        store.delete_scope(scope, datetime.now(UTC))
    finally:
        store.close()
    single_rate = args.single / single_s
    batch_rate = len(texts) / batch_s
    return {
        "insert": {
            "batched_per_s": round(batch_rate, 1), "single_per_s": round(single_rate, 1),
            "speedup": round(batch_rate / single_rate, 2), "batch_size": args.batch,
            "batched_n": len(texts), "single_n": args.single,
        },
        "search_ms": {"p50": round(pct(lat, 50), 3), "p95": round(pct(lat, 95), 3),
                      "round_trips_mean": round(statistics.fmean(trips), 3), "k_per_signal": k},
        "search_filtered_ms": {"p50": round(pct(flt_lat, 50), 3), "p95": round(pct(flt_lat, 95), 3)},
        "memories": len(texts),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--single", type=int, default=1000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--out", default="bench/results/store.json")
    p.add_argument("--data", default=str(DATA), help="benchmark data folder (format: shared/data/README.md)")
    args = p.parse_args()

    embedder = HashingEmbedder(384)
    texts, queries, source = corpus(args.n, args.queries, Path(args.data))
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    embed_s = time.perf_counter() - t0
    qvecs = embedder.embed(queries)

    results: dict[str, Any] = {"n": args.n, "corpus": source, "embedder": embedder.name,
                               "embed_s_excluded": round(embed_s, 2), "backends": {}}
    for backend in args.backends.split(","):
        print(f"[{backend}] running…", file=sys.stderr)
        results["backends"][backend] = run_backend(backend, args, texts, vectors, queries, qvecs)

    print(f"\nstore benchmark: {args.n} memories ({source}), 384-dim vectors, {len(queries)} queries "
          "(query embedding excluded)")
    print(f"{'backend':8} {'batched/s':>10} {'single/s':>9} {'ratio':>6} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'trips':>5} {'filt p50':>8} {'filt p95':>8}")
    for name, r in results["backends"].items():
        ins, s, f = r["insert"], r["search_ms"], r["search_filtered_ms"]
        print(f"{name:8} {ins['batched_per_s']:>10.0f} {ins['single_per_s']:>9.0f} {ins['speedup']:>5.1f}x "
              f"{s['p50']:>7.2f} {s['p95']:>7.2f} {s['round_trips_mean']:>5.2f} {f['p50']:>8.2f} {f['p95']:>8.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
