"""PROFILE the Cypher statement ``Memory.search`` runs on Neo4j, per mode, on the benchmark's store.

    python bench/profile_search.py [--modes vector,hybrid] [--queries 20] [--user USER_ID]

Why: when a mode misses its latency target at a size, the plan says where the time goes: which
operators do the work (db hits, rows), whether the indexes are used, and the page cache hits and
faults of the statement (Community has no page cache metrics; PROFILE reports them per query).
Captures the statement and parameters of each search (a patch of the driver's ``Session.run``),
then runs ``PROFILE`` of it and prints operators summed over the queries, and the time of the plain
statement against its PROFILE-free rerun. Uses the tenant ``bench/search_latency.py`` loaded last
(the largest ``-main`` tenant) unless ``--user`` is given. Run it when ``optimize`` is not running:
opening a store creates missing indexes and waits for all of them to be online.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import search_config
from search_latency import DATA, TENANT_PREFIX, FrozenEmbedder, load_queries, neo4j_config

from graphmem import Memory
from graphmem.embedding import HashingEmbedder


def walk(plan: Any, out: dict[str, dict[str, float]], depth: int = 0) -> None:
    args = plan.get("args", {})
    name = plan["operatorType"] + (f" {args['Details'][:90]}" if args.get("Details") else "")
    row = out[f"{'  ' * depth}{name}"]
    for key in ("dbHits", "rows", "pageCacheHits", "pageCacheMisses", "time"):
        row[key] += float(plan.get(key, args.get(key, 0)) or 0)
    for child in plan.get("children", []):
        walk(child, out, depth + 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="vector,fulltext,graph,hybrid")
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--user", default=None)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--out", default=None, help="JSON of the summed plans")
    args = p.parse_args()
    from neo4j import GraphDatabase
    from neo4j._sync.work.session import Session

    cfg = neo4j_config()
    texts = load_queries(DATA, args.queries)
    embedder = FrozenEmbedder(HashingEmbedder(384))
    embedder.freeze(texts)
    mem = Memory({"store": cfg, "llm": {"provider": "none"}, "embedder": {"provider": "hashing"}}, embedder=embedder)
    user = args.user
    if user is None:
        rows = mem.store.cypher("MATCH (m:Memory) WHERE m.user_id STARTS WITH $p AND m.user_id ENDS WITH '-main' "
                                "RETURN m.user_id AS u LIMIT 1", {"p": TENANT_PREFIX})
        user = rows[0]["u"]
    captured: list[tuple[str, dict[str, Any]]] = []
    real_run = Session.run

    def capture(session: Any, query: Any, parameters: Any = None, **kw: Any) -> Any:
        captured.append((str(query), dict(parameters or {})))
        return real_run(session, query, parameters, **kw)

    report: dict[str, Any] = {"user": user, "queries": len(texts), "modes": {}}
    with GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"])) as driver:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            mem.config.search = search_config(mode)
            ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            plain, profiled, stmts = [], [], []
            for q in texts:
                mem.search(q, user_id=user, top_k=args.top_k)  # warm
                captured.clear()
                setattr(Session, "run", capture)  # noqa: B010
                try:
                    mem.search(q, user_id=user, top_k=args.top_k)
                finally:
                    setattr(Session, "run", real_run)  # noqa: B010
                stmts.append(len(captured))
                for query, params in captured:
                    with driver.session() as s:
                        t0 = time.perf_counter()
                        s.run(query, params).consume()
                        plain.append((time.perf_counter() - t0) * 1000)
                        t0 = time.perf_counter()
                        summary = s.run("PROFILE " + query, params).consume()
                        profiled.append((time.perf_counter() - t0) * 1000)
                    walk(summary.profile, ops)
            n = len(texts)
            summary_ops = {k: {m: round(v / n, 1) for m, v in row.items()} for k, row in ops.items()}
            report["modes"][mode] = {"statements_per_search": statistics.fmean(stmts),
                                     "statement_p50_ms": round(statistics.median(plain), 2),
                                     "profiled_p50_ms": round(statistics.median(profiled), 2),
                                     "operators_per_search": summary_ops}
            print(f"\n== {mode}: {statistics.fmean(stmts):.2f} statements/search, statement p50 "
                  f"{statistics.median(plain):.2f} ms (PROFILE {statistics.median(profiled):.2f} ms); per search:")
            print(f"  {'dbHits':>9} {'rows':>8} {'pc hits':>9} {'pc miss':>8}  operator")
            for k, row in summary_ops.items():
                print(f"  {row['dbHits']:>9.0f} {row['rows']:>8.0f} {row['pageCacheHits']:>9.0f} "
                      f"{row['pageCacheMisses']:>8.0f}  {k}")
    mem.close()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
