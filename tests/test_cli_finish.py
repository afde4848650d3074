"""The command line as a user meets it, through the installed ``graphmem`` program with stdout and
stderr piped (not a terminal): one-line errors, clean help, ``--json`` on every command, read
commands that never create a store, each warning once, short ids for deleted memories' history,
Cypher without vectors, and a demo that cleans up after itself.

Independent commands run as concurrent processes (``run_all``): each pays ~1 s of start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem.cli import app

from .conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER

PROGRAM = Path(sys.executable).with_name("graphmem")
Argv = tuple[str, ...]


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "GRAPHMEM_STORE__PROVIDER"}}
    return {**env, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBEDDER__PROVIDER": "hashing", "COLUMNS": "250",
            **extra}


def run(home: Path, *args: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROGRAM), *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=environment(home, **extra), check=False)


def run_all(home: Path, commands: list[Argv], **extra: str) -> dict[Argv, subprocess.CompletedProcess[str]]:
    """Commands that do not depend on each other, as concurrent processes."""
    env = environment(home, **extra)
    started = {argv: subprocess.Popen([str(PROGRAM), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, text=True, env=env) for argv in commands}
    done = {}
    for argv, proc in started.items():
        out, err = proc.communicate(timeout=120)
        done[argv] = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    return done


def one_error_line(ran: subprocess.CompletedProcess[str], kind: str) -> str:
    """The run failed with exit 2 and said so in exactly one line ``kind: ...`` on stderr."""
    assert ran.returncode == 2, (ran.args, ran.returncode, ran.stderr)
    assert ran.stderr.endswith("\n") and ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith(f"{kind}: "), ran.stderr
    assert not ran.stdout and "╭" not in ran.stderr and "Traceback" not in ran.stderr
    line: str = ran.stderr.rstrip("\n")
    return line


def ontology_args() -> Argv:
    from graphmem.ontology import default_paths

    onto, shapes = default_paths()
    return ("-o", str(onto[0]), "-s", str(shapes[0]))


def added_id(ran: subprocess.CompletedProcess[str]) -> str:
    assert ran.returncode == 0, ran.stderr
    mid: str = json.loads(ran.stdout)["results"][0]["id"]
    return mid


def test_errors_are_one_line_when_piped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("store: {provider: no-where}\nsearch: {top_k: -1}\n", encoding="utf-8")  # a multi-line message
    assert run(tmp_path, "add", "I sing in a choir", "-u", "maya", "--no-infer").returncode == 0
    ran = run_all(tmp_path, [("list", "--foo"), ("get",), ("list", "-u", "maya", "--limit", "many"),
                             ("search", "choir"), ("list", "-u", "maya", "--config", str(bad)), ("reset",),
                             ("list", "-u", "maya", "--filters", "{nope")])
    line = one_error_line(ran["list", "--foo"], "UsageError")
    assert line == "UsageError: No such option: --foo (see graphmem list --help)"
    assert "ID" in one_error_line(ran["get",], "UsageError")  # the missing argument, named
    assert "--limit" in one_error_line(ran["list", "-u", "maya", "--limit", "many"], "UsageError")
    assert "pass user_id" in one_error_line(ran["search", "choir"], "ScopeError")  # once longer than 80 columns
    config_line = one_error_line(ran["list", "-u", "maya", "--config", str(bad)], "ConfigError")
    assert "store.provider" in config_line and "top_k" in config_line  # every problem, on the one line
    assert "--yes" in one_error_line(ran["reset",], "UsageError")
    one_error_line(ran["list", "-u", "maya", "--filters", "{nope"], "InvalidInputError")


def test_help_shows_no_type_for_flags(tmp_path: Path) -> None:
    ran = run_all(tmp_path, [("--help",), ("add", "--help"), ("models", "pull", "--help"), ("ontology", "--help")])
    for argv, done in ran.items():
        assert done.returncode == 0 and not done.stderr, (argv, done.stderr)
        assert "<bool>" not in done.stdout, (argv, done.stdout)
    assert "--json" in ran["add", "--help"].stdout and "--no-infer" in ran["add", "--help"].stdout
    assert "<int>" in run(tmp_path, "list", "--help").stdout  # options that take a value keep their type
    runner = CliRunner()  # every other command's help, in-process: they are the same Typer objects
    for name in [*COMMANDS, *(f"ontology {c}" for c in ONTOLOGY), "models where"]:
        shown = runner.invoke(app, [*name.split(), "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0 and "<bool>" not in shown.stdout, (name, shown.stdout)


COMMANDS = ["add", "add-many", "search", "list", "entities", "facts", "get", "update", "delete", "delete-all",
            "history", "reset", "optimize", "serve", "mcp", "view", "demo", "export", "import", "migrate", "reembed",
            "cypher"]
ONTOLOGY = ["check", "show", "test", "dry-run"]


def test_every_result_command_prints_json_that_parses(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    first = added_id(run(home, "add", "I live in Lisbon", "-u", "maya", "--json"))
    items = tmp_path / "items.jsonl"
    items.write_text('"I play chess"\n"I drink green tea"\n', encoding="utf-8")
    dump = tmp_path / "dump.jsonl"
    reads: list[Argv] = [
        ("add-many", str(items), "-u", "maya", "--no-infer", "--json"), ("search", "Lisbon", "-u", "maya", "--json"),
        ("list", "-u", "maya", "--json"), ("entities", "-u", "maya", "--json"), ("facts", "-u", "maya", "--json"),
        ("get", first[:8], "-u", "maya", "--json"), ("history", first[:8], "-u", "maya", "--json"),
        ("export", str(dump), "-u", "maya", "--json"), ("ontology", "show", "--json"),
        ("ontology", "check", "--json"), ("ontology", "dry-run", *ontology_args(), "-u", "maya", "--json"),
        ("models", "where", "--json"), ("serve", "--new-key", "ci", "-u", "maya", "--json"),
    ]
    ran = run_all(home, reads)
    writes: list[Argv] = [("update", first[:8], "I live in Porto", "-u", "maya", "--json"),
                          ("optimize", "--json"), ("delete", first[:8], "-u", "maya", "--json"),
                          ("delete-all", "-u", "maya", "--json"),
                          ("migrate", "--to", f"sqlite://{tmp_path / 'moved.db'}", "--no-progress", "--json"),
                          ("reset", "--yes", "--json"),
                          ("reembed", "--embedder", "hashing", "--dims", "64", "--no-progress", "--json")]
    for argv in writes:  # one after another: each changes what the next sees
        ran[argv] = run(home, *argv)
    ran["import", str(dump), "--json"] = run(other, "import", str(dump), "--json")
    for argv, done in ran.items():
        if argv == ("models", "where", "--json") and done.returncode == 1:  # the model's files are not here
            assert done.stderr.startswith("EmbeddingError: ") and not done.stdout
            continue
        assert done.returncode == 0, (argv, done.stderr)
        if argv[0] == "reembed":  # it opens the store with the store's own (hashing) embedder: one warning line
            assert done.stderr.count("\n") == 1 and done.stderr.startswith("HashingFallbackWarning: "), done.stderr
        else:
            assert not done.stderr, (argv, done.stderr)
        json.loads(done.stdout)  # parses, whatever the command
    assert json.loads(ran[writes[0]].stdout)["memory"] == "I live in Porto"
    assert [e["event"] for e in json.loads(ran["history", first[:8], "-u", "maya", "--json"].stdout)] == ["ADD"]
    assert json.loads(ran[writes[3]].stdout)["deleted"] == 2
    assert json.loads(ran["reset", "--yes", "--json"].stdout)["reset"] is True
    assert json.loads(ran[writes[-1]].stdout)["switched"] is True
    assert json.loads(ran["import", str(dump), "--json"].stdout)["imported"]["memory"] >= 1  # add-many races it
    table = run(other, "add", "I swim", "-u", "ann", "--no-infer")
    mid = table.stdout.split("│")[3].strip()
    shown = run_all(other, [("get", mid, "-u", "ann"), ("history", mid, "-u", "ann")])  # without --json: tables
    assert all(r.returncode == 0 and "I swim" in r.stdout and "┃" in r.stdout for r in shown.values())


def test_read_commands_create_no_store(tmp_path: Path) -> None:
    home = tmp_path / "nonexistent" / "dir"
    typo = tmp_path / "typo.yaml"
    typo.write_text(f"store: {{path: {tmp_path / 'nowhere' / 'graph.db'}}}\n", encoding="utf-8")
    reads: list[Argv] = [("list", "-u", "maya"), ("get", "0510", "-u", "maya"), ("search", "tea", "-u", "maya"),
                         ("history", "0510", "-u", "maya"), ("entities", "-u", "maya"), ("facts", "-u", "maya"),
                         ("delete", "0510", "-u", "maya"), ("optimize",), ("export", "-", "-u", "maya"),
                         ("list", "-u", "maya", "--json", "--config", str(typo))]
    ran = run_all(home, reads)
    for argv, done in ran.items():
        line = one_error_line(done, "StoreUnavailableError")
        named = tmp_path / "nowhere" / "graph.db" if "--config" in argv else home / "graphmem.db"
        assert f"no graphmem store at {named}" in line, (argv, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["typo.yaml"]  # nothing created
    assert run(home, "add", "I like tea", "-u", "maya", "--no-infer").returncode == 0  # a write creates it
    assert (home / "graphmem.db").is_file()
    assert run(home, "list", "-u", "maya").returncode == 0


def test_each_warning_is_one_line_once(tmp_path: Path) -> None:
    assert run(tmp_path, "add", "I like tea", "-u", "maya", "--no-infer").returncode == 0  # a hashing store
    auto = {"GRAPHMEM_EMBEDDER__PROVIDER": "auto"}  # auto keeps the store's hashing embedder, and warns
    ran = run_all(tmp_path, [("list", "-u", "maya", "--json"), ("search", "tea", "-u", "maya")], **auto)
    for argv, done in ran.items():
        assert done.returncode == 0, (argv, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1, (argv, done.stderr)  # not the log line and the warning, not the source line
        assert lines[0].startswith("HashingFallbackWarning: graphmem is using the hashing embedder"), lines
        assert ".py:" not in done.stderr
    assert json.loads(ran["list", "-u", "maya", "--json"].stdout)["results"][0]["memory"] == "I like tea"


def test_history_of_a_deleted_memory_by_short_id(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("".join(f'"note number {n}"\n' for n in range(20)), encoding="utf-8")
    added = run(tmp_path, "add-many", str(items), "-u", "maya", "--no-infer", "--json")
    assert added.returncode == 0, added.stderr
    ids = [it["results"][0]["id"] for it in json.loads(added.stdout)["items"]]
    by_first = defaultdict(list)
    for mid in ids:
        by_first[mid[0]].append(mid)
    # 20 ids, 16 first characters; the error names two of a prefix's memories, so take the fewest
    shared = min((group for group in by_first.values() if len(group) > 1), key=len)
    gone = shared[0]
    assert run(tmp_path, "delete", gone[:8], "-u", "maya").returncode == 0
    ran = run_all(tmp_path, [("history", gone[:8], "-u", "maya", "--json"), ("history", gone[:8], "-u", "maya"),
                             ("history", gone[0], "-u", "maya"), ("get", gone[:8], "-u", "maya"),
                             ("history", gone[:8], "-u", "ann")])
    events = json.loads(ran["history", gone[:8], "-u", "maya", "--json"].stdout)
    assert [e["event"] for e in events] == ["ADD", "DELETE"] and {e["memory_id"] for e in events} == {gone}
    assert "DELETE" in ran["history", gone[:8], "-u", "maya"].stdout
    ambiguous = one_error_line(ran["history", gone[0], "-u", "maya"], "InvalidInputError")  # a deleted and a live id
    assert "matches several memories" in ambiguous and (gone in ambiguous or len(shared) > 2)
    one_error_line(ran["get", gone[:8], "-u", "maya"], "NotFoundError")  # deleted: no longer a memory
    theirs = ran["history", gone[:8], "-u", "ann"]  # another scope's history is not ann's
    assert theirs.returncode != 0 or json.loads(theirs.stdout or "[]") == [] or gone not in theirs.stdout


@pytest.mark.neo4j
def test_cypher_hides_vectors_unless_asked(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    if not neo4j_available:
        pytest.skip(f"no Neo4j at {NEO4J_URI}")
    neo4j = {"GRAPHMEM_STORE__PROVIDER": "neo4j", "GRAPHMEM_STORE__URI": NEO4J_URI,
             "GRAPHMEM_STORE__USER": NEO4J_USER, "GRAPHMEM_STORE__PASSWORD": NEO4J_PASSWORD}
    assert run(tmp_path, "add", "I like green tea", "-u", uid, "--no-infer", **neo4j).returncode == 0
    try:
        node = "MATCH (m:Memory) WHERE m.user_id = $uid RETURN m"
        prop = "MATCH (m:Memory) WHERE m.user_id = $uid RETURN m.embedding AS v, [0.5, 1.5] AS pair"
        p = ("-p", f'uid="{uid}"')
        ran = run_all(tmp_path, [("cypher", node, *p, "--json"), ("cypher", node, *p),
                                 ("cypher", node, *p, "--vectors", "--json"), ("cypher", prop, *p, "-f", "csv")],
                      **neo4j)
        for argv, done in ran.items():
            assert done.returncode == 0, (argv, done.stderr)
        [row] = json.loads(ran["cypher", node, *p, "--json"].stdout)
        assert row["m"]["embedding"] == "<384 floats>" and row["m"]["memory"] == "I like green tea"
        table = ran["cypher", node, *p].stdout
        assert "<384 floats>" in table and "I like green tea" in table and len(table) < 3000
        [full] = json.loads(ran["cypher", node, *p, "--vectors", "--json"].stdout)
        assert len(full["m"]["embedding"]) == 384 and all(isinstance(x, float) for x in full["m"]["embedding"])
        assert ran["cypher", prop, *p, "-f", "csv"].stdout.splitlines() == ["v,pair", '<384 floats>,"[0.5, 1.5]"']
    finally:
        run(tmp_path, "delete-all", "-u", uid, **neo4j)


def test_demo_removes_its_store_unless_kept(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = run(tmp_path, "demo", TMPDIR=str(temp))
    assert done.returncode == 0, done.stderr
    assert "stored memories" in done.stdout and "search:" in done.stdout
    assert list(temp.iterdir()) == []  # the temporary store is gone
    kept = run(tmp_path, "demo", "--keep", TMPDIR=str(temp))
    assert kept.returncode == 0, kept.stderr
    [folder] = temp.iterdir()
    assert (folder / "graphmem.db").is_file() and str(folder) in kept.stdout
    listed = run(folder, "list", "-u", "maya", "--json")
    assert "peanuts" in listed.stdout, listed.stderr
    home = tmp_path / "mine"
    assert run(tmp_path, "demo", "--home", str(home), TMPDIR=str(temp)).returncode == 0
    assert (home / "graphmem.db").is_file()  # a folder the user named is theirs: kept
