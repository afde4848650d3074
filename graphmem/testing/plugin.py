"""The backend kit's pytest plugin: which store the kit's tests run against, and how it is configured.

pytest loads it through graphmem's ``pytest11`` entry point, so any project that has graphmem
installed gets the ``--graphmem-provider`` option and these fixtures without configuring anything;
the tests themselves come from :mod:`graphmem.testing.kit`, imported into a test module of the
project (see "A store backend" in docs/extending.md). Each fixture is a default that a
``conftest.py`` may override: graphmem's own suite does, to run the kit on SQLite and Neo4j.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

INI = "graphmem_provider"

# the kit's modules are imported after this plugin: their failed asserts then show the values compared
pytest.register_assert_rewrite("graphmem.testing.fixtures", "graphmem.testing.store_contract",
                               "graphmem.testing.graph_contract", "graphmem.testing.walk_parity")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphmem", "graphmem backend kit (graphmem.testing.kit)")
    group.addoption("--graphmem-provider", action="append", default=[], metavar="NAME", dest=INI,
                    help="store.provider the kit's tests run against; repeat it to run them on several")
    parser.addini(INI, type="args", default=[],
                  help="store.provider names the kit's tests run against, when --graphmem-provider is not given")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a kit test that takes seconds on its own (-m 'not slow' skips it)")


def providers(config: pytest.Config) -> list[str]:
    """The provider names asked for: the command line's, else the configuration file's."""
    given: list[str] = config.getoption(INI) or list(config.getini(INI))
    return list(dict.fromkeys(given))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One run of every kit test per named provider, the name in the test id (``[memory]``)."""
    names = providers(metafunc.config)
    if names and "graphmem_provider" in metafunc.fixturenames:
        metafunc.parametrize("graphmem_provider", names, indirect=True)


@pytest.fixture
def graphmem_provider(request: pytest.FixtureRequest) -> str:
    """The ``store.provider`` under test. Fails (never skips) when none is named: a kit that
    silently tests nothing would pass."""
    name: str | None = getattr(request, "param", None)
    if name is None:
        pytest.fail("the graphmem kit needs a store to test: run pytest with --graphmem-provider NAME, set "
                    f"`{INI} = NAME` in the pytest configuration, or override the graphmem_provider fixture",
                    pytrace=False)
    return name


@pytest.fixture
def graphmem_store_config(graphmem_provider: str) -> dict[str, Any]:
    """The ``store`` section of every configuration the kit builds. Override it to give your
    backend its settings (a server address, credentials); the kit writes under fresh tenant ids
    and never resets a store, so a server shared by all the tests is fine."""
    return {"provider": graphmem_provider}


@pytest.fixture
def graphmem_config(graphmem_store_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """A whole configuration for one test: its own home folder, the offline hashing embedder."""
    return {"home": str(tmp_path), "store": graphmem_store_config, "embedder": {"provider": "hashing"}}


@pytest.fixture
def graphmem_fulltext_parity() -> bool:
    """Whether the store's full-text hits are held equal to the reference's (SQLite FTS5: Porter
    stemming, accents folded) when search parity compares the two. Off by default: full-text
    matching is a backend's own (graphmem's two stores agree, and their suite turns it on)."""
    return False
