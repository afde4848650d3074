"""Ingest benchmark: ``add(infer=True)`` throughput with an LLM that answers instantly.

    python bench/ingest.py [--messages 400] [--batch 40] [--backends sqlite,neo4j]

The LLM is the local OpenAI-compatible stand-in (real HTTP, real ``openai`` client) answering with
the facts each message spells out, so what is measured is graphmem's own path: chunking, the
request/parse round trip, deduplication, embedding, entity resolution, the SHACL guard and the
write. For each backend, in one run: batched adds (``--batch`` messages per ``add``: one chunk, one
LLM call, one guard call, one transaction) against the baseline of one ``add`` per message.
Prints memories/s and triples/s with the ratio, and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.testing import StandinServer, fact_responder

PEOPLE = [f"Person{i}" for i in range(120)]
CITIES = [f"City{i}" for i in range(30)]
COMPANIES = [f"Company{i}" for i in range(25)]


def messages(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = rng.choice(PEOPLE)
        kind = rng.random()
        if kind < 0.4:
            fact = f"FACT {p}:Person worksFor {rng.choice(COMPANIES)}:Company"
        elif kind < 0.7:
            fact = f"FACT {p}:Person knows {rng.choice(PEOPLE)}:Person"
        else:
            fact = f"FACT {p}:Person livesIn {rng.choice(CITIES)}:City @2024-0{rng.randint(1, 9)}-01"
        out.append({"role": "user", "name": p, "content": f"{fact}\nmessage {i} of the benchmark conversation"})
    return out


def config(backend: str, home: Path, base_url: str) -> MemoryConfig:
    store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "ingest.db")}
    if backend == "neo4j":
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    return MemoryConfig.load({
        "home": str(home), "store": store, "embedder": {"provider": "hashing"},
        "llm": {"provider": "openai", "base_url": base_url, "api_key": "bench", "model": "standin", "repair": False},
        "chunking": {"max_tokens": 4000},
    })


def run(mem: Memory, msgs: list[dict[str, str]], batch: int) -> dict[str, float]:
    uid = f"bench-{uuid.uuid4().hex[:8]}"
    memories = triples = 0
    t0 = time.perf_counter()
    for i in range(0, len(msgs), batch):
        out = mem.add(msgs[i : i + batch], user_id=uid)
        memories += sum(r["event"] == "ADD" for r in out["results"])
        triples += len(out["relations"]["added"])
    elapsed = time.perf_counter() - t0
    mem.delete_all(user_id=uid)
    return {"seconds": round(elapsed, 3), "memories": memories, "triples": triples,
            "memories_per_s": round(memories / elapsed, 1), "triples_per_s": round(triples / elapsed, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=400)
    p.add_argument("--batch", type=int, default=40)
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--out", default="bench/results/ingest.json")
    args = p.parse_args()
    msgs = messages(args.messages, seed=3)
    results: dict[str, Any] = {"messages": args.messages, "batch": args.batch, "backends": {}}
    with StandinServer() as llm:
        llm.chat_responder = fact_responder
        for backend in args.backends.split(","):
            print(f"[{backend}] running…", file=sys.stderr)
            with Memory(config(backend, Path(tempfile.mkdtemp(prefix="graphmem-ingest-")), llm.base_url),
                        embedder=HashingEmbedder(384)) as mem:
                mem.add(msgs[:2], user_id="warm-up")  # load the ontology, spaCy and the guard once
                mem.delete_all(user_id="warm-up")
                batched = run(mem, msgs, args.batch)
                single = run(mem, msgs, 1)
            results["backends"][backend] = {
                "batched": batched, "one_per_message": single,
                "speedup": round(batched["memories_per_s"] / max(single["memories_per_s"], 1e-9), 2),
            }
    print(f"\ningest benchmark: {args.messages} messages, instant stand-in LLM, hashing embedder")
    print(f"{'backend':8} {'batched mem/s':>14} {'triples/s':>10} {'single mem/s':>13} {'triples/s':>10} {'ratio':>6}")
    for name, r in results["backends"].items():
        b, s = r["batched"], r["one_per_message"]
        print(f"{name:8} {b['memories_per_s']:>14.1f} {b['triples_per_s']:>10.1f} {s['memories_per_s']:>13.1f} "
              f"{s['triples_per_s']:>10.1f} {r['speedup']:>5.1f}x")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
