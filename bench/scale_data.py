"""A store larger than the shared data holds: real tenant plans extended by deterministic variants.

``bench/search_latency.py --synthetic`` uses this for sizes above ``REAL_BASE``: the real plans of
``REAL_BASE`` memories (``../shared/data`` held about 100k distinct sentence memories for the rule
extractor of early 2026; it keeps fewer since it drops small talk: 19,244 distinct in December 2026,
22,620 turns, so the base is 18k) are built as
usual, then each tenant is filled up to its share of the larger size with variants of its own real
memories, in replicas (replica 0 is the real data, replica r >= 1 one variant of every real memory,
cycling until the tenant is full).

Why built this way: search cost at a size depends on what the store looks like, so the extension
keeps what the real data decides and changes only what makes memories distinct.

* Same tenant split: every tenant gets ``tenant_sizes(size)`` memories, drawn from its own real ones,
  so scope filtering has the same work per query.
* Same graph per memory: a variant gets the mentions and facts of the memory it comes from, with
  every entity other than a conversation's speakers mapped to an entity of the replica's own. Facts
  per memory and mentions per memory are the real ones, and the degree distribution of non-speaker
  entities is the real one, repeated per replica (most entities are named once, a few are hubs).
  Speakers stay one entity across replicas, as a user's own node would: their degree grows with
  the store, the worst case for a graph walk from a question that names them.
* Distinct texts, real words: a replica entity is named by its real name followed by the last word
  of another entity of its class (seeded), and that name replaces the entity's names in the text.
  A memory that names no such entity keeps its first clauses and takes the last clause of another
  entity-free memory of its tenant (seeded). Every text of a tenant is distinct (by the store's
  exact-duplicate hash), so each gets its own vector and row; the vocabulary is the corpus's own,
  so full-text term frequencies scale as they would with more of the same talk.
* No extraction at scale: variants reuse the real memories' extracted graph, so the 1M plan costs
  one rule-extraction pass over the real data (spaCy over 1M generated texts would dominate the build,
  and its triples would be the real ones anyway).

Queries stay the LoCoMo questions: their answers are real memories (replica 0) among the variants.
Variants of a memory are near duplicates of it for the hashing embedder (one name or clause differs),
which makes vector search no easier: the index holds ``size / REAL_BASE`` close neighbours of every
real memory.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from graphmem.models import norm_name
from graphmem.models import text_hash as hash_of

REAL_BASE = 18_000
"""Memories taken from the shared data; larger sizes are extended from a plan of this size."""
RECIPE_VERSION = 3
"""Bump when the variants change: cached stores built with another recipe are rebuilt."""
SEED = 19
_CLAUSE = re.compile(r",\s+|\s+(?:and|but|because|so|while|when)\s+", re.IGNORECASE)
_MAX_ATTEMPTS = 64


class EntityLike(Protocol):
    name: str
    classes: list[str]
    aliases: list[str]


class FactLike(Protocol):
    memories: list[int]
    datatype: str | None
    synthetic: bool


class PlanLike(Protocol):
    """``search_latency.TenantPlan`` (not imported: that module runs as ``__main__``)."""

    user_id: str
    size: int
    texts: list[str]
    roles: list[str]
    actors: list[str | None]
    metas: list[dict[str, Any]]
    hashes: dict[str, int]
    entities: dict[str, Any]
    index: dict[str, str]
    mentions: set[tuple[int, str]]
    facts: dict[Any, Any]

    def entity(self, name: str, classes: Sequence[str] = (), aliases: Sequence[str] = (),
               implied: Sequence[str] = ()) -> str: ...

    def fact(self, key: Any, memories: Sequence[int], datatype: str | None = None,
             synthetic: bool = False) -> None: ...


def recipe(size: int, synthetic: bool) -> list[Any]:
    """What a store of ``size`` depends on besides the real data (empty when it is all real)."""
    return ["synthetic", RECIPE_VERSION, REAL_BASE, SEED] if synthetic and size > REAL_BASE else []


def _pick(seed: int, *parts: object) -> int:
    key = "|".join(map(str, (seed, *parts))).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def extend(real: Sequence[PlanLike], sizes: Sequence[int], seed: int = SEED) -> list[PlanLike]:
    """Each real tenant plan extended to its size in ``sizes`` (same order); the real plans are kept."""
    if len(real) != len(sizes):
        raise ValueError("one size per tenant")
    return [_extend(t, n, seed) for t, n in zip(real, sizes, strict=True)]


def _extend(t: PlanLike, n: int, seed: int) -> PlanLike:
    base = len(t.texts)
    if n <= base:
        return t
    new: PlanLike = type(t)(t.user_id, n)  # type: ignore[call-arg]
    new.texts, new.roles, new.actors = list(t.texts), list(t.roles), list(t.actors)
    new.metas, new.hashes = list(t.metas), dict(t.hashes)
    new.entities = dict(t.entities)  # real entities are not changed below: replicas get their own
    new.index, new.mentions = dict(t.index), set(t.mentions)
    new.facts = {k: type(f)(list(f.memories), f.datatype, f.synthetic) for k, f in t.facts.items()}

    mentions_of: dict[int, list[str]] = defaultdict(list)
    for m, k in sorted(t.mentions):
        mentions_of[m].append(k)
    facts_of: dict[int, list[Any]] = defaultdict(list)
    for key, f in t.facts.items():
        for m in f.memories:
            facts_of[m].append(key)
    speakers = {t.index[norm_name(a)] for a in set(t.actors) if a and norm_name(a) in t.index}
    renamed = {m: [k for k in ks if k not in speakers] for m, ks in mentions_of.items()}
    donors = [m for m in range(base) if not renamed.get(m)] or list(range(base))
    heads: dict[str, list[str]] = defaultdict(list)  # class -> last words of its entities' names
    for ent in t.entities.values():
        words = ent.name.split()
        if words:
            heads[ent.classes[0] if ent.classes else ""].append(words[-1])
    pools = {c: sorted(set(ws)) for c, ws in heads.items()}
    everything = sorted({w for ws in pools.values() for w in ws})
    patterns: dict[int, re.Pattern[str] | None] = {}
    names: dict[tuple[int, str], str] = {}  # (replica, real entity key) -> replica entity key

    def replica_entity(r: int, key: str) -> str:
        got = names.get((r, key))
        if got is None:
            ent = t.entities[key]
            pool = pools.get(ent.classes[0] if ent.classes else "") or everything
            last = ent.name.split()[-1].casefold() if ent.name.split() else ""
            for attempt in range(_MAX_ATTEMPTS):
                head = pool[_pick(seed, "name", r, key, attempt) % len(pool)]
                name = f"{ent.name} {head}"
                if head.casefold() != last and norm_name(name) not in new.index:
                    break
            else:
                name = f"{ent.name} {r}"
            got = names[(r, key)] = new.entity(name, list(ent.classes))
        return got

    def pattern(m: int) -> re.Pattern[str] | None:
        if m not in patterns:
            forms = {f.casefold(): k for k in renamed.get(m, []) for f in (t.entities[k].name, *t.entities[k].aliases)
                     if f.strip()}
            alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
            patterns[m] = re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE) if forms else None
        return patterns[m]

    def form_key(m: int, surface: str) -> str | None:
        for k in renamed.get(m, []):
            if surface.casefold() in {f.casefold() for f in (t.entities[k].name, *t.entities[k].aliases)}:
                return k
        return None

    r = 0
    while len(new.texts) < n:
        r += 1
        for m in range(base):
            if len(new.texts) >= n:
                break
            mapped = {k: replica_entity(r, k) for k in renamed.get(m, [])}
            text = t.texts[m]
            pat = pattern(m)
            if pat is not None:
                def swap(match: re.Match[str], m: int = m, mapped: dict[str, str] = mapped) -> str:
                    k = form_key(m, match.group())
                    return new.entities[mapped[k]].name if k is not None else match.group()

                text = pat.sub(swap, text)
            h = hash_of(text)
            attempt, swapped = 0, text
            while h in new.hashes:
                text = _splice(swapped, t.texts[donors[_pick(seed, "donor", r, m, attempt) % len(donors)]])
                h = hash_of(text)
                attempt += 1
                if attempt > _MAX_ATTEMPTS:
                    text = f"{swapped} ({r})"
                    h = hash_of(text)
                    break
            idx = len(new.texts)
            new.hashes[h] = idx
            new.texts.append(text)
            new.roles.append(t.roles[m])
            new.actors.append(t.actors[m])
            new.metas.append({**t.metas[m], "replica": r})
            new.mentions.update((idx, mapped.get(k, k)) for k in mentions_of.get(m, []))
            for src, rel, tgt, value in facts_of.get(m, []):
                f = t.facts[(src, rel, tgt, value)]
                key = (mapped.get(src, src), rel, mapped.get(tgt, tgt) if tgt is not None else None, value)
                have = new.facts.get(key)
                if have is None:
                    new.fact(key, [idx], f.datatype, f.synthetic)
                else:  # a speakers-only fact: one more memory (``fact`` would scan its list)
                    have.memories.append(idx)
                    have.synthetic = have.synthetic and f.synthetic
                    new.mentions.update((idx, end) for end in (key[0], key[2]) if end is not None)
    return new


def _splice(text: str, donor: str) -> str:
    """``text`` up to its last clause boundary, then ``donor``'s last clause (or all of it)."""
    cuts = list(_CLAUSE.finditer(text))
    tail_cuts = list(_CLAUSE.finditer(donor))
    tail = donor[tail_cuts[-1].end():] if tail_cuts else donor
    tail = tail if tail[:2] in ("I ", "I'") else tail[:1].lower() + tail[1:]
    if cuts:
        return text[: cuts[-1].start()] + cuts[-1].group() + tail
    return text.rstrip(" .!?") + ", and " + tail


