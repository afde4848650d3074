"""The embedder pin and ``reembed`` on both backends.

A successful re-embed switches the whole store's pin (and, on Neo4j, the size of its vector
indexes), so on Neo4j it runs against a private server (``private_neo4j``): on the shared one it
would pull every other test's tenants onto another embedder. The interrupted one is scoped to the
test's tenant and never switches, so it runs on the shared server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

from graphmem import EmbedderMismatchError, EmbeddingError, HashingFallbackWarning, Memory, SchemaMismatchError
from graphmem.cli import app
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ConfigError, ScopeError
from graphmem.models import Scope
from tests.conftest import IN_CI, NEO4J_PASSWORD, make_config

pytestmark = pytest.mark.filterwarnings("ignore::graphmem.HashingFallbackWarning")
ROOT = Path(__file__).resolve().parents[1]
TEXTS = [f"memory number {i} about Lisbon and tea" for i in range(7)]


class FailingEmbedder(HashingEmbedder):
    """A 128-dimension hashing embedder whose ``fail_on``-th call raises, like a remote model
    that goes away midway."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(128)
        self.calls = 0
        self.fail_on = fail_on

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        if self.calls == self.fail_on:
            raise EmbeddingError("the embedding server went away")
        return super()._embed(texts)


def _fill(m: Memory, uid: str) -> None:
    for text in TEXTS:
        m.add(text, user_id=uid, infer=False)
    m.add("Maya lives in Lisbon", user_id=uid, infer=False,
          triples=[{"source": "Maya", "relation": "livesIn", "target": "Lisbon",
                    "source_type": "Person", "target_type": "City"}])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def private_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Neo4j of this module's own: ``GRAPHMEM_PRIVATE_NEO4J_URI`` (same password), else one started
    with tools/neo4j/neo4j.sh in a temporary folder and stopped afterwards."""
    given = os.environ.get("GRAPHMEM_PRIVATE_NEO4J_URI")
    if given:
        yield given
        return
    home, port = tmp_path_factory.mktemp("neo4j-private"), _free_port()
    env = {**os.environ, "GRAPHMEM_NEO4J_HOME": str(home), "GRAPHMEM_NEO4J_PORT": str(port),
           "GRAPHMEM_NEO4J_HEAP": "512m", "GRAPHMEM_NEO4J_PAGECACHE": "64m", "NEO4J_PASSWORD": NEO4J_PASSWORD}
    script = ["bash", str(ROOT / "tools/neo4j/neo4j.sh")]
    started = subprocess.run([*script, "start"], env=env, capture_output=True, text=True, timeout=900)
    if started.returncode == 0:
        started = subprocess.run([*script, "wait", "300"], env=env, capture_output=True, text=True, timeout=400)
    try:
        if started.returncode != 0:
            message = f"no private Neo4j: {started.stderr[-500:]}"
            pytest.fail(message) if IN_CI else pytest.skip(message)
        yield f"bolt://127.0.0.1:{port}"
    finally:
        subprocess.run([*script, "stop"], env=env, capture_output=True, timeout=120)


def _private_config(uri: str, tmp_path: Path, **embedder: Any) -> dict[str, Any]:
    store = {"provider": "neo4j", "uri": uri, "user": "neo4j", "password": NEO4J_PASSWORD, "connect_timeout_s": 5}
    return {"home": str(tmp_path), "store": store, "embedder": {"provider": "hashing", **embedder}}


# -- the pin ------------------------------------------------------------------------------------
def test_a_store_pinned_to_hashing_warns_once_per_store(tmp_path: Path) -> None:
    cfg = {"home": str(tmp_path), "store": {"provider": "sqlite", "path": str(tmp_path / "a.db")}}
    Memory({**cfg, "embedder": {"provider": "hashing"}}).close()  # chosen, not fallen back to
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        Memory(cfg).close()  # auto: the store's pin, hashing
        Memory(cfg).close()  # the same store again: no second warning
    pinned = [w for w in seen if issubclass(w.category, HashingFallbackWarning)]
    assert len(pinned) == 1
    assert "graphmem reembed --embedder onnx" in str(pinned[0].message)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fresh = Memory({**cfg, "store": {"provider": "sqlite", "path": str(tmp_path / "b.db")}})
        fresh.close()  # a new store under auto: the default model, no warning
    assert fresh.embedder.provider == "onnx"
    assert not [w for w in seen if issubclass(w.category, HashingFallbackWarning)]


def test_auto_keeps_the_recorded_embedder(backend: str, tmp_path: Path, uid: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = make_config(backend, tmp_path)
    with Memory(cfg) as m:  # creates the SQLite store pinned to hashing; Neo4j is pinned already
        m.add("Maya lives in Lisbon", user_id=uid, infer=False)
    # a key set later must not switch `auto` to OpenAI: the store's embedder is rebuilt instead
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    with Memory({**cfg, "embedder": {"provider": "auto"}}) as m:
        assert m.embedder.name == "hashing-v1-384"
        assert m.search("Lisbon", user_id=uid)["results"][0]["memory"] == "Maya lives in Lisbon"


def test_another_explicit_embedder_points_at_reembed(backend: str, tmp_path: Path) -> None:
    cfg = make_config(backend, tmp_path)
    Memory(cfg).close()
    with pytest.raises(EmbedderMismatchError, match="graphmem reembed --embedder hashing --dims 256") as err:
        Memory({**cfg, "embedder": {"provider": "hashing", "dims": 256}})
    assert isinstance(err.value, ConfigError) and isinstance(err.value, SchemaMismatchError)
    assert "hashing-v1-384" in str(err.value)


# -- re-embedding -------------------------------------------------------------------------------
def _check_switched(m: Memory, uid: str, reopen: dict[str, Any]) -> None:
    hits = m.search("Lisbon tea", user_id=uid, top_k=3)["results"]
    assert hits and m.embedder.name == "hashing-v1-128"
    query = m.embedder.embed_one("memory number 3 about Lisbon and tea")
    assert m.search("memory number 3", user_id=uid, vector=query, top_k=1)["results"][0]["memory"] == TEXTS[3]
    m.close()
    with Memory({**reopen, "embedder": {"provider": "auto"}}) as again:  # the pin moved with the vectors
        assert again.embedder.name == "hashing-v1-128"
        assert again.info.dims == 128
        assert again.search("memory number 5", user_id=uid, top_k=1)["results"][0]["memory"] == TEXTS[5]
        # the entity name vectors moved too: the new embedder's vector of "Maya" finds Maya exactly
        hit = again.store.similar_entities(Scope.of(uid), again.embedder.embed(["Maya"]))[0]
        assert hit is not None and hit[0].name == "Maya" and hit[1] == pytest.approx(1.0, abs=1e-5)


def test_reembed_switches_sqlite(tmp_path: Path, uid: str) -> None:
    cfg = make_config("sqlite", tmp_path)
    m = Memory(cfg)
    _fill(m, uid)
    seen: list[tuple[str, int, int]] = []
    out = m.reembed({"provider": "hashing", "dims": 128}, all_scopes=True, batch_size=3,
                    progress=lambda p: seen.append((p.kind, p.done, p.total)))
    assert out["switched"] and out["memories"] == len(TEXTS) + 1 and out["entities"] == 2
    assert out["previous"] == "hashing-v1-384"
    assert seen[:3] == [("memory", 3, 8), ("memory", 6, 8), ("memory", 8, 8)]  # batched
    _check_switched(m, uid, cfg)


@pytest.mark.neo4j
def test_reembed_switches_neo4j(private_neo4j: str, tmp_path: Path, uid: str) -> None:
    cfg = _private_config(private_neo4j, tmp_path)
    with Memory(cfg) as m:
        m.reset()  # this private server may hold a store of an earlier run, on any embedder
    m = Memory(cfg)
    try:
        _fill(m, uid)
        out = m.reembed({"provider": "hashing", "dims": 128}, all_scopes=True, batch_size=3)
        assert out["switched"] and out["memories"] == len(TEXTS) + 1
        rows = m.store.cypher("SHOW VECTOR INDEXES YIELD name, options RETURN name, options")  # type: ignore[attr-defined]
        assert {r["name"]: r["options"]["indexConfig"]["vector.dimensions"] for r in rows} == {
            "memory_embedding": 128, "entity_embedding": 128}
        _check_switched(m, uid, {**cfg, "embedder": {"provider": "hashing", "dims": 128}})
    finally:
        with Memory({**cfg, "embedder": {"provider": "auto"}}) as back:  # leave the private server as found
            back.reembed("hashing", all_scopes=True)
            back.reset()


@pytest.mark.neo4j
def test_reembed_stopped_before_its_index_rebuild_is_finished_on_open(
    private_neo4j: str, tmp_path: Path, uid: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The switch committed, then the process died before the vector indexes were built again with
    the new size: the next open rebuilds them, and vector search and entity similarity work."""
    from graphmem.stores.neo4j import reembed as neo4j_reembed

    cfg = _private_config(private_neo4j, tmp_path)
    with Memory(cfg) as m:
        m.reset()
    m = Memory(cfg)
    try:
        _fill(m, uid)

        def die(*args: Any) -> None:
            raise KeyboardInterrupt

        with monkeypatch.context() as patch:
            patch.setattr(neo4j_reembed, "rebuild_vector_indexes", die)
            with pytest.raises(KeyboardInterrupt):
                m.reembed({"provider": "hashing", "dims": 128}, all_scopes=True, batch_size=3)
        rows = m.store.cypher("SHOW VECTOR INDEXES YIELD name, options RETURN name, options")  # type: ignore[attr-defined]
        assert {r["options"]["indexConfig"]["vector.dimensions"] for r in rows} == {384}  # as the crash left them
        m.close()
        with Memory({**cfg, "embedder": {"provider": "auto"}}) as again:
            assert "rebuilding them" in caplog.text
            rows = again.store.cypher("SHOW VECTOR INDEXES YIELD name, options RETURN name, options")  # type: ignore[attr-defined]
            assert {r["options"]["indexConfig"]["vector.dimensions"] for r in rows} == {128}
        _check_switched(Memory({**cfg, "embedder": {"provider": "auto"}}), uid, cfg)
    finally:
        m.close()
        with Memory({**cfg, "embedder": {"provider": "auto"}}) as back:
            back.reembed("hashing", all_scopes=True)
            back.reset()


