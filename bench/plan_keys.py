"""What a test run makes Neo4j plan: a pytest plugin that records every statement graphmem sends,
keyed as Neo4j caches plans (the statement's text and its parameters' types), and the test that
sent each key first.

    PYTHONPATH=bench NEO4J_URI=... .venv/bin/pytest -p plan_keys -m neo4j [tests...]

Why: in a whole test run the bundled server spends most of its CPU planning (a search statement
is 8-23 KB and takes seconds), so the keys a run creates, and the tests that create them, are what
makes CI long (docs/operators/backends.md, "Plans and parameter types"). At the end the plugin
prints the tests that created the most large keys and writes ``bench/results/plan_keys.json``
(``PLAN_KEYS_OUT`` to change it). Statements sent by other processes (REST and MCP servers the
tests start) are not seen.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import neo4j._async.work.session as async_session
import neo4j._async.work.transaction as async_transaction
import neo4j._sync.work.session as sync_session
import neo4j._sync.work.transaction as sync_transaction
import pytest

LARGE = 3000
"""Characters from which a statement counts as large (graphmem's search statements are 8-23 KB)."""

_keys: dict[tuple[str, str], dict[str, Any]] = {}
_test = ["(collection)"]


def _type(value: Any) -> str:
    """A parameter's type as the plan cache tells them apart: numbers alike, maps alike, lists by element."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list | tuple):
        return "list<" + "|".join(sorted({_type(v) for v in value})) + ">"
    return type(value).__name__


def _record(query: Any, parameters: dict[str, Any] | None, kwargs: dict[str, Any]) -> None:
    text = str(getattr(query, "text", query))
    params = {**(parameters or {}), **kwargs}
    types = ",".join(f"{k}:{_type(v)}" for k, v in sorted(params.items()))
    key = (hashlib.sha256(text.encode()).hexdigest()[:16], hashlib.sha256(types.encode()).hexdigest()[:16])
    entry = _keys.setdefault(key, {"test": _test[0], "chars": len(text), "runs": 0, "start": text[:100]})
    entry["runs"] += 1


def _wrap(cls: type, is_async: bool) -> None:
    original = cls.run  # type: ignore[attr-defined]

    if is_async:
        async def run(self: Any, query: Any, parameters: dict[str, Any] | None = None, **kwargs: Any) -> Any:
            _record(query, parameters, kwargs)
            return await original(self, query, parameters, **kwargs)
    else:
        def run(self: Any, query: Any, parameters: dict[str, Any] | None = None, **kwargs: Any) -> Any:
            _record(query, parameters, kwargs)
            return original(self, query, parameters, **kwargs)

    cls.run = run  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    _wrap(sync_session.Session, False)
    _wrap(sync_transaction.TransactionBase, False)
    _wrap(async_session.AsyncSession, True)
    _wrap(async_transaction.AsyncTransactionBase, True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _test[0] = item.nodeid


def pytest_terminal_summary(terminalreporter: Any) -> None:
    large = [entry for entry in _keys.values() if entry["chars"] >= LARGE]
    by_test = Counter(entry["test"] for entry in large)
    by_file = Counter(entry["test"].split("::")[0] for entry in large)
    write = terminalreporter.write_line
    write(f"plan keys: {len(_keys)} ({len(large)} of statements of {LARGE}+ characters)")
    for name, count in by_file.most_common(12):
        write(f"  {count:5d}  {name}")
    out = Path(os.environ.get("PLAN_KEYS_OUT", Path(__file__).parent / "results" / "plan_keys.json"))
    out.write_text(json.dumps({"keys": len(_keys), "large": len(large), "large_by_file": dict(by_file.most_common()),
                               "large_by_test": dict(by_test.most_common(40)),
                               "entries": sorted(_keys.values(), key=lambda e: -e["chars"])}, indent=1) + "\n")
    write(f"wrote {out}")
