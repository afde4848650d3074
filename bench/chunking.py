"""Chunking benchmark: how close the offline token estimate is to tiktoken, and how fast each strategy
chunks a ~50k-token input.

    python bench/chunking.py [--vocab-dir DIR] [--tokens 50000] [--max-tokens 2000] [--runs 5]
                             [--out bench/results/chunking.json]

1. **Accuracy**: estimate / real tokens for cl100k_base and o200k_base on ~2,000-char windows of
   chat (LongMemEval, LoCoMo from ``../shared/data``), Wikipedia passages (MuSiQue), Python source
   and package READMEs from the installed environment, spaCy's example sentences in ~40 languages,
   and synthetic hard cases (UUIDs, hex, base64, random letters, URLs, emoji, numbers, punctuation).
   Needs the real vocabularies, which tiktoken downloads on first use: they are taken from
   tiktoken's cache, or from ``--vocab-dir`` (files ``cl100k_base.tiktoken`` / ``o200k_base.tiktoken``,
   optionally ``.gz``; tiktoken still checks their SHA-256). This script never downloads.
2. **Speed**: a chat transcript of ``--tokens`` tokens (by cl100k when available, else by the
   estimate) chunked with every strategy and counter, no overlap and 10% overlap; the first call
   (cold: spaCy load, caches) and the median of ``--runs`` warm calls. ``semantic`` uses the
   hashing embedder, so it times the chunker, not a model.
"""

from __future__ import annotations

import argparse
import base64
import glob
import gzip
import hashlib
import importlib
import json
import platform
import random
import statistics
import string
import sys
import sysconfig
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from graphmem.chunking import ESTIMATE, TiktokenCounter, TokenCounter, chunk_text, splitter_name, token_counter
from graphmem.embedding import HashingEmbedder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LANGUAGES = (
    "ar bg bn cs da de el es fa fi fr gu he hi hu hy id it ja kn ko ml ne nl pl pt ro ru si sv ta te th tr uk ur vi zh"
)


def offline_tiktoken(vocab_dir: Path | None) -> None:
    """Make tiktoken read vocabularies from ``vocab_dir`` (or only its cache), never the network."""
    try:
        import tiktoken.load
    except ImportError:
        return

    def read_file(blobpath: str) -> bytes:
        name = blobpath.rsplit("/", 1)[-1]
        if vocab_dir is not None:
            for candidate in (vocab_dir / name, vocab_dir / f"{name}.gz"):
                if candidate.exists():
                    raw = candidate.read_bytes()
                    return gzip.decompress(raw) if candidate.suffix == ".gz" else raw
        raise FileNotFoundError(f"{name}: not in tiktoken's cache nor in --vocab-dir; the benchmark never downloads")

    tiktoken.load.read_file = read_file


def _load(name: str) -> Any:
    with gzip.open(DATA / f"{name}.json.gz") as f:
        return json.load(f)


def _windows(text: str, size: int = 2000) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def corpus(seed: int = 0) -> list[tuple[str, str]]:
    """(kind, text) samples; see the module docstring."""
    rng = random.Random(seed)
    samples: list[tuple[str, str]] = []
    if DATA.exists():
        for col in _load("longmemeval-s-dev")["collections"][:6]:
            sessions: dict[str, list[str]] = defaultdict(list)
            for doc in col["docs"]:
                sessions[doc["group"]].append(f"{doc['speaker']}: {doc['text']}")
            for lines in list(sessions.values())[:15]:
                samples += [("chat", w) for w in _windows("\n".join(lines))]
        for col in _load("locomo-dev")["collections"]:
            text = "\n".join(f"{d['speaker']} ({d.get('time', '')}): {d['text']}" for d in col["docs"])
            samples += [("chat-locomo", w) for w in _windows(text)[:40]]
        docs = _load("musique-100")["collections"][0]["docs"][:400]
        samples += [("wiki", w) for w in _windows("\n\n".join(d["text"] for d in docs))]
    site = sysconfig.get_paths()["purelib"]
    sources = sorted(glob.glob(f"{site}/**/*.py", recursive=True))
    rng.shuffle(sources)
    for path in sources[:150]:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        if len(text) > 500:
            samples.append(("code", text[:2000]))
    readmes = sorted(glob.glob(f"{site}/*.dist-info/METADATA"))
    rng.shuffle(readmes)
    for path in readmes[:60]:
        samples += [("markdown", w) for w in _windows(Path(path).read_text(encoding="utf-8", errors="replace"))[:3]]
    for lang in LANGUAGES.split():
        try:
            module = importlib.import_module(f"spacy.lang.{lang}.examples")
        except ImportError:
            continue
        samples.append((f"lang-{lang}", "\n".join(module.sentences)))
    emoji = [chr(c) for c in range(0x1F600, 0x1F64F)]
    for _ in range(30):
        samples += [
            ("uuid", " ".join(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(20))),
            ("hex", "\n".join(hashlib.sha256(rng.randbytes(8)).hexdigest() for _ in range(10))),
            ("base64", base64.b64encode(rng.randbytes(600)).decode()),
            ("random-letters", "".join(rng.choice(string.ascii_letters) for _ in range(800))),
            ("random-lowercase", "".join(rng.choice(string.ascii_lowercase) for _ in range(800))),
            ("numbers", " ".join(str(rng.randrange(10 ** rng.randrange(1, 12))) for _ in range(150))),
            ("punctuation", "".join(rng.choice(string.punctuation) for _ in range(500))),
            ("emoji", " ".join(rng.choice(["great", "love", "ok"]) + rng.choice(emoji) for _ in range(100))),
            (
                "urls",
                "\n".join(
                    f"https://www.{rng.choice(['example', 'docs', 'shop'])}.com/"
                    + "/".join(
                        "".join(
                            rng.choice(string.ascii_lowercase + "-_0123456789") for _ in range(rng.randrange(3, 14))
                        )
                        for _ in range(rng.randrange(1, 5))
                    )
                    + f"?id={rng.randrange(10**6)}"
                    for _ in range(15)
                ),
            ),
        ]
    return samples


