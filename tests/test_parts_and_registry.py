"""What a caller can plug in: an extractor, a store found by name (code or entry point), and parts
built once per ``Memory`` and only when needed."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from graphmem import AsyncMemory, Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ConfigError
from graphmem.extraction import ExtractedEntity, ExtractedMemory, ExtractedTriple, Extraction, ExtractionContext
from graphmem.extraction import Extractor as BaseExtractor
from graphmem.stores import create_store, providers, register_store
from graphmem.stores import registry as store_registry
from graphmem.stores.sqlite import SQLiteStore


class Domain(BaseExtractor):
    """A domain extractor: every chunk is one memory about a patient and their clinic."""

    name = "domain-test"
    uses_known_memories = False

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        self.calls += 1
        return Extraction(
            memories=[ExtractedMemory(text=f"Noted: {chunk.split(': ', 1)[-1]}")],
            entities=[ExtractedEntity(name="Ruth", type="Person"), ExtractedEntity(name="Oslo", type="City")],
            triples=[ExtractedTriple(source="Ruth", relation="livesIn", target="Oslo", memory=0)],
        )


def config(tmp_path: Path, **store: Any) -> MemoryConfig:
    return MemoryConfig.load({"home": str(tmp_path), "embedder": {"provider": "hashing"},
                              "store": store or {"provider": "sqlite"}})


def test_given_extractor_is_used_by_add_and_update(tmp_path: Path) -> None:
    domain = Domain()
    with Memory(config(tmp_path), embedder=HashingEmbedder(64), extractor=domain) as m:
        assert m.extractor is domain
        out = m.add("Ruth moved north.", user_id="u")
        assert [r["memory"] for r in out["results"]] == ["Noted: Ruth moved north."]
        assert [(a["source"], a["target"]) for a in out["relations"]["added"]] == [("Ruth", "Oslo")]
        m.update(out["results"][0]["id"], "Ruth moved north again.", user_id="u")
        assert domain.calls == 2


def test_async_memory_takes_the_same_parts(tmp_path: Path) -> None:
    domain = Domain()

    async def main() -> dict[str, Any]:
        async with AsyncMemory(config(tmp_path), embedder=HashingEmbedder(64), extractor=domain) as m:
            await m.add("Ruth moved north.", user_id="u")
            return await m.search("Ruth", user_id="u")

    found = asyncio.run(main())
    assert [r["memory"] for r in found["results"]] == ["Noted: Ruth moved north."]
    assert domain.calls == 1


def test_parts_are_built_once_and_only_when_needed(tmp_path: Path) -> None:
    with Memory(config(tmp_path), embedder=HashingEmbedder(64)) as m:
        m.add("plain text", user_id="u", infer=False)
        m.search("plain", user_id="u")
        assert "ontology" not in m._parts._built  # an add without facts and a search compile no shapes
        planners: list[Any] = []
        threads = [threading.Thread(target=lambda: planners.append(m._parts.planner)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(p) for p in planners}) == 1 and planners[0].guard is m.guard


def test_a_registered_store_is_found_by_provider(tmp_path: Path) -> None:
    made: list[MemoryConfig] = []

    def factory(cfg: MemoryConfig) -> SQLiteStore:
        made.append(cfg)
        return SQLiteStore(cfg.home / "mine.db")

    register_store("mine_test", factory)
    try:
        assert "mine_test" in providers()
        with pytest.raises(ConfigError, match="already registered"):
            register_store("mine_test", factory)
        with pytest.raises(ConfigError, match="already registered"):
            register_store("sqlite", factory)
        with Memory(config(tmp_path, provider="mine_test"), embedder=HashingEmbedder(64)) as m:
            m.add("stored in mine", user_id="u", infer=False)
            assert [r["memory"] for r in m.get_all(user_id="u")["results"]] == ["stored in mine"]
        assert len(made) == 1 and (tmp_path / "mine.db").exists()
    finally:
        store_registry._plugins.unregister("mine_test")


def test_unknown_provider_is_a_config_error_naming_the_choices(tmp_path: Path) -> None:
    cfg = config(tmp_path, provider="mongo")  # the configuration knows no backends: it checks the form only
    named = r"no store provider 'mongo'; available: .*\bneo4j, .*\bsqlite\b"  # and any plug-in installed
    with pytest.raises(ConfigError, match=named):
        Memory(cfg, embedder=HashingEmbedder(64))
    with pytest.raises(ConfigError, match=named):
        create_store(cfg)
    with pytest.raises(ConfigError, match=r"store\.provider"):
        config(tmp_path, provider="mon go")
    with pytest.raises(ConfigError, match="identifier"):
        register_store("no spaces", lambda cfg: SQLiteStore(cfg.home / "x.db"))


def test_a_factory_returning_no_store_is_refused(tmp_path: Path) -> None:
    register_store("broken_test", lambda cfg: object())  # type: ignore[arg-type, return-value]
    try:
        with pytest.raises(ConfigError, match="not a graphmem Store"):
            create_store(config(tmp_path, provider="broken_test"))
    finally:
        store_registry._plugins.unregister("broken_test")


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Any:
    """An installed distribution declaring a ``graphmem.stores`` entry point, as ``pip install``
    would leave it: a module and a ``.dist-info`` with ``entry_points.txt`` on ``sys.path``."""
    site = tmp_path / "site"
    (site / "gm_plugin_test").mkdir(parents=True)
    (site / "gm_plugin_test" / "__init__.py").write_text(
        "from graphmem.stores.sqlite import SQLiteStore\n"
        "def factory(cfg):\n    return SQLiteStore(cfg.home / 'plugin.db')\n")
    info = site / "gm_plugin_test-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gm-plugin-test\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[graphmem.stores]\nplugged = gm_plugin_test:factory\n"
                                            "badly = gm_plugin_test:missing\n")
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("gm_plugin_test", None)


def test_an_entry_point_store_is_loaded_when_named(tmp_path: Path, plugin_dist: Path) -> None:
    assert {"plugged", "badly"} <= set(providers())
    with Memory(config(tmp_path, provider="plugged"), embedder=HashingEmbedder(64)) as m:
        m.add("stored by a plug-in", user_id="u", infer=False)
    assert (tmp_path / "plugin.db").exists()
    with pytest.raises(ConfigError, match=r"'badly'.*failed to load"):
        create_store(config(tmp_path, provider="badly"))
