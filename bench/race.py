"""Concurrent writers against the store's guarantees: how often do they break?

    python bench/race.py [--backends sqlite,neo4j] [--threads 8] [--rounds 10] [--processes 4] [--out F]

Each scenario releases its writers together with a barrier, then counts what the specification
says there must be exactly one of (SPEC, "Concurrency and integrity"):

- ``entity``: every writer names the same new entity -> entities with that name in the scope;
- ``text``: every writer adds the same text -> memories with that text;
- ``functional``: an existing person gets a different ``livesIn`` town from every writer (an
  ``owl:FunctionalProperty``) -> open ``livesIn`` facts of the person;
- ``max_count``: every writer marries the same existing person to someone else (``gm:marriedTo``
  is limited to one value by its shape only) -> open ``marriedTo`` facts of the person;
- and, after all rounds, what ``dry_run`` of the store's own ontology finds invalid.

Threads share one ``Memory`` (an agent server); ``--processes`` runs the same rounds from that many
processes (2 threads each) on one SQLite file. Neo4j comes from ``NEO4J_URI`` (``make bench-race``
starts the bundled server). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.filters import parse as parse_filters
from graphmem.models import Scope, norm_name, text_hash

GM = "https://graphmem.dev/ontology#"
SCENARIOS = ("entity", "text", "functional", "max_count")


def neo4j_store() -> dict[str, Any]:
    return {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
            "user": os.environ.get("NEO4J_USER", "neo4j"),
            "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test"), "connect_timeout_s": 5}


def open_memory(backend: str, home: Path) -> Memory:
    store = {"provider": "sqlite", "path": str(home / "race.db")} if backend == "sqlite" else neo4j_store()
    config = MemoryConfig.load({"home": str(home), "store": store, "embedder": {"provider": "hashing"}})
    return Memory(config, embedder=HashingEmbedder(384))


def together(n: int, work: Callable[[int], Any]) -> list[BaseException]:
    """Run ``work(0..n-1)`` in ``n`` threads released at once; the exceptions they raised."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def entity_count(m: Memory, scope: Scope, name: str) -> int:
    """Entities of exactly ``scope`` whose normalized name is ``name``'s (counted in the store itself:
    the API returns one entity per name by design)."""
    key = norm_name(name)
    if m.info.backend == "sqlite":
        import sqlite3

        with sqlite3.connect(m.info.location) as conn:
            row = conn.execute(
                "SELECT count(DISTINCT e.id) FROM entities e JOIN entity_keys k ON k.entity_id = e.id "
                "WHERE k.key = ? AND e.user_id IS ? AND e.agent_id IS ? AND e.run_id IS ?",
                (key, scope.user_id, scope.agent_id, scope.run_id))
            return int(row.fetchone()[0])
    rows = m.cypher("MATCH (e:Entity) WHERE e.key = $key AND e.user_id = $u RETURN count(e) AS n",
                    {"key": key, "u": scope.user_id})
    return int(rows[0]["n"])


def text_count(m: Memory, scope: Scope, text: str) -> int:
    return len(m.store.list_memories(scope, parse_filters({"hash": text_hash(text)}), 1000))


def open_values(m: Memory, scope: Scope, subject: str, relation: str) -> int:
    """Open facts ``relation`` of the entity named ``subject``."""
    found = m.store.find_entities(scope, [norm_name(subject)])
    ent = found.get(norm_name(subject))
    if ent is None:
        return 0
    return sum(1 for r in m.store.relations(scope, include_closed=False)
               if r.source_id == ent.id and r.relation == GM + relation)


def round_entity(m: Memory, scope: Scope, n: int, tag: str) -> dict[str, Any]:
    company = f"Nova {tag} Works"
    errors = together(n, lambda i: m.add(
        f"Worker {tag} {i} joined {company}.", user_id=scope.user_id, infer=False,
        triples=[{"source": f"Worker {tag} {i}", "relation": "worksFor", "target": company,
                  "source_type": "Person", "target_type": "Organization"}]))
    return {"copies": entity_count(m, scope, company), "errors": errors}


