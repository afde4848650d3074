"""Current truth in search: does the memory stating a fact's latest value rank first, and a past value
near the top when the question is about the past? (``bench/data/updates.jsonl``: 40 people whose home,
employer and job title change 2-5 times, in first-person chat.)

    python bench/updates.py [--backend embedded|neo4j|both] [--modes rules,verbatim] [--limit N]
        [--data bench/data/updates.jsonl] [--out bench/results/updates.json]

``bench/data/updates.jsonl`` is held out (written before the work, by a helper that never read the
code; aggregates only); ``bench/data/updates-dev.jsonl`` (16 other people, written the same way) is
the one to look into while working.

Each story goes into its own scope of one store per backend and mode, message by message through the
public API (``add`` with the message's ``timestamp``; ``rules``: ``infer=True``, the rule extractor;
``verbatim``: ``infer=False``), with the default embedder. The speaker is the story's person
(``speaker=``), as the questions name them. Then every query is searched in that scope (``top_k`` 5): a
hit is a memory whose text mentions the query's answer (case-insensitively). Reported: present queries
answered at rank 1 (``present@1``) and within 5; past queries within rank 3, asked as written
(``past@3``) and, where the query has an ``as_of`` time, also with ``search(as_of=...)``
(``past@3 as_of``). Neo4j: ``NEO4J_URI`` (``tools/with-neo4j.sh`` starts the bundled server); the
scopes are deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem import Memory

DATA = Path(__file__).resolve().parent / "data" / "updates.jsonl"
TOP_K = 5


def config(backend: str, home: Path) -> dict[str, Any]:
    store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "updates.db")}
    if backend == "neo4j":
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    # named, not "auto": a Neo4j database the test suite filled is pinned to the hashing embedder
    return {"home": str(home), "store": store, "llm": {"provider": "none"}, "embedder": {"provider": "onnx"}}


def rank(results: list[dict[str, Any]], answer: str) -> int | None:
    low = answer.casefold()
    return next((i for i, r in enumerate(results, start=1) if low in r["memory"].casefold()), None)


def run(backend: str, mode: str, stories: list[dict[str, Any]], misses: bool = False) -> dict[str, Any]:
    tally = {"present": 0, "present_hit1": 0, "present_hit5": 0, "past": 0, "past_hit3": 0,
             "past_as_of": 0, "past_as_of_hit3": 0}
    token = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as home, Memory(config(backend, Path(home))) as m:
        started = time.perf_counter()
        for story in stories:
            user = f"upd-{token}-{story['id']}"
            for msg in story["messages"]:
                m.add(msg["content"], user_id=user, timestamp=msg["timestamp"], infer=mode == "rules",
                      speaker=story["user"])
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        for story in stories:
            user = f"upd-{token}-{story['id']}"
            for q in story["queries"]:
                hits = m.search(q["question"], user_id=user, top_k=TOP_K)["results"]
                found = rank(hits, q["answer"])
                if misses and found != 1:
                    print(f"  {q['kind']:7} {q['question']!r} -> {q['answer']!r} at {found}: "
                          + " | ".join(h["memory"][:60] for h in hits[:3]))
                if q["kind"] == "present":
                    tally["present"] += 1
                    tally["present_hit1"] += found == 1
                    tally["present_hit5"] += found is not None
                    continue
                tally["past"] += 1
                tally["past_hit3"] += found is not None and found <= 3
                if q.get("as_of"):
                    then = m.search(q["question"], user_id=user, top_k=TOP_K, as_of=q["as_of"])["results"]
                    found = rank(then, q["answer"])
                    tally["past_as_of"] += 1
                    tally["past_as_of_hit3"] += found is not None and found <= 3
        queries = time.perf_counter() - started
        if backend == "neo4j":
            for story in stories:
                m.delete_all(user_id=f"upd-{token}-{story['id']}")
        embedder = m.embedder.name

    def share(hits: str, total: str) -> float:
        return round(tally[hits] / tally[total], 3) if tally[total] else 0.0

    return {"present@1": share("present_hit1", "present"), "present@5": share("present_hit5", "present"),
            "past@3": share("past_hit3", "past"), "past@3 as_of": share("past_as_of_hit3", "past_as_of"),
            "counts": tally, "ingest_s": round(ingest, 1), "search_s": round(queries, 1), "embedder": embedder}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["embedded", "neo4j", "both"], default="embedded")
    p.add_argument("--modes", default="rules,verbatim")
    p.add_argument("--limit", type=int, default=None, help="only the first N stories")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--misses", action="store_true", help="print every miss (never on the held-out file)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    stories = [json.loads(line) for line in args.data.read_text("utf-8").splitlines() if line.strip()][:args.limit]
    if args.misses and args.data.resolve() == DATA.resolve():
        p.error("--misses reads the held-out file's misses; use it on the dev file")
    backends = ["embedded", "neo4j"] if args.backend == "both" else [args.backend]
    results: dict[str, Any] = {}
    for backend in backends:
        for mode in args.modes.split(","):
            r = results[f"{backend} {mode}"] = run(backend, mode, stories, args.misses)
            print(f"{backend:8} {mode:8} present@1 {r['present@1']:.3f}  present@5 {r['present@5']:.3f}  "
                  f"past@3 {r['past@3']:.3f}  past@3 as_of {r['past@3 as_of']:.3f}  "
                  f"(ingest {r['ingest_s']} s, search {r['search_s']} s)")
    out = {"benchmark": "current and past values of changing facts in search", "command": "python bench/updates.py",
           "data": str(args.data.resolve().relative_to(Path(__file__).resolve().parents[1])), "stories": len(stories),
           "top_k": TOP_K, "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
