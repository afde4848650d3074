"""The OpenAI embedder over real HTTP against the local stand-in server (real ``openai`` client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphmem import EmbeddingError, Memory
from graphmem.config import EmbedderConfig
from graphmem.embedding.openai import OpenAIEmbedder
from graphmem.testing import Reply, StandinServer


@pytest.fixture
def server() -> Iterator[StandinServer]:
    with StandinServer(embed_dims=48) as s:
        yield s


def config(server: StandinServer, **kw: object) -> EmbedderConfig:
    return EmbedderConfig.model_validate({"provider": "openai", "api_key": "test", "base_url": server.base_url,
                                          "max_retries": 1, "timeout_s": 5, **kw})


def test_batches_probe_and_order(server: StandinServer) -> None:
    emb = OpenAIEmbedder(config(server, batch_size=2))
    assert emb.dims == 48 and emb.name == "openai:text-embedding-3-small:48"
    texts = [f"text number {i}" for i in range(5)]
    out = emb.embed(texts)
    assert out.shape == (5, 48)
    assert np.allclose(out, server.embedder.embed(texts), atol=1e-6)
    calls = [b for p, b in server.requests if p.endswith("/embeddings")]
    assert [len(b["input"]) for b in calls] == [1, 2, 2, 1]  # probe, then batches of 2


def test_dimensions_parameter_is_sent(server: StandinServer) -> None:
    emb = OpenAIEmbedder(config(server, dims=16, model="m"))
    assert emb.embed(["x"]).shape == (1, 16)
    assert server.requests[-1][1]["dimensions"] == 16 and server.requests[-1][1]["model"] == "m"


def test_retries_then_fails_with_typed_error(server: StandinServer) -> None:
    emb = OpenAIEmbedder(config(server, dims=48))
    server.embed_script.extend([Reply(status=500)])
    assert emb.embed(["recovers after one 500"]).shape == (1, 48)
    server.embed_script.extend([Reply(status=429), Reply(status=429)])
    with pytest.raises(EmbeddingError, match=r"429|rate"):
        emb.embed(["still limited"])
    server.embed_script.append(Reply(raw_body="{not json"))
    with pytest.raises(EmbeddingError):
        emb.embed(["garbage"])


def test_unreachable_endpoint_is_a_typed_error() -> None:
    cfg = EmbedderConfig(provider="openai", api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0,
                         timeout_s=2, dims=8)
    with pytest.raises(EmbeddingError, match="failed"):
        OpenAIEmbedder(cfg).embed(["x"])


def test_memory_with_openai_embedder_end_to_end(server: StandinServer, tmp_path: Path) -> None:
    m = Memory({"home": str(tmp_path), "embedder": config(server).model_dump()})
    m.add("the staging database runs on port 5433", infer=False, user_id="ops")
    assert m.search("staging database port", user_id="ops")["results"][0]["memory"].startswith("the staging")
    m.close()