# -- Neo4j: bulk load, store size and settings ---------------------------------------------------------


def _driver(cfg: dict[str, Any]) -> Any:
    from neo4j import GraphDatabase

    return GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"]))


def defer_indexes(cfg: dict[str, Any]) -> list[str]:
    """Drop the Lucene-backed search indexes before a bulk load; ``Memory.optimize()`` after it creates
    them again (it drops and rebuilds them anyway). Returns the names dropped.

    Why: with the indexes online every committed batch adds Lucene segments that the server merges
    (a vector merge rebuilds HNSW graphs), so the load builds each graph several times and the one
    after it (optimize) once more; without them the load writes nodes only and the index is built
    once, from all vectors."""
    from graphmem.stores.neo4j.schema import REBUILT_INDEXES

    with _driver(cfg) as driver:
        for name in REBUILT_INDEXES:
            driver.execute_query(f"DROP INDEX {name} IF EXISTS")
    return list(REBUILT_INDEXES)


def store_size() -> dict[str, Any]:
    """Bytes of the benchmark server's database (``$GRAPHMEM_NEO4J_HOME/data``, when set): the store
    files the page cache holds, the Lucene index files (read through the OS cache), and the
    transaction log (Community has no ``db.checkpoint()``: pages written since the last checkpoint,
    every 15 minutes, are in the log and the page cache, not yet in the store files)."""
    home = os.environ.get("GRAPHMEM_NEO4J_HOME")
    if not home or not (Path(home) / "data").is_dir():
        return {}
    data = Path(home) / "data"

    def du(path: Path) -> int:
        if not path.is_dir():
            return 0
        out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=False).stdout
        return int(out.split()[0]) if out.strip() else 0

    db = data / "databases" / "neo4j"
    total, schema = du(db), du(db / "schema")
    return {"store_files_bytes": total - schema, "index_bytes": schema,
            "transaction_log_bytes": du(data / "transactions" / "neo4j"), "path": str(data)}


