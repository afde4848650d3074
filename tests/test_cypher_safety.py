"""Analyst Cypher is safe by default (issue 14): it reads the graph and nothing else.

Every refusal runs against the real Neo4j: a READ transaction alone let ``LOAD CSV`` read the host's
files and fetch URLs, ``TERMINATE TRANSACTIONS`` kill other sessions' work and procedures such as
``db.stats.clear`` change server state. The last test starts a second bundled launcher of its own
to stop it in the middle of a write.
"""

from __future__ import annotations

import http.server
import math
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem import InvalidInputError, Memory, MemoryConfig, ReadOnlyError, StoreError, StoreUnavailableError
from graphmem.embedding import HashingEmbedder
from graphmem.errors import CypherRefusedError, QueryTimeoutError, RowLimitError
from graphmem.stores.neo4j import analyst

from .conftest import IN_CI, NEO4J_PASSWORD, make_config

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "tools" / "neo4j" / "neo4j.sh"


def open_memory(tmp_path: Path, **store: Any) -> Memory:
    cfg = make_config("neo4j", tmp_path)
    return Memory(MemoryConfig.load({**cfg, "store": {**cfg["store"], **store}}), embedder=HashingEmbedder(384))


@pytest.fixture
def m(neo4j_available: bool, tmp_path: Path) -> Iterator[Memory]:
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    mem = open_memory(tmp_path)
    yield mem
    mem.close()


# ------------------------------------------------------------------------------ LOAD CSV


@pytest.mark.neo4j
def test_load_csv_of_a_server_file_is_refused(m: Memory) -> None:
    for query in [
        "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r",
        "load csv with headers from 'file:///etc/passwd' AS r RETURN r",
        "MATCH (n) WITH n LIMIT 1 CALL (n) { LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r } RETURN r",
        # subquery expressions inside expressions are nested plans, not operators: found in the tokens
        "RETURN [x IN range(1, 1) | COLLECT { LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r[0] AS c }] AS y",
        "RETURN CASE WHEN true THEN COLLECT { LOAD /* a comment */ CSV FROM 'file:///etc/passwd' AS r "
        "RETURN r } END AS y",
        "RETURN [x IN [1] | COLLECT { LOAD\u00a0CSV FROM 'file:///etc/passwd' AS r RETURN r }] AS y",
    ]:
        with pytest.raises(CypherRefusedError, match="LOAD CSV"):
            m.cypher(query)


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b"a,b\n1,2\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.neo4j
def test_load_csv_of_a_url_is_refused_before_any_request(m: Memory) -> None:
    """No server-side request forgery: the query is refused from its plan, so nothing is fetched."""
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/data.csv"
        for query in [f"LOAD CSV FROM '{url}' AS r RETURN r", "LOAD CSV FROM $url AS r RETURN count(r) AS n",
                      f"RETURN COUNT {{ LOAD CSV FROM '{url}' AS r RETURN r }} AS n"]:
            with pytest.raises(CypherRefusedError, match="LOAD CSV"):
                m.cypher(query, {"url": url})
    finally:
        server.shutdown()
        server.server_close()
    assert seen == []


# ------------------------------------------------------------------ administration commands


@pytest.mark.neo4j
def test_transaction_and_administration_commands_are_refused(m: Memory) -> None:
    refused = {
        "SHOW TRANSACTIONS": "SHOW TRANSACTIONS",
        "SHOW TRANSACTIONS YIELD * RETURN *": "SHOW TRANSACTIONS",
        "TERMINATE TRANSACTIONS 'neo4j-transaction-1'": "TERMINATE TRANSACTIONS",
        "SHOW SETTINGS": "SHOW SETTINGS",
        "SHOW SETTINGS YIELD name, value RETURN name, value": "SHOW SETTINGS",
        "SHOW DATABASES": "'system'",
        "SHOW USERS": "'system'",
        "SHOW CURRENT USER": "'system'",
        "ALTER USER neo4j SET PASSWORD 'not-the-password'": "'system'",
        "USE system CALL dbms.components()": "'system'",
        "CALL () { MATCH (n) RETURN n } IN TRANSACTIONS RETURN 1 AS one": "IN TRANSACTIONS",
    }
    for query, named in refused.items():
        with pytest.raises(CypherRefusedError, match=named):
            m.cypher(query)


