"""Prompt-size benchmark: the LLM extractor's system prompt per gold conversation, and what pruning loses.

    python bench/prompt_size.py [--gold bench/data/extraction-gold.jsonl] [--vocab-dir DIR]
                                [--out bench/results/prompt_size.json]

For every conversation of the gold set (the text the extractor receives, "Name: text" per line):
1. **Size**: tokens of the stable prefix (instructions, core vocabulary) and of the whole system
   message, in both structured-output modes (json_schema sends no shape; json_object adds the
   answer's shape to the prefix), with tiktoken cl100k_base and o200k_base; min / median / max over the
   conversations, against the prompt that listed the whole ontology (``system_prompt`` without a chunk).
2. **Pruning recall**: for each gold triple, whether its relation is in the conversation's pruned
   vocabulary, and whether the relation's domain and range classes and the gold ``types`` of its
   endpoints are listed too. Every miss is printed, so the surface forms can be fixed.

tiktoken's vocabularies are read from its cache or from ``--vocab-dir`` (``cl100k_base.tiktoken``,
``o200k_base.tiktoken``, checked against tiktoken's own SHA-256); this script never downloads. Without
them it counts with graphmem's conservative offline estimate and says so.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from chunking import offline_tiktoken  # bench/chunking.py: vocabularies from a folder, never downloaded

from graphmem.chunking import ESTIMATE
from graphmem.extraction import prompt
from graphmem.extraction.contract import ExtractionContext
from graphmem.extraction.llm.answers import EXTRACTION
from graphmem.extraction.vocabulary import select
from graphmem.ontology import Ontology

ROOT = Path(__file__).resolve().parents[1]
ENCODINGS = ("cl100k_base", "o200k_base")


def counters(vocab_dir: Path | None) -> dict[str, Callable[[str], int]]:
    """Exact tiktoken counters when the vocabularies are at hand, else the offline estimate."""
    if vocab_dir is not None:  # tiktoken checks their SHA-256 and caches a copy: in a private folder
        private = tempfile.mkdtemp(prefix="prompt-size-tiktoken-")
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        os.environ["TIKTOKEN_CACHE_DIR"] = private
    offline_tiktoken(vocab_dir)
    out: dict[str, Callable[[str], int]] = {}
    import tiktoken

    for name in ENCODINGS:
        try:
            enc = tiktoken.get_encoding(name)
        except Exception as exc:  # offline without this vocabulary: say so, count with the others
            print(f"tiktoken {name} unavailable ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        out[name] = lambda text, enc=enc: len(enc.encode_ordinary(text))
    if not out:
        print("no tiktoken vocabulary at hand: counting with the offline estimate")
        out = {"estimate": ESTIMATE.count}
    return out


def conversation_text(record: dict[str, Any]) -> tuple[str, list[str]]:
    """The chunk as the pipeline renders it, and the named speakers."""
    lines, speakers = [], []
    for m in record["messages"]:
        speaker = m.get("name") or m["role"]
        if m.get("name"):
            speakers.append(m["name"])
        lines.append(f"{speaker}: {m['content']}")
    return "\n".join(lines), list(dict.fromkeys(speakers))


def spread(values: list[int]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gold", type=Path, default=ROOT / "bench" / "data" / "extraction-gold.jsonl")
    ap.add_argument("--vocab-dir", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "prompt_size.json")
    args = ap.parse_args()
    records = [json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    onto = Ontology.load()
    count = counters(args.vocab_dir)
    sizes: dict[str, dict[str, list[int]]] = {
        f"{enc}/{mode}/{part}": {} for enc in count for mode in ("json_schema", "json_object")
        for part in ("prefix", "system", "system_unpruned")}
    flat: dict[str, list[int]] = {key: [] for key in sizes}
    triples = relation_hits = class_hits = type_total = type_hits = 0
    misses: list[dict[str, Any]] = []
    per_conversation = []
    elapsed: list[float] = []
    select(onto, "warm up")  # builds the index once per ontology (timed below only per chunk)
    for rec in records:
        text, speakers = conversation_text(rec)
        ctx = ExtractionContext(onto, datetime.fromisoformat(rec["reference_time"].replace("Z", "+00:00")), speakers)
        t0 = time.perf_counter()
        sel = select(onto, text)
        prompt.system_prompt(ctx, None, text)
        elapsed.append((time.perf_counter() - t0) * 1000)
        row: dict[str, Any] = {"id": rec["id"], "relations": len(sel.all_relations), "classes": len(sel.all_classes)}
        for mode, shape in (("json_schema", None), ("json_object", EXTRACTION.shape)):
            parts = {"prefix": prompt.static_prompt(onto, shape), "system": prompt.system_prompt(ctx, shape, text),
                     "system_unpruned": prompt.system_prompt(ctx, shape)}
            for enc, fn in count.items():
                for part, body in parts.items():
                    n = fn(body)
                    flat[f"{enc}/{mode}/{part}"].append(n)
                    row[f"{enc}/{mode}/{part}"] = n
        per_conversation.append(row)
        for source, rel_name, target in rec["triples"]:
            triples += 1
            rel = onto.relation_info(rel_name)
            if rel is None or rel.iri not in sel.all_relations:
                misses.append({"id": rec["id"], "triple": [source, rel_name, target], "why": "relation not listed",
                               "text": text})
                continue
            relation_hits += 1
            ends = [c for c in (*rel.domain, *(rel.range if rel.kind == "object" else ())) if c in onto.classes]
            if all(c in sel.all_classes for c in ends):
                class_hits += 1
            else:
                misses.append({"id": rec["id"], "triple": [source, rel_name, target],
                               "why": "domain/range class not listed", "text": text})
            for end in (source, target) if rel.kind == "object" else (source,):
                gold_type = rec.get("types", {}).get(end)
                if gold_type is None:
                    continue
                type_total += 1
                iri = onto.resolve_class(gold_type)
                if iri is not None and iri in sel.all_classes:
                    type_hits += 1
                else:
                    misses.append({"id": rec["id"], "triple": [source, rel_name, target],
                                   "why": f"type {gold_type} of {end!r} not listed", "text": text})
    result = {
        "gold": {"file": args.gold.name, "sha256": hashlib.sha256(args.gold.read_bytes()).hexdigest()},
        "conversations": len(records),
        "triples": triples,
        "counter": list(count),
        "tokens": {key: spread(values) for key, values in flat.items()},
        "pruning_recall": {
            "relation": relation_hits / triples if triples else None,
            "relation_and_domain_range": class_hits / triples if triples else None,
            "endpoint_types": type_hits / type_total if type_total else None,
        },
        "prune_and_render_ms": {"median": round(statistics.median(elapsed), 3), "max": round(max(elapsed), 3)},
        "misses": [{k: v for k, v in m.items() if k != "text"} for m in misses],
        "per_conversation": per_conversation,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
    }
    print(f"{len(records)} conversations, {triples} gold triples; counter: {', '.join(count)}")
    print(f"{'tokens':40} {'min':>6} {'median':>7} {'max':>6}")
    for key, s in result["tokens"].items():
        print(f"{key:40} {s['min']:>6} {s['median']:>7} {s['max']:>6}")
    rec_ = result["pruning_recall"]
    print(f"pruning recall: relation {rec_['relation']:.3f}, with domain/range classes "
          f"{rec_['relation_and_domain_range']:.3f}, endpoint types {rec_['endpoint_types']}")
    for m in misses:
        print(f"MISS {m['id']}: {tuple(m['triple'])}: {m['why']} | {m['text'][:160]!r}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
