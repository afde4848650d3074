"""Migration benchmark: SQLite -> Neo4j and back, at N memories.

    python bench/migrate.py [--n 100000] [--batch 1000] [--out bench/results/migrate.json]

Builds a SQLite store of ``--n`` memories (synthetic sentences, hashing-embedder vectors, one ADD
event each, and an entity with a fact for every 20th memory) in one scope of its own, then times
``graphmem.transfer.migrate`` into Neo4j (``NEO4J_URI`` / ``NEO4J_USER`` / ``NEO4J_PASSWORD``) and
from there into a new SQLite file, each verified by its row counts. Building the source is not
timed. The Neo4j rows are removed afterwards (history included), so a shared server is left as it was.
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

from graphmem.config import MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.models import Entity, EventType, HistoryEvent, MemoryRecord, Relation, Scope, text_hash
from graphmem.stores.base import NewMemory, Restore, Store
from graphmem.stores.neo4j import Neo4jStore
from graphmem.stores.sqlite import SQLiteStore
from graphmem.transfer import migrate

WORDS = """
alice bob carol project budget meeting deadline travel paris berlin tokyo coffee tea python rust
graph memory agent database index vector search music guitar piano running yoga doctor dentist
invoice contract launch release bug outage customer support hiking camping birthday party dinner
""".split()
GM = "https://graphmem.dev/ontology#"


def build_source(store: Store, scope: Scope, n: int, batch: int) -> None:
    """``n`` memories with vectors and ADD events, and an entity and a fact per 20 memories."""
    emb = HashingEmbedder(384)
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for lo in range(0, n, batch):
        texts = [" ".join(rng.choices(WORDS, k=rng.randint(8, 16))) + f" #{i}" for i in range(lo, min(n, lo + batch))]
        vectors = emb.embed(texts)
        rows = Restore()
        for j, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
            i = lo + j
            at = start + timedelta(seconds=i)
            rec = MemoryRecord(id=str(uuid.UUID(int=rng.getrandbits(128))), memory=text, hash=text_hash(text),
                               user_id=scope.user_id, created_at=at)
            rows.memories.append(NewMemory(rec, vec))
            rows.events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=text,
                                            user_id=scope.user_id, created_at=at))
            if i % 20 == 0:
                person = Entity(name=f"person {i}", classes=[GM + "Person"], user_id=scope.user_id, created_at=at)
                rows.entities.append((person, emb.embed_one(person.name)))
                rows.mentions.append((rec.id, person.id))
                rows.facts.append(Relation(source_id=person.id, relation=GM + "email", value=f"p{i}@example.org",
                                           memory_ids=[rec.id], user_id=scope.user_id, created_at=at))
        store.restore(scope, rows)


def neo4j_store() -> Neo4jStore:
    cfg = MemoryConfig.load({"store": {
        "provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
        "user": os.environ.get("NEO4J_USER", "neo4j"), "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}})
    return Neo4jStore(cfg.store)


def remove_scope(store: Neo4jStore, scope: Scope) -> None:
    """Every node of the benchmark's scope, history included (``delete_scope`` keeps history)."""
    with store._db.session() as session:  # the benchmark's own cleanup, outside the product's API
        session.run("MATCH (n) WHERE n.user_id = $u CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS",
                    u=scope.user_id).consume()


def timed(source: Store, target: Store, scope: Scope, batch: int, checkpoint: Path) -> dict[str, Any]:
    began = time.perf_counter()
    result = migrate(source, target, checkpoint=checkpoint, scope=scope, batch=batch, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - began
    return {"seconds": round(seconds, 2), "memories_per_s": round(result["counts"]["memory"] / seconds, 1),
            "batches": result["batches"], "counts": result["counts"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "migrate.json")
    args = parser.parse_args()
    scope = Scope(user_id=f"bench-migrate-{uuid.uuid4().hex[:8]}")
    with tempfile.TemporaryDirectory(prefix="graphmem-migrate-") as tmp:
        folder = Path(tmp)
        source, back = SQLiteStore(folder / "source.db"), SQLiteStore(folder / "back.db")
        neo = neo4j_store()
        for s in (source, back, neo):
            s.open("hashing-v1-384", 384)
        try:
            t0 = time.perf_counter()
            build_source(source, scope, args.n, args.batch)
            built = round(time.perf_counter() - t0, 2)
            counts = source.dump_counts(scope)
            to_neo4j = timed(source, neo, scope, args.batch, folder / "to-neo4j.json")
            to_sqlite = timed(neo, back, scope, args.batch, folder / "to-sqlite.json")
        finally:
            remove_scope(neo, scope)
            for s in (source, back, neo):
                s.close()
    report = {
        "benchmark": "bench/migrate.py", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "memories": args.n, "batch": args.batch, "rows": counts, "build_source_seconds": built,
        "sqlite_to_neo4j": to_neo4j, "neo4j_to_sqlite": to_sqlite,
        "machine": f"{os.cpu_count()} CPUs, shared with other engineers' work; Neo4j: the shared dev server",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