def round_text(m: Memory, scope: Scope, n: int, tag: str) -> dict[str, Any]:
    text = f"I keep a jar of {tag} honey by the window."
    errors = together(n, lambda i: m.add(text, user_id=scope.user_id, infer=False))
    return {"copies": text_count(m, scope, text), "errors": errors}


def _seed_person(m: Memory, scope: Scope, person: str, relation: str, value: str, cls: str) -> None:
    m.add(f"{person} {relation} {value}.", user_id=scope.user_id, infer=False, timestamp="2020-01-01", triples=[
        {"source": person, "relation": relation, "target": value, "source_type": "Person", "target_type": cls}])


def round_functional(m: Memory, scope: Scope, n: int, tag: str) -> dict[str, Any]:
    person = f"Ada {tag}"
    _seed_person(m, scope, person, "livesIn", f"Oldtown {tag}", "City")
    errors = together(n, lambda i: m.add(
        f"{person} moved to Town {tag} {i}.", user_id=scope.user_id, infer=False, triples=[
            {"source": person, "relation": "livesIn", "target": f"Town {tag} {i}", "target_type": "City"}]))
    return {"copies": open_values(m, scope, person, "livesIn"), "errors": errors}


def round_max_count(m: Memory, scope: Scope, n: int, tag: str) -> dict[str, Any]:
    person = f"Li {tag}"
    m.add(f"{person} is a person.", user_id=scope.user_id, infer=False, triples=[
        {"source": person, "relation": "knows", "target": f"Friend {tag}", "source_type": "Person",
         "target_type": "Person"}])
    errors = together(n, lambda i: m.add(
        f"{person} married Spouse {tag} {i}.", user_id=scope.user_id, infer=False, triples=[
            {"source": person, "relation": "marriedTo", "target": f"Spouse {tag} {i}", "target_type": "Person"}]))
    return {"copies": open_values(m, scope, person, "marriedTo"), "errors": errors}


ROUNDS: dict[str, Callable[[Memory, Scope, int, str], dict[str, Any]]] = {
    "entity": round_entity, "text": round_text, "functional": round_functional, "max_count": round_max_count,
}


def run_threads(m: Memory, scope: Scope, threads: int, rounds: int) -> dict[str, Any]:
    """Every scenario ``rounds`` times; per scenario the rounds whose count was not 1 and the worst count."""
    out: dict[str, Any] = {}
    for name, fn in ROUNDS.items():
        counts, errors = [], []
        for r in range(rounds):
            got = fn(m, scope, threads, f"{name}{r}x{uuid.uuid4().hex[:6]}")
            counts.append(got["copies"])
            errors += [f"{type(e).__name__}: {e} | cause: {e.__cause__!r}"[:2000] for e in got["errors"]]
        out[name] = {"rounds": rounds, "broken_rounds": sum(c != 1 for c in counts), "max_copies": max(counts),
                     "errors": len(errors), "error_samples": errors[:3]}
    report = m.dry_run(m.ontology, user_id=scope.user_id)
    out["dry_run_invalid"] = len(report["invalid"])
    return out


def _process_worker(path: str, user_id: str, tag: str, index: int, start: float, q: Any) -> None:
    """One process of the multi-process run: 2 threads, all scenarios' writes of one round."""
    m = open_memory("sqlite", Path(path))
    errors: list[str] = []
    try:
        while time.time() < start:
            time.sleep(0.001)
        def work(i: int) -> None:
            k = 2 * index + i
            m.add(f"Worker {tag} {k} joined Nova {tag} Works.", user_id=user_id, infer=False,
                  triples=[{"source": f"Worker {tag} {k}", "relation": "worksFor", "target": f"Nova {tag} Works",
                            "source_type": "Person", "target_type": "Organization"}])
            m.add(f"I keep a jar of {tag} honey by the window.", user_id=user_id, infer=False)
            m.add(f"Ada {tag} moved to Town {tag} {k}.", user_id=user_id, infer=False, triples=[
                {"source": f"Ada {tag}", "relation": "livesIn", "target": f"Town {tag} {k}", "target_type": "City"}])

        errors = [f"{type(e).__name__}: {str(e)[:200]}" for e in together(2, work)]
    finally:
        m.close()
        q.put(errors)


