"""Configuration: dict, YAML, TOML and GRAPHMEM_* environment variables, with typed errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from graphmem import ConfigError, MemoryConfig
from graphmem.config import EmbedderConfig
from graphmem.embedding import HashingEmbedder, create_embedder


def test_defaults_are_a_working_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPHMEM_HOME", str(tmp_path))
    cfg = MemoryConfig.load()
    assert cfg.store.provider == "sqlite"
    assert cfg.sqlite_path() == tmp_path / "graphmem.db"
    assert cfg.search.top_k == 10 and cfg.search.fusion == "weighted"


def test_dict_yaml_toml_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert MemoryConfig.load({"search": {"top_k": 3}}).search.top_k == 3
    y = tmp_path / "c.yaml"
    y.write_text("store:\n  provider: neo4j\n  uri: bolt://db:7687\nsearch:\n  fusion: rrf\n")
    cfg = MemoryConfig.from_file(y)
    assert cfg.store.provider == "neo4j" and cfg.store.uri == "bolt://db:7687" and cfg.search.fusion == "rrf"
    t = tmp_path / "c.toml"
    t.write_text('[embedder]\nprovider = "hashing"\ndims = 64\n')
    assert MemoryConfig.from_file(t).embedder.dims == 64
    monkeypatch.setenv("GRAPHMEM_SEARCH__TOP_K", "7")
    monkeypatch.setenv("GRAPHMEM_STORE__PROVIDER", "neo4j")
    cfg = MemoryConfig.load()
    assert cfg.search.top_k == 7 and cfg.store.provider == "neo4j"
    assert MemoryConfig.load({"search": {"top_k": 2}}).search.top_k == 2  # explicit beats environment


@pytest.mark.parametrize("bad", [
    {"store": {"provider": "mongo"}}, {"search": {"top_k": 0}}, {"search": {"weights": {"bm99": 1.0}}},
    {"unknown_section": {}}, {"store": {"typo_field": 1}}, {"search": {"weights": {"vector": -1}}},
])
def test_invalid_config_raises_config_error(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        MemoryConfig.load(bad)


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        MemoryConfig.from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("store: [unclosed\n")
    with pytest.raises(ConfigError, match="cannot parse"):
        MemoryConfig.from_file(bad)
    other = tmp_path / "c.ini"
    other.write_text("x=1")
    with pytest.raises(ConfigError, match=r"\.yaml"):
        MemoryConfig.from_file(other)


def test_auto_embedder_logs_its_choice(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("graphmem.embedding.local.available", lambda: False)
    with caplog.at_level(logging.INFO, logger="graphmem"):
        emb = create_embedder(EmbedderConfig())
    assert isinstance(emb, HashingEmbedder)
    assert [r.getMessage() for r in caplog.records] == [
        "graphmem embedder: hashing-v1-384 (no API key and no sentence-transformers)"
    ]


def test_hashing_embedder_is_deterministic_and_normalized() -> None:
    a, b = HashingEmbedder(128), HashingEmbedder(128)
    va = a.embed(["graph memory", "something else"])
    assert (va == b.embed(["graph memory", "something else"])).all()
    assert abs(float((va[0] ** 2).sum()) - 1.0) < 1e-5
    assert float(va[0] @ a.embed_one("memory graph")) > float(va[0] @ va[1])
