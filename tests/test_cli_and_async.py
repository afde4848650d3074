"""The CLI and AsyncMemory do the same operations as Memory.

The commands run in-process through Typer's test runner; one test runs the installed ``graphmem``
program (and ``python -m graphmem``) as a real subprocess, for what only a process shows: the entry
point, exit codes and the split of stdout and stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import AsyncMemory, Memory, NotFoundError
from graphmem.cli import app

PROGRAM = Path(sys.executable).with_name("graphmem")  # the console script `pip install` puts beside python


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(tmp_path: Path, *args: str, check: bool = True, embedder: str = "hashing") -> Ran:
    env = {"GRAPHMEM_HOME": str(tmp_path), "GRAPHMEM_EMBEDDER__PROVIDER": embedder, "COLUMNS": "250"}
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    ran = Ran(result.exit_code, result.stdout, result.stderr)
    if check:
        assert ran.returncode == 0, ran.stderr
    return ran


@pytest.mark.slow
def test_the_installed_program_runs(tmp_path: Path) -> None:
    assert PROGRAM.is_file(), f"{PROGRAM} is missing: install the package (`make venv`)"
    env = {**os.environ, "GRAPHMEM_HOME": str(tmp_path), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)

    added = run(str(PROGRAM), "add", "I play the cello on Sundays", "-u", "ann", "--no-infer", "--json")
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["results"][0]["id"]
    denied = run(str(PROGRAM), "get", mid, "-u", "bob")  # a typed error: exit 2, its name on stderr only
    assert denied.returncode == 2 and "NotFoundError" in denied.stderr and not denied.stdout
    refused = run(sys.executable, "-m", "graphmem", "reset")  # the module entry point; reset needs --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    said = run(str(PROGRAM), "add", "I live in Oslo.", "-u", "ann", "--speaker", "Kari", "--json")
    assert said.returncode == 0, said.stderr  # --speaker: whom "I" is
    assert [(r["source"], r["target"]) for r in json.loads(said.stdout)["relations"]["added"]] == [("Kari", "Oslo")]


def test_cli_mirrors_the_api(tmp_path: Path) -> None:
    shown = cli(tmp_path, "add", "I sing in a choir", "-u", "cat", "--no-infer").stdout
    assert "ADD" in shown and "I sing in a choir" in shown  # a table, as the other commands print
    added = json.loads(cli(tmp_path, "add", "I play the cello on Sundays", "-u", "ann", "--no-infer", "--json",
                           "--metadata", '{"k": 1}').stdout)
    mid = added["results"][0]["id"]
    found = json.loads(cli(tmp_path, "search", "cello", "-u", "ann", "--json").stdout)
    assert found["results"][0]["id"] == mid
    then = json.loads(cli(tmp_path, "search", "cello in May 2001", "-u", "ann", "--now", "2001-06-01",
                          "--explain").stdout)  # said long after May 2001: lowered
    assert then["results"][0]["score_details"]["outside_asked_time"] == 0.5
    listed = json.loads(cli(tmp_path, "list", "-u", "ann", "--json", "--filters", '{"k": {"gte": 1}}').stdout)
    assert [r["id"] for r in listed["results"]] == [mid]
    cli(tmp_path, "update", mid[:8], "I play the viola on Sundays", "-u", "ann")  # the short id a table shows
    assert json.loads(cli(tmp_path, "get", mid[:8], "-u", "ann", "--json").stdout)["memory"] == \
        "I play the viola on Sundays"
    assert json.loads(cli(tmp_path, "get", mid, "-u", "ann", "--json").stdout)["id"] == mid
    assert "NotFoundError" in cli(tmp_path, "get", mid[:8], "-u", "cat", check=False).stderr  # not cat's
    events = json.loads(cli(tmp_path, "history", mid, "-u", "ann", "--json").stdout)
    assert [e["event"] for e in events] == ["ADD", "UPDATE"]
    denied = cli(tmp_path, "get", mid, "-u", "bob", check=False)
    assert denied.returncode == 2 and "NotFoundError" in denied.stderr
    noscope = cli(tmp_path, "search", "cello", check=False)
    assert noscope.returncode == 2 and "ScopeError" in noscope.stderr
    optimized = json.loads(cli(tmp_path, "optimize", "--json").stdout)
    assert optimized["backend"] == "sqlite" and "memories_fts" in optimized["fulltext_merged"]
    assert json.loads(cli(tmp_path, "search", "viola", "-u", "ann", "--json").stdout)["results"][0]["id"] == mid
    assert json.loads(cli(tmp_path, "delete-all", "-u", "ann", "--json").stdout)["deleted"] == 1
    assert cli(tmp_path, "reset", check=False).returncode == 2  # needs --yes


def test_cli_add_many_reads_json_lines(tmp_path: Path) -> None:
    lines = tmp_path / "history.jsonl"
    lines.write_text('{"messages": "I live in Oslo", "timestamp": "2024-01-01"}\n\n"I play chess"\n'
                     '{"messages": [{"role": "user", "content": "I play chess"}], "user_id": "eve"}\n',
                     encoding="utf-8")
    out = json.loads(cli(tmp_path, "add-many", str(lines), "-u", "dan", "--no-infer", "--json").stdout)
    assert [it["results"][0]["event"] for it in out["items"]] == ["ADD", "ADD", "ADD"]  # eve's is her own
    assert sorted(r["memory"] for r in json.loads(cli(tmp_path, "list", "-u", "dan", "--json").stdout)["results"]) == \
        ["I live in Oslo", "I play chess"]
    assert "item" in cli(tmp_path, "add-many", str(lines), "-u", "dan", "--no-infer").stdout  # a table
    lines.write_text('"fine"\n{"messages": "x", "timestamp": "never"}\n', encoding="utf-8")
    refused = cli(tmp_path, "add-many", str(lines), "-u", "fay", check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("InvalidInputError: items[1]")
    assert json.loads(cli(tmp_path, "list", "-u", "fay", "--json").stdout)["results"] == []
    missing = cli(tmp_path, "add-many", str(tmp_path / "nope.jsonl"), "-u", "fay", check=False)
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    from graphmem import __version__

    assert cli(tmp_path, "--version").stdout.strip() == f"graphmem {__version__}"
    bad_json = cli(tmp_path, "list", "-u", "ann", "--filters", "{nope", check=False)
    assert bad_json.returncode == 2 and bad_json.stderr.startswith("InvalidInputError: --filters is not JSON")
    config = tmp_path / "bad.yaml"
    config.write_text("store: {provider: nowhere}\n", encoding="utf-8")
    bad_config = cli(tmp_path, "list", "-u", "ann", "--config", str(config), check=False)
    assert bad_config.returncode == 2 and bad_config.stderr.startswith("ConfigError")
    assert "Traceback" not in bad_config.stderr + bad_json.stderr


def test_cli_reads_the_graph(tmp_path: Path) -> None:
    with Memory({"home": str(tmp_path), "embedder": {"provider": "hashing"}}) as m:
        m.add("Ann works for Acme; Acme employs Ben.", user_id="ann", infer=False, triples=[
            {"source": "Ann", "relation": "worksFor", "target": "Acme", "source_type": "Person"},
            {"source": "Acme", "relation": "employs", "target": "Ben", "target_type": "Person"}])
    page = json.loads(cli(tmp_path, "entities", "-u", "ann", "--limit", "2", "--json").stdout)
    rest = json.loads(cli(tmp_path, "entities", "-u", "ann", "--cursor", page["next_cursor"], "--json").stdout)
    assert sorted(e["name"] for e in page["results"] + rest["results"]) == ["Acme", "Ann", "Ben"]
    assert json.loads(cli(tmp_path, "entities", "-u", "ann", "--type", "Person", "--json").stdout)["results"][0][
        "name"] in {"Ann", "Ben"}
    table = cli(tmp_path, "facts", "-u", "ann", "--relation", "works for").stdout
    assert "Ben" in table and "(inverse)" in table and "Ann" in table
    about = json.loads(cli(tmp_path, "facts", "-u", "ann", "--entity", "ben", "--json").stdout)
    assert [(f["source"]["name"], f["relation_name"]) for f in about["results"]] == [("Acme", "gm:employs")]
    missing = cli(tmp_path, "facts", "-u", "bob", "--entity", "Ann", check=False)
    assert missing.returncode == 2 and "NotFoundError" in missing.stderr


def test_demo_runs_offline(tmp_path: Path) -> None:
    done = cli(tmp_path, "demo", "--home", str(tmp_path / "demo"), embedder="auto")  # what a user gets
    out = " ".join(done.stdout.split())  # the tables wrap long cells
    assert "stored memories" in out and "search:" in out and "peanuts" in out
    # the guard at work: the old residence closed by the new one, and a refused fact with its SHACL reason
    assert "Maya gm:livesIn Lisbon │ superseded: valid_to" in out
    assert "Maya gm:livesIn Porto │ current since" in out
    assert "Northwind livesIn Lisbon │ rejected (quarantine): This relation only applies to a gm:Person" in out
    assert "PersonDomainShape" in out
    assert "HashingFallbackWarning" not in done.stderr
    # the default embedder ranks by meaning: "climbing" is not a word of the answer
    answers = out.split("search: does she go climbing?")[1]
    assert "bouldering" in answers.split("│ 0.")[1], answers


def test_async_memory(tmp_path: Path) -> None:
    async def main() -> None:
        m = AsyncMemory({"home": str(tmp_path), "embedder": {"provider": "hashing"}})
        added = await m.add("async hello world", infer=False, user_id="a")
        mid = added["results"][0]["id"]
        results = await asyncio.gather(*(m.add(f"parallel {i}", infer=False, user_id="a") for i in range(8)))
        assert all(r["results"][0]["event"] == "ADD" for r in results)
        assert (await m.search("hello", user_id="a"))["results"][0]["id"] == mid
        assert len((await m.get_all(user_id="a"))["results"]) == 9
        await m.update(mid, "async goodbye", user_id="a")
        assert (await m.get(mid, user_id="a"))["memory"] == "async goodbye"
        assert len(await m.history(mid, user_id="a")) == 2
        await m.delete(mid, user_id="a")
        with pytest.raises(NotFoundError):
            await m.get(mid, user_id="a")
        assert (await m.optimize())["backend"] == "sqlite"
        assert (await m.delete_all(user_id="a"))["deleted"] == 8
        await m.add("Ana knows Bo", infer=False, user_id="g", triples=[
            {"source": "Ana", "relation": "livesIn", "target": "Bo", "source_type": "Person", "target_type": "Person"}])
        [entry] = await m.rejected(user_id="g")
        assert (await m.recheck(user_id="g"))["still_rejected"][0]["quarantine_id"] == entry["id"]
        await m.add("Cy works for Dee", infer=False, user_id="h", triples=[
            {"source": "Cy", "relation": "worksFor", "target": "Dee", "source_type": "Person"}])
        assert [f["target"]["name"] for f in (await m.facts(user_id="h", entity="Cy"))["results"]] == ["Dee"]
        assert sorted(e["name"] for e in (await m.entities(user_id="h"))["results"]) == ["Cy", "Dee"]
        await m.close()

    asyncio.run(main())


def test_ontology_dry_run_cli(tmp_path: Path) -> None:
    from graphmem import Memory

    with Memory({"home": str(tmp_path), "embedder": {"provider": "hashing"}}) as m:
        m.add("Ana knows Bo and Cy", infer=False, user_id="ana", triples=[
            {"source": "Ana", "relation": "knows", "target": "Bo", "source_type": "Person", "target_type": "Person"},
            {"source": "Ana", "relation": "knows", "target": "Cy", "target_type": "Person"}])
    from graphmem.ontology import default_paths

    onto, shapes = default_paths()
    same = cli(tmp_path, "ontology", "dry-run", "-o", str(onto[0]), "-s", str(shapes[0]), "--json")
    assert json.loads(same.stdout)["checked"] == 2
    stricter = tmp_path / "one.shapes.ttl"
    stricter.write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix gm: <https://graphmem.dev/ontology#> .\n"
        "<urn:x:S> a sh:NodeShape ; sh:targetClass gm:Person ; sh:property [ sh:path gm:knows ; sh:maxCount 1 ] .\n")
    changed = cli(tmp_path, "ontology", "dry-run", "-o", str(onto[0]), "-s", str(stricter), check=False)
    assert changed.returncode == 1 and "2 facts would become invalid" in changed.stdout