@pytest.mark.neo4j
def test_terminate_cannot_kill_another_sessions_transaction(m: Memory) -> None:
    driver = m.store._driver  # type: ignore[attr-defined]
    with driver.session() as other, other.begin_transaction(metadata={"test": "victim"}) as tx:
        tx.run("RETURN 1").consume()
        rows, _, _ = driver.execute_query(
            "SHOW TRANSACTIONS YIELD transactionId, metaData WHERE metaData.test = 'victim' RETURN transactionId")
        victim = rows[0]["transactionId"]
        with pytest.raises(CypherRefusedError, match="TERMINATE TRANSACTIONS"):
            m.cypher(f"TERMINATE TRANSACTIONS '{victim}'")
        assert tx.run("RETURN 2 AS two").single()["two"] == 2  # still alive
        tx.commit()


# ---------------------------------------------------------------------------------- procedures


@pytest.mark.neo4j
def test_procedures_outside_the_allow_list_are_refused(m: Memory) -> None:
    for query, name in [
        ("CALL db.stats.clear('QUERIES')", "db.stats.clear"),
        ("CALL db.prepareForReplanning()", "db.prepareForReplanning"),
        ("CALL db.clearQueryCaches()", "db.clearQueryCaches"),
        ("CALL dbms.components()", "dbms.components"),
        ("CALL dbms.listConfig() YIELD name RETURN name", "dbms.listConfig"),
        ("CALL db.createLabel('Injected')", "db.createLabel"),
        ("RETURN COUNT { CALL db.stats.clear('QUERIES') YIELD section RETURN section } AS c", "db.stats.clear"),
        ("RETURN [x IN range(1, 2) WHERE COUNT { CALL db.prepareForReplanning() } > 0] AS y",
         "db.prepareForReplanning"),
    ]:
        with pytest.raises(CypherRefusedError, match=name.replace(".", r"\.")):
            m.cypher(query)


@pytest.mark.neo4j
def test_allowed_procedures_commands_and_builtin_functions_run(m: Memory, uid: str) -> None:
    m.add("the allow-list lets analysts read the schema", infer=False, user_id=uid)
    vector = [float(v) for v in m.embedder.embed_one("allow-list schema")]
    for query in [
        "CALL db.labels() YIELD label RETURN collect(label) AS labels",
        "CALL db.labels",
        "CALL db.relationshipTypes() YIELD relationshipType RETURN count(*) AS n",
        "CALL db.propertyKeys() YIELD propertyKey RETURN count(*) AS n",
        "CALL db.schema.visualization() YIELD nodes RETURN size(nodes) AS n",
        "CALL db.schema.nodeTypeProperties() YIELD nodeType RETURN count(*) AS n",
        "CALL db.schema.relTypeProperties() YIELD relType RETURN count(*) AS n",
        "CALL db.index.fulltext.listAvailableAnalyzers() YIELD analyzer RETURN count(*) AS n",
        "CALL db.index.fulltext.queryNodes('memory_text', 'schema') YIELD node WHERE node.user_id = $u "
        "RETURN node.memory AS text",
        "CALL db.index.vector.queryNodes('memory_embedding', 5, $v) YIELD node, score RETURN count(*) AS n",
        "SHOW INDEXES YIELD name RETURN count(name) AS n",
        "SHOW CONSTRAINTS",
        "SHOW PROCEDURES YIELD name RETURN count(*) AS n",
        "SHOW FUNCTIONS YIELD name RETURN count(*) AS n",
        "RETURN date.truncate('day', date()) AS d, Date.Truncate('month', date()) AS m, "
        "vector.similarity.cosine([1.0, 2.0], [1.0, 2.0]) AS s, toUpper('x') AS u",
    ]:
        assert m.cypher(query, {"u": uid, "v": vector}), query
    labels = m.cypher("CALL db.labels() YIELD label RETURN collect(label) AS labels")[0]["labels"]
    assert "Memory" in labels
    rows = m.cypher("CALL db.index.fulltext.queryNodes('memory_text', 'schema') YIELD node WHERE node.user_id = $u "
                    "RETURN node.memory AS text", {"u": uid})
    assert rows == [{"text": "the allow-list lets analysts read the schema"}]


@pytest.mark.neo4j
def test_keywords_inside_literals_and_comments_do_not_count(m: Memory) -> None:
    rows = m.cypher(
        "RETURN 'LOAD CSV FROM \"file:///etc/passwd\" AS r' AS a, \"TERMINATE TRANSACTIONS 'x'\" AS b, "
        "'CALL db.stats.clear(\\'QUERIES\\')' AS c, 'apoc.load.json(1)' AS d // LOAD CSV; CALL db.stats.clear()\n"
        "/* SHOW TRANSACTIONS */"
    )
    assert rows == [{"a": "LOAD CSV FROM \"file:///etc/passwd\" AS r", "b": "TERMINATE TRANSACTIONS 'x'",
                     "c": "CALL db.stats.clear('QUERIES')", "d": "apoc.load.json(1)"}]
    assert m.cypher("WITH 1 AS load, 2 AS call RETURN load AS csv, call") == [{"csv": 1, "call": 2}]
    assert m.cypher("RETURN $q AS q", {"q": "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r"})[0]["q"].startswith(
        "LOAD CSV")


