"""PROFILE the Cypher statement ``Memory.search`` runs on Neo4j, per mode, on the benchmark's store.

    python bench/profile_search.py [--modes vector,hybrid] [--queries 20] [--user USER_ID]
    python bench/profile_search.py --stages [--queries 200] [--rounds 3] [--out FILE]

Why: when a mode misses its latency target at a size, the plan says where the time goes: which
operators do the work (db hits, rows), whether the indexes are used, and the page cache hits and
faults of the statement (Community has no page cache metrics; PROFILE reports them per query).
Captures the statement and parameters of each search (a patch of the driver's ``Session.run``),
then runs ``PROFILE`` of it and prints operators summed over the queries, and the time of the plain
statement against its PROFILE-free rerun. Uses the tenant ``bench/search_latency.py`` loaded last
(the largest ``-main`` tenant) unless ``--user`` is given. Run it when ``optimize`` is not running:
opening a store creates missing indexes and waits for all of them to be online.

``--stages``: where a hybrid search's time goes, stage by stage. The captured hybrid statement is run
cut after each stage of its graph half (:data:`STAGES`: the candidates, linking the query's
n-grams, the walk, the facts' provenance and the entities' mentions, the records of memories only
the graph found), each cut returning the same hit lists plus the sizes of what it built, the cuts
of one query run back to back and the queries in rounds; the deltas of their p50s are the stages'
costs. The whole search is timed too, so the rest is the client's (decoding, graph scoring,
fusion), against a ``no_graph`` search (hybrid with the graph's weight at 0).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import search_config
from search_latency import DATA, TENANT_PREFIX, FrozenEmbedder, load_queries, neo4j_config

from graphmem import Memory
from graphmem.embedding import HashingEmbedder


@contextmanager
def statements(session_cls: Any) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """The statements (text, parameters) the driver's sessions run inside the block (a patch of
    ``session_cls.run``)."""
    captured: list[tuple[str, dict[str, Any]]] = []
    real_run = session_cls.run

    def capture(session: Any, query: Any, parameters: Any = None, **kw: Any) -> Any:
        captured.append((str(query), dict(parameters or {})))
        return real_run(session, query, parameters, **kw)

    setattr(session_cls, "run", capture)  # noqa: B010
    try:
        yield captured
    finally:
        setattr(session_cls, "run", real_run)  # noqa: B010


def walk(plan: Any, out: dict[str, dict[str, float]], depth: int = 0) -> None:
    args = plan.get("args", {})
    name = plan["operatorType"] + (f" {args['Details'][:90]}" if args.get("Details") else "")
    row = out[f"{'  ' * depth}{name}"]
    for key in ("dbHits", "rows", "pageCacheHits", "pageCacheMisses", "time"):
        row[key] += float(plan.get(key, args.get(key, 0)) or 0)
    for child in plan.get("children", []):
        walk(child, out, depth + 1)


STAGES: tuple[tuple[str, str | None, str], ...] = (
    ("candidates", "WITH big, kk, vh, vraw, fh, fraw, ", ""),
    ("+ linking", "CALL (g_seed_mids) {", ", size(g_linked) AS linked"),
    ("+ walk", "CALL (g_facts, g_seen) {", ", size(g_seen) AS seen, size(g_facts) AS facts"),
    ("+ provenance, mentions", "CALL (g_ment, g_prov, g_seed_pairs, g_skip) {",
     ", size(g_rels) AS rels, size(g_ents) AS ents"),
    ("+ graph-only records (whole statement)", None, ""),
)
"""Cumulative cuts of the hybrid statement: name, the text its cut starts at (``None``: the whole
statement), and the sizes it returns beside the hit lists (so nothing computed goes unused)."""


def stages(mem: Memory, user: str, texts: list[str], driver: Any, session_cls: Any, top_k: int,
           rounds: int) -> dict[str, Any]:
    """See the module docstring (``--stages``)."""
    mem.config.search = search_config("hybrid")
    stmts = []
    for q in texts:
        with statements(session_cls) as captured:
            mem.search(q, user_id=user, top_k=top_k)
        stmts += [(q, c) for c in captured if "g_recs" in c[0]][:1]  # none: nothing to walk from
    cuts = []
    for q, (query, params) in stmts:
        variants = []
        for _, marker, sizes in STAGES:
            if marker is None:
                variants.append(query)
                continue
            if marker not in query:
                raise SystemExit(f"the hybrid statement has no {marker!r}: update STAGES to the Cypher of search")
            variants.append(query[: query.index(marker)] + f" RETURN vh, fh{sizes}")
        cuts.append((q, variants, params))
    wall: dict[str, list[float]] = {name: [] for name, _, _ in STAGES}
    server: dict[str, list[float]] = {name: [] for name, _, _ in STAGES}
    searches: dict[str, list[float]] = {"hybrid": [], "no_graph": []}
    configs = {mode: search_config(mode) for mode in searches}
    for rnd in range(rounds + 1):  # the first round warms the plans up
        for q, variants, params in cuts:
            for (name, _, _), text in zip(STAGES, variants, strict=True):
                with driver.session() as s:
                    t0 = time.perf_counter()
                    result = s.run(text, params)
                    list(result)
                    summary = result.consume()
                    if rnd:
                        wall[name].append((time.perf_counter() - t0) * 1000)
                        server[name].append(float((summary.result_available_after or 0)
                                                  + (summary.result_consumed_after or 0)))
            for mode, lat in searches.items():  # beside the cuts, so a slower minute slows both
                mem.config.search = configs[mode]
                t0 = time.perf_counter()
                mem.search(q, user_id=user, top_k=top_k)
                if rnd:
                    lat.append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {"statements": len(cuts), "rounds": rounds, "loadavg": [round(x, 2) for x in os.getloadavg()],
                           "stages": {}}
    before = 0.0
    print(f"\n== hybrid statement by stage, {len(cuts)} queries x {rounds} rounds (cumulative p50; delta)")
    for name, _, _ in STAGES:
        p50 = statistics.median(wall[name])
        out["stages"][name] = {"wall_p50_ms": round(p50, 2), "delta_ms": round(p50 - before, 2),
                               "server_mean_ms": round(statistics.fmean(server[name]), 2)}
        print(f"  {p50:6.2f} ms  {p50 - before:+6.2f}  server mean {statistics.fmean(server[name]):5.2f}  {name}")
        before = p50
    for mode, lat in searches.items():
        out[f"{mode}_search_p50_ms"] = round(statistics.median(lat), 2)
    out["client_rest_ms"] = round(out["hybrid_search_p50_ms"] - before, 2)
    print(f"  search p50: hybrid {out['hybrid_search_p50_ms']:.2f} ms, no_graph {out['no_graph_search_p50_ms']:.2f} "
          f"ms; hybrid minus its statement (client: decoding, graph scoring, fusion) {out['client_rest_ms']:.2f} ms")
    return out


def plans(mem: Memory, user: str, texts: list[str], driver: Any, session_cls: Any, top_k: int,
          modes: list[str]) -> dict[str, Any]:
    """Per mode: each search's statements, timed plain and with ``PROFILE``, operators summed."""
    report: dict[str, Any] = {}
    for mode in modes:
        mem.config.search = search_config(mode)
        ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        plain, profiled, stmts = [], [], []
        for q in texts:
            mem.search(q, user_id=user, top_k=top_k)  # warm
            with statements(session_cls) as captured:
                mem.search(q, user_id=user, top_k=top_k)
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
        report[mode] = {"statements_per_search": statistics.fmean(stmts),
                        "statement_p50_ms": round(statistics.median(plain), 2),
                        "profiled_p50_ms": round(statistics.median(profiled), 2),
                        "operators_per_search": summary_ops}
        print(f"\n== {mode}: {statistics.fmean(stmts):.2f} statements/search, statement p50 "
              f"{statistics.median(plain):.2f} ms (PROFILE {statistics.median(profiled):.2f} ms); per search:")
        print(f"  {'dbHits':>9} {'rows':>8} {'pc hits':>9} {'pc miss':>8}  operator")
        for k, row in summary_ops.items():
            print(f"  {row['dbHits']:>9.0f} {row['rows']:>8.0f} {row['pageCacheHits']:>9.0f} "
                  f"{row['pageCacheMisses']:>8.0f}  {k}")
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="vector,fulltext,graph,hybrid")
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--user", default=None)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--out", default=None, help="JSON of the summed plans")
    p.add_argument("--stages", action="store_true", help="split the hybrid statement's time by stage instead")
    p.add_argument("--rounds", type=int, default=3, help="--stages: timed rounds over the queries")
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
    auth = (cfg["user"], cfg["password"])
    with GraphDatabase.driver(cfg["uri"], auth=auth, notifications_min_severity="OFF") as driver:
        if args.stages:
            found = stages(mem, user, texts, driver, Session, args.top_k, args.rounds)
        else:
            modes = [m.strip() for m in args.modes.split(",") if m.strip()]
            found = {"modes": plans(mem, user, texts, driver, Session, args.top_k, modes)}
    report = {"user": user, "queries": len(texts), **found}
    mem.close()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
