"""AsyncMemory benchmark: wall time of N concurrent ``add(infer=True)`` calls, native against threads.

    python bench/async_add.py [--adds 100] [--delay 0.2] [--backends sqlite,neo4j]

The LLM is the local OpenAI-compatible stand-in (real HTTP, real ``openai`` client) answering every
request after a fixed ``--delay``, as a remote model would. For each backend, in one run: the native
``AsyncMemory`` (extraction over ``AsyncOpenAI``, Neo4j reads and the commit on the async driver,
planning in worker threads) against the way it was before, ``asyncio.to_thread`` over ``Memory.add``
(each add holds a worker thread of the default pool for its whole duration, LLM wait included).
Two scenarios (``--firms``): the people share 10 companies, so concurrent adds race to create
them (write conflicts, re-plans), or each has a company of their own. Prints both wall times and
their ratio, and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from graphmem import AsyncMemory, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.testing import StandinServer, fact_responder


def config(backend: str, home: Path, base_url: str) -> MemoryConfig:
    store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "async.db")}
    if backend == "neo4j":
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    return MemoryConfig.load({
        "home": str(home), "store": store, "embedder": {"provider": "hashing"},
        "llm": {"provider": "openai", "base_url": base_url, "api_key": "bench", "model": "standin", "repair": False,
                "timeout_s": 120},
        "dedup": {"memory_similarity": 1.0, "entity_similarity": 1.0},  # Person5 and Person59 are two people
    })


def message(i: int, firms: int) -> list[dict[str, str]]:
    """Person i works for one of ``firms`` companies (concurrent adds race to create each), or for
    a company of their own with ``firms=0``."""
    fact = f"FACT Person{i}:Person worksFor Company{i % firms if firms else i}:Company"
    return [{"role": "user", "name": f"Person{i}", "content": fact}]


async def native(cfg: MemoryConfig, n: int, firms: int, user: str) -> float:
    async with AsyncMemory(cfg, embedder=HashingEmbedder(384)) as m:
        await m.add(message(-1, firms), user_id=f"{user}-warm")  # loads the ontology, opens the pools
        start = time.perf_counter()
        out = await asyncio.gather(*(m.add(message(i, firms), user_id=user) for i in range(n)))
        wall = time.perf_counter() - start
    assert sum(o["results"][0]["event"] == "ADD" for o in out) == n
    return wall


async def threaded(cfg: MemoryConfig, n: int, firms: int, user: str) -> float:
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        m.add(message(-1, firms), user_id=f"{user}-warm")
        start = time.perf_counter()
        out = await asyncio.gather(*(asyncio.to_thread(m.add, message(i, firms), user_id=user) for i in range(n)))
        wall = time.perf_counter() - start
    assert sum(o["results"][0]["event"] == "ADD" for o in out) == n
    return wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--adds", type=int, default=100)
    p.add_argument("--delay", type=float, default=0.2, help="seconds the stand-in LLM takes per request")
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--firms", default="10,0", help="scenarios: companies the people share (0: one each)")
    p.add_argument("--out", default="bench/results/async_add.json")
    args = p.parse_args()
    results: dict[str, Any] = {"adds": args.adds, "llm_delay_s": args.delay, "cpus": os.cpu_count(),
                               "thread_pool": min(32, (os.cpu_count() or 1) + 4), "backends": {}}

    def slow(body: dict[str, Any]) -> str:
        time.sleep(args.delay)
        return fact_responder(body)

    with StandinServer() as llm:
        llm.chat_responder = slow
        for backend in args.backends.split(","):
            for firms in (int(f) for f in args.firms.split(",")):
                with tempfile.TemporaryDirectory() as tmp:
                    cfg = config(backend, Path(tmp), llm.base_url)
                    run = uuid.uuid4().hex[:8]
                    try:
                        before = asyncio.run(threaded(cfg, args.adds, firms, f"bench-threads-{run}"))
                        after = asyncio.run(native(cfg, args.adds, firms, f"bench-native-{run}"))
                    except Exception as exc:  # e.g. no Neo4j running: report it, measure the others
                        print(f"{backend}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
                        break
                name = f"{backend}, {'a company each' if not firms else f'{firms} shared companies'}"
                results["backends"][name] = {"threaded_s": round(before, 3), "native_s": round(after, 3),
                                             "speedup": round(before / after, 2)}
    for name, r in results["backends"].items():
        print(f"{name}: {args.adds} concurrent adds, LLM {args.delay}s each: to_thread(Memory.add) "
              f"{r['threaded_s']:.2f}s, native AsyncMemory {r['native_s']:.2f}s ({r['speedup']}x)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out} (threads alive at the end: {threading.active_count()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
