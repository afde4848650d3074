"""Prepares the virtualenv of ``make bench-peers``: run with its interpreter, after graphmem and mem0.

    .cache/bench-peers/bin/python -m bench.peers_env

Installs fastembed (mem0's BM25 encoder) and then lifts its ``huggingface-hub<2`` pin again
(transformers 5 needs 2.4 or later; fastembed's BM25 runs with it), installs the ``en_core_web_sm``
shim, and checks that both load offline the way mem0 loads them. Steps already done are skipped.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers_env import bm25, spacy_shim

FASTEMBED = "fastembed==0.9.1"
HUB = "huggingface-hub>=2.4,<3"  # after fastembed, whose pin would otherwise hold it below 2


def satisfied(requirement: str) -> bool:
    req = Requirement(requirement)
    try:
        return importlib.metadata.version(req.name) in req.specifier
    except importlib.metadata.PackageNotFoundError:
        return False


def pip_install(requirement: str) -> None:
    if not satisfied(requirement):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement], check=True)


def check() -> None:
    """Loads both as mem0 does, offline; raises when either fails."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory(prefix="bm25-") as tmp:
        bm25.write_snapshot(Path(tmp))
        os.environ["FASTEMBED_CACHE_PATH"] = tmp
        from fastembed import SparseTextEmbedding

        sparse = next(iter(SparseTextEmbedding(model_name=bm25.REPO_ID).embed(["the cats were sleeping"])))
        if len(sparse.indices) != 2:  # "cat" and "sleep": the stop words are gone
            raise RuntimeError(f"BM25 snapshot: expected 2 terms, got {len(sparse.indices)}")
    import spacy

    if not spacy.util.is_package(spacy_shim.NAME):
        raise RuntimeError(f"spaCy does not see {spacy_shim.NAME} as a package")
    nlp = spacy.load(spacy_shim.NAME)
    if "ner" not in nlp.pipe_names:
        raise RuntimeError(f"{spacy_shim.NAME} loaded without its entity recognizer: {nlp.pipe_names}")


def main() -> int:
    pip_install(FASTEMBED)
    pip_install(HUB)
    if not spacy_shim.installed():
        spacy_shim.install()
    check()
    print(f"mem0's signals load offline: {FASTEMBED} (BM25 snapshot generated per run), "
          f"huggingface-hub {importlib.metadata.version('huggingface-hub')}, "
          f"{spacy_shim.NAME} {spacy_shim.VERSION} (shim of {spacy_shim.TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
