"""Shared fixtures: both storage backends behind one parametrized ``backend`` fixture, the
default ontology, and the stand-in LLM server. The backend kit's tests (``graphmem.testing``, whose
fixtures pytest loads through graphmem's ``pytest11`` entry point) run on the same two backends:
``graphmem_provider`` and ``graphmem_config`` are overridden here.

Neo4j comes from ``NEO4J_URI`` (``make test`` starts the bundled launcher and exports it). When no
server answers, Neo4j tests skip on a laptop but fail under ``CI=true``: CI must never go green
without having run them. Every test that talks to Neo4j carries the ``neo4j`` marker (the backend's
parameter, or any test asking for ``neo4j_available``), so ``-m "not neo4j"`` needs no server at all.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.ontology import Ontology
from graphmem.testing import StandinServer

NEO4J_URI = os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687")
NEO4J_USER = os.environ.get("NEO4J_USER", "neo4j")
NEO4J_PASSWORD = os.environ.get("NEO4J_PASSWORD", "graphmem-test")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
BACKENDS = ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def neo4j_config() -> dict[str, Any]:
    return {"provider": "neo4j", "uri": NEO4J_URI, "user": NEO4J_USER, "password": NEO4J_PASSWORD,
            "connect_timeout_s": 5}


@pytest.fixture(scope="session", autouse=True)
def _ontology_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Compiled ontologies are cached in the session's temporary folder, not in the user's ~/.cache
    (child processes the tests start inherit it); the embedding model's files are the user's
    (``graphmem models pull``, which ``make venv`` runs), linked in, not fetched again."""
    if "GRAPHMEM_CACHE_DIR" in os.environ:
        yield
        return
    from graphmem.embedding import files

    models = files.models_dir()
    cache = tmp_path_factory.mktemp("ontology-cache")
    if models is not None:
        models.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to(models, target_is_directory=True)
    os.environ["GRAPHMEM_CACHE_DIR"] = str(cache)
    yield
    os.environ.pop("GRAPHMEM_CACHE_DIR", None)


@pytest.fixture(scope="session")
def neo4j_available() -> bool:
    from neo4j import GraphDatabase

    try:
        with GraphDatabase.driver(NEO4J_URI, auth=(NEO4J_USER, NEO4J_PASSWORD), connection_timeout=5) as d:
            d.verify_connectivity()
        return True
    except Exception as exc:
        if IN_CI:
            pytest.fail(f"CI=true but no Neo4j answers at {NEO4J_URI}: {exc}", pytrace=False)
        return False


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "neo4j_available" in getattr(item, "fixturenames", ()) and item.get_closest_marker("neo4j") is None:
            item.add_marker(pytest.mark.neo4j)


def make_config(backend: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    store = {"provider": "sqlite", "path": str(tmp_path / "graphmem.db")} if backend == "sqlite" else neo4j_config()
    return {"home": str(tmp_path), "store": store, "embedder": {"provider": "hashing"}, **extra}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "neo4j" and not request.getfixturevalue("neo4j_available"):
        pytest.skip(f"no Neo4j at {NEO4J_URI} (run `make test`, which starts one)")
    return name


@pytest.fixture
def graphmem_provider(backend: str) -> str:
    """The kit's store: each built-in backend in turn (Neo4j marked and skipped as ``backend`` says)."""
    return backend


@pytest.fixture
def graphmem_config(graphmem_provider: str, tmp_path: Path) -> dict[str, Any]:
    return make_config(graphmem_provider, tmp_path)


@pytest.fixture
def graphmem_fulltext_parity() -> bool:
    """FTS5 and Neo4j's Lucene (both stemming) find the same memories in the parity data."""
    return True


@pytest.fixture
def mem(backend: str, tmp_path: Path) -> Iterator[Memory]:
    m = Memory(MemoryConfig.load(make_config(backend, tmp_path)), embedder=HashingEmbedder(384))
    yield m
    m.close()


@pytest.fixture
def uid() -> str:
    """A user id no other test uses, so tests on the shared Neo4j never see each other's data."""
    return f"u-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    """The default ontology, loaded once per test module."""
    return Ontology.load()


@pytest.fixture
def server() -> Iterator[StandinServer]:
    """A stand-in OpenAI-compatible server over real HTTP, its script empty."""
    with StandinServer() as s:
        yield s
