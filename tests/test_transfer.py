"""Export, import, RDF export and migration (graphmem.transfer), on real SQLite files and the real
Neo4j server.

A dump is compared as the set of its row lines (the header holds the time of the export): equal
sets mean every memory, vector, history event, entity, fact (closed ones too, with validity and
provenance) and quarantine entry came back as it was. The shared Neo4j server holds other tests'
tenants, so every test works in scopes of its own and exports only those.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from rdflib import Graph

from graphmem import (
    DumpConflictError,
    DumpFormatError,
    InvalidInputError,
    Memory,
    MemoryConfig,
    SchemaMismatchError,
)
from graphmem.embedding import HashingEmbedder
from graphmem.models import Relation, Scope
from graphmem.stores.base import DUMP_KINDS, Restore
from graphmem.transfer import BatchDone

from .conftest import make_config, neo4j_config


def open_memory(backend: str, home: Path, dims: int = 384) -> Memory:
    home.mkdir(parents=True, exist_ok=True)
    return Memory(MemoryConfig.load(make_config(backend, home)), embedder=HashingEmbedder(dims))


def seed(m: Memory, uid: str) -> dict[str, str]:
    """Every kind of row in two scopes of ``uid``: a superseded (closed) fact, a literal fact, a
    quarantined triple, an update, a deleted memory with its history, access counts."""
    m.add("Maya Patel lives in Porto.", user_id=uid, infer=False, metadata={"source": "chat", "n": 1},
          triples=[{"source": "Maya Patel", "relation": "livesIn", "target": "Porto", "target_type": "City",
                    "source_type": "Person", "valid_from": "2019-01-01"}])
    moved = m.add("Maya Patel moved to Lisbon.", user_id=uid, infer=False,
                  triples=[{"source": "Maya Patel", "relation": "livesIn", "target": "Lisbon", "target_type": "City",
                            "valid_from": "2024-02-01"}])
    m.add("Maya's email is maya@example.org.", user_id=uid, infer=False,
          triples=[{"source": "Maya Patel", "relation": "email", "target": "maya@example.org"}])
    rejected = m.add("Maya lives in Dr Who.", user_id=uid, infer=False,
                     triples=[{"source": "Maya Patel", "relation": "livesIn", "target": "Dr Who",
                               "target_type": "Person"}])
    assert rejected["relations"]["rejected"], "the guard must quarantine a person as a place"
    gone = m.add("A memory that is deleted.", user_id=uid, infer=False)["results"][0]["id"]
    m.delete(gone, user_id=uid)
    first = moved["results"][0]["id"]
    m.update(first, "Maya Patel moved to Lisbon in February.", user_id=uid, infer=False)
    m.store.touch(Scope(user_id=uid), {first: (3, datetime(2025, 5, 1, tzinfo=UTC))})
    m.add("Maya works for Globex.", user_id=uid, agent_id="helper", infer=False,
          triples=[{"source": "Maya Patel", "relation": "worksFor", "target": "Globex", "source_type": "Person",
                    "target_type": "Company"}])
    return {"moved": first, "deleted": gone}


def rows(dump: Path) -> list[str]:
    """The row lines of a dump, sorted (order differs between backends; content must not)."""
    return sorted(dump.read_text(encoding="utf-8").splitlines()[1:])


def kinds(dump: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in rows(dump):
        kind = json.loads(line)["kind"]
        out[kind] = out.get(kind, 0) + 1
    return out


def test_sqlite_round_trip_is_lossless(tmp_path: Path, uid: str) -> None:
    with open_memory("sqlite", tmp_path / "a") as a:
        seed(a, uid)
        summary = a.export(tmp_path / "a.jsonl", user_id=uid)
    assert summary["counts"] == {"memory": 5, "event": 10, "entity": 5, "fact": 4, "quarantine": 1}
    assert kinds(tmp_path / "a.jsonl") == summary["counts"]
    with open_memory("sqlite", tmp_path / "b") as b:
        done = b.import_(tmp_path / "a.jsonl", batch_size=3)
        assert done["imported"] == summary["counts"] and done["batches"] > 2
        b.export(tmp_path / "b.jsonl", user_id=uid)
        # what the API reads back is the same too: closed facts, history of the deleted memory, access
        facts = b.facts(user_id=uid, relation="livesIn", include_closed=True)["results"]
        assert sorted(f.get("valid_to") is None for f in facts) == [False, True]  # one closed, one open
        # the thread came along: each memory follows the one before it; the next add follows the newest
        # memory none follows (the last one written was deleted)
        listed = {r["memory"]: r for r in b.get_all(user_id=uid)["results"] if r.get("agent_id") is None}
        moved = listed["Maya Patel moved to Lisbon in February."]["id"]
        assert listed["Maya's email is maya@example.org."]["follows"] == moved
        new = b.add("Maya visits Porto often.", user_id=uid, infer=False)["results"][0]["id"]
        assert b.get(new, user_id=uid)["follows"] == listed["Maya lives in Dr Who."]["id"]
        b.delete(new, user_id=uid)
    assert rows(tmp_path / "b.jsonl") == rows(tmp_path / "a.jsonl")


@pytest.mark.neo4j
def test_across_backends_sqlite_neo4j_sqlite(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    """SQLite export -> Neo4j import -> Neo4j export equal; that dump -> SQLite -> equal again."""
    with open_memory("sqlite", tmp_path / "a") as a:
        ids = seed(a, uid)
        a.export(tmp_path / "a.jsonl", user_id=uid)
    with open_memory("neo4j", tmp_path / "n") as n:
        try:
            n.import_(tmp_path / "a.jsonl", batch_size=4)
            n.export(tmp_path / "n.jsonl", user_id=uid)
            assert rows(tmp_path / "n.jsonl") == rows(tmp_path / "a.jsonl")
            history = [e["event"] for e in n.history(ids["deleted"], user_id=uid)]
            assert history == ["ADD", "DELETE"]  # the history of a deleted memory came along
            hits = n.search("Lisbon February", user_id=uid, top_k=1)["results"]
            assert hits[0]["id"] == ids["moved"]  # the vectors carried search without re-embedding
            with pytest.raises(DumpConflictError):  # the same ids again: refused, nothing written
                n.import_(tmp_path / "a.jsonl")
            assert n.store.dump_counts(Scope(user_id=uid))["memory"] == 4
        finally:
            n.delete_all(user_id=uid)
            n.delete_all(user_id=uid, agent_id="helper")
    with open_memory("sqlite", tmp_path / "c") as c:
        c.import_(tmp_path / "n.jsonl")
        c.export(tmp_path / "c.jsonl", user_id=uid)
    assert rows(tmp_path / "c.jsonl") == rows(tmp_path / "a.jsonl")


@pytest.mark.neo4j
def test_neo4j_export_of_native_data_round_trips(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    """Rows Neo4j wrote itself (its own history order, Value nodes) survive Neo4j -> SQLite -> export."""
    with open_memory("neo4j", tmp_path / "n") as n:
        try:
            seed(n, uid)
            n.export(tmp_path / "n.jsonl", user_id=uid)
        finally:
            n.delete_all(user_id=uid)
            n.delete_all(user_id=uid, agent_id="helper")
    assert kinds(tmp_path / "n.jsonl") == {"memory": 5, "event": 10, "entity": 5, "fact": 4, "quarantine": 1}
    with open_memory("sqlite", tmp_path / "s") as s:
        s.import_(tmp_path / "n.jsonl")
        s.export(tmp_path / "s.jsonl", user_id=uid)
    assert rows(tmp_path / "s.jsonl") == rows(tmp_path / "n.jsonl")


def test_export_of_one_scope_never_holds_another(tmp_path: Path, uid: str) -> None:
    with open_memory("sqlite", tmp_path / "a") as a:
        seed(a, uid)
        seed(a, uid + "-other")
        a.export(tmp_path / "user.jsonl", user_id=uid)
        a.export(tmp_path / "agent.jsonl", user_id=uid, agent_id="helper")
        a.export(tmp_path / "all.jsonl", all_scopes=True)
    for dump, allowed in (("user.jsonl", {(uid, None), (uid, "helper")}), ("agent.jsonl", {(uid, "helper")})):
        found = {(json.loads(line)["row"]["user_id"], json.loads(line)["row"].get("agent_id"))
                 for line in rows(tmp_path / dump)}
        assert found == allowed, dump
    assert len(rows(tmp_path / "all.jsonl")) == 2 * len(rows(tmp_path / "user.jsonl"))
    assert kinds(tmp_path / "agent.jsonl") == {"memory": 1, "event": 1, "entity": 2, "fact": 1}


def test_rdf_export_parses_and_validates_with_the_store_shapes(tmp_path: Path, uid: str) -> None:
    import pyshacl

    with open_memory("sqlite", tmp_path / "a") as a:
        seed(a, uid)
        shapes, tbox = a.ontology.shapes_graph, a.ontology.tbox
        ttl, jsonld = io.StringIO(), io.StringIO()
        summary = a.export_rdf(ttl, user_id=uid)
        a.export_rdf(jsonld, user_id=uid, rdf_format="json-ld")
        assert summary["facts"] == 4 and summary["open_facts"] == 3
        g_ttl = Graph().parse(data=ttl.getvalue(), format="turtle")
        g_json = Graph().parse(data=jsonld.getvalue(), format="json-ld")
        assert len(g_ttl) == len(g_json) == summary["triples"]
        conforms, _, text = pyshacl.validate(g_ttl, shacl_graph=shapes, ont_graph=tbox, inference="none")
        assert conforms, text
        # a fact the guard would have refused, written past it: the export shows it, pySHACL reports it
        ents = {e["name"]: e["id"] for e in a.entities(user_id=uid, limit=50)["results"] if "agent_id" not in e}
        bad = Relation(source_id=ents["Maya Patel"], relation="https://graphmem.dev/ontology#livesIn",
                       target_id=ents["Maya Patel"], user_id=uid)  # a person is not a place
        a.store.restore(Scope(user_id=uid), Restore(facts=[bad]))
        out = io.StringIO()
        a.export_rdf(out, user_id=uid)
    conforms, _, text = pyshacl.validate(Graph().parse(data=out.getvalue(), format="turtle"), shacl_graph=shapes,
                                         ont_graph=tbox, inference="none")
    assert not conforms
    assert ents["Maya Patel"] in text and "livesIn" in text


def _dump(tmp_path: Path, uid: str) -> Path:
    with open_memory("sqlite", tmp_path / "src") as a:
        seed(a, uid)
        a.export(tmp_path / "good.jsonl", user_id=uid)
    return tmp_path / "good.jsonl"


def _edit(src: Path, dest: Path, edit: Callable[[list[str]], list[str]]) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    dest.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return dest


@pytest.mark.parametrize(("name", "edit", "error", "says"), [
    ("corrupt", lambda ls: [*ls[:4], ls[4][:-7], *ls[5:]], DumpFormatError, "line 5: not JSON"),
    ("version", lambda ls: [ls[0].replace('"graphmem_dump": 1', '"graphmem_dump": 9'), *ls[1:]], DumpFormatError,
     "version 9"),
    ("truncated", lambda ls: ls[:-1], DumpFormatError, "other row counts"),
    ("dangling", lambda ls: [ls[0], *[x for x in ls[1:] if '"kind": "entity"' not in x]], DumpFormatError,
     "which no earlier line holds"),
    ("bad row", lambda ls: [*ls[:2], ls[2].replace('"memory_type": "semantic"', '"memory_type": "dream"'),
                            *ls[3:]], DumpFormatError, "memory_type"),
])
def test_bad_dumps_are_refused_whole(tmp_path: Path, uid: str, name: str, edit: Callable[[list[str]], list[str]],
                                     error: type[Exception],
                                     says: str) -> None:
    bad = _edit(_dump(tmp_path, uid), tmp_path / "bad.jsonl", edit)
    with open_memory("sqlite", tmp_path / "dst") as b:
        with pytest.raises(error, match=says):
            b.import_(bad, batch_size=2)
        assert b.store.dump_scopes() == []  # nothing of the good lines before the bad one was written


def test_other_dimensions_and_other_embedders_are_refused(tmp_path: Path, uid: str) -> None:
    good = _dump(tmp_path, uid)
    with open_memory("sqlite", tmp_path / "small", dims=64) as b:
        with pytest.raises(SchemaMismatchError, match="384-dimensional"):
            b.import_(good)
        assert b.store.dump_scopes() == []
    with open_memory("sqlite", tmp_path / "other") as c:
        renamed = _edit(good, tmp_path / "renamed.jsonl",
                        lambda ls: [ls[0].replace("hashing-v1-384", "some-other-model"), *ls[1:]])
        with pytest.raises(SchemaMismatchError, match="reembed"):
            c.import_(renamed)
        assert c.store.dump_scopes() == []
        done = c.import_(renamed, reembed=True)  # recomputed with this store's embedder
        assert done["reembedded"] and c.search("Lisbon", user_id=uid, top_k=1)["results"]


def test_an_import_into_a_scope_holding_the_same_text_is_refused(tmp_path: Path, uid: str) -> None:
    good = _dump(tmp_path, uid)
    with open_memory("sqlite", tmp_path / "dst") as b:
        b.add("Maya Patel lives in Porto.", user_id=uid, infer=False)  # same scope and text, another id
        with pytest.raises(DumpConflictError, match="already holds memory"):
            b.import_(good)
        assert b.store.dump_counts(None)["memory"] == 1


# -------------------------------------------------------------------------------------------- migrate


class Stop(Exception):
    pass


def _stop_at(k: int) -> Callable[[BatchDone], None]:
    def hook(done: BatchDone) -> None:
        if done.number == k:
            raise Stop(f"stopped after batch {k}")
    return hook


def _many(m: Memory, uid: str, n: int) -> None:
    m.add([{"role": "user", "content": f"note {i}: the meeting room {i} is on floor {i % 7}"} for i in range(n)],
          user_id=uid, infer=False)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_an_interrupted_migration_resumes_where_it_stopped(tmp_path: Path, uid: str, backend: str,
                                                           request: pytest.FixtureRequest) -> None:
    if backend == "neo4j":
        request.getfixturevalue("neo4j_available")
    target = {"provider": "sqlite", "path": str(tmp_path / "target.db")} if backend == "sqlite" else neo4j_config()
    checkpoint = tmp_path / "migrate.json"
    with open_memory("sqlite", tmp_path / "src") as a:
        seed(a, uid)
        _many(a, uid, 40)
        a.export(tmp_path / "source.jsonl", user_id=uid)
        try:
            with pytest.raises(Stop):
                a.migrate(target, user_id=uid, checkpoint=checkpoint, batch_size=7, on_batch=_stop_at(3))
            assert json.loads(checkpoint.read_text())["batches"] == 3
            with pytest.raises(InvalidInputError, match="belongs to another migration"):  # not into another store
                a.migrate({"provider": "sqlite", "path": str(tmp_path / "elsewhere.db")}, user_id=uid,
                          checkpoint=checkpoint)
            batches: list[BatchDone] = []
            done = a.migrate(target, user_id=uid, checkpoint=checkpoint, batch_size=7, on_batch=batches.append)
            assert done["resumed"] and batches[0].number == 4  # continued, not started over
            scopes = (Scope(user_id=uid), Scope(user_id=uid, agent_id="helper"))
            assert done["counts"] == {k: sum(a.store.dump_counts(s)[k] for s in scopes) for k in DUMP_KINDS}
            assert done["counts"]["memory"] == 45
            assert not checkpoint.exists()
            with pytest.raises(DumpConflictError, match="already holds scope"):  # a second run copies nothing
                a.migrate(target, user_id=uid, checkpoint=checkpoint)
            with Memory(MemoryConfig.load({"home": str(tmp_path / "t"), "store": target,
                                           "embedder": {"provider": "hashing"}}),
                        embedder=HashingEmbedder(384)) as t:
                t.export(tmp_path / "target.jsonl", user_id=uid)
        finally:
            if backend == "neo4j":
                with open_memory("neo4j", tmp_path / "cleanup") as n:
                    n.delete_all(user_id=uid)
                    n.delete_all(user_id=uid, agent_id="helper")
    assert rows(tmp_path / "target.jsonl") == rows(tmp_path / "source.jsonl")  # no row twice, none missing


def test_migrate_back_from_a_dump_keeps_vectors_bit_for_bit(tmp_path: Path, uid: str) -> None:
    with open_memory("sqlite", tmp_path / "a") as a:
        _many(a, uid, 5)
        a.migrate({"provider": "sqlite", "path": str(tmp_path / "b.db")}, checkpoint=tmp_path / "c.json")
        before = {r.id: v for r, v in a.store.dump_memories(Scope(user_id=uid), None, 100)}
    with Memory(MemoryConfig.load({"home": str(tmp_path / "b"), "store": {"provider": "sqlite",
                                                                          "path": str(tmp_path / "b.db")},
                                   "embedder": {"provider": "hashing"}}), embedder=HashingEmbedder(384)) as b:
        after = {r.id: v for r, v in b.store.dump_memories(Scope(user_id=uid), None, 100)}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)


KILLED_CHILD = """
import sys, time
from graphmem import Memory, MemoryConfig
from graphmem.embedding import HashingEmbedder
home, target, checkpoint = sys.argv[1:4]
config = {"home": home, "store": {"provider": "sqlite", "path": home + "/graphmem.db"},
          "embedder": {"provider": "hashing"}}
