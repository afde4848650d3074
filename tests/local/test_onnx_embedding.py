"""The default embedder (all-MiniLM-L6-v2 through ONNX Runtime, no PyTorch) gives sentence-transformers'
vectors: cosine of at least 0.9999 to ``encode``'s on 1,000 varied texts, in any batch, and a store
made with one opens with the other.

Needs the ``[local]`` extra (PyTorch) for the reference; ``make test-local`` runs it.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from ..conftest import IN_CI
from .test_packed_embedding import locomo_texts

if not IN_CI:
    pytest.importorskip("sentence_transformers")

from graphmem import Memory
from graphmem.config import EmbedderConfig
from graphmem.embedding.bert import OnnxEmbedder
from graphmem.embedding.local import SentenceTransformerEmbedder

EDGES = [
    "", "   ", "a", "?", "Maya has a cat named Pixel.", "  padded on both sides  ", "ALL CAPS SHOUTING",
    "Ünïcödé àccents in Zürich and São Paulo", "日本語のテキストと中文文本", "emoji 🎉🚀 and symbols ©®™",
    "numbers 3.14159, 2026-12-06, +44 20 7946 0958", "tabs\tand\nnewlines\r\ninside", "word " * 400,
    "supercalifragilisticexpialidocious antidisestablishmentarianism", "<b>html</b> &amp; {\"json\": true}",
]


def varied_texts(n: int = 1000) -> list[str]:
    rng = random.Random(7)
    pool = [t for t in locomo_texts() if t.strip()]
    texts = list(EDGES)
    while len(texts) < n:
        if pool and rng.random() < 0.8:
            texts.append(rng.choice(pool))
        else:  # long texts past the 256-token cut, built from the pool or words
            words = " ".join(rng.choice(pool) for _ in range(12)) if pool else "lorem ipsum " * 300
            texts.append(words)
    return texts[:n]


@pytest.fixture(scope="module")
def reference() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbedderConfig(provider="sentence-transformers", precision="float32"))


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(EmbedderConfig(provider="onnx"))


def test_vectors_equal_sentence_transformers_encode(reference: SentenceTransformerEmbedder, onnx: OnnxEmbedder) -> None:
    texts = varied_texts()
    assert len(texts) == 1000 and len(set(texts)) > 500
    expected = np.asarray(reference._model.encode(texts, batch_size=32, normalize_embeddings=True), dtype=np.float32)
    got = onnx.embed(texts)
    cosines = np.sum(expected * got, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.9999, (cosines.min(), texts[worst][:80])
    # one at a time, as a query is embedded, gives the same vectors as in a batch
    for i in (0, 4, 7, 12, 500):
        assert float(onnx.embed_one(texts[i]) @ got[i]) >= 0.99999


def test_store_made_with_sentence_transformers_opens_with_the_default(tmp_path: Path,
                                                                     reference: SentenceTransformerEmbedder) -> None:
    config = {"home": str(tmp_path), "store": {"provider": "sqlite"}}
    with Memory(config, embedder=reference) as m:
        m.add("Maya drives a red Tesla.", user_id="maya", infer=False)
    with Memory(config) as m:  # auto: the store's pin, run by ONNX Runtime
        assert m.embedder.provider == "onnx" and m.embedder.name == reference.name
        hits = m.search("what vehicle does Maya own?", user_id="maya")["results"]
        assert hits and hits[0]["memory"] == "Maya drives a red Tesla."