def test_interrupted_reembed_leaves_the_old_embedder(backend: str, tmp_path: Path, uid: str) -> None:
    """Batch 2 fails: the store still searches with the old vectors and pin, and a second run resumes."""
    cfg = make_config(backend, tmp_path)
    m = Memory(cfg)
    _fill(m, uid)
    before = m.search("memory number 4", user_id=uid, top_k=3)["results"]
    failing = FailingEmbedder(fail_on=2)
    # on the shared Neo4j the run is scoped to this test's tenant (other tenants are never touched)
    with pytest.raises(EmbeddingError, match="went away"):
        m.reembed(failing, user_id=uid, batch_size=3)
    assert m.embedder.name == "hashing-v1-384"
    after = m.search("memory number 4", user_id=uid, top_k=3)["results"]
    # scores to 1e-4: keyword scores of the shared Neo4j's full-text index move with other tenants' writes
    def rounded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**r, "score": round(r["score"], 4)} for r in rows]

    assert rounded(after) == rounded(before)
    m.close()
    with Memory({**cfg, "embedder": {"provider": "auto"}}) as again:
        assert again.embedder.name == "hashing-v1-384"
        assert [r["id"] for r in again.search("memory number 4", user_id=uid, top_k=3)["results"]] == \
            [r["id"] for r in before]
        resumed = FailingEmbedder(fail_on=0)
        out = again.reembed(resumed, user_id=uid, batch_size=3)
        assert out["memories"] == len(TEXTS) + 1 - 3  # the first batch was staged by the failed run
        if backend == "sqlite":
            assert out["switched"] and again.embedder.name == "hashing-v1-128"
        else:  # the shared server holds other tenants: staged for this one, the switch waits for them
            assert not out["switched"] and out["left"] > 0 and again.embedder.name == "hashing-v1-384"
            assert again.search("memory number 4", user_id=uid, top_k=3)["results"][0]["id"] == before[0]["id"]
            again.store.reembed_start("hashing-v1-384", 384)  # drop this test's staged vectors