with Memory(MemoryConfig.load(config), embedder=HashingEmbedder(384)) as m:
    m.migrate({"provider": "sqlite", "path": target}, checkpoint=checkpoint, batch_size=4,
              on_batch=lambda done: time.sleep(0.3))
"""


@pytest.mark.slow
def test_a_killed_migration_process_resumes(tmp_path: Path, uid: str) -> None:
    """The real thing: a migrating process killed (SIGKILL) part-way, then the same migration again."""
    import subprocess
    import sys
    import time

    checkpoint, target = tmp_path / "migrate.json", tmp_path / "target.db"
    with open_memory("sqlite", tmp_path / "src") as a:
        seed(a, uid)
        _many(a, uid, 30)
        a.export(tmp_path / "source.jsonl", all_scopes=True)
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(tmp_path / "src"), str(target),
                              str(checkpoint)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if checkpoint.exists() and json.loads(checkpoint.read_text() or "{}").get("batches", 0) >= 3:
                break
            assert child.poll() is None, "the migration ended before it could be killed"
            time.sleep(0.05)
        child.kill()
    finally:
        child.wait(timeout=30)
    assert child.returncode < 0 and checkpoint.exists()  # killed, mid-way
    with open_memory("sqlite", tmp_path / "src") as a:
        done = a.migrate({"provider": "sqlite", "path": str(target)}, checkpoint=checkpoint, batch_size=4)
    assert done["resumed"] and done["counts"]["memory"] == 35
    with Memory(MemoryConfig.load({"home": str(tmp_path / "t"), "store": {"provider": "sqlite", "path": str(target)},
                                   "embedder": {"provider": "hashing"}}), embedder=HashingEmbedder(384)) as t:
        t.export(tmp_path / "target.jsonl", all_scopes=True)
    assert rows(tmp_path / "target.jsonl") == rows(tmp_path / "source.jsonl")


def test_a_store_without_dump_primitives_says_so(tmp_path: Path, uid: str) -> None:
    from graphmem import UnsupportedError
    from graphmem.stores.base import Store
    from graphmem.stores.sqlite import SQLiteStore

    class Plain(SQLiteStore):  # a backend of one's own that has not written them
        dump_scopes = Store.dump_scopes

    with Memory(MemoryConfig.load(make_config("sqlite", tmp_path)), embedder=HashingEmbedder(384),
                store=Plain(tmp_path / "plain.db")) as m:
        m.add("still works", user_id=uid, infer=False)
        with pytest.raises(UnsupportedError, match=r"Plain has no dump_scopes\(\)"):
            m.export(tmp_path / "x.jsonl", user_id=uid)
        assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.neo4j
def test_bad_dumps_write_nothing_to_neo4j(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    good = _dump(tmp_path, uid)
    corrupt = _edit(good, tmp_path / "corrupt.jsonl", lambda ls: [*ls[:-1], ls[-1][:-3]])  # the last line cut
    with open_memory("neo4j", tmp_path / "n") as n:
        with pytest.raises(DumpFormatError, match="not JSON"):
            n.import_(corrupt, batch_size=2)
        with pytest.raises(SchemaMismatchError):
            n.import_(_edit(good, tmp_path / "dims.jsonl",
                            lambda ls: [ls[0].replace('"dims": 384', '"dims": 512'), *ls[1:]]))
        for scope in (Scope(user_id=uid), Scope(user_id=uid, agent_id="helper")):
            assert set(n.store.dump_counts(scope).values()) == {0}


@pytest.mark.neo4j
def test_an_interrupted_migration_from_neo4j_resumes(tmp_path: Path, uid: str, neo4j_available: bool) -> None:
    """Neo4j's paged reads (cursors across small batches) as the source of a resumed migration."""
    target = {"provider": "sqlite", "path": str(tmp_path / "back.db")}
    checkpoint = tmp_path / "back.json"
    with open_memory("neo4j", tmp_path / "n") as n:
        try:
            seed(n, uid)
            _many(n, uid, 20)
            n.export(tmp_path / "neo4j.jsonl", user_id=uid)
            with pytest.raises(Stop):
                n.migrate(target, user_id=uid, checkpoint=checkpoint, batch_size=3, on_batch=_stop_at(4))
            done = n.migrate(target, user_id=uid, checkpoint=checkpoint, batch_size=3)
            assert done["resumed"] and done["counts"]["memory"] == 25
        finally:
            n.delete_all(user_id=uid)
            n.delete_all(user_id=uid, agent_id="helper")
    with Memory(MemoryConfig.load({"home": str(tmp_path / "t"), "store": target, "embedder": {"provider": "hashing"}}),
                embedder=HashingEmbedder(384)) as t:
        t.export(tmp_path / "back.jsonl", user_id=uid)
    assert rows(tmp_path / "back.jsonl") == rows(tmp_path / "neo4j.jsonl")
