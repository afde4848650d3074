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
    assert cfg.search.top_k == 10 and cfg.search.normalize == "scale"


def test_dict_yaml_toml_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert MemoryConfig.load({"search": {"top_k": 3}}).search.top_k == 3
    y = tmp_path / "c.yaml"
    y.write_text("store:\n  provider: neo4j\n  uri: bolt://db:7687\nsearch:\n  normalize: minmax\n")
    cfg = MemoryConfig.from_file(y)
    assert cfg.store.provider == "neo4j" and cfg.store.uri == "bolt://db:7687" and cfg.search.normalize == "minmax"
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


def test_flat_search_keys_of_earlier_versions_move_with_a_deprecation_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = {"graph_depth": 3, "graph_relation_weights": {"knows": 0.5}, "decay_half_life_days": {"episodic": 7},
           "decay_floor": 0.2, "access_flush_every": 5, "reranker": "my/model", "rerank_top_n": 7,
           "vector_exact_max": 10}
    with pytest.warns(DeprecationWarning) as caught:
        cfg = MemoryConfig.load({"search": old})
    messages = sorted(str(w.message) for w in caught if w.category is DeprecationWarning)
    assert messages == sorted([
        "search.graph_depth is deprecated; use search.graph.depth",
        "search.graph_relation_weights is deprecated; use search.graph.relation_weights",
        "search.decay_half_life_days is deprecated; use search.decay.half_life_days",
        "search.decay_floor is deprecated; use search.decay.floor",
        "search.access_flush_every is deprecated; use search.decay.flush_every",
        "search.reranker is deprecated; use search.rerank.model",
        "search.rerank_top_n is deprecated; use search.rerank.top_n",
        "search.vector_exact_max is deprecated; use store.vector_exact_max",
    ])
    s = cfg.search
    assert (s.graph.depth, s.graph.relation_weights, s.decay.half_life_days, s.decay.floor) == (
        3, {"knows": 0.5}, {"episodic": 7}, 0.2)
    assert (s.decay.flush_every, s.rerank.model, s.rerank.top_n, cfg.store.vector_exact_max) == (5, "my/model", 7, 10)
    # the new keys alongside, and the same setting given twice with different values
    with pytest.warns(DeprecationWarning):
        both = MemoryConfig.load({"search": {"graph_depth": 3, "graph": {"max_facts": 4}}})
    assert (both.search.graph.depth, both.search.graph.max_facts) == (3, 4)
    with pytest.raises(ConfigError, match="give it once"):
        MemoryConfig.load({"search": {"graph_depth": 3, "graph": {"depth": 2}}})
    # files and environment variables of earlier versions load too
    y = tmp_path / "old.yaml"
    y.write_text("search:\n  graph_scoring: walk\n  decay_access: false\n")
    with pytest.warns(DeprecationWarning, match="search.graph.scoring"):
        from_file = MemoryConfig.from_file(y)
    assert from_file.search.graph.scoring == "walk" and from_file.search.decay.access is False
    monkeypatch.setenv("GRAPHMEM_SEARCH__GRAPH_MAX_FRONTIER", "3")
    monkeypatch.setenv("GRAPHMEM_SEARCH__DECAY__FLOOR", "0.1")  # a new nested key
    with pytest.warns(DeprecationWarning, match="search.graph.max_frontier"):
        env = MemoryConfig.load()
    assert env.search.graph.max_frontier == 3 and env.search.decay.floor == 0.1


def test_removed_search_keys_warn_that_they_have_no_effect() -> None:
    removed = ["graph_link_fulltext", "graph_link_min_cover", "graph_link_names_only", "graph_link_vector",
               "graph_link_min_similarity", "graph_link_pool", "graph_bridge_seeds", "graph_seed_weight",
               "graph_restart", "graph_max_seeds", "fusion", "rrf_k", "fulltext_norm", "fulltext_sigmoid_mid"]
    values: dict[str, object] = {"graph_link_names_only": False, "graph_link_min_cover": 0.3,
                                 "graph_link_min_similarity": 0.9, "graph_restart": 0.3, "graph_seed_weight": 2.0,
                                 "fusion": "rrf", "fulltext_norm": "sigmoid", "fulltext_sigmoid_mid": 3.0}
    with pytest.warns(UserWarning) as caught:
        cfg = MemoryConfig.load({"search": {k: values.get(k, 2) for k in removed}})
    texts = [str(w.message) for w in caught]
    for key in removed:
        assert any(t.startswith(f"search.{key} has no effect any more") for t in texts), key
    assert cfg.search == MemoryConfig.load().search  # nothing else changed
    with pytest.warns(UserWarning, match="zscore was removed"):  # a removed value of a kept key
        assert MemoryConfig.load({"search": {"normalize": "zscore"}}).search.normalize == "scale"
    with pytest.raises(ConfigError, match="graph_typo"):  # an unknown key still fails
        MemoryConfig.load({"search": {"graph_typo": 1}})
    with pytest.raises(ConfigError, match="typo"):
        MemoryConfig.load({"search": {"graph": {"typo": 1}}})


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
