"""all-MiniLM-L6-v2 per call: the default embedder (ONNX Runtime, no PyTorch) against
sentence-transformers' ``encode`` and graphmem's packed PyTorch forward (float32 and auto).

    python bench/embedding.py [--rounds 40] [--out bench/results/embedding.json]

Needs the ``[local]`` extra for the PyTorch ways (``make bench-embedding`` runs it in
``.cache/bench-peers``). The batches are what the engine sends: one search query, one memory (an
``add`` without graph work), one memory with the entity names it met (an ``add`` with the rule
extractor), and 32, 64 and 128 LoCoMo messages (``add_many``). The ways run in turn for each round,
so load falls on all alike; the figures are medians in ms per call and texts/s, with each one's
ratio to ``encode`` and the lowest cosine of its vectors to ``encode``'s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem.config import EmbedderConfig
from graphmem.embedding.bert import OnnxEmbedder
from graphmem.embedding.local import SentenceTransformerEmbedder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json.gz"


def batches() -> dict[str, list[str]]:
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        docs = [d["text"] for c in json.load(fh)["collections"] for d in c["docs"] if d["text"].strip()]
    memory = docs[0]
    return {"1 query": ["What did Caroline research?"], "1 memory": [memory],
            "1 memory + 2 names": [memory, "Caroline", "LGBTQ support group"],
            "32 messages": docs[:32], "64 messages": docs[:64], "128 messages": docs[:128]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    f32 = SentenceTransformerEmbedder(EmbedderConfig(provider="sentence-transformers", precision="float32"))
    auto = SentenceTransformerEmbedder(EmbedderConfig(provider="sentence-transformers"))
    model = f32._model

    def encode(texts: list[str]) -> Any:
        v = np.asarray(model.encode(texts, batch_size=128, convert_to_numpy=True), dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    onnx = OnnxEmbedder(EmbedderConfig(provider="onnx"))
    ways = {"onnx_default": onnx.embed, "encode": encode, "packed_float32": f32.embed,
            f"packed_auto_{auto.precision}": auto.embed}
    result: dict[str, Any] = {}
    for name, texts in batches().items():
        want = encode(texts)
        ms: dict[str, list[float]] = {w: [] for w in ways}
        rounds = max(5, args.rounds * 4 // (len(texts) + 3))
        for i in range(rounds + 2):
            for way, fn in ways.items():
                t0 = time.perf_counter()
                got = fn(texts)
                if i >= 2:  # two warm-up rounds
                    ms[way].append((time.perf_counter() - t0) * 1000)
                if i == 0:
                    cos = float((np.asarray(got) * want).sum(axis=1).min())
                    result.setdefault(name, {})[way] = {"min_cosine_to_encode": round(cos, 6)}
        base = statistics.median(ms["encode"])
        for way, values in ms.items():
            med = statistics.median(values)
            result[name][way].update(ms_p50=round(med, 2), texts_per_s=round(len(texts) / med * 1000, 1),
                                     over_encode=round(med / base, 3))
        print(name.ljust(20), "  ".join(f"{w} {r['ms_p50']} ms ({r['over_encode']}x, cos {r['min_cosine_to_encode']})"
                                        for w, r in result[name].items()))
    out = {"benchmark": "all-MiniLM-L6-v2 per call: default ONNX Runtime embedder vs sentence-transformers encode "
                        "vs packed PyTorch forward (float32, auto)",
           "command": "make bench-embedding", "batches": result,
           "config": {"model": auto.model_name, "auto_precision": auto.precision, "rounds": args.rounds,
                      "torch_threads": __import__("torch").get_num_threads(),
                      "onnxruntime": __import__("onnxruntime").__version__, "load_average": os.getloadavg()}}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
