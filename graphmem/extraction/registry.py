"""Extractors by name: ``extraction.provider`` in the configuration picks one, as ``store.provider``
picks a store.

The two built-in extractors are imported only when chosen (a process that extracts with rules never
loads the openai client). Another extractor is added either in code, ``register_extractor("mine",
factory)``, or by a package that declares an entry point in the ``graphmem.extractors`` group whose
object is such a factory, so ``pip install graphmem-mine`` and ``extraction.provider: mine`` suffice.
A factory takes the whole :class:`~graphmem.config.MemoryConfig` (its own settings may live anywhere
in it), the compiled ontology and the store's embedder, the two an extractor cannot build alone
without loading them a second time, and returns an :class:`~graphmem.extraction.Extractor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..plugins import Plugins

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..embedding import Embedder
    from ..ontology import Ontology
    from .contract import Extractor

ExtractorFactory = Callable[["MemoryConfig", "Ontology", "Embedder"], "Extractor"]
ENTRY_POINT_GROUP = "graphmem.extractors"


def _rules(config: MemoryConfig, ontology: Ontology, embedder: Embedder) -> Extractor:
    from .rules import RuleExtractor

    rules = config.extraction.rules
    return RuleExtractor(ontology, granularity=rules.granularity, small_talk=rules.small_talk,
                         embedder=embedder if embedder.semantic else None)


def _llm(config: MemoryConfig, ontology: Ontology, embedder: Embedder) -> Extractor:
    from .llm import LLMExtractor

    return LLMExtractor(config.llm)


_plugins: Plugins[ExtractorFactory] = Plugins("extractor", ENTRY_POINT_GROUP, "graphmem.extraction.register_extractor",
                                              {"rules": _rules, "llm": _llm}, reserved=("auto",))


def register_extractor(name: str, factory: ExtractorFactory, *, replace: bool = False) -> None:
    """Make ``extraction.provider: name`` build its extractor with ``factory``. A built-in or already
    registered name is refused unless ``replace`` (a plug-in must not shadow one by accident)."""
    _plugins.register(name, factory, replace=replace)


def extractors() -> list[str]:
    """Every extractor name usable now: built-in, registered, and installed entry points."""
    return _plugins.names()


def chosen(config: MemoryConfig) -> str:
    """The extractor ``config`` names: ``auto`` is the LLM when one is configured, else the rules."""
    name = config.extraction.provider
    if name == "auto":
        return "llm" if config.llm.provider == "openai" else "rules"
    return name


def check_extractor(config: MemoryConfig) -> None:
    """Raise the error :func:`create_extractor` would for a name nothing answers, without building
    anything: a ``Memory`` refuses such a configuration when it is made, not at its first ``add``.
    Entry points are scanned only for a name not registered."""
    name = chosen(config)
    if not _plugins.knows(name):
        raise _plugins.unknown(name)


def create_extractor(config: MemoryConfig, ontology: Ontology, embedder: Embedder) -> Extractor:
    """The extractor ``config.extraction.provider`` names (see :func:`chosen`)."""
    name = chosen(config)
    extractor = _plugins.factory(name)(config, ontology, embedder)
    from .contract import Extractor

    if not isinstance(extractor, Extractor):
        raise ConfigError(f"extractor {name!r} returned a {type(extractor).__name__}, not a graphmem Extractor")
    return extractor
