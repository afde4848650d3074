"""Semantic search on questions worded differently from the facts (``bench/data/paraphrase.jsonl``):
hits@1 and recall@5 of ``Memory.search`` with the hashing embedder and with the default one.

    python bench/paraphrase.py [--embedders hashing,default] [--out bench/results/paraphrase.json]

Each fact is stored verbatim (``infer=False``) in one user's scope of a fresh embedded store, then
every question is searched there with the default fusion (``hybrid``) and with the vector signal
alone (``vector``). hits@1: the top memory answers the question; recall@5: the share of a question's
answer facts among the top five, averaged. ``default`` is ``embedder.provider: auto`` with no API key
(all-MiniLM-L6-v2 through ONNX Runtime); ``minilm`` is sentence-transformers (needs ``[local]``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem import Memory

DATA = Path(__file__).resolve().parent / "data" / "paraphrase.jsonl"
EMBEDDERS: dict[str, dict[str, Any]] = {
    "hashing": {"provider": "hashing"}, "default": {"provider": "auto"},
    "minilm": {"provider": "sentence-transformers", "precision": "float32"},
}
MODES = {"hybrid": None, "vector": {"vector": 1.0, "fulltext": 0.0, "graph": 0.0}}


def load() -> tuple[dict[str, str], list[dict[str, Any]]]:
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line.strip()]
    facts = {r["id"]: r["text"] for r in rows if r["kind"] == "fact"}
    return facts, [r for r in rows if r["kind"] == "question"]


def run(embedder: str, facts: dict[str, str], questions: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, weights in MODES.items():
        with tempfile.TemporaryDirectory() as home:
            config: dict[str, Any] = {"home": home, "store": {"provider": "sqlite"}, "embedder": EMBEDDERS[embedder]}
            if weights is not None:
                config["search"] = {"weights": weights}
            with Memory(config) as m:
                ids = {}
                for fid, text in facts.items():
                    added = m.add(text, user_id="u", infer=False, metadata={"fact": fid})
                    ids[added["results"][0]["id"]] = fid
                out["embedder"] = m.embedder.name
                hits1, recall5, started = 0, 0.0, time.perf_counter()
                for q in questions:
                    found = [ids[r["id"]] for r in m.search(q["text"], user_id="u", limit=5)["results"]]
                    gold = set(q["answers"])
                    hits1 += bool(found) and found[0] in gold
                    recall5 += len(gold & set(found[:5])) / len(gold)
                out[mode] = {"hits_at_1": round(hits1 / len(questions), 3),
                             "recall_at_5": round(recall5 / len(questions), 3),
                             "ms_per_search": round((time.perf_counter() - started) / len(questions) * 1000, 2)}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--embedders", default="hashing,default")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    facts, questions = load()
    result = {}
    for name in args.embedders.split(","):
        result[name] = run(name, facts, questions)
        print(f"{name:8} ({result[name]['embedder']})  " + "  ".join(
            f"{mode}: hits@1 {r['hits_at_1']:.3f} recall@5 {r['recall_at_5']:.3f}"
            for mode, r in result[name].items() if mode in MODES))
    out = {"benchmark": "paraphrased questions: hits@1 and recall@5", "command": "python bench/paraphrase.py",
           "data": str(DATA.relative_to(DATA.parents[2])), "facts": len(facts), "questions": len(questions),
           "results": result}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
