"""The size of a fresh install: ``pip install graphmem`` at a baseline commit and at the working tree,
each in a new virtualenv, plus the files it needs to embed with all-MiniLM-L6-v2.

    python bench/install_size.py [--baseline REV] [--local] [--out bench/results/install_size.json]

Before the ONNX Runtime embedder, semantic search needed ``graphmem[local]`` (sentence-transformers and
PyTorch); ``--local`` installs that extra at the baseline too, for the size a user paid for it. The
default model's files are counted where they live: the model cache, filled by ``graphmem models pull``.
Packages come from pip's cache when it has them; sizes are of the files on disk (``du``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def size_mb(path: Path) -> float:
    done = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return round(int(done.stdout.split()[0]) / 1024, 1)


def install(source: Path, extra: str, work: Path) -> dict[str, object]:
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"{source}{extra}"], check=True)
    seconds = time.perf_counter() - started
    env = {**os.environ, "GRAPHMEM_CACHE_DIR": str(work / "cache")}
    pulled = subprocess.run([str(venv / "bin" / "graphmem"), "models", "pull"], env=env, capture_output=True,
                            text=True, check=False)
    packages = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                              check=True).stdout.split()
    model = size_mb(work / "cache") if pulled.returncode == 0 else 0.0
    venv_mb = size_mb(venv)
    return {"virtualenv_mb": venv_mb, "model_cache_mb": model, "total_mb": round(venv_mb + model, 1),
            "packages": len(packages), "torch": any(p.lower().startswith("torch==") for p in packages),
            "install_s": round(seconds, 1)}


def checkout(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", default="c7cb114", help="commit before the ONNX Runtime embedder")
    p.add_argument("--local", action="store_true", help="also the baseline with the [local] extra (PyTorch)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    runs: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="graphmem-size-") as tmp:
        base = checkout(args.baseline, Path(tmp) / "baseline")
        plan = [("baseline default (hashing embedder)", base, ""),
                ("now default (all-MiniLM-L6-v2, ONNX Runtime)", ROOT, "")]
        if args.local:
            plan.insert(1, ("baseline [local] (all-MiniLM-L6-v2, PyTorch)", base, "[local]"))
        for i, (name, source, extra) in enumerate(plan):
            runs[name] = install(source, extra, Path(tmp) / f"run{i}")
            print(f"{name:48} {runs[name]['total_mb']:>8} MB  (virtualenv {runs[name]['virtualenv_mb']} MB, "
                  f"model {runs[name]['model_cache_mb']} MB, {runs[name]['packages']} packages, "
                  f"torch {runs[name]['torch']})")
    out = {"benchmark": "fresh install size", "command": "python bench/install_size.py --local",
           "baseline": args.baseline, "runs": runs, "python": sys.version.split()[0]}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
