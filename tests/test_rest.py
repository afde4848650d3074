"""The REST server over real HTTP: uvicorn on a free port of 127.0.0.1, requests with httpx, on both
backends. Scopes per API key (another tenant's id is a missing id), cursor pages, error statuses
with problem+json bodies, body limits, admin-only endpoints, logs. Tests on the shared Neo4j use
their own tenants and never call reset or optimize there (they span every tenant, whoever's server
it is): the test of those starts a Neo4j server of its own."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from graphmem import Memory, MemoryConfig, StoreUnavailableError
from graphmem.embedding import HashingEmbedder
from graphmem.errors import ConfigError
from graphmem.servers.auth import digest, new_key
from graphmem.servers.rest import create_app, running
from graphmem.stores.sqlite import SQLiteStore
from graphmem.testing import StandinServer
from graphmem.testing.fake_llm import fact_responder
from tests.conftest import IN_CI, NEO4J_PASSWORD, make_config

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = "application/problem+json"


@dataclass
class Api:
    url: str
    keys: dict[str, str]
    """Key name -> the key (``a``, ``b``: users; ``agent``: an agent; ``admin``)."""
    users: dict[str, str]
    clients: dict[str, httpx.Client] = field(default_factory=dict)

    def __call__(self, name: str | None) -> httpx.Client:
        if name not in self.clients:
            headers = {"Authorization": f"Bearer {self.keys[name]}"} if name else {}
            self.clients[name or ""] = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        return self.clients[name or ""]

    def close(self) -> None:
        for c in self.clients.values():
            c.close()


def key_config(users: dict[str, str], keys: dict[str, str], agent: str) -> list[dict[str, Any]]:
    return [
        {"id": "key-a", "api_key": keys["a"], "user_id": users["a"]},
        {"id": "key-b", "sha256": digest(keys["b"]), "user_id": users["b"]},
        {"id": "key-agent", "api_key": keys["agent"], "agent_id": agent},
        {"id": "key-admin", "api_key": keys["admin"], "admin": True},
    ]


@pytest.fixture
def api(backend: str, tmp_path: Path) -> Iterator[Api]:
    users = {"a": f"u-{uuid.uuid4().hex[:12]}", "b": f"u-{uuid.uuid4().hex[:12]}"}
    keys = {name: new_key() for name in ("a", "b", "agent", "admin")}
    agent = f"ag-{uuid.uuid4().hex[:12]}"
    users["agent"] = agent
    cfg = make_config(backend, tmp_path, server={"keys": key_config(users, keys, agent)})
    with running(create_app(cfg)) as url:
        client = Api(url, keys, users)
        yield client
        client.close()


def problem_of(r: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"] == PROBLEM
    body: dict[str, Any] = r.json()
    assert {"type", "title", "status", "detail", "error"} <= body.keys()
    assert body["status"] == status and body["error"] == error, body
    assert body["type"].startswith("https://graphmem.dev/problems/")
    return body


def add(c: httpx.Client, text: str, **extra: Any) -> dict[str, Any]:
    r = c.post("/v1/memories", json={"messages": text, "infer": False, **extra})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


# -- the operations ---------------------------------------------------------------------------------
def test_every_memory_operation_over_http(api: Api) -> None:
    a = api("a")
    out = add(a, "I am allergic to peanuts", metadata={"source": "chat"})
    mid = out["results"][0]["id"]
    assert out["results"][0]["event"] == "ADD" and out["relations"] == {"added": [], "superseded": [], "ended": [],
                                                                  "rejected": []}
    assert "chunks" not in out  # the fields the engine returned, no invented nulls

    got = a.get(f"/v1/memories/{mid}").json()
    assert got["memory"] == "I am allergic to peanuts" and got["user_id"] == api.users["a"]
    assert got["metadata"] == {"source": "chat"} and "agent_id" not in got
    found = a.post("/v1/search", json={"query": "peanuts allergy", "explain": True}).json()
    assert found["results"][0]["id"] == mid and "vector" in found["results"][0]["score_details"]
    assert found["round_trips"] >= 1
    then = a.post("/v1/search", json={"query": "my peanuts allergy in June", "explain": True,
                                      "now": "2020-07-01T00:00:00Z"}).json()  # June 2020: said later, lowered
    assert then["results"][0]["score_details"]["outside_asked_time"] == 0.5
    listed = a.get("/v1/memories", params={"filters": json.dumps({"source": "chat"})}).json()
    assert [r["id"] for r in listed["results"]] == [mid] and listed["next_cursor"] is None

    updated = a.patch(f"/v1/memories/{mid}", json={"data": "I am allergic to peanuts and shellfish",
                                                   "metadata": {"checked": True}, "infer": False}).json()
    assert updated["event"] == "UPDATE" and updated["metadata"] == {"source": "chat", "checked": True}
    events = a.get(f"/v1/memories/{mid}/history").json()
    assert [e["event"] for e in events] == ["ADD", "UPDATE"]
    assert a.delete(f"/v1/memories/{mid}").json() == {"id": mid, "event": "DELETE",
                                                          "message": "memory deleted"}
    problem_of(a.get(f"/v1/memories/{mid}"), 404, "NotFoundError")
    assert [e["event"] for e in a.get(f"/v1/memories/{mid}/history").json()] == ["ADD", "UPDATE", "DELETE"]

    add(a, "one"), add(a, "two")
    assert a.delete("/v1/memories").json() == {"deleted": 2, "scope": {"user_id": api.users["a"]},
                                              "message": "2 memories deleted"}
    assert a.get("/v1/memories").json()["results"] == []


def test_graph_reads_and_quarantine_over_http(api: Api) -> None:
    a = api("a")
    triples = [
        {"source": "Wei", "relation": "lives in", "target": "Beijing", "source_type": "Person", "target_type": "City"},
        {"source": "Wei", "relation": "born in", "target": "Shanghai Tower", "target_type": "Organization"},
    ]
    out = add(a, "I live in Beijing", timestamp="2023-05-01", triples=triples)
    assert [r["target"] for r in out["relations"]["added"]] == ["Beijing"]
    assert [r["target"] for r in out["relations"]["rejected"]] == ["Shanghai Tower"]
    people = a.get("/v1/entities", params={"type": "Person"}).json()
    assert [(e["name"], e["types"], e["mentions"]) for e in people["results"]] == [("Wei", ["gm:Person"], 1)]
    facts = a.get("/v1/facts", params={"entity": "Wei", "relation": "lives in"}).json()["results"]
    assert [(f["relation_name"], f["target"]["name"], f["derived"]) for f in facts] == [("gm:livesIn", "Beijing", None)]
    assert facts[0]["memories"][0]["memory"] == "I live in Beijing"
    problem_of(a.get("/v1/facts", params={"entity": "Nobody"}), 404, "NotFoundError")
    problem_of(a.get("/v1/entities", params={"type": "NoSuchClass"}), 422, "InvalidInputError")

    quarantined = a.get("/v1/quarantine").json()
    assert [q["triple"]["target"] for q in quarantined] == ["Shanghai Tower"]
    assert quarantined[0]["reasons"][0]["constraint"].endswith("ClassConstraintComponent")
    again = a.post("/v1/quarantine/recheck", json={"ids": [quarantined[0]["id"]]}).json()
    assert again["released"] == [] and [s["quarantine_id"] for s in again["still_rejected"]] == [quarantined[0]["id"]]
    # another tenant sees none of it
    b = api("b")
    assert b.get("/v1/entities").json() == {"results": [], "next_cursor": None}
    assert b.get("/v1/quarantine").json() == []
    problem_of(b.get("/v1/facts", params={"entity": people["results"][0]["id"]}), 404, "NotFoundError")


# -- scopes -----------------------------------------------------------------------------------------
def test_another_tenants_memory_behaves_as_missing(api: Api) -> None:
    a, b = api("a"), api("b")
    mid = add(a, "a's secret plan")["results"][0]["id"]
    missing = str(uuid.uuid4())
    for method, path, payload in [("GET", "/v1/memories/{}", None), ("GET", "/v1/memories/{}/history", None),
                                  ("PATCH", "/v1/memories/{}", {"data": "overwritten", "infer": False}),
                                  ("DELETE", "/v1/memories/{}", None)]:
        theirs = b.request(method, path.format(mid), json=payload)
        nothing = b.request(method, path.format(missing), json=payload)
        body = problem_of(theirs, 404, "NotFoundError")
        assert body == {**problem_of(nothing, 404, "NotFoundError"),
                        "detail": nothing.json()["detail"].replace(missing, mid)}, method + path
        assert "a's secret" not in theirs.text and api.users["a"] not in theirs.text
    assert b.get("/v1/memories").json()["results"] == []
    assert b.post("/v1/search", json={"query": "secret plan"}).json()["results"] == []
    assert b.delete("/v1/memories").json()["deleted"] == 0
    assert a.get(f"/v1/memories/{mid}").json()["memory"] == "a's secret plan"  # untouched by b


def test_a_request_narrows_its_keys_scope_and_never_widens_it(api: Api) -> None:
    a, user = api("a"), api.users["a"]
    in_run = add(a, "said in run one", run_id="r1")["results"][0]
    add(a, "said outside any run")
    assert a.get(f"/v1/memories/{in_run['id']}").json()["run_id"] == "r1"
    assert [r["memory"] for r in a.get("/v1/memories", params={"run_id": "r1"}).json()["results"]] == \
        ["said in run one"]
    assert len(a.get("/v1/memories").json()["results"]) == 2
    assert a.get("/v1/memories", params={"user_id": user}).status_code == 200  # naming its own value is fine
    for r in [a.get("/v1/memories", params={"user_id": api.users["b"]}),
              a.post("/v1/memories", json={"messages": "x", "infer": False, "user_id": api.users["b"]}),
              a.post("/v1/search", json={"query": "x", "user_id": api.users["b"]}),
              a.delete("/v1/memories", params={"user_id": api.users["b"]}),
              a.get(f"/v1/memories/{in_run['id']}", params={"user_id": "someone-else"})]:
        body = problem_of(r, 403, "KeyScopeError")
        assert "key-a" in body["detail"] and api.users["b"] not in body["detail"]
    problem_of(a.get("/v1/memories", params={"run_id": "\x00bad"}), 422, "ScopeError")

    # a key bound to an agent: every user of that agent, narrowed by user_id when asked
    agent = api("agent")
    add(agent, "the agent learned this for u9", user_id="u9")
    add(agent, "the agent learned this for u8", user_id="u8")
    assert len(agent.get("/v1/memories").json()["results"]) == 2
    only = agent.get("/v1/memories", params={"user_id": "u9"}).json()["results"]
    assert [(r["user_id"], r["agent_id"]) for r in only] == [("u9", api.users["agent"])]
    problem_of(agent.get("/v1/memories", params={"agent_id": "another-agent"}), 403, "KeyScopeError")

    # the admin key names any scope, and must name one
    admin = api("admin")
    assert admin.get(f"/v1/memories/{in_run['id']}", params={"user_id": user}).json()["id"] == in_run["id"]
    problem_of(admin.get(f"/v1/memories/{in_run['id']}", params={"user_id": api.users["b"]}), 404, "NotFoundError")
    problem_of(admin.get("/v1/memories"), 422, "ScopeError")
    # by id too: the Python API finds a memory's scope by itself, a server never does
    for by_id in (admin.get(f"/v1/memories/{in_run['id']}"), admin.get(f"/v1/memories/{in_run['id']}/history"),
                  admin.delete(f"/v1/memories/{in_run['id']}")):
        problem_of(by_id, 422, "ScopeError")


def test_batch_add_over_http_keeps_each_item_in_the_keys_scope(api: Api) -> None:
    agent = api("agent")
    items = [{"messages": "batch note one", "infer": False, "user_id": "u7"},
             {"messages": [{"role": "user", "content": "batch note two"}], "infer": False, "user_id": "u6"},
             {"messages": "batch note one", "infer": False, "user_id": "u7"}]
    out = agent.post("/v1/memories/batch", json={"items": items}).json()["items"]
    assert [it["results"][0]["event"] for it in out] == ["ADD", "ADD", "NONE"]
    assert [r["memory"] for r in agent.get("/v1/memories", params={"user_id": "u6"}).json()["results"]] == \
        ["batch note two"]
    # one item outside the key's scope: the whole batch is refused and nothing of it is written
    a = api("a")
    wide = [{"messages": "mine", "infer": False}, {"messages": "theirs", "infer": False, "user_id": api.users["b"]}]
    problem_of(a.post("/v1/memories/batch", json={"items": wide}), 403, "KeyScopeError")
    bad = [{"messages": "fine", "infer": False}, {"messages": "x", "timestamp": "not a time"}]
    refused = a.post("/v1/memories/batch", json={"items": bad})
    assert "items[1]" in problem_of(refused, 422, "InvalidInputError")["detail"]
    assert a.get("/v1/memories").json()["results"] == []


def test_keys_are_required_and_admin_endpoints_refused_to_tenants(api: Api) -> None:
    anonymous = httpx.Client(base_url=api.url)
    r = anonymous.get("/v1/memories")
    problem_of(r, 401, "UnauthenticatedError")
    assert r.headers["www-authenticate"] == "Bearer"
    problem_of(anonymous.get("/v1/memories", headers={"Authorization": "Bearer gm_not-a-key-of-this-server"}), 401,
               "UnauthenticatedError")
    problem_of(anonymous.get("/v1/memories", headers={"Authorization": f"Basic {api.keys['a']}"}), 401,
               "UnauthenticatedError")
    assert anonymous.get("/healthz").json() == {"status": "ok"}
    assert anonymous.get("/readyz").json() == {"status": "ready"}
    anonymous.close()
    for name in ("a", "agent"):
        c = api(name)
        for path, payload in [("/v1/admin/cypher", {"query": "RETURN 1 AS one"}),
                              ("/v1/admin/reset", {"confirm": True}), ("/v1/admin/optimize", None),
                              ("/v1/admin/dry-run", {"ontology": ["@prefix : <urn:x#> ."]})]:
            body = problem_of(c.post(path, json=payload), 403, "AdminOnlyError")
            assert f"key-{name}" in body["detail"]
    assert api("a").get("/v1/memories").status_code == 200  # reset was refused: the store is there


def test_admin_cypher(api: Api, backend: str) -> None:
    a, admin = api("a"), api("admin")
    add(a, "Maya is a data engineer")
    query = {"query": "MATCH (m:Memory {user_id: $u}) RETURN m.memory AS text, m.created_at AS at, 0.0/0.0 AS nan",
             "params": {"u": api.users["a"]}}
    r = admin.post("/v1/admin/cypher", json=query)
    if backend == "sqlite":
        problem_of(r, 501, "UnsupportedError")
        return
    rows = r.json()["rows"]
    assert [row["text"] for row in rows] == ["Maya is a data engineer"]
    assert rows[0]["at"].startswith("20") and rows[0]["nan"] == "nan"
    problem_of(admin.post("/v1/admin/cypher", json={"query": "CREATE (n:Memory {id: 'x'}) RETURN n"}), 403,
               "ReadOnlyError")
    problem_of(admin.post("/v1/admin/cypher", json={"query": "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l"}),
               403, "CypherRefusedError")
    problem_of(admin.post("/v1/admin/cypher", json={"query": "MATCH (n RETURN n"}), 422, "InvalidInputError")


NEO4J_LAUNCHER = ROOT / "tools" / "neo4j" / "neo4j.sh"


@contextlib.contextmanager
def own_neo4j(home: Path) -> Iterator[str]:
    """A Neo4j server this test starts and stops: the bundled launcher on a free port, its data in
    ``home``. Reset and optimize act on every tenant of a server, so they never run on the suite's
    (``NEO4J_URI`` may be a developer's own server, and other test runs may be using it). Without
    Java the test skips, except under ``CI=true``, where it fails."""
    if shutil.which(os.environ.get("JAVA", "java")) is None:
        if IN_CI:
            pytest.fail("CI=true but there is no java to start a Neo4j of the test's own", pytrace=False)
        pytest.skip("no java: the reset test starts a Neo4j of its own (tools/neo4j)")
    port = _free_port()
    env = {**os.environ, "GRAPHMEM_NEO4J_HOME": str(home), "GRAPHMEM_NEO4J_PORT": str(port),
           "GRAPHMEM_NEO4J_HEAP": "512m", "GRAPHMEM_NEO4J_PAGECACHE": "64m", "NEO4J_PASSWORD": NEO4J_PASSWORD}
    started = subprocess.run(["bash", str(NEO4J_LAUNCHER), "start"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        ready = subprocess.run(["bash", str(NEO4J_LAUNCHER), "wait", "180"], env=env, capture_output=True, text=True)
        assert ready.returncode == 0, ready.stdout + ready.stderr
        yield f"bolt://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", str(NEO4J_LAUNCHER), "stop"], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("store", ["sqlite", pytest.param("neo4j", marks=[pytest.mark.neo4j, pytest.mark.slow])])
def test_admin_reset_optimize_and_dry_run(store: str, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        cfg = make_config(store, tmp_path)
        if store == "neo4j":  # every tenant of a server the test started, and nobody else's
            cfg["store"]["uri"] = stack.enter_context(own_neo4j(tmp_path / "neo4j"))
        admin_and_reset(cfg, store)


def admin_and_reset(cfg: dict[str, Any], store: str) -> None:
    admin_key, tenant_key = new_key(), new_key()
    cfg = {**cfg, "server": {"keys": [{"id": "ops", "api_key": admin_key, "admin": True},
                                      {"id": "t", "api_key": tenant_key, "user_id": "wei"}]}}
    with running(create_app(cfg)) as url, httpx.Client(base_url=url, timeout=120) as c:
        admin, tenant = {"Authorization": f"Bearer {admin_key}"}, {"Authorization": f"Bearer {tenant_key}"}
        add(httpx.Client(base_url=url, headers=tenant, timeout=120), "I live in Beijing", triples=[
            {"source": "Wei", "relation": "lives in", "target": "Beijing", "source_type": "Person",
             "target_type": "City"}])
        ontology = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "ontology").glob("*.ttl"))]
        shapes = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "shapes").glob("*.ttl"))]
        report = c.post("/v1/admin/dry-run", headers=admin, json={"ontology": ontology, "shapes": shapes}).json()
        assert report == {"checked": 1, "invalid": [], "scopes": 1}
        scoped = c.post("/v1/admin/dry-run", headers=admin, json={"ontology": ontology, "user_id": "nobody"}).json()
        assert scoped["checked"] == 0
        body = problem_of(c.post("/v1/admin/dry-run", headers=admin, json={"ontology": ["this is not turtle"]}),
                          422, "InvalidInputError")
        assert body["detail"].startswith("ontology[0] is not Turtle")
        imports = "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n<urn:x> owl:imports <file:///etc/passwd> ."
        body = problem_of(c.post("/v1/admin/dry-run", headers=admin, json={"ontology": [imports]}), 422,
                          "InvalidInputError")
        assert "owl:imports" in body["detail"]
        problem_of(c.post("/v1/admin/dry-run", headers=admin, json={"ontology": []}), 422, "RequestValidationError")

        assert c.post("/v1/admin/optimize", headers=admin).json()["backend"] == store
        assert [r["memory"] for r in c.get("/v1/memories", headers=tenant).json()["results"]] == ["I live in Beijing"]
        problem_of(c.post("/v1/admin/reset", headers=admin, json={}), 422, "RequestValidationError")
        problem_of(c.post("/v1/admin/reset", headers=tenant, json={"confirm": True}), 403, "AdminOnlyError")
        assert c.post("/v1/admin/reset", headers=admin, json={"confirm": True}).json() == {"reset": True}
        assert c.get("/v1/memories", headers=tenant).json()["results"] == []
        assert c.get("/v1/facts", headers=tenant).json()["results"] == []


# -- pages ------------------------------------------------------------------------------------------
def pages(c: httpx.Client, path: str, **params: Any) -> list[list[dict[str, Any]]]:
    out, cursor = [], None
    while True:
        r = c.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        out.append(body["results"])
        cursor = body["next_cursor"]
        if cursor is None:
            return out


def test_memory_pages_follow_the_list_order_and_survive_inserts(api: Api) -> None:
    a = api("a")
    # one add stores its memories with one created_at: the cursor's id breaks the ties
    a.post("/v1/memories", json={"messages": [{"role": "user", "content": f"batch memory {i}"} for i in range(7)],
                                 "infer": False, "metadata": {"kind": "batch"}})
    for i in range(4):
        add(a, f"single memory {i}", metadata={"kind": "single"})
    everything = a.get("/v1/memories", params={"limit": 100}).json()["results"]
    assert len(everything) == 11
    got = pages(a, "/v1/memories", limit=3)
    assert [len(p) for p in got] == [3, 3, 3, 2]
    assert [r["id"] for p in got for r in p] == [r["id"] for r in everything]
    exact = pages(a, "/v1/memories", limit=11)
    assert [len(p) for p in exact] == [11]  # a full last page says there is no next one
    batch = pages(a, "/v1/memories", limit=2, filters=json.dumps({"kind": "batch"}))
    assert [len(p) for p in batch] == [2, 2, 2, 1]
    assert sorted(r["memory"] for p in batch for r in p) == [f"batch memory {i}" for i in range(7)]
    with_and = pages(a, "/v1/memories", limit=2, filters=json.dumps({"AND": [{"kind": "single"}]}))
    assert [len(p) for p in with_and] == [2, 2]

    # a memory added between pages is newer than the cursor: the pages go on where they were
    first = a.get("/v1/memories", params={"limit": 4}).json()
    add(a, "added while paging")
    rest = pages(a, "/v1/memories", limit=4, cursor=first["next_cursor"])
    assert [r["id"] for r in first["results"] + [r for p in rest for r in p]] == [r["id"] for r in everything]
    problem_of(a.get("/v1/memories", params={"cursor": "not-a-cursor"}), 422, "InvalidInputError")
    problem_of(a.get("/v1/memories", params={"limit": 0}), 422, "RequestValidationError")
    problem_of(a.get("/v1/memories", params={"limit": 10**6}), 422, "InvalidInputError")
    problem_of(a.get("/v1/memories", params={"filters": "{not json"}), 422, "InvalidInputError")
    problem_of(a.get("/v1/memories", params={"filters": json.dumps({"x": {"near": 1}})}), 422, "InvalidFilterError")
    # a cursor never reaches past the key's scope: b's pages from a's cursor hold b's rows only
    assert api("b").get("/v1/memories", params={"cursor": first["next_cursor"]}).json()["results"] == []


def test_entity_and_fact_pages(api: Api) -> None:
    a = api("a")
    people = [f"Person {chr(65 + i)}" for i in range(5)]
    triples = [{"source": p, "relation": "lives in", "target": "Lisbon", "source_type": "Person",
                "target_type": "City"} for p in people]
    add(a, "They all live in Lisbon", triples=triples)
    got = pages(a, "/v1/entities", limit=2, type="Person")
    assert [len(p) for p in got] == [2, 2, 1] and sorted(e["name"] for p in got for e in p) == people
    fact_pages = pages(a, "/v1/facts", limit=2, relation="lives in")
    assert [len(p) for p in fact_pages] == [2, 2, 1]
    assert sorted(f["source"]["name"] for p in fact_pages for f in p) == people
    problem_of(a.get("/v1/facts", params={"cursor": "garbage"}), 422, "InvalidInputError")


# -- errors, limits, logs -------------------------------------------------------------------------
def test_error_statuses_are_problems(api: Api) -> None:
    a = api("a")
    problem_of(a.post("/v1/search", json={"query": "   "}), 422, "InvalidInputError")
    problem_of(a.post("/v1/search", json={"query": "x", "filters": {"a": {"near": 1}}}), 422, "InvalidFilterError")
    problem_of(a.post("/v1/search", json={"query": "x", "top_k": 10**6}), 422, "InvalidInputError")
    problem_of(a.post("/v1/search", json={"query": "x", "since": "2024-01-02", "until": "2024-01-01"}), 422,
               "InvalidInputError")
    body = problem_of(a.post("/v1/search", json={"query": "x", "top_k": "many"}), 422, "RequestValidationError")
    assert body["errors"][0]["loc"] == ["body", "top_k"]
    problem_of(a.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"}), 422,
               "RequestValidationError")
    problem_of(a.post("/v1/memories", json={"messages": "x", "surprise": 1}), 422, "RequestValidationError")
    problem_of(a.post("/v1/memories", json={"messages": "x", "expires_at": "2001-01-01", "infer": False}), 422,
               "InvalidInputError")
    problem_of(a.patch(f"/v1/memories/{uuid.uuid4()}", json={}), 422, "InvalidInputError")
    one = add(a, "first text")["results"][0]["id"]
    add(a, "second text")
    problem_of(a.patch(f"/v1/memories/{one}", json={"data": "second text", "infer": False}), 409,
               "DuplicateMemoryError")
    problem_of(a.get("/v1/nowhere"), 404, "HTTPError")
    r = a.put("/v1/search", json={})
    problem_of(r, 405, "HTTPError")
    assert "POST" in r.headers["allow"]


def test_request_bodies_are_bounded(backend: str, tmp_path: Path) -> None:
    key = new_key()
    cfg = make_config(backend, tmp_path, server={"max_body_bytes": 4096,
                                                 "keys": [{"id": "k", "api_key": key, "user_id": f"u-{uuid.uuid4()}"}]})
    with running(create_app(cfg)) as url, httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.post("/v1/memories", json={"messages": "x" * 3000, "infer": False}).status_code == 200
        body = problem_of(c.post("/v1/memories", json={"messages": "x" * 5000, "infer": False}), 413,
                          "RequestTooLarge")
        assert "4,096" in body["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"messages": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'", "infer": false}'

        problem_of(c.post("/v1/memories", content=chunks(), headers={"content-type": "application/json"}), 413,
                   "RequestTooLarge")
        assert len(c.get("/v1/memories").json()["results"]) == 1


def test_one_json_log_line_per_request_without_keys_or_text(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="graphmem.server")
    a = api("a")
    secret_text = "my bank PIN is 4921"
    mid = add(a, secret_text)["results"][0]["id"]
    a.get(f"/v1/memories/{mid}")
    a.get("/v1/memories", params={"filters": json.dumps({"note": "r-log"})})
    api("b").get(f"/v1/memories/{mid}")
    httpx.get(f"{api.url}/v1/memories")
    deadline = time.monotonic() + 10  # a line is written once its answer is sent
    while len(lines := [r.fields for r in caplog.records  # type: ignore[attr-defined]
                        if r.name == "graphmem.server.access"]) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [(x["method"], x["path"], x["status"], x["key_id"]) for x in lines[-5:]] == [
        ("POST", "/v1/memories", 200, "key-a"), ("GET", "/v1/memories/{memory_id}", 200, "key-a"),
        ("GET", "/v1/memories", 200, "key-a"),
        ("GET", "/v1/memories/{memory_id}", 404, "key-b"), ("GET", "/v1/memories", 401, None)]
    assert all(x["duration_ms"] >= 0 and x["request_id"] for x in lines)
    everything = "\n".join(json.dumps(r.fields, default=str) + r.getMessage()  # type: ignore[attr-defined]
                           for r in caplog.records if hasattr(r, "fields"))
    for leak in (*api.keys.values(), secret_text, mid, "r-log"):
        assert leak not in everything


# -- faults ---------------------------------------------------------------------------------------
class FaultyStore(SQLiteStore):
    """Raises ``fault`` (when set) from reads: what a broken or unreachable store looks like."""

    fault: BaseException | None = None

    def list_memories(self, *args: Any, **kwargs: Any) -> Any:
        if self.fault is not None:
            raise self.fault
        return super().list_memories(*args, **kwargs)

    def count(self, *args: Any, **kwargs: Any) -> int:
        if self.fault is not None:
            raise self.fault
        return super().count(*args, **kwargs)


def test_server_faults_answer_without_internals(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    key = new_key()
    store = FaultyStore(tmp_path / "faulty.db")
    memory = Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(384), store=store)
    cfg = make_config("sqlite", tmp_path, server={"keys": [{"id": "k", "api_key": key, "user_id": "u1"}]})
    try:
        with running(create_app(cfg, memory=memory)) as url, \
                httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as c:
            store.fault = StoreUnavailableError("Neo4j at bolt://db.internal:7687 is unreachable")
            body = problem_of(c.get("/v1/memories"), 503, "StoreUnavailableError")
            assert "internal" not in body["detail"]
            problem_of(c.get("/readyz"), 503, "StoreUnavailableError")
            assert c.get("/healthz").status_code == 200
            store.fault = RuntimeError("secret internals at /srv/app/config.yaml")
            body = problem_of(c.get("/v1/memories"), 500, "InternalError")
            assert "secret" not in json.dumps(body) and body["detail"] == "the server failed"
            store.fault = ConfigError("password for db.internal is wrong")
            assert problem_of(c.get("/v1/memories"), 500, "ConfigError")["detail"] == \
                "the server's configuration is invalid"
            store.fault = None
            assert c.get("/readyz").json() == {"status": "ready"}
        errors = [r for r in caplog.records if r.name == "graphmem.server.error"]
        assert any(getattr(r, "fields", {}).get("error") == "RuntimeError" for r in errors)
        assert not any("secret internals" in json.dumps(getattr(r, "fields", {})) for r in errors)
    finally:
        memory.close()


def test_llm_extraction_over_http_and_llm_faults(backend: str, tmp_path: Path) -> None:
    key, user = new_key(), f"u-{uuid.uuid4().hex[:12]}"
    with StandinServer() as llm:
        llm.chat_responder = fact_responder
        cfg = make_config(backend, tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "api_key": "test",
                                                  "model": "standin", "max_retries": 0, "output_retries": 0,
                                                  "timeout_s": 10, "repair": False},
                          server={"keys": [{"id": "k", "api_key": key, "user_id": user}]})
        with running(create_app(cfg)) as url, \
                httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            out = c.post("/v1/memories", json={"messages": [
                {"role": "user", "name": "Wei", "content": "FACT Wei:Person livesIn Beijing:City"}]}).json()
            assert out["chunks"] == 1 and [r["target"] for r in out["relations"]["added"]] == ["Beijing"]
            assert c.get("/v1/facts", params={"entity": "Wei"}).json()["results"][0]["target"]["name"] == "Beijing"
            llm.chat_responder = lambda body: "{not json"
            body = problem_of(c.post("/v1/memories", json={"messages": "FACT Ada:Person livesIn London:City"}), 502,
                              "ExtractionError")
            assert "nothing was written" in body["detail"]
            assert len(c.get("/v1/memories").json()["results"]) == 1


# -- starting ---------------------------------------------------------------------------------------
def test_no_key_no_start_unless_insecure_local(tmp_path: Path) -> None:
    cfg = make_config("sqlite", tmp_path)
    with pytest.raises(ConfigError, match="no API key is configured"):
        create_app(cfg)
    with pytest.raises(ConfigError, match="--insecure-local serves without keys"):
        create_app({**cfg, "server": {"keys": [{"id": "k", "api_key": new_key(), "user_id": "u"}]}},
                   insecure_local=True)
    with running(create_app(cfg, insecure_local=True)) as url:
        r = httpx.post(f"{url}/v1/memories", json={"messages": "local dev", "user_id": "dev", "infer": False})
        assert r.status_code == 200
        assert httpx.post(f"{url}/v1/admin/optimize").json()["backend"] == "sqlite"


def test_keys_file_holds_hashes_only(tmp_path: Path) -> None:
    key = new_key()
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(f"keys:\n  - {{id: app, sha256: {digest(key)}, user_id: u1}}\n", encoding="utf-8")
    cfg = make_config("sqlite", tmp_path, server={"keys_file": str(keys_file)})
    with running(create_app(cfg)) as url:
        assert httpx.get(f"{url}/v1/memories", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    keys_file.write_text(f"keys:\n  - {{id: app, api_key: {key}, user_id: u1}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds a key in clear") as caught:
        create_app(cfg)
    assert key not in str(caught.value)
    keys_file.write_text("keys:\n  - {id: app, sha256: abc, user_id: u1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"keys\[0\] is invalid"):
        create_app(cfg)
    two = [{"id": "x", "api_key": key, "user_id": "u1"}, {"id": "y", "api_key": key, "user_id": "u2"}]
    with pytest.raises(ConfigError, match="the same key as another"):
        create_app({**cfg, "server": {"keys": two}})
    with pytest.raises(ConfigError, match="not both and not neither"):
        MemoryConfig.load({"server": {"keys": [{"id": "x", "api_key": key, "user_id": "u1", "admin": True}]}})


def test_startup_failure_is_raised(tmp_path: Path) -> None:
    cfg = make_config("sqlite", tmp_path, server={"keys": [{"id": "k", "api_key": new_key(), "user_id": "u"}]})
    cfg["store"] = {"provider": "neo4j", "uri": "bolt://127.0.0.1:1", "connect_timeout_s": 1}
    with pytest.raises(StoreUnavailableError), running(create_app(cfg)):
        pass


def test_openapi_schema_has_models_and_problems(api: Api) -> None:
    schema = httpx.get(f"{api.url}/openapi.json").json()
    components = schema["components"]["schemas"]
    for name in ("AddRequest", "AddResponse", "MemoryPage", "SearchRequest", "SearchResponse", "FactPage",
                 "EntityPage", "Problem", "CypherRequest", "DryRunRequest"):
        assert name in components, name
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    get_one = schema["paths"]["/v1/memories/{memory_id}"]["get"]
    assert get_one["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/MemoryOut")
    assert set(get_one["responses"]["404"]["content"]) == {PROBLEM}
    operations = {(m.upper(), p) for p, item in schema["paths"].items() for m in item}
    assert operations == {
        ("POST", "/v1/memories"), ("POST", "/v1/memories/batch"), ("GET", "/v1/memories"), ("DELETE", "/v1/memories"),
        ("GET", "/v1/memories/{memory_id}"), ("PATCH", "/v1/memories/{memory_id}"),
        ("DELETE", "/v1/memories/{memory_id}"), ("GET", "/v1/memories/{memory_id}/history"), ("POST", "/v1/search"),
        ("GET", "/v1/entities"), ("GET", "/v1/facts"), ("GET", "/v1/quarantine"), ("POST", "/v1/quarantine/recheck"),
        ("POST", "/v1/admin/dry-run"), ("POST", "/v1/admin/cypher"), ("POST", "/v1/admin/optimize"),
        ("POST", "/v1/admin/reset"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/v1/view/graph")}


def test_unknown_or_repeated_query_parameters_are_refused(api: Api) -> None:
    a = api("a")
    body = problem_of(a.get("/v1/memories", params={"runid": "r1"}), 422, "InvalidInputError")
    assert "unknown query parameter 'runid'" in body["detail"] and "run_id" in body["detail"]
    problem_of(a.get("/v1/memories?run_id=r1&run_id=r2"), 422, "InvalidInputError")
    problem_of(httpx.get(f"{api.url}/healthz", params={"x": "1"}), 422, "InvalidInputError")


# -- the command line -------------------------------------------------------------------------------
def _graphmem(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_cli_serve_refuses_to_start_without_a_key(tmp_path: Path) -> None:
    env = {"GRAPHMEM_HOME": str(tmp_path), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing"}
    out = _graphmem("serve", env=env)
    said = " ".join(out.stderr.split())  # rich wraps long lines
    assert out.returncode == 2 and "ConfigError" in said and "no API key is configured" in said
    assert "Traceback" not in said
    out = _graphmem("serve", "--insecure-local", "--host", "0.0.0.0", env=env)
    assert out.returncode == 2 and "binds a loopback address only" in " ".join(out.stderr.split())
    out = _graphmem("serve", "-u", "u1", env=env)
    assert out.returncode == 2 and "go with --new-key" in " ".join(out.stderr.split())
    made = _graphmem("serve", "--new-key", "maya-app", "-u", "maya", env=env)
    key, entry = made.stdout.split("\n")[:2]
    assert made.returncode == 0 and key.startswith("gm_") and len(key) > 40
    assert yaml.safe_load(entry) == [{"id": "maya-app", "sha256": digest(key), "user_id": "maya"}]
    assert "a key has at least" not in made.stderr
    bad = _graphmem("serve", "--new-key", "bad id!", "-u", "maya", env=env)
    assert bad.returncode == 2 and "ConfigError" in bad.stderr


def test_cli_serve_runs_until_terminated(tmp_path: Path) -> None:
    key, port = new_key(), _free_port()
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"keys": [{"id": "cli", "sha256": digest(key), "user_id": "u1"}]}), encoding="utf-8")
    config = tmp_path / "graphmem.yaml"
    config.write_text(yaml.safe_dump(make_config("sqlite", tmp_path)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--config", str(config), "--keys-file",
                             str(keys), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        headers = {"Authorization": f"Bearer {key}"}
        r = httpx.post(f"{url}/v1/memories", headers=headers, json={"messages": "from the CLI server", "infer": False})
        assert r.status_code == 200 and r.headers["x-request-id"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGTERM), err  # uvicorn re-raises the signal once it has shut down
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]  # every line is JSON
    assert "Application shutdown complete." in [x.get("message") for x in lines]
    requests = [x for x in lines if x.get("event") == "request" and x["path"] == "/v1/memories"]
    assert [(x["method"], x["status"], x["key_id"]) for x in requests] == [("POST", 200, "cli")]
    assert key not in err and "from the CLI server" not in err
    with Memory(MemoryConfig.from_file(config)) as m:  # closed cleanly: the memory is there
        assert [r["memory"] for r in m.get_all(user_id="u1")["results"]] == ["from the CLI server"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_speaker_names_who_i_is(api: Api) -> None:
    """``speaker`` on a string add: "I live in Oslo" is Kari's fact; without it, the scope's user's."""
    a = api("a")
    out = add(a, "I live in Oslo.", infer=True, speaker="Kari")
    assert [(r["source"], r["relation"], r["target"]) for r in out["relations"]["added"]] == \
        [("Kari", "livesIn", "Oslo")]
    out = add(a, "I work at Statnett.", infer=True)
    assert [r["source"] for r in out["relations"]["added"]] == [api.users["a"]]
    bad = a.post("/v1/memories", json={"messages": "I live in Oslo.", "speaker": "Ka\u0007ri"})
    assert "speaker holds a control character" in problem_of(bad, 422, "InvalidInputError")["detail"]
