"""The llama.cpp server that ``make test-llm`` starts (tools/llm/serve.sh), as fixtures.

``GRAPHMEM_TEST_LLM_URL`` names its ``/v1`` endpoint. When it is unset or does not answer, these
tests skip on a laptop and fail under ``CI=true``. Every ``add`` the tests make is recorded and
printed at the end of the run, so the output shows what each call against the real model did.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from ..conftest import IN_CI
from .proxy import RecordingProxy


@dataclass
class Outcome:
    test: str
    what: str
    seconds: float
    calls: list[str]
    """Each chat completion as ``format:status``."""
    result: str
    stats: dict[str, int] = field(default_factory=dict)


OUTCOMES: list[Outcome] = []


@pytest.fixture(scope="session")
def llama_url() -> str:
    url = os.environ.get("GRAPHMEM_TEST_LLM_URL", "").rstrip("/")
    problem = "GRAPHMEM_TEST_LLM_URL is not set (run `make test-llm`)" if not url else ""
    if url:
        try:
            httpx.get(f"{url}/models", timeout=10).raise_for_status()
        except httpx.HTTPError as exc:
            problem = f"no llama.cpp server answers at {url}: {exc}"
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)
    return url


@pytest.fixture(scope="session")
def n_ctx() -> int:
    """The context the server was started with (serve.sh exports it)."""
    return int(os.environ.get("GRAPHMEM_TEST_LLM_N_CTX", "4096"))


@pytest.fixture(scope="session")
def proxy(llama_url: str) -> Iterator[RecordingProxy]:
    p = RecordingProxy(llama_url)
    yield p
    p.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not OUTCOMES:
        return
    terminalreporter.section("adds through llama.cpp + Gemma 3 270M")
    for o in OUTCOMES:
        codes = " ".join(o.calls) or "no call"
        stats = "".join(f" {k}={v}" for k, v in o.stats.items() if v)
        terminalreporter.write_line(f"{o.test} [{o.what}] {o.seconds:.1f}s calls: {codes}{stats}\n    -> {o.result}")
