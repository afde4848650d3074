"""Configuration: dict, YAML, TOML and GRAPHMEM_* environment variables, with typed errors."""

from __future__ import annotations

import logging
import warnings
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
    y.write_text("store:\n  provider: neo4j\n  uri: bolt://db:7687\nsearch:\n  fusion: minmax\n")
    cfg = MemoryConfig.from_file(y)
    assert cfg.store.provider == "neo4j" and cfg.store.uri == "bolt://db:7687" and cfg.search.fusion == "minmax"
    t = tmp_path / "c.toml"
    t.write_text('[embedder]\nprovider = "hashing"\ndims = 64\n')
    assert MemoryConfig.from_file(t).embedder.dims == 64
    monkeypatch.setenv("GRAPHMEM_SEARCH__TOP_K", "7")
    monkeypatch.setenv("GRAPHMEM_STORE__PROVIDER", "neo4j")
    cfg = MemoryConfig.load()
    assert cfg.search.top_k == 7 and cfg.store.provider == "neo4j"
    assert MemoryConfig.load({"search": {"top_k": 2}}).search.top_k == 2  # explicit beats environment


@pytest.mark.parametrize("bad", [
    {"store": {"provider": "mon-go"}}, {"search": {"top_k": 0}}, {"search": {"weights": {"bm99": 1.0}}},
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


def test_auto_embedder_is_minilm_and_logs_its_choice(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with caplog.at_level(logging.INFO, logger="graphmem"), warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: auto never falls back to hashing
        emb = create_embedder(EmbedderConfig(), where="logs-its-choice.db")
    assert emb.provider == "onnx" and emb.name == "st:all-MiniLM-L6-v2:384"
    messages = [r.getMessage() for r in caplog.records if r.name == "graphmem"]
    assert messages[-1] == "graphmem embedder: st:all-MiniLM-L6-v2:384 via onnx (the default)"


def test_hashing_embedder_is_deterministic_and_normalized() -> None:
    a, b = HashingEmbedder(128), HashingEmbedder(128)
    va = a.embed(["graph memory", "something else"])
    assert (va == b.embed(["graph memory", "something else"])).all()
    assert abs(float((va[0] ** 2).sum()) - 1.0) < 1e-5
    assert float(va[0] @ a.embed_one("memory graph")) > float(va[0] @ va[1])


def test_keys_of_development_versions_are_unknown_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """0.1 never shipped, so its earlier flat keys have no aliases: each fails, named, like a typo."""
    old = [("search", "graph_depth", 3), ("search", "decay_floor", 0.2), ("search", "vector_exact_max", 10),
           ("search", "graph_link_fulltext", 4), ("llm", "rules_granularity", "message"),
           ("llm", "rules_small_talk", True)]
    for section, key, value in old:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # refused, not moved or ignored with a warning
            with pytest.raises(ConfigError, match=rf"{section}\.{key}: Extra inputs are not permitted"):
                MemoryConfig.load({section: {key: value}})
    y = tmp_path / "old.yaml"
    y.write_text("search:\n  graph_scoring: walk\n")
    with pytest.raises(ConfigError, match=r"search\.graph_scoring"):
        MemoryConfig.from_file(y)
    monkeypatch.setenv("GRAPHMEM_SEARCH__GRAPH_MAX_FRONTIER", "3")
    with pytest.raises(ConfigError, match="graph_max_frontier"):
        MemoryConfig.load()
    monkeypatch.delenv("GRAPHMEM_SEARCH__GRAPH_MAX_FRONTIER")
    monkeypatch.setenv("GRAPHMEM_EXTRACTION__RULES__GRANULARITY", "message")  # their place now
    assert MemoryConfig.load().extraction.rules.granularity == "message"


def test_extraction_section_defaults_and_its_one_rule() -> None:
    cfg = MemoryConfig.load()
    assert (cfg.extraction.provider, cfg.extraction.rules.granularity, cfg.extraction.rules.small_talk) == (
        "auto", "sentence", False)
    llm = MemoryConfig.load({"llm": {"provider": "openai"}, "extraction": {"provider": "llm"}})
    assert llm.extraction.provider == "llm"
    with pytest.raises(ConfigError, match=r"extraction\.provider is llm but llm\.provider is none"):
        MemoryConfig.load({"extraction": {"provider": "llm"}})
    with pytest.raises(ConfigError, match=r"extraction\.provider"):
        MemoryConfig.load({"extraction": {"provider": "my extractor"}})
    with pytest.raises(ConfigError, match=r"extraction\.rules\.granularity"):
        MemoryConfig.load({"extraction": {"rules": {"granularity": "word"}}})


def test_stores_take_their_own_section_only() -> None:
    """The store is built from ``store`` alone: search settings reach it through each call."""
    import importlib
    import inspect
    import pkgutil

    from graphmem.stores import neo4j, sqlite

    package = [importlib.import_module(f"{neo4j.__name__}.{m.name}") for m in pkgutil.walk_packages(neo4j.__path__)]
    for module in (neo4j, *package, sqlite):
        assert "SearchConfig" not in inspect.getsource(module)
    assert list(inspect.signature(neo4j.Neo4jStore).parameters) == ["config"]


def test_rerank_local_path_missing_fails_at_load(tmp_path: Path) -> None:
    """A missing local model fails when the configuration loads, not at the first search."""
    with pytest.raises(ConfigError, match="looks like a local path"):
        MemoryConfig.load({"search": {"rerank": {"model": str(tmp_path / "no-such-model")}}})
    assert MemoryConfig.load({"search": {"rerank": {"model": str(tmp_path)}}}).search.rerank.model == str(tmp_path)
    assert MemoryConfig.load({"search": {"rerank": {"model": "org/model"}}}).search.rerank.model == "org/model"
