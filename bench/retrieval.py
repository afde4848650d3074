"""Retrieval benchmark: recall@k of ``Memory.search`` per signal on the data of ``../shared/data``.

    python bench/retrieval.py FILE.json.gz [--backend embedded|neo4j] [--embedder hashing|default|minilm|NAME]
        [--modes vector,fulltext,graph,hybrid,hybrid_minmax,hybrid_rrf,no_graph,mem0] [--k 5,10]
        [--extract rules|none] [--speaker-prefix] [--granularity statement|sentence|message] [--home DIR]
        [--limit-collections N] [--category NAME] [--limit-queries N] [--out result.json]

Each collection is ingested into its own scope (``user_id`` = collection id) through the public API,
one ``add`` per doc (a message from its speaker at its own time, so event times stay right), keeping
``{"doc_id", "group"}`` in the metadata. ``--extract rules`` uses ``infer=True`` with no LLM, so the
rule-based extractor splits docs into sentence memories and writes entities and relations;
``--extract none`` stores each doc verbatim. Once every collection is in (BM25 statistics span the
whole index, so a fresh run and one reusing ``--home`` rank alike), all modes query the same data:
``vector``/``fulltext`` are fusion weights with one signal at 0, ``hybrid`` the default weights,
``hybrid_minmax`` and ``hybrid_rrf`` the same fused by another rule (``search.fusion``),
``no_graph`` the default weights with the graph's at 0 (what hybrid costs and finds without its
walk), ``graph`` the graph signal alone
(``null`` while search returns no graph scores), and ``mem0`` the baseline of ``mem0_baseline.py``.
Retrieved memories are mapped to their doc (or its group when ``gold_level`` is ``group``), first
occurrence wins, then cut at k: recall@k = |gold ∩ top-k| / |gold| averaged over queries, as the data README defines it.
Each question is asked at its own ``time`` (``search(now=...)``: LongMemEval's), else just after its
collection's last doc (LoCoMo's carry none and are asked about the whole conversation), which is what a
time it names ("last week", "in June") resolves against.
Latency is per search with the query embedding excluded (it is timed once per query, ``embed_ms``).
Recall at a token budget (``--budgets``, 2k and 7k tokens of cl100k_base, or graphmem's conservative
estimate when tiktoken cannot load it offline: ``config.token_counter`` says which; as the field publishes
answer accuracy at a context budget): a second, untimed search of ``--budget-top`` memories per query,
whose memories are taken in rank order while their texts fit the budget; then recall as above.
``--home DIR`` keeps the ingested store, so a slow ingest (a local transformer on a CPU) is paid once.
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
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mem0_baseline import Mem0Scorer, timed

from graphmem import Memory, MemoryConfig
from graphmem.chunking import TokenCounter, token_counter
from graphmem.config import SearchConfig
from graphmem.models import Message

ALL_MODES = ("vector", "fulltext", "graph", "hybrid", "hybrid_minmax", "hybrid_rrf", "no_graph", "mem0")
_DATE_CACHE: dict[str, datetime | None] = {}


def parse_time(text: str | None) -> datetime | None:
    """Doc times as written in the sources ("1:56 pm on 8 May, 2023", "2023/05/20 (Sat) 01:44")."""
    if not text:
        return None
    if text not in _DATE_CACHE:
        import dateparser

        clean = text.replace("(", " ").replace(")", " ")
        for day in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"):
            clean = clean.replace(f" {day} ", " ")
        _DATE_CACHE[text] = dateparser.parse(clean, settings={"RETURN_AS_TIMEZONE_AWARE": True,
                                                              "TIMEZONE": "UTC", "PREFER_DAY_OF_MONTH": "first"})
    return _DATE_CACHE[text]


def search_config(mode: str, overrides: dict[str, Any] | None = None) -> SearchConfig | None:
    """The search configuration a mode stands for (``overrides``: further ``SearchConfig`` fields, the
    same for every mode); ``None`` for modes not served by ``Memory.search``."""
    fields: dict[str, Any] | None = {
        "vector": {"weights": {"vector": 1.0, "fulltext": 0.0}},
        "fulltext": {"weights": {"vector": 0.0, "fulltext": 1.0}},
        "graph": {"weights": {"vector": 0.0, "fulltext": 0.0, "graph": 1.0}},
        "hybrid": {},
        "hybrid_minmax": {"fusion": "minmax"},
        "hybrid_rrf": {"fusion": "rrf"},
        "no_graph": {"weights": {**SearchConfig().weights, "graph": 0.0}},
    }.get(mode)
    return None if fields is None else SearchConfig(**{**(overrides or {}), **fields})


def build_config(backend: str, embedder: str, home: Path, granularity: str = "sentence",
                 precision: str = "auto") -> MemoryConfig:
    store: dict[str, Any] = {"provider": "sqlite", "path": str(home / "retrieval.db")}
    if backend == "neo4j":
        store = {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                 "user": os.environ.get("NEO4J_USER", "neo4j"),
                 "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}
    if embedder == "hashing":
        emb: dict[str, Any] = {"provider": "hashing"}
    elif embedder == "default":  # what a user gets: all-MiniLM-L6-v2 through ONNX Runtime (no API key)
        emb = {"provider": "auto"}
    elif embedder == "minilm":
        emb = {"provider": "sentence-transformers", "precision": precision}
    else:
        emb = {"provider": "sentence-transformers", "model": embedder, "precision": precision}
    return MemoryConfig.load({"home": str(home), "store": store, "embedder": emb,
                              "extraction": {"provider": "rules", "rules": {"granularity": granularity}}})


def prefetch_embeddings(mem: Memory, texts: list[str], batch: int = 256) -> None:
    """Embed a collection's doc texts in large batches before the per-doc adds.

    Why: one ``add`` per doc embeds one text per call, which is slow for a local transformer on a
    busy CPU. The cache returns the rows the embedder would (up to the float rounding of batched
    encoding); texts it has not seen, such as extracted sentences and queries, still go to the model.
    """
    emb = mem.embedder
    inner = getattr(emb, "_bench_inner_embed", None) or emb.embed
    cache: dict[str, Any] = getattr(emb, "_bench_cache", {})
    todo = [t for t in dict.fromkeys(texts) if t not in cache]
    for i in range(0, len(todo), batch):
        part = todo[i : i + batch]
        cache.update(zip(part, inner(part), strict=True))

    def embed(batch_texts: Any) -> Any:
        missing = [t for t in dict.fromkeys(batch_texts) if t not in cache]
        if missing:
            return inner(batch_texts) if len(missing) == len(batch_texts) else _fill(batch_texts, missing)
        return np.stack([cache[t] for t in batch_texts]) if batch_texts else inner(batch_texts)

    def _fill(batch_texts: Any, missing: list[str]) -> Any:
        rows = dict(zip(missing, inner(missing), strict=True))
        return np.stack([cache.get(t, rows.get(t)) for t in batch_texts])

    emb._bench_inner_embed = inner  # type: ignore[attr-defined]
    emb._bench_cache = cache  # type: ignore[attr-defined]
    emb.embed = embed  # type: ignore[method-assign]


def entity_names(mem: Memory, coll: dict[str, Any], speaker_prefix: bool) -> list[str]:
    """The entity names the rule extractor will find in the docs, so that they are embedded in large
    batches too (the pipeline embeds each add's new names in one small batch: slow on a CPU)."""
    from graphmem.extraction import ExtractionContext
    from graphmem.pipeline.ingest import render

    ctx = ExtractionContext(ontology=mem.ontology, reference_time=datetime.now(tz=UTC))
    names: list[str] = []
    for doc in coll["docs"]:
        if doc["text"].strip():
            msg = Message(role="user", content=doc_text(doc, speaker_prefix), name=doc.get("speaker"))
            found = mem.extractor.extract(render(msg, msg.content), ctx)
            names.extend(n for e in found.entities for n in (e.name, *e.aliases))
    return names


def doc_text(doc: dict[str, Any], speaker_prefix: bool) -> str:
    return f"{doc['speaker']}: {doc['text']}" if speaker_prefix and doc.get("speaker") else doc["text"]


def ingest(mem: Memory, coll: dict[str, Any], infer: bool, speaker_prefix: bool = False) -> int:
    """One ``add`` per doc: each doc has its own speaker and time. Returns memories stored.

    ``speaker_prefix`` stores "speaker: text" (the README's variant that lifts LoCoMo references)."""
    stored = 0
    for doc in coll["docs"]:
        if not doc["text"].strip():  # a few LongMemEval turns are empty: nothing to remember, nothing to find
            continue
        msg = {"role": "user", "content": doc_text(doc, speaker_prefix)}
        if doc.get("speaker"):
            msg["name"] = doc["speaker"]
        out = mem.add([msg], user_id=coll["id"], infer=infer, timestamp=parse_time(doc.get("time")),
                      metadata={"doc_id": doc["id"], "group": doc.get("group")})
        stored += sum(r["event"] == "ADD" for r in out["results"])
    return stored


def ranked_keys(results: list[dict[str, Any]], doc_group: dict[str, str | None], level: str) -> list[str]:
    """Retrieved memories -> doc ids (or groups), first occurrence wins, duplicates dropped."""
    out: list[str] = []
    for r in results:
        doc = (r.get("metadata") or {}).get("doc_id")
        if doc is None:
            continue
        key = doc_group.get(doc) if level == "group" else doc
        if key is not None and key not in out:
            out.append(key)
    return out


def fitting(results: list[dict[str, Any]], budget: int, tokens: TokenCounter) -> list[dict[str, Any]]:
    """The first results whose texts together fit ``budget`` tokens (the first that does not fit ends
    the context, as a prompt is cut)."""
    used = 0
    out = []
    for r in results:
        used += tokens.count(r["memory"])
        if used > budget:
            break
        out.append(r)
    return out


def graph_available(mem: Memory, user_id: str, query: str) -> bool:
    """True only when search really returns graph scores: a mode that silently falls back is not graph."""
    try:
        mem.config.search = SearchConfig(weights={"vector": 0.0, "fulltext": 0.0, "graph": 1.0})
    except ValueError:
        return False
    out = mem.search(query, user_id=user_id, top_k=10, explain=True)
    return any("graph" in (r.get("score_details") or {}) for r in out["results"])


def _secs(value: float | None) -> str:
    return "(time not measured)" if value is None else f"{value:.1f}s"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    with (gzip.open if args.file.endswith(".gz") else open)(args.file, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    level = data.get("gold_level", "doc")
    ks = [int(k) for k in args.k.split(",")]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(ALL_MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}; known: {', '.join(ALL_MODES)}")
    colls = data["collections"]
    if args.category:  # the collections asking questions of that category, with those questions only
        colls = [{**c, "queries": [q for q in c["queries"] if q.get("category") == args.category]} for c in colls]
        colls = [c for c in colls if c["queries"]]
    colls = colls[: args.limit_collections] if args.limit_collections else colls
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="gm-retrieval-"))
    home.mkdir(parents=True, exist_ok=True)
    marker = home / "ingested.json"
    done: dict[str, Any] = json.loads(marker.read_text()) if args.home and marker.exists() else {}
    mem = Memory.from_config(build_config(args.backend, args.embedder, home, args.granularity, args.precision))
    prefetch_embeddings(mem, [])  # installs the embedding cache: a query's vector is computed once, timed apart
    embed_one = mem.embedder.embed_one
    query_vectors: dict[str, Any] = mem.embedder._bench_cache  # type: ignore[attr-defined]
    mem0 = Mem0Scorer(mem)
    top = max(ks) * 3
    hits: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in modes}
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()] if args.budgets else []
    within: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in modes}
    fill: dict[str, dict[int, list[int]]] = {m: defaultdict(list) for m in modes}
    tokens = token_counter("cl100k_base") if budgets else None
    lat: dict[str, list[float]] = {m: [] for m in modes}
    embed_ms: list[float] = []
    unavailable: set[str] = set()
    ingest_s: float | None = 0.0
    memories = docs = queries = 0
    per_query = open(args.per_query, "w", encoding="utf-8") if args.per_query else None  # noqa: SIM115
    try:
        for coll in colls:
            t0 = time.perf_counter()
            if coll["id"] in done:  # --home: this collection was ingested by an earlier run
                memories += done[coll["id"]]["memories"]
                earlier = done[coll["id"]].get("ingest_s")  # None: not measured (e.g. a resumed ingest)
                ingest_s = ingest_s + earlier if ingest_s is not None and earlier is not None else None
            else:
                if args.backend == "neo4j":
                    mem.delete_all(user_id=coll["id"])
                if args.prefetch:
                    texts = [doc_text(d, args.speaker_prefix) for d in coll["docs"]]
                    if args.extract == "rules":
                        texts += entity_names(mem, coll, args.speaker_prefix)
                    prefetch_embeddings(mem, texts)
                stored = ingest(mem, coll, infer=args.extract == "rules", speaker_prefix=args.speaker_prefix)
                memories += stored
                ingest_s = ingest_s + time.perf_counter() - t0 if ingest_s is not None else None
                if args.home:
                    done[coll["id"]] = {"memories": stored, "ingest_s": round(time.perf_counter() - t0, 2)}
                    marker.write_text(json.dumps(done))
            docs += len(coll["docs"])
            print(f"  {coll['id']}: {len(coll['docs'])} docs, ingest {_secs(ingest_s)} so far", file=sys.stderr)
        # every collection is in before the first query: full-text statistics (IDF, lengths) span the
        # whole index, so a fresh run and one reusing --home rank alike
        for coll in colls:
            doc_group = {d["id"]: d.get("group") for d in coll["docs"]}
            # a question is asked at its own time, else after the whole conversation (LoCoMo's carry none)
            ended = max((t for t in map(parse_time, (d.get("time") for d in coll["docs"])) if t), default=None)
            qs = [q for q in coll["queries"] if q.get("gold")]
            qs = qs[: args.limit_queries] if args.limit_queries else qs
            probe = "graph" in modes and "graph" not in unavailable and qs
            if probe and not graph_available(mem, coll["id"], qs[0]["text"]):
                unavailable.add("graph")
            for q in qs:
                queries += 1
                asked = parse_time(q.get("time")) or ended
                vector, ms = timed(embed_one, q["text"])
                embed_ms.append(ms)
                query_vectors[q["text"]] = vector  # search latency below excludes the query embedding
                gold = set(q["gold"])
                for mode in modes:
                    if mode in unavailable:
                        continue
                    if mode == "mem0":
                        results, ms = timed(mem0.search, q["text"], coll["id"], top)
                    else:
                        mem.config.search = search_config(mode, args.search)  # type: ignore[assignment]
                        out, ms = timed(mem.search, q["text"], user_id=coll["id"], top_k=top, now=asked)
                        results = out["results"]
                    lat[mode].append(ms)
                    ranked = ranked_keys(results, doc_group, level)
                    if per_query is not None:
                        per_query.write(json.dumps({"collection": coll["id"], "query": q.get("id"), "mode": mode,
                                                    "category": q.get("category"), "text": q["text"],
                                                    "gold": sorted(gold), "ranked": ranked[:max(ks)]}) + "\n")
                    for k in ks:
                        r = len(gold & set(ranked[:k])) / len(gold)
                        hits[mode][f"all@{k}"].append(r)
                        hits[mode][f"{q.get('category') or 'none'}@{k}"].append(r)
                    if budgets and tokens is not None and mode != "mem0":
                        wide = mem.search(q["text"], user_id=coll["id"], top_k=args.budget_top, now=asked)["results"]
                        for budget in budgets:
                            fit = fitting(wide, budget, tokens)
                            r = len(gold & set(ranked_keys(fit, doc_group, level))) / len(gold)
                            within[mode][f"all@{budget}"].append(r)
                            within[mode][f"{q.get('category') or 'none'}@{budget}"].append(r)
                            fill[mode][budget].append(len(fit))
    finally:
        mem.close()
        if per_query is not None:
            per_query.close()
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
    recall: dict[str, Any] = {}
    recall_budget: dict[str, Any] = {}
    latency: dict[str, Any] = {}
    for mode in modes:
        if mode in unavailable:
            recall[mode] = latency[mode] = None
            continue
        recall[mode] = {key: round(statistics.fmean(v), 4) for key, v in sorted(hits[mode].items())}
        if within[mode]:
            recall_budget[mode] = {key: round(statistics.fmean(v), 4) for key, v in sorted(within[mode].items())}
            recall_budget[mode]["memories_median"] = {str(b): statistics.median(n) for b, n in fill[mode].items()}
        latency[mode] = {"p50": round(pct(lat[mode], 0.5), 2), "p95": round(pct(lat[mode], 0.95), 2)}
    return {
        "recall": recall, "recall_at_token_budget": recall_budget, "latency_ms": latency,
        "ingest_s": round(ingest_s, 2) if ingest_s is not None else None,
        "config": {"file": Path(args.file).name, "backend": args.backend, "embedder": mem.embedder.name,
                   "precision": getattr(mem.embedder, "precision", None), "extract": args.extract,
                   "speaker_prefix": args.speaker_prefix, "granularity": args.granularity, "category": args.category,
                   "prefetch_embeddings": args.prefetch, "k": ks, "top_k": top, "search": args.search or {},
                   "budgets": budgets, "budget_top": args.budget_top if budgets else None,
                   "token_counter": tokens.name if tokens is not None else None,
                   "gold_level": level,
                   "collections": len(colls), "docs": docs, "memories": memories, "queries": queries,
                   "docs_per_s": round(docs / ingest_s, 1) if ingest_s else None,
                   "embed_ms": {"p50": round(pct(embed_ms, 0.5), 2), "p95": round(pct(embed_ms, 0.95), 2)},
                   "search_defaults": SearchConfig().model_dump(), "mem0": mem0.params(),
                   "unavailable": sorted(unavailable)},
    }


