"""Batched ingest on the loaded benchmark store, indexes online: memories/s and where the time goes.

    python bench/ingest_at_scale.py [--n 20000] [--batch 1000] [--warmup 1000]
        [--out bench/results/ingest_at_scale.json]

Why: ``bench/search_latency.py`` loads its stores with the search indexes dropped (they are built
once by ``optimize``), which is a bulk load's rate. An application adding memories to a store that
already holds a million writes with every index online; this measures that, on whatever store the
benchmark left in the server (``make bench-search``'s, port 7688), through the same Store API calls
(``insert`` of memories with their ADD events, ``write`` of entities, mentions and facts), timed per
call kind with the CPU seconds of this process and of the server. The ``--n`` memories are real
(the first ones of the data, rule-extracted), in a scratch tenant deleted afterwards. ``--warmup``
memories go first, untimed, so that the server has planned every statement shape (one per relation
type) before the clock starts, as in a process that has been writing for a while. Run it when
``optimize`` is not running: opening a store waits for every index to be online.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_data
from search_latency import DATA, Planner, build, load_docs, neo4j_config

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import Scope
from graphmem.ontology import Ontology
from graphmem.stores.base import GraphWrite


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--links", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1000,
                   help="memories written first, untimed, into a tenant of their own (0: none)")
    p.add_argument("--out", default="bench/results/ingest_at_scale.json")
    args = p.parse_args()
    onto_cfg = MemoryConfig.load({"llm": {"provider": "none"}}).ontology
    planner = Planner(load_docs(DATA), Ontology.load(onto_cfg.ontology, onto_cfg.shapes), args.links)
    tenant, *warm = planner.plan([args.n] + ([args.warmup] if args.warmup else []), "scratch")
    mem = Memory({"store": neo4j_config(), "llm": {"provider": "none"}, "embedder": {"provider": "hashing"}},
                 embedder=HashingEmbedder(384))
    store = mem.store
    loaded = store.count(None)
    scope = Scope(user_id=tenant.user_id)
    for t in (tenant, *warm):
        if store.count(Scope(user_id=t.user_id)):
            store.delete_scope(Scope(user_id=t.user_id), datetime.now(UTC))
    if warm:  # the server plans each statement shape (one per relation type) once: not counted
        build(store, warm, mem.embedder, args.batch)
        store.delete_scope(Scope(user_id=warm[0].user_id), datetime.now(UTC))
    seconds: dict[str, float] = defaultdict(float)
    server_cpu: dict[str, float] = defaultdict(float)
    pid = scale_data.server_pid()

    depth = [0]  # insert writes through write: count the outer call only

    def timed(kind_of: Any, method: Any) -> Any:
        def call(*a: Any, **kw: Any) -> Any:
            if depth[0]:
                return method(*a, **kw)
            kind = kind_of(*a)
            c0, t0 = scale_data.cpu_seconds(pid), time.perf_counter()
            depth[0] += 1
            try:
                return method(*a, **kw)
            finally:
                depth[0] -= 1
                seconds[kind] += time.perf_counter() - t0
                server_cpu[kind] += scale_data.cpu_used(c0, scale_data.cpu_seconds(pid)).get("server", 0.0)
        return call

    def write_kind(_scope: Scope, change: GraphWrite) -> str:
        return next(k for k in ("entities", "mentions", "relations") if getattr(change, k)) if (
            change.entities or change.mentions or change.relations) else "other"

    store.insert = timed(lambda *a: "memories", store.insert)  # type: ignore[method-assign]
    store.write = timed(write_kind, store.write)  # type: ignore[method-assign]
    load0 = os.getloadavg()
    c0, t0 = scale_data.cpu_seconds(pid), time.perf_counter()
    parts = build(store, [tenant], mem.embedder, args.batch)
    total, cpu = time.perf_counter() - t0, scale_data.cpu_used(c0, scale_data.cpu_seconds(pid))
    load1 = os.getloadavg()
    store.delete_scope(scope, datetime.now(UTC))
    mem.close()
    n = len(tenant.texts)
    report = {
        "benchmark": "batched ingest through the Store API on the loaded store, search indexes online",
        "store_memories_before": loaded, "warmup_memories": args.warmup, "memories": n,
        "entities": len(tenant.entities), "mentions": len(tenant.mentions), "facts": len(tenant.facts),
        "batch": args.batch,
        "seconds": round(total, 2), "memories_per_s": round(n / total), **parts, "cpu_s": cpu,
        "per_call_kind_s": {k: round(v, 2) for k, v in seconds.items()},
        "server_cpu_per_call_kind_s": {k: round(v, 2) for k, v in server_cpu.items()},
        "loadavg_before": [round(x, 2) for x in load0], "loadavg_after": [round(x, 2) for x in load1],
    }
    print(json.dumps(report, indent=2))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