@pytest.mark.neo4j
def test_writes_are_still_refused(m: Memory) -> None:
    for query in ["CREATE (:Memory {id: 'x'})", "MERGE (n:Injected) RETURN n",
                  "CREATE INDEX injected FOR (n:X) ON (n.y)"]:
        with pytest.raises(ReadOnlyError):
            m.cypher(query)


# ------------------------------------------------------------------------- timeout and row cap


@pytest.mark.neo4j
def test_a_slow_query_is_stopped_by_the_server(neo4j_available: bool, tmp_path: Path) -> None:
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    with open_memory(tmp_path, cypher_timeout_s=1) as mem:
        with pytest.raises(QueryTimeoutError, match="cypher_timeout_s"):
            # 10^12 rows: no machine counts them within the 1 s limit (10^8 once finished in time on CI)
            mem.cypher("UNWIND range(1, 1000000) AS x UNWIND range(1, 1000000) AS y RETURN count(*) AS n")
        assert mem.cypher("RETURN 1 AS one") == [{"one": 1}]  # the session is usable afterwards


@pytest.mark.neo4j
def test_more_rows_than_the_cap_raise(neo4j_available: bool, tmp_path: Path) -> None:
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    with open_memory(tmp_path, cypher_max_rows=5) as mem:
        assert [r["x"] for r in mem.cypher("UNWIND range(1, 5) AS x RETURN x")] == [1, 2, 3, 4, 5]
        with pytest.raises(RowLimitError, match="LIMIT"):
            mem.cypher("UNWIND range(1, 6) AS x RETURN x")
        with pytest.raises(RowLimitError, match="cypher_max_rows = 5"):
            mem.cypher("UNWIND range(1, 100000000) AS x RETURN x")  # stops reading; no 14 s pull
        assert len(mem.cypher("UNWIND range(1, 100000000) AS x RETURN x LIMIT 5")) == 5


def test_cypher_limits_are_validated_config() -> None:
    from graphmem.errors import ConfigError

    store = MemoryConfig.load({}).store
    assert store.cypher_timeout_s == 10 and store.cypher_max_rows == 10_000
    for bad in ({"cypher_timeout_s": 0}, {"cypher_max_rows": 0}):
        with pytest.raises(ConfigError):
            MemoryConfig.load({"store": bad})


# --------------------------------------------------------------------------- input contract


@pytest.mark.neo4j
def test_params_and_queries_are_checked_before_the_driver(m: Memory) -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(3000):
        node.append([])
        node = node[0]
    bad_params: list[Any] = [
        {"x": object()}, {"x": 2**70}, {"x": -(2**63) - 1}, {"x": math.nan}, {"x": math.inf}, {"x": "\ud800"},
        {"x": {1: "a"}}, {"x": {"k": {"\udc00": 1}}}, {"x": [1, object()]}, {"x": deep}, {"x": {1, 2}},
        {1: "a"}, {"": 1}, ["x"], "x",
    ]
    for params in bad_params:
        with pytest.raises(InvalidInputError) as err:
            m.cypher("RETURN $x AS x", params)
        assert len(str(err.value)) < 400
    for query in [None, 5, "", "   ", "RETURN '\ud800' AS x", b"RETURN 1"]:
        with pytest.raises(InvalidInputError):
            m.cypher(query, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="refused the analyst query"):
        m.cypher("MATCH (n RETURN n")
    with pytest.raises(InvalidInputError) as err:
        m.cypher("RETURN " + "x" * 100_000)
    assert len(str(err.value)) < 500
    good = {"none": None, "flag": True, "n": 2**63 - 1, "f": 1.5, "s": "ünïcode", "b": b"\x00\x01",
            "list": [1, [2, 3]], "map": {"k": {"j": [1]}}, "when": datetime(2024, 5, 1, 12, tzinfo=UTC)}
    row = m.cypher("RETURN $none AS none, $flag AS flag, $n AS n, $f AS f, $s AS s, $list AS list, "
                   "$map AS map, $when AS when, size($b) AS b", good)[0]
    assert row == {"none": None, "flag": True, "n": 2**63 - 1, "f": 1.5, "s": "ünïcode", "list": [1, [2, 3]],
                   "map": {"k": {"j": [1]}}, "when": "2024-05-01T12:00:00.000000000+00:00", "b": 2}