def table(result: dict[str, Any]) -> str:
    """Modes as rows, ``all@k`` then per-category recall and latency as columns."""
    keys = sorted({k for r in result["recall"].values() if r for k in r},
                  key=lambda k: (not k.startswith("all@"), k.split("@")[0], int(k.split("@")[1])))
    head = f"{'mode':<11}" + "".join(f"{k:>16}" for k in keys) + f"{'p50 ms':>9}{'p95 ms':>9}"
    lines = [head]
    for mode, rec in result["recall"].items():
        if rec is None:
            lines.append(f"{mode:<11}  unavailable (search returns no graph scores)")
            continue
        lat = result["latency_ms"][mode]
        lines.append(f"{mode:<11}" + "".join(f"{rec.get(k, float('nan')):>16.3f}" for k in keys)
                     + f"{lat['p50']:>9.1f}{lat['p95']:>9.1f}")
    for mode, rec in result.get("recall_at_token_budget", {}).items():
        cells = "  ".join(f"{k} {v:.3f}" for k, v in rec.items() if k.startswith("all@"))
        lines.append(f"{mode:<11} at a token budget: {cells} (memories, median: {rec['memories_median']})")
    c = result["config"]
    lines.append(f"{c['file']} {c['backend']} {c['embedder']} extract={c['extract']}: {c['docs']} docs -> "
                 f"{c['memories']} memories in {_secs(result['ingest_s'])}, {c['queries']} queries, "
                 f"query embedding p50 {c['embed_ms']['p50']} ms")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--backend", choices=["embedded", "neo4j"], default="embedded")
    p.add_argument("--embedder", default="hashing",
                   help="hashing, default (auto: the ONNX Runtime MiniLM), minilm (sentence-transformers), "
                        "or a sentence-transformers model name")
    p.add_argument("--modes", default=",".join(ALL_MODES))
    p.add_argument("--k", default="5,10")
    p.add_argument("--budgets", default="2000,7000", help="token budgets for recall at a budget ('' for none)")
    p.add_argument("--budget-top", type=int, default=300, help="memories searched for the budgets")
    p.add_argument("--precision", choices=["auto", "float32"], default="auto",
                   help="embedder.precision of a sentence-transformers model")
    p.add_argument("--extract", choices=["rules", "none"], default="rules")
    p.add_argument("--speaker-prefix", action="store_true", help='store docs as "speaker: text"')
    p.add_argument("--granularity", choices=["statement", "sentence", "message"], default="sentence",
                   help="rule extraction: a memory per sentence verbatim (the default), per clause, or per doc")
    p.add_argument("--no-prefetch", dest="prefetch", action="store_false",
                   help="embed inside each add only (slower with a local transformer)")
    p.add_argument("--home", default=None,
                   help="keep the store in this folder and reuse the collections an earlier run ingested there "
                        "(same file, backend, embedder and extraction options)")
    p.add_argument("--limit-collections", type=int, default=None)
    p.add_argument("--category", help="only the queries of this category (and the collections that have some)")
    p.add_argument("--limit-queries", type=int, default=None)
    p.add_argument("--search", type=json.loads, default=None, metavar="JSON",
                   help='SearchConfig fields for every mode, e.g. \'{"graph": {"max_frontier": 8}}\' (not weights)')
    p.add_argument("--int8-everywhere", action="store_true",
                   help="SQLite: rank every tenant's int8 vectors first, re-scoring only 2 rows per candidate "
                        "(stricter than the default, which keeps tenants under 8,192 rows exact)")
    p.add_argument("--out", default=None)
    p.add_argument("--per-query", default=None, metavar="JSONL",
                   help="also write each query's ranked documents, to compare two runs query by query")
    args = p.parse_args()
    if args.int8_everywhere:
        import numkong

        from graphmem.stores.sqlite import vectors as sqlite_vectors

        sqlite_vectors._COARSE_FROM, sqlite_vectors._RESCORED, sqlite_vectors._RESCORED_MIN = 0, 2, 0
        int8_pass = numkong.cdist
        passes = [0]

        def counted(*a: Any, **kw: Any) -> Any:
            passes[0] += 1
            return int8_pass(*a, **kw)

        numkong.cdist = counted
    result = run(args)
    if args.int8_everywhere:
        result["int8_passes"] = passes[0]  # vector searches (queries and writes) that ranked int8 rows first
    print(table(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
