"""Schemathesis against the REST server's own OpenAPI schema, over real HTTP: requests generated from
the schema (valid and invalid ones) must never get a 5xx, and every answer must match what the schema
says (status codes, content types, bodies). Bounded examples per operation keep it to seconds.
Schema-valid requests the engine refuses (422: text of control characters, an unknown ontology
class, a limit past the configured one) are not failures: the engine checks more than a schema
says, so schemathesis's positive-data-acceptance check is the one left out.

The tenant run covers every operation with a key bound to one user; the admin run covers
``/v1/admin/*`` with the admin key (on a throwaway SQLite store: reset and optimize span every
tenant). Cypher needs Neo4j (SQLite answers 501 by design), so it runs against the shared Neo4j,
read-only, on its own.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from graphmem.servers.auth import new_key
from graphmem.servers.rest import create_app, running
from tests.conftest import make_config

EXAMPLES = int(os.environ.get("GRAPHMEM_SCHEMATHESIS_EXAMPLES", "10"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
STATUSES: Counter[int] = Counter()


class Server:
    def __init__(self, url: str, keys: dict[str, str]) -> None:
        self.url, self.keys = url, keys
        self.session = __import__("requests").Session()

    def headers(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}


def _serve(backend: str, tmp_path: Path) -> Iterator[Server]:
    keys = {"tenant": new_key(), "admin": new_key()}
    user = f"u-fuzz-{uuid.uuid4().hex[:10]}"
    cfg = make_config(backend, tmp_path, extraction={"rules": {"granularity": "message"}},
                      server={"max_body_bytes": 65_536,
                              "keys": [{"id": "tenant", "api_key": keys["tenant"], "user_id": user},
                                       {"id": "admin", "api_key": keys["admin"], "admin": True}]})
    with running(create_app(cfg)) as url:
        server = Server(url, keys)
        for text in ("Maya works at Northwind in Lisbon", "Maya is allergic to peanuts"):  # something to find
            httpx.post(f"{url}/v1/memories", headers=server.headers("tenant"),
                       json={"messages": text, "infer": False}).raise_for_status()
        yield server
        server.session.close()


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve("sqlite", tmp_path_factory.mktemp("rest-fuzz"))


@pytest.fixture(scope="module")
def neo4j_server(tmp_path_factory: pytest.TempPathFactory, neo4j_available: bool) -> Iterator[Server]:
    if not neo4j_available:
        pytest.skip("no Neo4j")
    yield from _serve("neo4j", tmp_path_factory.mktemp("rest-fuzz-neo4j"))


def call(case: Any, server: Server, key: str) -> None:
    response = case.call_and_validate(base_url=server.url, session=server.session, headers=server.headers(key),
                                      excluded_checks=[positive_data_acceptance])
    STATUSES[response.status_code] += 1
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:500])


def _operations() -> dict[str, Any]:
    """The schema's operations, from the application itself (no server is needed to collect them)."""
    app = create_app({"embedder": {"provider": "hashing"}}, insecure_local=True)
    schema = schemathesis.openapi.from_dict(app.openapi())
    return {op.label: op for op in (result.ok() for result in schema.get_all_operations())}


OPERATIONS = _operations()
MODES = [pytest.param(GenerationMode.POSITIVE, id="valid"), pytest.param(GenerationMode.NEGATIVE, id="invalid")]
ADMIN = [label for label in OPERATIONS if " /v1/admin/" in label and not label.endswith("/cypher")]
TENANT = [label for label in OPERATIONS if " /v1/admin/cypher" not in label]


def fuzz(label: str, mode: GenerationMode, server: Server, key: str) -> None:
    operation = OPERATIONS[label]

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        call(case, server, key)

    try:
        run()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        pytest.skip(f"{label} takes nothing an invalid request could get wrong")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label", TENANT)
def test_tenant_key_gets_no_server_error(label: str, mode: GenerationMode, sqlite_server: Server) -> None:
    fuzz(label, mode, sqlite_server, "tenant")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label", ADMIN)
def test_admin_key_gets_no_server_error(label: str, mode: GenerationMode, sqlite_server: Server) -> None:
    fuzz(label, mode, sqlite_server, "admin")


@pytest.mark.parametrize("mode", MODES)
def test_admin_cypher_on_neo4j_gets_no_server_error(mode: GenerationMode, neo4j_server: Server) -> None:
    fuzz("POST /v1/admin/cypher", mode, neo4j_server, "admin")


def test_fuzzing_reached_the_engine() -> None:
    """Runs after the fuzz tests of this module: they answered, and not only with refusals."""
    if not STATUSES:
        pytest.skip("the fuzz tests did not run (deselected)")
    assert STATUSES[200] > 0 and sum(n for s, n in STATUSES.items() if 400 <= s < 500) > 0, dict(STATUSES)
    print(f"\nschemathesis answers by status: {dict(sorted(STATUSES.items()))}")