def test_reembed_arguments_are_checked(tmp_path: Path, uid: str) -> None:
    m = Memory(make_config("sqlite", tmp_path))
    with pytest.raises(ScopeError):
        m.reembed({"provider": "hashing", "dims": 64})  # neither a scope nor all_scopes
    for bad in ("nope", {"provider": "auto"}, {"dims": 3}, 42, {"provider": "hashing", "colour": 1}):
        with pytest.raises(Exception) as err:
            m.reembed(bad, user_id=uid)  # type: ignore[arg-type]
        assert type(err.value).__name__ in {"InvalidInputError", "ScopeError"}, (bad, err.value)
    assert m.reembed("hashing", user_id=uid)["switched"]  # already on it: nothing to do
    m.close()


def test_cli_reembed_with_progress(tmp_path: Path) -> None:
    env = {"GRAPHMEM_HOME": str(tmp_path), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing"}
    runner = CliRunner()
    uid = f"u-{uuid.uuid4().hex[:8]}"
    added = runner.invoke(app, ["add", "Maya lives in Lisbon", "--user-id", uid], env=env)
    assert added.exit_code == 0, added.output
    # the configuration still names the old embedder: reembed opens the store with its own
    done = runner.invoke(app, ["reembed", "--embedder", "hashing", "--dims", "128", "--json"], env=env)
    assert done.exit_code == 0, done.output
    assert '"switched": true' in done.output and '"embedder": "hashing-v1-128"' in done.output
    refused = runner.invoke(app, ["search", "Lisbon", "--user-id", uid], env=env)
    assert refused.exit_code == 2 and "reembed" in refused.output
    found = runner.invoke(app, ["search", "Lisbon", "--user-id", uid],
                          env={**env, "GRAPHMEM_EMBEDDER__PROVIDER": "auto"})
    assert found.exit_code == 0 and "Maya lives in Lisbon" in found.output


def test_recorded_names_parse_back_to_embedders() -> None:
    from graphmem.config import EmbedderConfig
    from graphmem.embedding import EmbedderPin

    assert EmbedderPin.parse("hashing-v1-256", 256).config(EmbedderConfig()).dims == 256
    ollama = EmbedderPin.parse("openai:nomic-embed-text:latest:768", 768)  # a model name with a colon
    assert (ollama.provider, ollama.model) == ("openai", "nomic-embed-text:latest")
    assert ollama.config(EmbedderConfig()).dims is None  # the model reports its size; open() compares it
    assert EmbedderPin.parse("st:all-MiniLM-L6-v2:384", 384).provider == "sentence-transformers"
    mine = EmbedderPin.parse("my-embedder", 64)
    assert mine.provider == "custom"
    with pytest.raises(ConfigError, match=r"Memory\(embedder=\.\.\.\)"):
        mine.config(EmbedderConfig())
