"""``add_many`` against one ``add`` per item, in one run, on each backend (no LLM).

    python bench/add_many.py [--items 2000] [--backends sqlite,neo4j] [--embedder hashing|minilm] [--distinct]
        [--out bench/results/add_many.json]

Why: a backlog (a chat history, an import) costs one transaction, one embedding call and one plan
per ``add``; ``add_many`` plans and writes runs of one scope together. Both ways store the same
items into a fresh scope each: short chat lines of a few speakers who say where they live and work,
whom they know, and small talk, with the rule extractor (``infer=True``) and verbatim
(``infer=False``, what mem0's ``add(infer=False)`` does). Prints items/s for both ways and the
ratio, with the load average, and writes JSON; exits 1 when the two ways stored different facts
(validity and provenance included), or different memories on SQLite (Neo4j's near-duplicate check goes
through an approximate index).
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphmem import Memory, MemoryConfig
from graphmem.embedding import Embedder, HashingEmbedder

NAMES = ["Maya", "Rui", "Ines", "Tomas", "Leila", "Omar", "Sofia", "Kenji"]
CITIES = ["Lisbon", "Porto", "Madrid", "Berlin", "Oslo", "Kyoto", "Lima", "Accra"]
COMPANIES = ["Northwind", "Initech", "Globex", "Umbrella", "Hooli", "Vandelay"]
START = datetime(2024, 1, 1, tzinfo=UTC)
TALK = ["Thanks, that helps a lot.", "I had pasta for lunch today.", "The weather is lovely this week.",
        "I finished the book you recommended.", "My train was late again this morning."]


def items(n: int, seed: int, distinct: bool = False) -> list[dict[str, Any]]:
    """``distinct``: each text ends with its number, so every item is a memory of its own."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        who, kind = rng.choice(NAMES), rng.random()
        if kind < 0.25:
            text = f"I live in {rng.choice(CITIES)}."
        elif kind < 0.5:
            text = f"I work at {rng.choice(COMPANIES)} as an engineer."
        elif kind < 0.65:
            text = f"{rng.choice([n for n in NAMES if n != who])} is my colleague."
        else:
            text = f"{rng.choice(TALK)} (note {i})"
        if distinct and not text.endswith(")"):
            text = f"{text} (item {i})"
        out.append({"messages": [{"role": "user", "name": who, "content": text}],
                    "timestamp": (START + timedelta(minutes=i * 525_600 // n)).isoformat()})  # in order
    return out


def config(backend: str, home: Path) -> MemoryConfig:
    store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "add_many.db")}
    if backend == "neo4j":
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    return MemoryConfig.load({"home": str(home), "store": store, "embedder": {"provider": "hashing"}})


def timed(mem: Memory, batch: list[dict[str, Any]], *, infer: bool, many: bool) -> dict[str, Any]:
    uid = f"bench-{uuid.uuid4().hex[:8]}"
    t0 = time.perf_counter()
    if many:
        outs = mem.add_many(batch, user_id=uid, infer=infer)["items"]
    else:
        outs = [mem.add(**item, user_id=uid, infer=infer) for item in batch]
    elapsed = time.perf_counter() - t0
    facts = sorted((f["source"]["name"], f["relation_name"], (f["target"] or {}).get("name", f.get("value")),
                    f["valid_from"], f["valid_to"] or "", len(f["memories"]))
                   for f in mem.facts(user_id=uid, include_closed=True, limit=10_000)["results"])
    stored = sorted((r["memory"], r.get("event_time") or "") for r in mem.get_all(user_id=uid, limit=10_000)["results"])
    mem.delete_all(user_id=uid)
    added = sum(r["event"] == "ADD" for o in outs for r in o["results"])
    return {"seconds": round(elapsed, 3), "items_per_s": round(len(batch) / elapsed, 1), "memories": added,
            "stored": len(stored), "facts": len(facts), "state": (stored, facts)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    p.add_argument("--distinct", action="store_true", help="no two items alike: each one writes a memory")
    p.add_argument("--out", default="bench/results/add_many.json")
    args = p.parse_args()
    batch = items(args.items, seed=5, distinct=args.distinct)
    embedder: Embedder = HashingEmbedder(384)
    if args.embedder == "minilm":
        from graphmem.embedding import create_embedder

        embedder = create_embedder(MemoryConfig.load({"embedder": {"provider": "sentence-transformers"}}).embedder)
    results: dict[str, Any] = {"items": args.items, "distinct": args.distinct, "embedder": args.embedder,
                               "loadavg_before": os.getloadavg(),
                               "backends": {}}
    for backend in args.backends.split(","):
        print(f"[{backend}] running…", file=sys.stderr)
        with Memory(config(backend, Path(tempfile.mkdtemp(prefix="graphmem-add-many-"))), embedder=embedder) as mem:
            mem.add_many(batch[:4], user_id="warm-up")  # load the ontology, spaCy and the guard once
            mem.delete_all(user_id="warm-up")
            row: dict[str, Any] = {}
            for infer in (True, False):
                one = timed(mem, batch, infer=infer, many=False)
                many = timed(mem, batch, infer=infer, many=True)
                (m1, f1), (m2, f2) = one.pop("state"), many.pop("state")
                row["rules" if infer else "verbatim"] = {
                    "one_add_per_item": one, "add_many": many, "same_facts": f1 == f2, "same_memories": m1 == m2,
                    "ratio": round(many["items_per_s"] / max(one["items_per_s"], 1e-9), 2)}
            results["backends"][backend] = row
    results["loadavg_after"] = os.getloadavg()
    load = results["loadavg_before"][0]
    print(f"\nadd_many benchmark: {args.items} items, {args.embedder} embedder, load {load:.2f}")
    print(f"{'backend':8} {'extraction':10} {'add/item items/s':>17} {'add_many items/s':>17} {'ratio':>6} "
          "same facts / memories")
    for name, row in results["backends"].items():
        for kind, r in row.items():
            print(f"{name:8} {kind:10} {r['one_add_per_item']['items_per_s']:>17.1f} "
                  f"{r['add_many']['items_per_s']:>17.1f} {r['ratio']:>5.2f}x {r['same_facts']} / {r['same_memories']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    # Neo4j finds a near-duplicate through its HNSW index, which may miss one that an exact scan (the
    # SQLite store's) finds; which of the two ways it misses in depends on the index's state.
    if not all(r["same_facts"] and (r["same_memories"] or name == "neo4j")
               for name, row in results["backends"].items() for r in row.values()):
        print("add_many stored another state than one add per item (facts with validity and provenance, "
              "or SQLite's memories)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