# ------------------------------------------------------------------ the statement scanner (no server)


def test_statement_scanner_reads_tokens_not_text() -> None:
    assert analyst.check_statement("RETURN apoc.text.join(['a'], ',') AS s, date.truncate('day', d)") == {
        "apoc.text.join", "date.truncate"}
    assert analyst.check_statement("RETURN `apoc`.`text`.join(x), n.prop, n{.a, .b}, $p.x, 'x.y(' // a.b(\n") == {
        "apoc.text.join"}
    assert analyst.check_statement("RETURN `apoc.text.join`(x), `vector.similarity.cosine`(a, b)") == {
        "apoc.text.join", "vector.similarity.cosine"}
    assert analyst.check_statement("CALL db.labels() YIELD label RETURN label") == set()
    assert analyst.check_statement("WITH 1 AS call MATCH (n) RETURN n.load, call") == set()
    with pytest.raises(CypherRefusedError, match=r"apoc\.load\.json"):
        analyst.check_statement("RETURN 1 AS x UNION CALL apoc.load.json('http://x') YIELD value RETURN value AS x")
    with pytest.raises(CypherRefusedError, match=r"apoc\.cypher\.run"):
        analyst.check_statement("CALL `apoc`.cypher.run('LOAD CSV FROM $u AS r RETURN r', {})")
    with pytest.raises(CypherRefusedError, match="LOAD CSV"):
        analyst.check_statement("RETURN [x IN [1] | COLLECT { load\n// c\ncsv FROM 'f' AS r RETURN r }]")
    assert analyst.check_statement("RETURN `LOAD` + `CSV`, 'LOAD CSV', \"LOAD CSV\"") == set()
    # user-defined functions (none is installed on the test server) are refused unless built in
    analyst.check_functions({"date.truncate", "Vector.Similarity.Cosine"},
                            {"date.truncate", "vector.similarity.cosine"})
    with pytest.raises(CypherRefusedError, match=r"apoc\.text\.join"):
        analyst.check_functions({"apoc.text.join", "date.truncate"}, {"date.truncate"})


def test_plan_checker_walks_every_operator() -> None:
    def op(kind: str, details: str = "", *children: dict[str, Any]) -> dict[str, Any]:
        return {"operatorType": kind, "args": {"Details": details}, "children": list(children)}

    analyst.check_plan(op("ProduceResults@neo4j", "x", op("ProcedureCall@neo4j", "db.labels() :: (label :: STRING)"),
                          op("ShowIndexes@neo4j")), "neo4j")
    nested = op("ProduceResults@neo4j", "", op("Apply@neo4j", "", op("Argument@neo4j"),
                                               op("ProcedureCall@neo4j", "apoc.load.json($a) :: (value :: MAP)")))
    with pytest.raises(CypherRefusedError, match=r"apoc\.load\.json"):
        analyst.check_plan(nested, "neo4j")
    for kind in ["ShowTransactions", "TerminateTransactions", "ShowSettings", "ShowServers", "SomethingCommand"]:
        with pytest.raises(CypherRefusedError, match="administration command"):
            analyst.check_plan(op("ProduceResults@neo4j", "", op(f"{kind}@neo4j")), "neo4j")
    with pytest.raises(CypherRefusedError, match="'system'"):
        analyst.check_plan(op("db.labels@system"), "neo4j")
    with pytest.raises(CypherRefusedError, match="no plan"):
        analyst.check_plan(None, "neo4j")


# ------------------------------------------------------------- a clean shutdown in the middle of a write


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_database_unavailable_maps_to_store_unavailable() -> None:
    """What a clean shutdown answers a running transaction (seen against a real server in the test
    below) is ``StoreUnavailableError``; an interrupted commit stays a ``StoreError`` whose outcome
    is unknown (``IncompleteCommit`` is a ``ServiceUnavailable``, so it must be caught first)."""
    from neo4j.exceptions import IncompleteCommit, Neo4jError

    from graphmem.config import StoreConfig
    from graphmem.stores.neo4j import Neo4jStore

    store = Neo4jStore(StoreConfig(provider="neo4j"))
    shutdown = Neo4jError._hydrate_neo4j(code="Neo.TransientError.General.DatabaseUnavailable",
                                         message="The database is not currently available to serve your request")
    unavailable = pytest.raises(StoreUnavailableError, match=r"stopped serving the database.*nothing was written")
    with unavailable, store._errors("add", write=True):
        raise shutdown
    with pytest.raises(StoreError, match="unknown") as err, store._errors("add", write=True):
        raise IncompleteCommit("connection lost during commit")
    assert not isinstance(err.value, StoreUnavailableError)