def server_pid() -> int | None:
    """The benchmark server's pid (``neo4j.sh`` writes it to ``$GRAPHMEM_NEO4J_HOME/neo4j.pid``)."""
    home = os.environ.get("GRAPHMEM_NEO4J_HOME")
    try:
        return int((Path(home) / "neo4j.pid").read_text().strip()) if home else None
    except (OSError, ValueError):
        return None


def cpu_seconds(pid: int | None) -> dict[str, float]:
    """CPU seconds used so far by this process and by ``pid`` (the server), user + system.

    Why: on a shared machine the wall-clock rate of a load says how busy the machine was; the CPU
    both sides spent per memory says what the load costs."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    out = {"client": me.ru_utime + me.ru_stime}
    if pid is not None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out["server"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return out


def cpu_used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(after[k] - before[k], 1) for k in before if k in after}


def server_memory(cfg: dict[str, Any]) -> dict[str, Any]:
    """The server's page cache setting, JVM heap and page cache counters (hit ratio since start)."""
    out: dict[str, Any] = {}
    with _driver(cfg) as driver:
        try:
            rows, _, _ = driver.execute_query(
                "SHOW SETTINGS YIELD name, value WHERE name STARTS WITH 'server.memory.pagecache.size' "
                "OR name STARTS WITH 'db.index.vector' RETURN name, value")
            out["settings"] = {r["name"]: r["value"] for r in rows}
        except Exception as exc:  # older servers: report, do not fail the run
            out["settings_error"] = str(exc)[:200]
        try:
            rows, _, _ = driver.execute_query(
                "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes "
                "RETURN attributes.HeapMemoryUsage.value.properties.max AS max")
            if rows and rows[0]["max"] is not None:
                out["heap_max_bytes"] = int(rows[0]["max"])
        except Exception as exc:
            out["heap_error"] = str(exc)[:200]
        try:
            rows, _, _ = driver.execute_query(
                "CALL dbms.queryJmx('org.neo4j:*') YIELD name, attributes WHERE name CONTAINS 'Page cache' "
                "RETURN attributes AS a")
            for row in rows:
                a = row["a"]
                out["pagecache"] = {k: a[k]["value"] for k in ("Hits", "Faults", "HitRatio", "UsageRatio") if k in a}
        except Exception as exc:
            out["pagecache_error"] = str(exc)[:200]
    return out
