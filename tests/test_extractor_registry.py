"""Extractors chosen by name like stores (``extraction.provider``), each built-in with its own
settings, and the chunker configured by its own section."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, MemoryConfig, chunking
from graphmem.chunking import ESTIMATE
from graphmem.embedding import Embedder, HashingEmbedder
from graphmem.errors import ConfigError
from graphmem.extraction import (
    ExtractedMemory,
    Extraction,
    ExtractionContext,
    Extractor,
    extractors,
    register_extractor,
)
from graphmem.extraction import registry as extractor_registry
from graphmem.extraction.llm import LLMExtractor
from graphmem.extraction.rules import RuleExtractor
from graphmem.mem0 import load_config
from graphmem.ontology import Ontology


class Echo(Extractor):
    """Stores each chunk's last line as it is."""

    name = "echo-test"
    uses_known_memories = False

    def extract(self, chunk: str, context: ExtractionContext) -> Extraction:
        return Extraction(memories=[ExtractedMemory(text=f"echo {chunk.splitlines()[-1].split(': ', 1)[-1]}")])


def memory(tmp_path: Path, **sections: Any) -> Memory:
    return Memory({"home": str(tmp_path), "embedder": {"provider": "hashing"}, **sections},
                  embedder=HashingEmbedder(64))


@pytest.fixture
def registered() -> Iterator[list[tuple[MemoryConfig, Ontology, Embedder]]]:
    calls: list[tuple[MemoryConfig, Ontology, Embedder]] = []

    def factory(config: MemoryConfig, ontology: Ontology, embedder: Embedder) -> Extractor:
        calls.append((config, ontology, embedder))
        return Echo()

    register_extractor("echo_test", factory)
    yield calls
    extractor_registry._plugins.unregister("echo_test")


def test_without_an_llm_the_rules_extract_with_their_defaults(tmp_path: Path) -> None:
    with memory(tmp_path) as m:
        extractor = m._parts.extractor
        assert isinstance(extractor, RuleExtractor)
        assert (extractor.granularity, extractor.small_talk) == ("sentence", False)
        assert m._parts.chunk(["user: hi"])[0].counter == "estimate"


def test_the_rules_take_their_own_section(tmp_path: Path) -> None:
    with memory(tmp_path, extraction={"rules": {"granularity": "message", "small_talk": True}}) as m:
        extractor = m._parts.extractor
        assert isinstance(extractor, RuleExtractor)
        assert (extractor.granularity, extractor.small_talk) == ("message", True)


def test_an_llm_extracts_when_configured_unless_the_rules_are_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str | None] = []

    def counter(name: str | None) -> Any:
        counted.append(name)
        return ESTIMATE

    monkeypatch.setattr(chunking, "token_counter", counter)
    llm = {"provider": "openai", "model": "gpt-4o-mini", "api_key": "sk-test", "base_url": "http://127.0.0.1:9/v1"}
    with memory(tmp_path / "auto", llm=llm) as m:
        assert isinstance(m._parts.extractor, LLMExtractor)
        m._parts.chunk(["user: hi"])
        assert counted == ["gpt-4o-mini"]  # the budget is counted in the extracting model's tokens
    with memory(tmp_path / "estimate", llm=llm, chunking={"tokenizer": "estimate"}) as m:
        assert m._parts.chunk(["user: hi"])[0].counter == "estimate"  # the chunker's own setting wins
        assert counted == ["gpt-4o-mini"]
    with memory(tmp_path / "rules", llm=llm, extraction={"provider": "rules"}) as m:
        assert isinstance(m._parts.extractor, RuleExtractor)
        assert m._parts.chunk(["user: hi"])[0].counter == "estimate"  # no LLM extracts: no model to count with


def test_a_mem0_llm_section_still_turns_the_llm_on() -> None:
    cfg = load_config({"llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano", "api_key": "sk-test"}}})
    assert extractor_registry.chosen(cfg) == "llm"
    assert extractor_registry.chosen(MemoryConfig.load()) == "rules"


def test_a_registered_extractor_is_found_by_name(
        tmp_path: Path, registered: list[tuple[MemoryConfig, Ontology, Embedder]]) -> None:
    assert {"echo_test", "llm", "rules"} <= set(extractors())
    with pytest.raises(ConfigError, match="already registered"):
        register_extractor("echo_test", lambda config, ontology, embedder: Echo())
    with pytest.raises(ConfigError, match="already registered"):
        register_extractor("rules", lambda config, ontology, embedder: Echo())
    with pytest.raises(ConfigError, match="identifier"):
        register_extractor("auto", lambda config, ontology, embedder: Echo())
    with memory(tmp_path, extraction={"provider": "echo_test"}) as m:
        out = m.add("I moved to Porto.", user_id="u")
        assert [r["memory"] for r in out["results"]] == ["echo I moved to Porto."]
        ((config, ontology, embedder),) = registered
        assert config is m.config and ontology is m._parts.ontology and embedder is m.embedder


def test_a_given_extractor_wins_over_the_configured_name(tmp_path: Path) -> None:
    echo = Echo()
    with Memory({"home": str(tmp_path), "extraction": {"provider": "nowhere"}}, embedder=HashingEmbedder(64),
                extractor=echo) as m:
        assert m.extractor is echo


def test_an_unknown_extractor_fails_when_the_memory_is_made(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no extractor 'spacy_llm'; available: .*llm, rules"):
        memory(tmp_path, extraction={"provider": "spacy_llm"})


def test_a_factory_returning_no_extractor_is_refused(tmp_path: Path) -> None:
    register_extractor("broken_test", lambda config, ontology, embedder: object())  # type: ignore[arg-type, return-value]
    try:
        with memory(tmp_path, extraction={"provider": "broken_test"}) as m, \
                pytest.raises(ConfigError, match="not a graphmem Extractor"):
            m.add("I moved to Porto.", user_id="u")
    finally:
        extractor_registry._plugins.unregister("broken_test")


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Iterator[Path]:
    """An installed distribution declaring ``graphmem.extractors`` entry points, as ``pip install``
    would leave it."""
    site = tmp_path / "site"
    (site / "gm_extractor_plugin").mkdir(parents=True)
    (site / "gm_extractor_plugin" / "__init__.py").write_text(
        "from graphmem.extraction import ExtractedMemory, Extraction, Extractor\n"
        "class Shout(Extractor):\n"
        "    name = 'shout'\n"
        "    uses_known_memories = False\n"
        "    def extract(self, chunk, context):\n"
        "        return Extraction(memories=[ExtractedMemory(text=chunk.split(': ', 1)[-1].upper())])\n"
        "def factory(config, ontology, embedder):\n    return Shout()\n")
    info = site / "gm_extractor_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gm-extractor-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[graphmem.extractors]\nshout = gm_extractor_plugin:factory\n"
                                            "badly = gm_extractor_plugin:missing\n")
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("gm_extractor_plugin", None)


def test_an_entry_point_extractor_is_loaded_when_named(tmp_path: Path, plugin_dist: Path) -> None:
    assert {"shout", "badly"} <= set(extractors())
    with memory(tmp_path / "shout", extraction={"provider": "shout"}) as m:
        out = m.add("i moved to porto.", user_id="u")
        assert [r["memory"] for r in out["results"]] == ["I MOVED TO PORTO."]
    with memory(tmp_path / "badly", extraction={"provider": "badly"}) as m, \
            pytest.raises(ConfigError, match=r"'badly'.*failed to load"):
        m.add("i moved to porto.", user_id="u")