@pytest.mark.neo4j
def test_the_test_server_refuses_file_urls(neo4j_available: bool, tmp_path: Path) -> None:
    """The bundled launcher and docker-compose.yml turn ``LOAD CSV`` of ``file:///`` URLs off for
    every client, not only for graphmem's analyst Cypher."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    with open_memory(tmp_path) as mem:
        driver = mem.store._driver  # type: ignore[attr-defined]
        rows, _, _ = driver.execute_query("SHOW SETTINGS YIELD name, value WHERE name = "
                                          "'dbms.security.allow_csv_import_from_file_urls' RETURN value")
        assert rows[0]["value"] == "false"


@pytest.mark.neo4j
@pytest.mark.skipif(not (IN_CI or os.environ.get("GRAPHMEM_SHUTDOWN_TEST")),
                    reason="starts and stops a Neo4j of its own (30-70 s): runs under CI=true or "
                           "GRAPHMEM_SHUTDOWN_TEST=1")
@pytest.mark.slow
def test_clean_shutdown_mid_write_is_store_unavailable(neo4j_available: bool, tmp_path: Path) -> None:
    """A second bundled launcher of this test's own, stopped (SIGTERM: a clean shutdown) while a
    long write and an add run: Neo4j answers both transactions with ``DatabaseUnavailable``, which
    must be a ``StoreUnavailableError`` like an unreachable server, not a generic ``StoreError``.
    The launcher's file-URL setting is checked on the same server."""
    if not neo4j_available:
        pytest.skip("no Neo4j (run `make test`, which starts one)")
    missing = [tool for tool in ("java", "bash") if shutil.which(tool) is None]
    if missing or not (ROOT / "tools" / "neo4j" / "target" / "launcher.jar").exists():
        reason = f"the bundled launcher cannot run here (missing: {missing or 'tools/neo4j/target/launcher.jar'})"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    port = _free_port()
    env = {**os.environ, "GRAPHMEM_NEO4J_HOME": str(tmp_path / "neo4j"), "GRAPHMEM_NEO4J_PORT": str(port),
           "GRAPHMEM_NEO4J_HEAP": "1g", "GRAPHMEM_NEO4J_PAGECACHE": "64m", "NEO4J_PASSWORD": NEO4J_PASSWORD}

    def launcher(*args: str) -> None:
        subprocess.run(["bash", str(LAUNCHER), *args], env=env, check=True, timeout=300, capture_output=True)

    launcher("start")
    try:
        launcher("wait", "120")
        config = make_config("neo4j", tmp_path)
        config["store"] = {**config["store"], "uri": f"bolt://127.0.0.1:{port}", "max_transaction_retry_s": 0}
        mem = Memory(MemoryConfig.load(config), embedder=HashingEmbedder(384))
        driver = mem.store._driver  # type: ignore[attr-defined]
        with pytest.raises(Exception, match="allow_csv_import_from_file_urls"):
            driver.execute_query("LOAD CSV FROM 'file:///neo4j.pid' AS r RETURN r")
        errors: list[BaseException] = []
        running = threading.Event()

        def long_write() -> None:
            def work(tx: Any) -> None:
                running.set()
                tx.run("UNWIND range(1, 2000000000) AS i WITH i WHERE i < 0 CREATE (:Never {i: i})").consume()

            try:
                mem.store._write("a long write", work)  # type: ignore[attr-defined]
            except BaseException as exc:
                errors.append(exc)

        def adds() -> None:
            for i in range(10_000):
                try:
                    mem.add(f"memory number {i} written while the server stops", infer=False, user_id="shutdown")
                except BaseException as exc:
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=long_write), threading.Thread(target=adds)]
        for t in threads:
            t.start()
        assert running.wait(30)
        time.sleep(0.5)
        launcher("stop")
        for t in threads:
            t.join(60)
        mem.close()
    finally:
        launcher("stop")
    assert len(errors) == 2
    for exc in errors:
        # a commit whose answer was lost is honestly "unknown", the one StoreError allowed here
        incomplete = type(exc.__cause__).__name__ == "IncompleteCommit"
        assert isinstance(exc, StoreUnavailableError) or (isinstance(exc, StoreError) and incomplete), repr(exc)
