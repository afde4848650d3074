"""The bundled all-MiniLM-L6-v2 through sentence-transformers: packed forwards equal ``encode``
(float32), and stay within a hair of it in bfloat16 on a CPU that has it.

Needs the ``[local]`` extra (PyTorch), which ``make test`` does not install; ``make test-local``
runs these in the benchmark virtualenv that has it. Under ``CI=true`` a missing extra fails.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..conftest import IN_CI

if not IN_CI:
    pytest.importorskip("sentence_transformers")

from graphmem import Memory
from graphmem.config import EmbedderConfig
from graphmem.embedding.local import SentenceTransformerEmbedder
from graphmem.embedding.packing import ROW_TOKENS, native_bfloat16, packer

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev.json.gz"


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbedderConfig(provider="sentence-transformers", precision="float32"))


@pytest.fixture(scope="module")
def auto() -> SentenceTransformerEmbedder:
    """The default precision: bfloat16 where the CPU multiplies it natively."""
    return SentenceTransformerEmbedder(EmbedderConfig(provider="sentence-transformers"))


def locomo_texts() -> list[str]:
    if not DATA.exists():
        return []
    with gzip.open(DATA) as f:
        return texts_of(json.load(f), [])


def texts_of(data: Any, out: list[str]) -> list[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("text", "content") and isinstance(value, str):
                out.append(value)
            else:
                texts_of(value, out)
    elif isinstance(data, list):
        for value in data:
            texts_of(value, out)
    return out


def encoded(model: Any, texts: list[str]) -> np.ndarray:
    v = np.asarray(model.encode(texts, convert_to_numpy=True), dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def test_the_bundled_model_is_packed(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder._packer is not None


@pytest.mark.parametrize("n", [1, 2, 3, 64, 300])
def test_packed_rows_equal_encode(embedder: SentenceTransformerEmbedder, n: int) -> None:
    real = locomo_texts()
    edge = ["Maya", "", "  padded on both sides  ", "naïve café — 東京 🙂", "   ", "word " * 400]
    texts = (edge + real)[:n]
    got = embedder.embed(texts)
    assert got.shape == (len(texts), embedder.dims)
    assert float(np.abs(got - encoded(embedder._model, texts)).max()) < 1e-5


def test_auto_precision_is_bfloat16_only_where_the_cpu_has_it(
        auto: SentenceTransformerEmbedder, embedder: SentenceTransformerEmbedder) -> None:
    import torch

    assert embedder.precision == "float32"
    assert auto.precision == ("bfloat16" if native_bfloat16() else "float32")
    assert next(auto._model[0].auto_model.parameters()).dtype == torch.float32  # autocast, not a cast model


def test_bfloat16_vectors_stay_next_to_float32(
        auto: SentenceTransformerEmbedder, embedder: SentenceTransformerEmbedder) -> None:
    texts = ["Maya", "word " * 400, *locomo_texts()[:300]]
    cosine = (auto.embed(texts) * embedder.embed(texts)).sum(axis=1)
    assert float(cosine.min()) > 0.9995
    if auto.precision == "bfloat16":  # and it is a different computation, not float32 by another name
        assert float(cosine.min()) < 1 - 1e-7


def test_texts_longer_than_a_row_get_rows_of_their_own(embedder: SentenceTransformerEmbedder) -> None:
    long = ["token " * (ROW_TOKENS + 50), "another long one " * 200]
    texts = [*long, "short", *long[::-1]]
    assert float(np.abs(embedder.embed(texts) - encoded(embedder._model, texts)).max()) < 1e-5


def test_a_model_the_packing_does_not_reproduce_keeps_encode(embedder: SentenceTransformerEmbedder) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling

    cls_pooled = SentenceTransformer(modules=[embedder._model[0], Pooling(embedder.dims, pooling_mode="cls")])
    assert packer(cls_pooled, 8) is None


@pytest.mark.parametrize("which", ["embedder", "auto"])
def test_add_and_search_through_the_packed_model(tmp_path: Path, which: str, request: pytest.FixtureRequest) -> None:
    embedder = request.getfixturevalue(which)
    m = Memory({"store": {"provider": "sqlite", "path": str(tmp_path / "m.db")}, "llm": {"provider": "none"}},
               embedder=embedder)
    try:
        m.add("Maya moved to Lisbon in 2021 and works at a bakery", user_id="u", infer=False,
              triples=[{"source": "Maya", "relation": "livesIn", "target": "Lisbon", "source_type": "Person",
                        "target_type": "City"}])
        m.add("Tom's favourite sport is rowing", user_id="u", infer=False)
        hits = m.search("Where does Maya live?", user_id="u", top_k=1)["results"]
        assert "Lisbon" in hits[0]["memory"]
        facts = m.facts(user_id="u")["results"]
        assert [(f["source"]["name"], f["relation"].rsplit("#")[-1], f["target"]["name"]) for f in facts] == [
            ("Maya", "livesIn", "Lisbon")]
    finally:
        m.close()