def accuracy(encodings: dict[str, Any]) -> dict[str, Any]:
    rows: dict[str, list[tuple[int, dict[str, int]]]] = defaultdict(list)
    for kind, text in corpus():
        group = "languages (40)" if kind.startswith("lang-") else kind
        rows[group].append((ESTIMATE.count(text), {n: len(e.encode_ordinary(text)) for n, e in encodings.items()}))
    out: dict[str, Any] = {}
    for group, items in rows.items():
        entry: dict[str, Any] = {"samples": len(items)}
        for name in encodings:
            ratios = [est / real[name] for est, real in items if real[name]]
            entry[name] = {
                "total": round(sum(e for e, _ in items) / sum(r[name] for _, r in items), 3),
                "min": round(min(ratios), 3),
                "median": round(statistics.median(ratios), 3),
                "max": round(max(ratios), 3),
            }
        out[group] = entry
    return out


def transcript(tokens: int, counter: TokenCounter) -> str:
    """A real chat history, repeated if need be, cut at a line to ~``tokens`` tokens."""
    lines = [
        f"{d['speaker']}: {d['text']}" for col in _load("longmemeval-s-dev")["collections"][:3] for d in col["docs"]
    ]
    text = "\n".join(lines)
    while counter.count(text) < tokens:
        text = text + "\n" + text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[: text.rfind("\n", 0, lo)]


def speed(counters: list[TokenCounter], tokens: int, max_tokens: int, runs: int) -> list[dict[str, Any]]:
    embed = HashingEmbedder(dims=384).embed
    text = transcript(tokens, counters[-1])
    results = []
    for counter in counters:
        for strategy in ("fixed", "sentence", "recursive", "semantic"):
            for overlap in (0, max_tokens // 10):
                times = []
                for _ in range(runs + 1):
                    t0 = time.perf_counter()
                    chunks = chunk_text(
                        text,
                        strategy=strategy,
                        max_tokens=max_tokens,
                        overlap_tokens=overlap,
                        counter=counter,
                        embed=embed,
                        semantic_threshold=-1.0,  # no forced breaks: times the chunker, not a topic model
                    )
                    times.append(time.perf_counter() - t0)
                results.append(
                    {
                        "counter": counter.name,
                        "strategy": strategy,
                        "overlap": overlap,
                        "input_tokens": counter.count(text),
                        "input_chars": len(text),
                        "chunks": len(chunks),
                        "mean_chunk_tokens": round(statistics.mean(c.tokens for c in chunks)),
                        "cold_s": round(times[0], 3),
                        "warm_median_s": round(statistics.median(times[1:]), 3),
                    }
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-dir", type=Path)
    parser.add_argument("--tokens", type=int, default=50_000)
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "chunking.json")
    args = parser.parse_args()

    offline_tiktoken(args.vocab_dir)
    encodings: dict[str, Any] = {}
    counters: list[TokenCounter] = [ESTIMATE]
    for name in ("cl100k_base", "o200k_base"):
        counter = token_counter(name, timeout_s=30)
        if isinstance(counter, TiktokenCounter):
            encodings[name] = counter.encoding
            counters.append(counter)
        else:
            print(f"{name}: unavailable ({getattr(counter, 'reason', '')}); accuracy not measured against it")

    report: dict[str, Any] = {
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "sentences": splitter_name()},
        "accuracy_estimate_over_real": accuracy(encodings) if encodings else None,
        "speed": speed(counters[:2], args.tokens, args.max_tokens, args.runs),
    }
    if report["accuracy_estimate_over_real"]:
        print("estimate / real tokens (total, min/median/max per ~2,000-char window)")
        for group, entry in report["accuracy_estimate_over_real"].items():
            cells = "  ".join(
                f"{n[:6]} {v['total']:.2f} ({v['min']:.2f}/{v['median']:.2f}/{v['max']:.2f})"
                for n, v in entry.items()
                if n != "samples"
            )
            print(f"  {group:18} n={entry['samples']:4}  {cells}")
    print(f"\nspeed: ~{args.tokens} tokens, max_tokens={args.max_tokens}, sentences by {splitter_name()}")
    for row in report["speed"]:
        print(
            f"  {row['counter']:22} {row['strategy']:9} overlap={row['overlap']:4} chunks={row['chunks']:3}"
            f" mean={row['mean_chunk_tokens']:5}  cold {row['cold_s']:.3f}s  warm {row['warm_median_s']:.3f}s"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
