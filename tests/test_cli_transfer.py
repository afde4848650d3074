"""`graphmem cypher`, `export`, `import` and `migrate` on the command line: the same operations as
Memory.cypher / export / import_ / migrate, run in-process through Typer's runner against real
stores (the shared Neo4j server for Cypher)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import Memory, MemoryConfig
from graphmem.cli import app
from graphmem.embedding import HashingEmbedder

from .conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER, neo4j_config


def run(home: Path, *args: str, neo4j: bool = False, stdin: str | None = None) -> tuple[int, str, str]:
    env = {"GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing", "COLUMNS": "250"}
    if neo4j:
        env |= {"GRAPHMEM_STORE__PROVIDER": "neo4j", "GRAPHMEM_STORE__URI": NEO4J_URI,
                "GRAPHMEM_STORE__USER": NEO4J_USER, "GRAPHMEM_STORE__PASSWORD": NEO4J_PASSWORD}
    result = CliRunner().invoke(app, list(args), env=env, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def neo4j_memories(tmp_path: Path, uid: str, neo4j_available: bool) -> Iterator[Memory]:
    m = Memory(MemoryConfig.load({"home": str(tmp_path), "store": neo4j_config(), "embedder": {"provider": "hashing"}}),
               embedder=HashingEmbedder(384))
    m.add([{"role": "user", "content": "I like green tea"}, {"role": "user", "content": "I play chess, 3 times"}],
          user_id=uid, infer=False)
    yield m
    m.delete_all(user_id=uid)
    m.close()


QUERY = "MATCH (m:Memory) WHERE m.user_id = $uid RETURN m.memory AS memory, size(m.memory) AS n ORDER BY memory"


@pytest.mark.neo4j
def test_cypher_prints_a_table_csv_and_json(tmp_path: Path, uid: str, neo4j_memories: object) -> None:
    code, out, err = run(tmp_path, "cypher", QUERY, "--param", f'uid="{uid}"', "--format", "json", neo4j=True)
    assert code == 0, err
    assert json.loads(out) == [{"memory": "I like green tea", "n": 16}, {"memory": "I play chess, 3 times", "n": 21}]
    code, out, err = run(tmp_path, "cypher", QUERY, "-p", f'uid="{uid}"', "-f", "csv", neo4j=True)
    assert code == 0, err
    assert list(csv.reader(io.StringIO(out))) == [["memory", "n"], ["I like green tea", "16"],
                                                  ["I play chess, 3 times", "21"]]  # the comma is quoted
    code, out, err = run(tmp_path, "cypher", "-", "-p", f'uid="{uid}"', neo4j=True, stdin=QUERY)
    assert code == 0 and "2 row(s)" in out and "green tea" in out


@pytest.mark.neo4j
def test_cypher_parameters_are_typed_json(tmp_path: Path, uid: str, neo4j_memories: object) -> None:
    code, out, _ = run(tmp_path, "cypher", "RETURN $n + 1 AS a, $flag AS b, $xs AS c", "-p", "n=41",
                       "-p", "flag=true", "-p", "xs=[1, \"x\"]", "-f", "json", neo4j=True)
    assert code == 0 and json.loads(out) == [{"a": 42, "b": True, "c": [1, "x"]}]
    code, out, err = run(tmp_path, "cypher", "RETURN $name AS a", "-p", "name=Maya", neo4j=True)
    assert code == 2 and "InvalidInputError" in err and "is not JSON" in err and not out
    code, _, err = run(tmp_path, "cypher", "RETURN 1", "-p", "novalue", neo4j=True)
    assert code == 2 and "name=value" in err


@pytest.mark.neo4j
def test_cypher_refuses_writes(tmp_path: Path, uid: str, neo4j_memories: object) -> None:
    code, out, err = run(tmp_path, "cypher", "MATCH (m:Memory) WHERE m.user_id = $uid DETACH DELETE m",
                         "-p", f'uid="{uid}"', neo4j=True)
    assert code == 2 and "ReadOnlyError" in err and not out
    code, out, _ = run(tmp_path, "cypher", QUERY, "-p", f'uid="{uid}"', "-f", "json", neo4j=True)
    assert len(json.loads(out)) == 2  # nothing was deleted


def test_cypher_on_sqlite_says_what_to_use(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "cypher", "RETURN 1")
    assert code == 2 and "UnsupportedError" in err and "neo4j" in err and not out
    code, _, err = run(tmp_path, "cypher", "RETURN 1", "-f", "xml")
    assert code == 2 and "table, csv or json" in err


def test_export_import_and_migrate_commands(tmp_path: Path, uid: str) -> None:
    src = tmp_path / "src"
    assert run(src, "add", "I like green tea", "-u", uid, "--no-infer")[0] == 0
    code, out, err = run(src, "export", str(tmp_path / "d.jsonl"), "-u", uid, "--json")
    assert code == 0, err
    assert json.loads(out)["counts"]["memory"] == 1
    code, dump, err = run(src, "export", "-", "-u", uid)  # the dump on stdout, the summary on stderr
    assert code == 0 and dump.startswith('{"graphmem_dump": 1') and "1 memory" in err
    code, out, err = run(tmp_path / "dst", "import", "-", stdin=dump)
    assert code == 0 and "1 memory" in out, err
    code, _, err = run(tmp_path / "dst", "import", str(tmp_path / "d.jsonl"))
    assert code == 2 and "DumpConflictError" in err
    assert run(src, "add", "Maya Patel lives in Porto.", "-u", uid)[0] == 0  # the rule extractor's facts
    code, out, _ = run(src, "export", str(tmp_path / "g.ttl"), "-u", uid, "--format", "turtle", "--json")
    assert code == 0 and json.loads(out)["format"] == "turtle" and json.loads(out)["facts"] >= 1
    assert "Porto" in (tmp_path / "g.ttl").read_text()
    code, _, err = run(src, "export", str(tmp_path / "x"), "--format", "turtle")
    assert code == 2 and "ScopeError" in err  # a scope, or --all
    target = f"sqlite://{tmp_path / 'moved.db'}"
    code, out, err = run(src, "migrate", "--to", target, "--no-progress", "--json")
    assert code == 0, err
    assert json.loads(out)["counts"]["memory"] >= 2
    code, _, err = run(src, "migrate", "--to", target, "--no-progress")
    assert code == 2 and "already holds scope" in err