def run_processes(home: Path, processes: int, rounds: int) -> dict[str, Any]:
    """``processes`` processes x 2 threads on one SQLite file, ``rounds`` times."""
    m = open_memory("sqlite", home)
    user = f"race-p-{uuid.uuid4().hex[:8]}"
    scope = Scope(user_id=user)
    ctx = mp.get_context("spawn")
    broken = {"entity": 0, "text": 0, "functional": 0}
    worst = {"entity": 0, "text": 0, "functional": 0}
    errors: list[str] = []
    for r in range(rounds):
        tag = f"p{r}x{uuid.uuid4().hex[:6]}"
        _seed_person(m, scope, f"Ada {tag}", "livesIn", f"Oldtown {tag}", "City")
        q = ctx.Queue()
        start = time.time() + 3.0  # spawn and import take a moment; all start writing at once
        procs = [ctx.Process(target=_process_worker, args=(str(home), user, tag, i, start, q))
                 for i in range(processes)]
        for p in procs:
            p.start()
        for _ in procs:
            errors += q.get(timeout=300)
        for p in procs:
            p.join()
        counts = {"entity": entity_count(m, scope, f"Nova {tag} Works"),
                  "text": text_count(m, scope, f"I keep a jar of {tag} honey by the window."),
                  "functional": open_values(m, scope, f"Ada {tag}", "livesIn")}
        for k, c in counts.items():
            broken[k] += c != 1
            worst[k] = max(worst[k], c)
    report = m.dry_run(m.ontology, user_id=user)
    m.close()
    return {"rounds": rounds, "processes": processes, "threads_per_process": 2,
            "broken_rounds": broken, "max_copies": worst, "errors": len(errors), "error_samples": errors[:3],
            "dry_run_invalid": len(report["invalid"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="sqlite,neo4j")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--processes", type=int, default=4, help="SQLite multi-process run (0: skip)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "race.json")
    args = ap.parse_args()
    results: dict[str, Any] = {"threads": args.threads}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            home = Path(tmp) / backend
            home.mkdir()
            m = open_memory(backend, home)
            started = time.perf_counter()
            res = run_threads(m, Scope(user_id=f"race-{uuid.uuid4().hex[:8]}"), args.threads, args.rounds)
            res["seconds"] = round(time.perf_counter() - started, 1)
            m.close()
            results[backend] = res
            if backend == "sqlite" and args.processes:
                started = time.perf_counter()
                res_p = run_processes(home, args.processes, max(1, args.rounds // 2))
                res_p["seconds"] = round(time.perf_counter() - started, 1)
                results["sqlite_processes"] = res_p
    print(f"{'run':<18} {'scenario':<11} {'broken rounds':>13} {'max copies':>10} {'errors':>6}")
    for run in ("sqlite", "neo4j", "sqlite_processes"):
        res = results.get(run)
        if not res:
            continue
        broken = res["broken_rounds"] if run == "sqlite_processes" else {k: res[k]["broken_rounds"] for k in SCENARIOS}
        worst = res["max_copies"] if run == "sqlite_processes" else {k: res[k]["max_copies"] for k in SCENARIOS}
        n_err = res["errors"] if run == "sqlite_processes" else sum(res[k]["errors"] for k in SCENARIOS)
        rounds = res["rounds"] if run == "sqlite_processes" else res["entity"]["rounds"]
        for k in broken:
            print(f"{run:<18} {k:<11} {broken[k]:>6} / {rounds:<4} {worst[k]:>10} {'':>6}")
        print(f"{run:<18} {'dry_run':<11} {res['dry_run_invalid']:>6} invalid   errors: {n_err}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
