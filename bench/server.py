"""REST server benchmark: search latency and throughput over HTTP against ``Memory.search`` in process.

    python bench/server.py [--seconds 30] [--clients 8] [--n 2000] [--backends sqlite,neo4j]

For each backend, on one store of ``--n`` memories (one tenant, hashing embedder, ``infer=False``):
- in process: ``Memory.search`` from 1 thread, then from ``--clients`` threads, each for ``--seconds``;
- over HTTP: ``graphmem serve`` in its own process on 127.0.0.1, ``--clients`` threads each with its
  own keep-alive connection posting ``/v1/search`` for ``--seconds``, with a key bound to the tenant.
Reports p50/p95 latency and requests/s of each, and the overhead ratio of REST to in-process at the
same concurrency (the server's HTTP, auth, validation and JSON on top of the same search). Neo4j
comes from ``NEO4J_URI`` / ``NEO4J_USER`` / ``NEO4J_PASSWORD`` (``make bench-server`` starts the
bundled server when none answers); its tenant is deleted afterwards. Prints a table and writes JSON
(``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import serving  # bench/serving.py: this folder is the script's first import path

from graphmem import Memory
from graphmem.servers.auth import new_key

WORDS = """
alice bob carol project budget meeting deadline travel paris berlin tokyo coffee tea python rust
graph memory agent database index vector search music guitar piano running yoga doctor dentist
invoice contract launch release bug outage customer support hiking camping birthday party dinner
allergy peanut manager team hiring interview offer salary apartment lease moving garden dog cat
""".split()


def texts(n: int, seed: int, words: tuple[int, int]) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(*words))) + f" #{i}" for i in range(n)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(latencies: list[float], seconds: float, errors: int) -> dict[str, Any]:
    ms = [x * 1000 for x in latencies]
    return {"requests": len(ms), "errors": errors, "rps": round(len(ms) / seconds, 1),
            "p50_ms": round(percentile(ms, 0.5), 2), "p95_ms": round(percentile(ms, 0.95), 2),
            "mean_ms": round(statistics.fmean(ms), 2)}


def hammer(workers: int, seconds: float, make: Callable[[int], Callable[[str], None]],
           queries: list[str]) -> dict[str, Any]:
    """``workers`` threads, each calling its own ``make(i)`` with queries in turn until the time is up."""
    latencies: list[list[float]] = [[] for _ in range(workers)]
    errors = [0] * workers
    barrier = threading.Barrier(workers + 1)
    stop = threading.Event()

    def work(i: int) -> None:
        call = make(i)
        rng = random.Random(i)
        barrier.wait()
        while not stop.is_set():
            q = queries[rng.randrange(len(queries))]
            t = time.perf_counter()
            try:
                call(q)
            except Exception:
                errors[i] += 1
                continue
            latencies[i].append(time.perf_counter() - t)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return summary([x for lane in latencies for x in lane], elapsed, sum(errors))


def store_config(backend: str, home: Path) -> dict[str, Any]:
    if backend == "sqlite":
        store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "graphmem.db")}
    else:
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    return {"home": str(home), "store": store, "embedder": {"provider": "hashing"},
            "search": {"decay": {"access": False}}}


def run_backend(backend: str, args: argparse.Namespace, docs: list[str], queries: list[str]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"graphmem-bench-server-{backend}-"))
    user = f"bench-server-{uuid.uuid4().hex[:10]}"
    cfg = store_config(backend, home)
    out: dict[str, Any] = {"memories": len(docs)}
    with Memory(cfg) as m:
        for i in range(0, len(docs), 500):
            m.add([{"role": "user", "content": t} for t in docs[i:i + 500]], user_id=user, infer=False)
        k = args.top_k
        m.search(queries[0], user_id=user, top_k=k)  # warm: ontology, caches

        def local(_: int) -> Callable[[str], None]:
            def call(q: str) -> None:
                m.search(q, user_id=user, top_k=k)
            return call

        hammer(args.clients, min(5.0, args.seconds), local, queries)  # warm-up, not reported
        out["in_process_1"] = hammer(1, args.seconds, local, queries)
        out["in_process"] = hammer(args.clients, args.seconds, local, queries)

        key = new_key()
        port = serving.free_port()
        server_cfg = {**cfg, "server": {"keys": [{"id": "bench", "api_key": key, "user_id": user}],
                                        "max_body_bytes": 65_536}}
        proc = serving.start_server(server_cfg, home, port)
        url = f"http://127.0.0.1:{port}"
        try:
            serving.wait_ready(url, proc, timeout=120)
            clients: list[httpx.Client] = []

            def remote(_: int) -> Callable[[str], None]:
                client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
                clients.append(client)

                def call(q: str) -> None:
                    r = client.post("/v1/search", json={"query": q, "top_k": k})
                    r.raise_for_status()
                return call

            hammer(args.clients, min(5.0, args.seconds), remote, queries)  # warm-up, not reported
            out["rest"] = hammer(args.clients, args.seconds, remote, queries)
            for c in clients:
                c.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if backend == "neo4j":
            m.delete_all(user_id=user)
    local8, rest = out["in_process"], out["rest"]
    out["overhead_p50"] = round(rest["p50_ms"] / local8["p50_ms"], 2)
    out["overhead_p95"] = round(rest["p95_ms"] / local8["p95_ms"], 2)
    out["throughput_ratio"] = round(rest["rps"] / local8["rps"], 2)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=30.0, help="length of each timed phase")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--n", type=int, default=2000, help="memories in the store")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--out", default="bench/results/server.json")
    args = p.parse_args()
    docs = texts(args.n, 1, (8, 16))
    queries = texts(200, 2, (3, 6))
    results: dict[str, Any] = {"seconds": args.seconds, "clients": args.clients, "top_k": args.top_k,
                               "embedder": "hashing-384", "cpus": os.cpu_count(),
                               "load_average_before": [round(x, 2) for x in os.getloadavg()], "backends": {}}
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        print(f"{backend}: {args.n} memories, {args.clients} clients, {args.seconds:g} s per phase", flush=True)
        results["backends"][backend] = run_backend(backend, args, docs, queries)
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    header = (f"{'backend':8} {'run':22} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'errors':>7}")
    print(header)
    print("-" * len(header))
    for name, r in results["backends"].items():
        for run, label in (("in_process_1", "in process, 1 thread"), ("in_process", f"in process, {args.clients}"),
                           ("rest", f"REST, {args.clients} clients")):
            x = r[run]
            print(f"{name:8} {label:22} {x['p50_ms']:8.2f} {x['p95_ms']:8.2f} {x['rps']:8.1f} {x['errors']:7d}")
        print(f"{name:8} {'REST / in process':22} {r['overhead_p50']:8.2f} {r['overhead_p95']:8.2f} "
              f"{r['throughput_ratio']:8.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
