"""Search latency per mode at 10k and 100k memories on both backends (issue 5).

    python bench/search_latency.py [--backend sqlite,neo4j] [--sizes 10000,100000] [--queries 200]
        [--modes vector,fulltext,graph,hybrid,no_graph] [--query-sets natural,common] [--cold 3]
        [--baseline-ref REF] [--out bench/results/search_latency.json]

Why: issue 5 asks for "p50/p95 per mode at 10k and 100k memories on both backends, query embedding
excluded, round trips counted", against the target Neo4j hybrid p50 <= 15 ms at 100k memories in one
round trip. ``bench/store.py`` times the store's candidate query alone; this times the public call,
``Memory.search(q, user_id=..., top_k=10, explain=True)``, with each mode's ``SearchConfig`` from
``search_config()`` of ``bench/retrieval.py``, so the graph walk, record loading and fusion count too.

Query embedding excluded: every query is embedded before timing and ``Memory`` gets an embedder that
returns those vectors by dictionary lookup (``Memory.search`` embeds inside the call, so this is how
the public call is timed without the model). Round trips: the result's ``round_trips`` when search
reports it, else counted here: public ``Store`` method calls during the search (``candidates`` counts
its own ``Candidates.round_trips``), and on Neo4j also Cypher statements and Bolt request flushes
(network round trips, BEGIN/COMMIT included) from a counting patch of the driver. The JSON says which.
Baseline, same run and store: vector-only search; every mode's p50 is printed as a ratio to it.
``no_graph`` (hybrid's weights with the graph's at 0) is what hybrid would cost with a free graph walk:
the floor of its ratio to vector search.

Query sets (issue 19): ``natural``, the LoCoMo questions; ``common``, three to five words drawn from
the 40 words found in the most memories of the queried tenant (as in ``bench/fulltext.py``: the
query a generic chat corpus gets, whose terms each match thousands of rows), where a full-text
ranking that grows with the terms' frequencies shows as p95 far above p50. Cold start (``--cold``
runs, SQLite only): a new process opens the store (``Memory(...)``, timed apart) and times its first
and second hybrid search, so the vectors' load counts; with ``--baseline-ref`` the same runs of the
code at that commit (a temporary worktree) alternate with this checkout's, and their ratio is printed.

Data (``../shared/data``): memories are the sentences the rule extractor makes of real chat turns,
all LoCoMo conversations first, then LongMemEval_S turns; queries are LoCoMo questions (a seeded
sample; ``--warmup`` others warm caches and plans first). Tenants (``user_id``): ``main`` holds
``--main-share`` (70%) of the memories, LoCoMo included, and receives every query; nine others share
the rest in 1/i proportions, so scope filtering has work to do. Graph: entities are what
``RuleExtractor`` finds, linked to the memories that name them (MENTIONS, as the ingest pipeline
draws them); facts are its triples plus up to ``--links`` co-mention facts per memory (its speaker
when a named person, then its entities in reading order, each pair linked by an ontology relation
chosen by a hash of the pair). Why the co-mention facts: the rule extractor yields ~0.03 facts per
memory, far fewer than an LLM, and the graph signal scores memories only through facts. Degrees
follow how often things are named: speakers and common names are hubs, most entities occur once
(the distribution is printed and saved).

The store is built through the Store API (``insert`` and ``write(GraphWrite)`` in batches), not
``Memory.add(infer=True)``, which runs at 100-600 memories/s. SQLite stores are cached under
``.cache/search_latency/`` per size; on Neo4j the data is reused when its tenants' counts match (it
holds one size at a time, so "at N memories" is true of the whole database: the loaded size is
measured first, then the next is rebuilt). Build time (store writes, plus the rule extraction and
planning before them) is reported apart from search time. A built store then gets
``Memory.optimize()``, as after any bulk load (on Neo4j it rebuilds the Lucene indexes, whose
segments the batched writes multiplied; its time is reported too); ``--optimize`` runs it on a
reused store. ``make bench-search`` starts a bundled Neo4j of its own (port 7688, data in
``.cache/neo4j-bench``, unless ``make bench-neo4j-start`` left it running) with a 1 GB page cache,
which holds the 100k store (the launcher's 256 MB default is for tests; Neo4j's guidance is a page
cache the size of the store). The machine's load average is saved next to each measurement: on
a busy machine compare the ratios more than the milliseconds.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import os
import random
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_data
from retrieval import search_config

from graphmem import Memory, MemoryConfig
from graphmem.config import SearchConfig
from graphmem.embedding import Embedder, HashingEmbedder
from graphmem.errors import InvalidInputError
from graphmem.extraction.contract import Extraction, ExtractionContext
from graphmem.extraction.rules import RuleExtractor
from graphmem.models import Entity, EventType, HistoryEvent, MemoryRecord, Relation, Scope, clean_text, norm_name
from graphmem.models import text_hash as hash_of
from graphmem.ontology import Ontology
from graphmem.search.graph import query_ngrams
from graphmem.stores.base import GraphWrite, NewEntity, NewMemory, Store
from graphmem.stores.neo4j import Neo4jStore

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / ".cache" / "search_latency"
BUILD_VERSION = 1
"""Bump when the data layout or graph recipe changes: cached stores of another version are rebuilt."""
MODES = ("vector", "fulltext", "graph", "hybrid", "no_graph")
BASELINE = "vector"
TENANT_PREFIX = "search-latency-"
ROLE_SPEAKERS = frozenset({"user", "assistant", "system", "tool"})
REFERENCE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
"""Fixed, so relative dates extract the same way on every run."""
SPEAKER_RELATIONS = ("likes", "interestedIn", "attended", "owns", "knows", "worksOn", "memberOf", "friendOf")
PAIR_RELATIONS = ("partOf", "locatedIn", "associatedWithPlace", "likes", "owns", "interestedIn")
"""Co-mention facts: relations with every traversal behaviour (plain, symmetric, inverse, transitive)."""
TARGET = {"backend": "neo4j", "size": 100_000, "mode": "hybrid", "p50_ms": 15.0, "round_trips": 1}
SQLITE_TARGET = {"backend": "sqlite", "size": 100_000, "mode": "hybrid", "p50_ms": 12.0, "common_p95_over_p50": 2.0,
                 "cold_first_search_ms": 100.0}
"""Issue 19: SQLite without a slow tail (query embedding excluded)."""

Vector = npt.NDArray[np.float32]


# -- data ---------------------------------------------------------------------------------------------


def common_queries(texts: Sequence[str], n: int, seed: int = 11) -> list[str]:
    """Three to five of the 40 words found in the most of ``texts`` (stopwords and short words left out)."""
    from graphmem.stores.text import STOPWORDS

    rows: Counter[str] = Counter()
    for t in texts:
        rows.update({w for w in re.findall(r"[a-z]+", t.lower()) if w not in STOPWORDS and len(w) > 2})
    top = [w for w, _ in rows.most_common(40)]
    rng = random.Random(seed)
    return list(dict.fromkeys(" ".join(rng.sample(top, rng.randint(3, 5))) for _ in range(3 * n)))[:n]


@dataclass(frozen=True)
class Doc:
    text: str
    speaker: str
    role: str
    source: str
    doc_id: str
    speakers: tuple[str, ...]
    """Everyone who speaks in the doc's conversation: the extractor resolves their names and short forms."""


def load_docs(data: Path) -> list[Doc]:
    """LoCoMo turns (all conversations), then LongMemEval_S turns, in file order."""
    docs: list[Doc] = []
    with gzip.open(data / "locomo-dev.json.gz", "rt", encoding="utf-8") as f:
        for c in json.load(f)["collections"]:
            who = tuple(sorted({d.get("speaker") or "user" for d in c["docs"]}))
            docs += [Doc(d["text"], d.get("speaker") or "user", "user", "locomo", f"{c['id']}/{d['id']}", who)
                     for d in c["docs"] if d["text"].strip()]
    with gzip.open(data / "longmemeval-s-dev.json.gz", "rt", encoding="utf-8") as f:
        for c in json.load(f)["collections"]:
            docs += [Doc(d["text"], d.get("speaker") or "user", d.get("speaker") or "user", "longmemeval",
                         f"{c['id']}/{d['id']}", ("assistant", "user")) for d in c["docs"] if d["text"].strip()]
    return docs


def load_queries(data: Path, n: int, seed: int = 5) -> list[str]:
    """A seeded sample of LoCoMo questions, so every conversation is asked about."""
    with gzip.open(data / "locomo-dev.json.gz", "rt", encoding="utf-8") as f:
        questions = list(dict.fromkeys(q["text"] for c in json.load(f)["collections"] for q in c["queries"]))
    random.Random(seed).shuffle(questions)
    if len(questions) < n:
        raise SystemExit(f"only {len(questions)} LoCoMo questions; ask for fewer (--queries + --warmup)")
    return questions[:n]


# -- the dataset: memories, entities, mentions and facts per tenant -----------------------------------


@dataclass
class EntityPlan:
    name: str
    classes: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


@dataclass
class FactPlan:
    memories: list[int]
    datatype: str | None = None
    synthetic: bool = False


FactKey = tuple[str, str, str | None, str | None]
"""(source entity key, relation IRI, target entity key, literal value)."""


@dataclass
class TenantPlan:
    user_id: str
    size: int
    texts: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    actors: list[str | None] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    hashes: dict[str, int] = field(default_factory=dict)
    entities: dict[str, EntityPlan] = field(default_factory=dict)
    index: dict[str, str] = field(default_factory=dict)
    """Normalized name or alias -> entity key."""
    mentions: set[tuple[int, str]] = field(default_factory=set)
    facts: dict[FactKey, FactPlan] = field(default_factory=dict)

    @property
    def full(self) -> bool:
        return len(self.texts) >= self.size

    def entity(self, name: str, classes: Sequence[str] = (), aliases: Sequence[str] = (),
               implied: Sequence[str] = ()) -> str:
        """The key of the entity named ``name`` (or an alias of it), created if new. ``implied``
        classes (a relation's domain or range) only type an entity that has no class yet."""
        key = self.index.get(norm_name(name))
        if key is None:
            key = norm_name(name)
            self.entities[key] = EntityPlan(name)
            self.index[key] = key
        ent = self.entities[key]
        ent.classes += [c for c in (classes or ([] if ent.classes else implied)) if c not in ent.classes]
        for alias in aliases:
            if norm_name(alias) not in self.index:
                self.index[norm_name(alias)] = key
                ent.aliases.append(alias)
        return key

    def fact(self, key: FactKey, memories: Sequence[int], datatype: str | None = None, synthetic: bool = False) -> None:
        plan = self.facts.setdefault(key, FactPlan([], datatype, synthetic))
        plan.memories += [m for m in memories if m not in plan.memories]
        plan.synthetic = plan.synthetic and synthetic
        for end in (key[0], key[2]):
            if end is not None:
                self.mentions.update((m, end) for m in memories)


def tenant_sizes(n: int, main_share: float, tenants: int) -> list[int]:
    """``main`` first, then the others in 1/i proportions of what is left."""
    main = round(n * main_share)
    weights = [1 / i for i in range(1, tenants)]
    rest = [int((n - main) * w / sum(weights)) for w in weights]
    if rest:
        rest[0] += n - main - sum(rest)
    return [main, *rest] if rest else [n]


class Planner:
    """Turns the doc stream into tenant plans; extractions are kept, so sizes of one run share them."""

    def __init__(self, docs: list[Doc], ontology: Ontology, links: int) -> None:
        self.docs, self.ontology, self.links = docs, ontology, links
        self.extractor = RuleExtractor(ontology)
        self._extracted: list[Extraction] = []
        self.extract_s = 0.0
        self.speaker_rels = [self._iri(r) for r in SPEAKER_RELATIONS]
        self.pair_rels = [self._iri(r) for r in PAIR_RELATIONS]
        self.person = ontology.resolve_class("Person")

    def _iri(self, name: str) -> str:
        iri = self.ontology.resolve_relation(name)
        if iri is None:
            raise SystemExit(f"the ontology has no relation {name!r}; update SPEAKER_RELATIONS/PAIR_RELATIONS")
        return iri

    def extraction(self, i: int) -> Extraction:
        while len(self._extracted) <= i:
            doc = self.docs[len(self._extracted)]
            t0 = time.perf_counter()
            ctx = ExtractionContext(ontology=self.ontology, reference_time=REFERENCE_TIME, speakers=list(doc.speakers))
            self._extracted.append(self.extractor.extract(f"{doc.speaker}: {doc.text}", ctx))
            self.extract_s += time.perf_counter() - t0
        return self._extracted[i]

    def plan(self, sizes: list[int], fp: str) -> list[TenantPlan]:
        tenants = [TenantPlan(f"{TENANT_PREFIX}{fp}-{'main' if i == 0 else f't{i}'}", s) for i, s in enumerate(sizes)]
        doc = 0
        for tenant in tenants:
            while not tenant.full:
                if doc >= len(self.docs):
                    raise SystemExit(f"the data holds fewer than {sum(sizes)} distinct memories; use smaller --sizes")
                self._add_doc(tenant, self.docs[doc], self.extraction(doc))
                doc += 1
        return tenants

    def _add_doc(self, t: TenantPlan, doc: Doc, ex: Extraction) -> None:
        kept: list[int | None] = []
        for m in ex.memories:
            try:
                text = clean_text(m.text, what="memory", max_chars=20_000)
            except InvalidInputError:
                kept.append(None)
                continue
            h = hash_of(text)
            if h not in t.hashes and t.full:
                kept.append(None)
                continue
            if h not in t.hashes:
                t.hashes[h] = len(t.texts)
                t.texts.append(text)
                t.roles.append(doc.role)
                t.actors.append(None if doc.speaker in ROLE_SPEAKERS else doc.speaker)
                t.metas.append({"source": doc.source, "doc_id": doc.doc_id})
            kept.append(t.hashes[h])
        live = [k for k in kept if k is not None]
        if not live:
            return
        onto = self.ontology
        specs: dict[str, tuple[str, list[str], list[str]]] = {}  # extracted entity: name, classes, aliases
        forms: dict[str, str] = {}  # casefolded surface form -> its entity's spec key
        for e in ex.entities:
            cls = onto.resolve_class(e.type) if e.type else None
            specs.setdefault(norm_name(e.name), (e.name, [cls] if cls else [], list(e.aliases)))
            for form in (e.name, *e.aliases):
                if form.strip():
                    forms.setdefault(form.strip().casefold(), norm_name(e.name))
        speaker = None
        if doc.speaker not in ROLE_SPEAKERS:
            speaker = t.entity(doc.speaker, [self.person] if self.person else [])
        pattern = _names_pattern(forms)
        placed: dict[int, list[str]] = {}
        for pos in range(len(kept)):
            found = pattern.finditer(ex.memories[pos].text) if pattern else iter(())
            placed[pos] = [k for k in (forms.get(m.group().casefold()) for m in found) if k is not None]
        found_any = {k for ks in placed.values() for k in ks}
        for spec in [k for k in specs if k not in found_any]:
            # concept names are lemmas ("inspiring story" in "inspiring stories"): match on word stems
            for pos in range(len(kept)):
                if _stems_in(specs[spec][0], ex.memories[pos].text):
                    placed[pos].append(spec)
        for pos, idx in enumerate(kept):
            if idx is None:
                continue
            # as in the ingest pipeline, an entity exists once a memory names it (or a fact uses it)
            named = [t.entity(*specs[k]) for k in dict.fromkeys(placed[pos])]
            t.mentions.update((idx, k) for k in named)
            chain = list(dict.fromkeys([*([speaker] if speaker else []), *named]))[: self.links + 1]
            for a, b in itertools.pairwise(chain):
                pool = self.speaker_rels if a == speaker else self.pair_rels
                rel = pool[int.from_bytes(hashlib.blake2b(f"{a}|{b}".encode(), digest_size=4).digest()) % len(pool)]
                t.fact((a, rel, b, None), [idx], synthetic=True)
        for tr in ex.triples:
            info = onto.relation_info(tr.relation)
            if info is None:
                continue  # the pipeline would quarantine it: not part of the graph
            at = kept[tr.memory] if tr.memory is not None and 0 <= tr.memory < len(kept) else None
            support = [at] if at is not None else live
            spec = specs.get(norm_name(tr.source), (tr.source, [], []))
            src = t.entity(*spec, implied=info.domain if len(info.domain) == 1 else ())
            if info.kind == "datatype":
                dt = info.range[0] if len(info.range) == 1 else None
                t.fact((src, info.iri, None, str(tr.target)), support, datatype=dt)
            else:
                spec = specs.get(norm_name(str(tr.target)), (str(tr.target), [], []))
                tgt = t.entity(*spec, implied=info.range if len(info.range) == 1 else ())
                t.fact((src, info.iri, tgt, None), support)


def _names_pattern(forms: dict[str, str]) -> re.Pattern[str] | None:
    """Whole-word, case-insensitive matches of any form; longest first, so "New York" beats "York"."""
    if not forms:
        return None
    alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE)


def _stems_in(name: str, text: str) -> bool:
    """Every word of ``name`` starts a word of ``text`` with its first max(3, len - 2) letters."""
    words = [w.casefold() for w in re.findall(r"\w+", text)]
    return all(any(w.startswith(n[: max(3, len(n) - 2)]) for w in words) for n in re.findall(r"\w+", name.casefold()))


def graph_stats(tenants: list[TenantPlan], queries: list[str]) -> dict[str, Any]:
    """Sizes per tenant, and the main tenant's fact degrees and how many queries link to an entity."""
    main = tenants[0]
    degree: Counter[str] = Counter()
    for src, _, tgt, _ in main.facts:
        degree[src] += 1
        if tgt is not None:
            degree[tgt] += 1
    degs = sorted(degree.values()) or [0]
    linked = sum(any(g in main.index for g in query_ngrams(q)) for q in queries)
    return {
        "tenants": [{"user_id": t.user_id, "memories": len(t.texts), "entities": len(t.entities),
                     "facts": len(t.facts), "synthetic_facts": sum(f.synthetic for f in t.facts.values()),
                     "mentions": len(t.mentions)} for t in tenants],
        "main_fact_degree": {
            "entities_with_facts": len(degree), "entities": len(main.entities),
            "p50": _pct(degs, 50), "p90": _pct(degs, 90), "p99": _pct(degs, 99), "max": degs[-1],
            "share_degree_1": round(sum(d == 1 for d in degs) / len(degs), 3),
            "hubs": [(main.entities[k].name, d) for k, d in degree.most_common(8)],
        },
        "main_facts_per_memory": round(len(main.facts) / max(1, len(main.texts)), 2),
        "queries_linking_an_entity": round(linked / max(1, len(queries)), 3),
    }


# -- building a store ---------------------------------------------------------------------------------


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def build(store: Store, tenants: list[TenantPlan], embedder: Embedder, batch: int) -> dict[str, float]:
    """Write every tenant: memories with ADD events, then entities, then mentions and facts."""
    now = datetime.now(UTC)
    embed_s = write_s = 0.0
    for t in tenants:
        scope = Scope(user_id=t.user_id)
        ids = [str(uuid.uuid4()) for _ in t.texts]
        for part in _chunks(range(len(t.texts)), batch):
            t0 = time.perf_counter()
            vectors = embedder.embed([t.texts[i] for i in part])
            embed_s += time.perf_counter() - t0
            mems, events = [], []
            for i, vec in zip(part, vectors, strict=True):
                rec = MemoryRecord(id=ids[i], memory=t.texts[i], hash=hash_of(t.texts[i]), user_id=t.user_id,
                                   role=t.roles[i], actor_id=t.actors[i], metadata=t.metas[i], created_at=now)
                mems.append(NewMemory(rec, vec))
                events.append(HistoryEvent(memory_id=rec.id, event=EventType.ADD, new_memory=rec.memory,
                                           user_id=t.user_id, actor_id=rec.actor_id, role=rec.role, created_at=now))
            t0 = time.perf_counter()
            store.insert(mems, events)
            write_s += time.perf_counter() - t0
        eids = {k: str(uuid.uuid4()) for k in t.entities}
        keys = list(t.entities)
        for part in _chunks(keys, batch):
            t0 = time.perf_counter()
            vectors = embedder.embed([t.entities[k].name for k in part])
            embed_s += time.perf_counter() - t0
            new = [NewEntity(Entity(id=eids[k], name=t.entities[k].name, classes=t.entities[k].classes,
                                    aliases=t.entities[k].aliases, user_id=t.user_id, created_at=now), v)
                   for k, v in zip(part, vectors, strict=True)]
            t0 = time.perf_counter()
            store.write(scope, GraphWrite(entities=new))
            write_s += time.perf_counter() - t0
        mentions = sorted((ids[m], eids[k]) for m, k in t.mentions)
        facts = [Relation(source_id=eids[src], relation=rel, target_id=eids[tgt] if tgt is not None else None,
                          value=value, datatype=f.datatype, memory_ids=[ids[m] for m in f.memories],
                          valid_from=REFERENCE_TIME, created_at=now, user_id=t.user_id)
                 for (src, rel, tgt, value), f in t.facts.items()]
        t0 = time.perf_counter()
        for part in _chunks(mentions, 4 * batch):
            store.write(scope, GraphWrite(mentions=list(part)))
        for part in _chunks(facts, batch):
            store.write(scope, GraphWrite(relations=list(part)))
        write_s += time.perf_counter() - t0
        print(f"    {t.user_id}: {len(t.texts)} memories, {len(t.entities)} entities, {len(t.facts)} facts",
              file=sys.stderr)
    return {"embed_s": round(embed_s, 1), "write_s": round(write_s, 1)}


def neo4j_config() -> dict[str, Any]:
    return {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
            "user": os.environ.get("NEO4J_USER", "neo4j"),
            "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}


def neo4j_foreign(store: Store, wipe: bool) -> int:
    """Nodes of other tenants in the database; refuses (exits) when there are some and ``wipe`` is off."""
    foreign = int(store.cypher(
        "MATCH (n) WHERE (n:Memory OR n:Entity) AND NOT coalesce(n.user_id, '') STARTS WITH $p "
        "RETURN count(n) AS n", {"p": TENANT_PREFIX})[0]["n"])
    if foreign and not wipe:
        raise SystemExit(f"the Neo4j database holds {foreign} memories/entities that are not this benchmark's; "
                         "point NEO4J_URI at a server of its own, or pass --wipe-neo4j to empty it")
    return foreign


def open_store(backend: str, size: int, fp: str, sizes: list[int], plans: Callable[[], list[TenantPlan]],
               embedder: Embedder, queries: list[str], args: argparse.Namespace) -> tuple[Memory, dict[str, Any]]:
    """A ``Memory`` over a store holding the dataset of ``size``: the cached one, or built now."""
    CACHE.mkdir(parents=True, exist_ok=True)
    meta_file = CACHE / f"{backend}-{size}-{fp}.json"
    main = Scope(user_id=f"{TENANT_PREFIX}{fp}-main")
    if backend == "sqlite":
        db = CACHE / f"sqlite-{size}-{fp}.db"
        if not meta_file.exists():
            for f in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
                f.unlink(missing_ok=True)
        store_cfg: dict[str, Any] = {"provider": "sqlite", "path": str(db)}
    else:
        store_cfg = neo4j_config()
    cfg = MemoryConfig.load({"home": str(CACHE), "store": store_cfg, "embedder": {"provider": "hashing"},
                             "llm": {"provider": "none"}})
    mem = Memory(cfg, embedder=embedder)
    store = mem.store
    ready = meta_file.exists() and store.count(None) == size and store.count(main) == sizes[0]
    if ready:
        meta = json.loads(meta_file.read_text())
        meta["reused"] = True
        if args.optimize:
            meta["optimize"] = mem.optimize()
            meta_file.write_text(json.dumps({**meta, "reused": False}, indent=2))
        return mem, meta
    if backend == "neo4j":
        neo4j_foreign(store, args.wipe_neo4j)
        store.reset()  # one size at a time: the database holds exactly the memories measured
        scale_data.defer_indexes(neo4j_config())  # built once by optimize() below
    meta_file.unlink(missing_ok=True)
    print(f"[{backend} {size}] building the store…", file=sys.stderr)
    t0 = time.perf_counter()
    tenants = plans()
    plan_s = time.perf_counter() - t0
    t0, cpu0 = time.perf_counter(), scale_data.cpu_seconds(server := scale_data.server_pid())
    parts = build(store, tenants, embedder, args.batch)
    total, cpu = time.perf_counter() - t0, scale_data.cpu_used(cpu0, scale_data.cpu_seconds(server))
    if store.count(None) != size:
        raise SystemExit(f"built {store.count(None)} memories, expected {size}")
    print(f"[{backend} {size}] optimizing the indexes…", file=sys.stderr)
    cpu0 = scale_data.cpu_seconds(server)
    optimized = mem.optimize()
    cpu_optimize = scale_data.cpu_used(cpu0, scale_data.cpu_seconds(server))
    meta = {"reused": False, "build_s": round(total, 1), "plan_s": round(plan_s, 1), **parts, "optimize": optimized,
            "memories_per_s": round(size / total), "with_optimize_memories_per_s": round(
                size / (total + optimized.get("seconds", 0.0))),
            "cpu_s": cpu, "optimize_cpu_s": cpu_optimize,
            **({"neo4j": {**scale_data.store_size(), **scale_data.server_memory(neo4j_config())},
                "indexes_during_load": "dropped (built by optimize)"} if backend == "neo4j" else {}),
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "stats": graph_stats(tenants, queries)}
    if backend == "sqlite":  # close (checkpoint the WAL) before marking the file complete
        mem.close()
        meta_file.write_text(json.dumps(meta, indent=2))
        mem = Memory(cfg, embedder=embedder)
    else:
        meta_file.write_text(json.dumps(meta, indent=2))
    return mem, meta


# -- timing -------------------------------------------------------------------------------------------


class FrozenEmbedder(Embedder):
    """Returns precomputed query vectors (a dict lookup), so timing excludes the embedding model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dims = inner, inner.name, inner.dims
        self.table: dict[str, Vector] = {}
        self.misses = 0

    def freeze(self, queries: Sequence[str]) -> None:
        texts = [clean_text(q, what="query") for q in queries]  # the text Memory.search embeds
        self.table.update(zip(texts, self.inner.embed(texts), strict=True))

    def _embed(self, texts: Sequence[str]) -> Vector:
        return self.inner.embed(texts)  # building the store

    def embed_one(self, text: str) -> Vector:
        vec = self.table.get(text)
        if vec is None:
            self.misses += 1
            return self.inner.embed_one(text)
        return vec


STORE_METHODS = tuple(n for n in dir(Store) if not n.startswith("_") and n not in ("open", "close"))
"""Every public method of the Store contract, so methods added to it are counted too."""


class TripCounter:
    """Counts, per search, public store calls (a result with ``round_trips``, as ``Candidates``, counts
    those) and, on Neo4j, Cypher statements run and Bolt request flushes (each awaits the server)."""

    def __init__(self) -> None:
        self.store_calls = 0
        self.methods: Counter[str] = Counter()
        self.statements = 0
        self.bolt = 0
        self._depth = 0

    def reset(self) -> None:
        self.store_calls = self.statements = self.bolt = 0
        self.methods.clear()

    def instrument(self, store: Store) -> None:
        for name in STORE_METHODS:
            setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            try:
                out = method(*args, **kwargs)
            finally:
                self._depth -= 1
            if self._depth == 0:  # a store method calling another is still one call
                trips = getattr(out, "round_trips", 1)
                self.store_calls += trips if isinstance(trips, int) else 1
                self.methods[name] += 1
            return out

        return counted

    @contextmanager
    def driver_counts(self) -> Iterator[bool]:
        """Patch the Neo4j driver to count statements and flushes; yields whether that worked."""
        try:
            from neo4j._sync.io._bolt._common import Outbox
            from neo4j._sync.work.session import Session
            from neo4j._sync.work.transaction import TransactionBase
        except ImportError:
            yield False
            return
        run: Callable[..., Any] = TransactionBase.run
        auto_run: Callable[..., Any] = Session.run  # auto-commit statements (the store's one-query reads)
        flush: Callable[..., Any] = Outbox.flush

        def counted_run(tx: Any, *args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return run(tx, *args, **kwargs)

        def counted_auto_run(session: Any, *args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return auto_run(session, *args, **kwargs)

        def counted_flush(box: Any, *args: Any, **kwargs: Any) -> Any:
            sent = flush(box, *args, **kwargs)
            self.bolt += bool(sent)
            return sent

        setattr(TransactionBase, "run", counted_run)  # noqa: B010 (patching a class, not an attribute typo)
        setattr(Session, "run", counted_auto_run)  # noqa: B010
        setattr(Outbox, "flush", counted_flush)  # noqa: B010
        try:
            yield True
        finally:
            setattr(TransactionBase, "run", run)  # noqa: B010
            setattr(Session, "run", auto_run)  # noqa: B010
            setattr(Outbox, "flush", flush)  # noqa: B010


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values, dtype=float), q)), 3) if values else float("nan")


def measure(mem: Memory, backend: str, user: str, modes: list[str], queries: list[str], warmup: list[str],
            top_k: int) -> dict[str, Any]:
    """Warm up, then time every query in every mode, the mode order rotating per query so that
    load from other processes falls on all modes alike."""
    configs: dict[str, SearchConfig] = {}
    for m in modes:
        cfg = search_config(m)
        if cfg is None:
            raise SystemExit(f"mode {m!r} is not served by Memory.search")
        configs[m] = cfg
    counter = TripCounter()
    counter.instrument(mem.store)
    lat: dict[str, list[float]] = {m: [] for m in modes}
    trips: dict[str, dict[str, list[int]]] = {m: {"reported": [], "store": [], "statements": [], "bolt": []}
                                             for m in modes}
    graph_hits: Counter[str] = Counter()
    results: dict[str, list[int]] = {m: [] for m in modes}
    with counter.driver_counts() as driver:
        for q in warmup:
            for m in modes:
                mem.config.search = configs[m]
                mem.search(q, user_id=user, top_k=top_k, explain=True)
        load_before = os.getloadavg()
        for i, q in enumerate(queries):
            for m in modes[i % len(modes) :] + modes[: i % len(modes)]:
                mem.config.search = configs[m]
                counter.reset()
                t0 = time.perf_counter()
                out = mem.search(q, user_id=user, top_k=top_k, explain=True)
                lat[m].append((time.perf_counter() - t0) * 1000)
                if isinstance(out.get("round_trips"), int):
                    trips[m]["reported"].append(out["round_trips"])
                trips[m]["store"].append(counter.store_calls)
                if backend == "neo4j" and driver:
                    trips[m]["statements"].append(counter.statements)
                    trips[m]["bolt"].append(counter.bolt)
                results[m].append(len(out["results"]))
                graph_hits[m] += any("graph" in (r.get("score_details") or {}) for r in out["results"])
        load_after = os.getloadavg()
    base = statistics.median(lat[BASELINE])
    out_modes: dict[str, Any] = {}
    for m in modes:
        t = trips[m]
        reported = len(t["reported"]) == len(lat[m])
        counted = {k: {"mean": round(statistics.fmean(v), 2), "max": max(v)} for k, v in t.items() if v}
        out_modes[m] = {
            "p50_ms": _pct(lat[m], 50), "p95_ms": _pct(lat[m], 95), "mean_ms": round(statistics.fmean(lat[m]), 3),
            "p50_vs_vector": round(statistics.median(lat[m]) / base, 2),
            "round_trips": counted["reported" if reported else "store"]["mean"],
            "round_trips_method": "search result 'round_trips'" if reported else "store calls counted here",
            "counted": counted,
            "mean_results": round(statistics.fmean(results[m]), 2),
            "queries_with_graph_hits": round(graph_hits[m] / len(queries), 3),
        }
    return {"modes": out_modes, "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after], "embedder_misses": _misses(mem)}


def vector_index(mem: Memory) -> dict[str, Any]:
    """Neo4j: the memory vector index's configuration (quantized or not decides how search over-fetches
    and whether it re-scores), so a result says which index it measured."""
    store = mem.store
    if not isinstance(store, Neo4jStore):
        return {}
    rows = store.cypher("SHOW VECTOR INDEXES YIELD name, options WHERE name = 'memory_embedding' RETURN options")
    return {"vector_index": rows[0]["options"].get("indexConfig", {}) if rows else None}


def _misses(mem: Memory) -> int:
    return mem.embedder.misses if isinstance(mem.embedder, FrozenEmbedder) else -1


def code_version() -> dict[str, Any]:
    """Which graphmem was measured: its folder, and the git commit (with uncommitted edits or not)."""
    import subprocess

    import graphmem

    where = Path(graphmem.__file__).resolve().parent
    out: dict[str, Any] = {"graphmem": str(where)}
    try:
        git = ["git", "-C", str(where)]
        out["commit"] = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                       check=True).stdout.strip()
        out["uncommitted_changes"] = bool(subprocess.run([*git, "status", "--porcelain", "--", "."],
                                                         capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        out["commit"] = None
    return out


def fingerprint(args: argparse.Namespace, size: int, backend: str) -> str:
    """What the cached data depends on (recipe, input, the store's schema version), so that a change
    is rebuilt, never reused."""
    import importlib

    schema = getattr(importlib.import_module(f"graphmem.stores.{backend}"), "SCHEMA_VERSION", None)
    files = [(p.name, p.stat().st_size) for p in sorted(Path(args.data).glob("*.json.gz"))]
    key = json.dumps([BUILD_VERSION, size, args.main_share, args.tenants, args.links, files, backend, str(schema),
                      *scale_data.recipe(size, args.synthetic)])
    return hashlib.blake2b(key.encode(), digest_size=5).hexdigest()


# -- cold start ---------------------------------------------------------------------------------------


def cold_child(db: str, user: str, queries: list[str]) -> None:
    """In a new process: open the store, time its first and second hybrid search, print JSON."""
    import graphmem

    embedder = FrozenEmbedder(HashingEmbedder(384))
    embedder.freeze(queries)
    cfg = MemoryConfig.load({"home": str(Path(db).parent), "store": {"provider": "sqlite", "path": db},
                             "embedder": {"provider": "hashing"}, "llm": {"provider": "none"}})
    t0 = time.perf_counter()
    mem = Memory(cfg, embedder=embedder)
    opened = time.perf_counter()
    mem.config.search = search_config("hybrid") or SearchConfig()
    times = []
    for q in queries[:2]:
        t1 = time.perf_counter()
        mem.search(q, user_id=user, top_k=10, explain=True)
        times.append((time.perf_counter() - t1) * 1000)
    t2 = time.perf_counter()
    mem.close()
    print(json.dumps({"open_ms": round((opened - t0) * 1000, 2), "first_search_ms": round(times[0], 2),
                      "second_search_ms": round(times[1], 2),
                      "close_ms": round((time.perf_counter() - t2) * 1000, 2), "graphmem": graphmem.__file__,
                      "embedder_misses": embedder.misses}))


def _child(tree: Path, argv: list[str]) -> Any:
    """Run this script in a new process importing the graphmem of ``tree``; its last line of JSON."""
    import subprocess
    import tempfile

    env = {**os.environ, "PYTHONPATH": str(tree)}
    # cwd elsewhere, so that the tree on PYTHONPATH is the graphmem imported
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], env=env, check=True,
                         capture_output=True, text=True, timeout=1800, cwd=tempfile.gettempdir())
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if not got["graphmem"].startswith(str(tree.resolve())):
        raise SystemExit(f"the child imported {got['graphmem']}, not the tree {tree}")
    return got


def cold_start(db: Path, user: str, queries: list[str], runs: int, trees: dict[str, Path]) -> dict[str, Any]:
    """First searches of freshly started processes: this checkout without its vector snapshot (the
    store loads every vector through SQL, then writes one), then ``runs`` with it, alternating with
    the baseline commit's code when there is one."""

    def child(tree: Path, qs: list[str]) -> dict[str, Any]:
        got: dict[str, Any] = _child(tree, ["--cold-child", str(db.resolve()), user, json.dumps(qs)])
        got["loadavg"] = round(os.getloadavg()[0], 2)
        return got

    out: dict[str, Any] = {"runs": runs, "queries": "two LoCoMo questions per process, not asked before in it"}
    db.with_name(db.name + "-vectors").unlink(missing_ok=True)
    out["current_no_snapshot"] = child(trees["current"], queries[:2])
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for i in range(runs):
        for name, tree in trees.items():
            samples[name].append(child(tree, queries[2 + 2 * i : 4 + 2 * i]))
    for name, rows in samples.items():
        out[name] = {key: round(statistics.median(r[key] for r in rows), 2)
                     for key in ("open_ms", "first_search_ms", "second_search_ms", "close_ms")}
        out[name]["samples"] = rows
    if "baseline" in samples:
        out["ratio_first_search"] = round(out["current"]["first_search_ms"] / out["baseline"]["first_search_ms"], 2)
    return out


def warm_child(db: str, user: str, payload: dict[str, Any]) -> None:
    """In a new process: warm up, then time each query in each mode (rotating), print JSON. The store
    is the SQLite file ``db``, or ``payload["store"]`` when given (Neo4j)."""
    import graphmem

    embedder = FrozenEmbedder(HashingEmbedder(384))
    embedder.freeze(payload["warmup"] + payload["queries"])
    store = payload.get("store") or {"provider": "sqlite", "path": db}
    cfg = MemoryConfig.load({"home": str(Path(db).parent), "store": store,
                             "embedder": {"provider": "hashing"}, "llm": {"provider": "none"}})
    modes: list[str] = payload["modes"]
    configs = {m: search_config(m) or SearchConfig() for m in modes}
    lat: dict[str, list[float]] = {m: [] for m in modes}
    trips: dict[str, list[int]] = {m: [] for m in modes}
    with Memory(cfg, embedder=embedder) as mem:
        for q in payload["warmup"]:
            for m in modes:
                mem.config.search = configs[m]
                mem.search(q, user_id=user, top_k=10, explain=True)
        for i, q in enumerate(payload["queries"]):
            for m in modes[i % len(modes) :] + modes[: i % len(modes)]:
                mem.config.search = configs[m]
                t0 = time.perf_counter()
                out = mem.search(q, user_id=user, top_k=10, explain=True)
                lat[m].append((time.perf_counter() - t0) * 1000)
                if isinstance(out.get("round_trips"), int):
                    trips[m].append(out["round_trips"])
    print(json.dumps({"lat": lat, "round_trips": trips, "graphmem": graphmem.__file__,
                      "embedder_misses": embedder.misses}))


def same_run(db: Path, user: str, modes: list[str], sets: dict[str, tuple[list[str], list[str]]],
             trees: dict[str, Path], block: int = 50, store: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each query set timed with each tree's code, in new processes taking blocks of ``block``
    queries in turn, so load from other work falls on both trees alike. ``store``: a store
    configuration the children open instead of the SQLite file ``db`` (Neo4j)."""
    out: dict[str, Any] = {"block": block, "how": "each tree in its own processes, alternating query blocks"}
    for name, (queries, warmup) in sets.items():
        lat: dict[str, dict[str, list[float]]] = {t: {m: [] for m in modes} for t in trees}
        trips: dict[str, dict[str, list[int]]] = {t: {m: [] for m in modes} for t in trees}
        loads = []
        for start in range(0, len(queries), block):
            for tree_name, tree in trees.items():
                payload = {"modes": modes, "warmup": warmup, "queries": queries[start : start + block],
                           **({"store": store} if store else {})}
                got = _child(tree, ["--warm-child", str(db.resolve()), user, json.dumps(payload)])
                for m in modes:
                    lat[tree_name][m] += got["lat"][m]
                    trips[tree_name][m] += got.get("round_trips", {}).get(m, [])
                loads.append(os.getloadavg()[0])
        row: dict[str, Any] = {"loadavg": [round(min(loads), 2), round(max(loads), 2)]}
        for tree_name in trees:
            row[tree_name] = {m: {"p50_ms": _pct(v, 50), "p95_ms": _pct(v, 95),
                                  **({"round_trips_mean": round(statistics.fmean(trips[tree_name][m]), 2),
                                      "round_trips_max": max(trips[tree_name][m])} if trips[tree_name][m] else {})}
                              for m, v in lat[tree_name].items()}
        if "baseline" in trees:
            row["ratio_p50"] = {m: round(row["current"][m]["p50_ms"] / row["baseline"][m]["p50_ms"], 2) for m in modes}
            row["ratio_p95"] = {m: round(row["current"][m]["p95_ms"] / row["baseline"][m]["p95_ms"], 2) for m in modes}
        out[name] = row
    return out


# -- main ---------------------------------------------------------------------------------------------


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--cold-child":
        cold_child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "--warm-child":
        warm_child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="sqlite,neo4j", help="comma-separated: sqlite, neo4j")
    p.add_argument("--sizes", default="10000,100000", help="memories in the store (all tenants)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=150,
                   help="further questions run untimed first, in every mode (the JVM compiles hot code)")
    p.add_argument("--modes", default=",".join(MODES), help=f"some of {', '.join(MODES)}; {BASELINE} always runs")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--main-share", type=float, default=0.7, help="share of the memories in the queried tenant")
    p.add_argument("--tenants", type=int, default=10)
    p.add_argument("--links", type=int, default=2, help="co-mention facts per memory, at most")
    p.add_argument("--batch", type=int, default=1000, help="memories (entities, facts) per store write")
    p.add_argument("--wipe-neo4j", action="store_true", help="allow emptying a Neo4j database with other data")
    p.add_argument("--optimize", action="store_true",
                   help="run Memory.optimize() on a reused store too (a built one always gets it)")
    p.add_argument("--synthetic", action="store_true",
                   help=f"sizes above {scale_data.REAL_BASE} extend the real data with variants (bench/scale_data.py)")
    p.add_argument("--data", default=str(DATA), help="benchmark data folder (format: shared/data/README.md)")
    p.add_argument("--query-sets", default="natural,common",
                   help="natural (LoCoMo questions) and/or common (3-5 of the tenant's 40 most frequent words)")
    p.add_argument("--cold", type=int, default=3, help="SQLite cold-start processes per tree (0: none)")
    p.add_argument("--baseline-ref", default=None,
                   help="a commit whose code is timed in the same run (every query set in alternating processes, "
                        "both backends; SQLite cold starts too), from a temporary worktree")
    p.add_argument("--out", default="bench/results/search_latency.json")
    args = p.parse_args()
    query_sets = [q.strip() for q in args.query_sets.split(",") if q.strip()]
    if not query_sets or set(query_sets) - {"natural", "common"}:
        raise SystemExit("--query-sets takes natural and/or common")

    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if set(backends) - {"sqlite", "neo4j"}:
        raise SystemExit("--backend takes sqlite and/or neo4j")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(modes) - set(MODES):
        raise SystemExit(f"--modes takes {', '.join(MODES)}")
    modes = list(dict.fromkeys([BASELINE, *modes]))
    texts = load_queries(Path(args.data), args.queries + args.warmup + 2 + 2 * args.cold)
    cold_queries = texts[args.queries + args.warmup :]
    texts = texts[: args.queries + args.warmup]
    queries, warmup = texts[: args.queries], texts[args.queries :]
    embedder = FrozenEmbedder(HashingEmbedder(384))
    t0 = time.perf_counter()
    embedder.freeze(texts)
    embed_queries_ms = (time.perf_counter() - t0) * 1000 / len(texts)

    trees: dict[str, Path] = {"current": ROOT}
    if args.baseline_ref:
        import subprocess
        import tempfile

        trees["baseline"] = Path(tempfile.mkdtemp(prefix="graphmem-search-base-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(trees["baseline"]),
                        args.baseline_ref], check=True)
    try:
        return _run(args, backends, sizes, modes, query_sets, queries, warmup, cold_queries, embedder,
                    embed_queries_ms, trees)
    finally:
        if "baseline" in trees:
            import subprocess

            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees["baseline"])],
                           check=False)


def _run(args: argparse.Namespace, backends: list[str], sizes: list[int], modes: list[str], query_sets: list[str],
         queries: list[str], warmup: list[str], cold_queries: list[str], embedder: FrozenEmbedder,
         embed_queries_ms: float, trees: dict[str, Path]) -> int:
    loaded = 0  # Neo4j holds one size at a time: measure the loaded one first, then rebuild for the next
    if "neo4j" in backends:
        check = Memory({"store": neo4j_config(), "llm": {"provider": "none"}}, embedder=embedder)
        try:
            neo4j_foreign(check.store, wipe=args.wipe_neo4j)  # fail before other runs, not after them
            loaded = check.store.count(None)
        finally:
            check.close()

    planner: Planner | None = None

    def plans_for(size: int, fp: str) -> Callable[[], list[TenantPlan]]:
        def make() -> list[TenantPlan]:
            nonlocal planner
            if planner is None:
                onto_cfg = MemoryConfig.load({"llm": {"provider": "none"}}).ontology
                planner = Planner(load_docs(Path(args.data)), Ontology.load(onto_cfg.ontology, onto_cfg.shapes),
                                  args.links)
            before = planner.extract_s
            synthetic = bool(scale_data.recipe(size, args.synthetic))
            real = min(size, scale_data.REAL_BASE) if synthetic else size
            out = planner.plan(tenant_sizes(real, args.main_share, args.tenants), fp)
            if synthetic:
                out = scale_data.extend(out, tenant_sizes(size, args.main_share, args.tenants))  # type: ignore[arg-type]
            print(f"    rule extraction {planner.extract_s - before:.1f}s", file=sys.stderr)
            return out

        return make

    runs: list[dict[str, Any]] = []
    for backend in backends:
        for size in sorted(sizes, key=lambda n: n != loaded) if backend == "neo4j" else sizes:
            fp = fingerprint(args, size, backend)
            split = tenant_sizes(size, args.main_share, args.tenants)
            mem, meta = open_store(backend, size, fp, split, plans_for(size, fp), embedder, queries, args)
            try:
                how = "reused" if meta["reused"] else f"built in {meta['build_s']}s"
                print(f"[{backend} {size}] store {how}; timing {len(queries)} queries x {len(modes)} modes…",
                      file=sys.stderr)
                user = f"{TENANT_PREFIX}{fp}-main"
                result: dict[str, Any] = {}
                sets: dict[str, tuple[list[str], list[str]]] = {}
                if "natural" in query_sets:
                    result = measure(mem, backend, user, modes, queries, warmup, args.top_k)
                    sets["natural"] = (queries, warmup[:30])
                if "common" in query_sets:
                    tenant = [r.memory for r in mem.store.list_memories(Scope(user_id=user), None, size)]
                    common = common_queries(tenant, len(queries) + 30)
                    embedder.freeze(common)
                    result["common"] = {"query_source": "3-5 of the 40 words in the most memories of the tenant",
                                        **measure(mem, backend, user, modes, common[30:], common[:30], args.top_k)}
                    sets["common"] = (common[30:], common[:30])
                    if "modes" not in result:
                        result["modes"] = result["common"]["modes"]
                index = vector_index(mem)
                db = getattr(mem.store, "path", None)
            finally:
                mem.close()  # SQLite: writes the vector snapshot the cold starts below read
            if backend == "neo4j" and "baseline" in trees:
                print(f"[{backend} {size}] this tree and {args.baseline_ref}, alternating…", file=sys.stderr)
                result["same_run"] = {"baseline_ref": args.baseline_ref,
                                      **same_run(CACHE / "neo4j", user, modes, sets, trees, store=neo4j_config())}
            if backend == "sqlite" and isinstance(db, Path):
                if "baseline" in trees:
                    print(f"[{backend} {size}] this tree and {args.baseline_ref}, alternating…", file=sys.stderr)
                    result["same_run"] = {"baseline_ref": args.baseline_ref, **same_run(db, user, modes, sets, trees)}
                if args.cold:
                    print(f"[{backend} {size}] cold starts…", file=sys.stderr)
                    result["cold_start"] = cold_start(db, user, cold_queries, args.cold, trees)
            runs.append({"backend": backend, "size": size, "tenant_sizes": split, "build": meta, **index, **result})
    runs.sort(key=lambda r: (r["size"], backends.index(r["backend"])))

    report = {
        "benchmark": "search latency per mode (issue 5)",
        "call": f"Memory.search(q, user_id=<main>, top_k={args.top_k}, explain=True)",
        "target": TARGET, "target_sqlite": SQLITE_TARGET,
        "queries": len(queries), "warmup": len(warmup), "query_source": "locomo-dev.json.gz questions (seeded sample)",
        "query_embedding": {"excluded": True, "how": "precomputed vectors returned by the embedder passed to Memory",
                            "hashing_embed_ms_per_query": round(embed_queries_ms, 3)},
        "modes": {m: (search_config(m) or SearchConfig()).model_dump(include={"weights", "fusion"}) for m in modes},
        "baseline": f"{BASELINE} mode on the same store, same run",
        "layout": {"main_share": args.main_share, "tenants": args.tenants, "links": args.links,
                   "memories": "rule-extracted sentences of LoCoMo turns, then LongMemEval_S turns",
                   "facts": "rule-extracted triples + co-mention facts (speaker, then entities in reading order)"},
        "cpus": os.cpu_count(),
        "code": code_version(),
        "runs": runs,
    }
    print_table(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


def print_table(report: dict[str, Any]) -> None:
    print(f"\nsearch latency: {report['call']}, {report['queries']} LoCoMo questions in the main tenant "
          f"(query embedding excluded); ratio = p50 / {BASELINE} p50 on the same store")
    print(f"{'backend':8} {'size':>7} {'queries':8} {'mode':9} {'p50 ms':>7} {'p95 ms':>7} {'ratio':>6} "
          f"{'p95/p50':>7} {'trips':>6} {'stmts':>6} {'bolt':>5} {'graph hits':>10} {'load':>5}")
    for r in report["runs"]:
        sets = [("natural", r)] if "loadavg_before" in r else []
        sets += [("common", r["common"])] if "common" in r else []
        for name, qs in sets:
            for mode, s in qs["modes"].items():
                c = s["counted"]
                stmts = f"{c['statements']['mean']:.2f}" if "statements" in c else "-"
                bolt = f"{c['bolt']['mean']:.2f}" if "bolt" in c else "-"
                print(f"{r['backend']:8} {r['size']:>7} {name:8} {mode:9} {s['p50_ms']:>7.2f} {s['p95_ms']:>7.2f} "
                      f"{s['p50_vs_vector']:>5.2f}x {s['p95_ms'] / s['p50_ms']:>7.2f} {s['round_trips']:>6.2f} "
                      f"{stmts:>6} {bolt:>5} {s['queries_with_graph_hits']:>10.0%} {qs['loadavg_before'][0]:>5}")
    for r in report["runs"]:
        same = r.get("same_run")
        if not same:
            continue
        print(f"\nsame run, {r['backend']} {r['size']}: this tree against {same['baseline_ref']} "
              f"({same['how']}, blocks of {same['block']})")
        print(f"{'queries':8} {'mode':9} {'before p50/p95 ms':>18} {'now p50/p95 ms':>16} {'ratio p50/p95':>14} "
              f"{'load':>10}")
        for name in ("natural", "common"):
            if name not in same:
                continue
            row = same[name]
            for mode in row["current"]:
                b, c = row["baseline"][mode], row["current"][mode]
                print(f"{name:8} {mode:9} {b['p50_ms']:>8.2f} /{b['p95_ms']:>7.2f} {c['p50_ms']:>7.2f} /"
                      f"{c['p95_ms']:>7.2f} "
                      f"{row['ratio_p50'][mode]:>6.2f} /{row['ratio_p95'][mode]:>5.2f} "
                      f"{row['loadavg'][0]:>4}-{row['loadavg'][1]}")
    for r in report["runs"]:
        cold = r.get("cold_start")
        if not cold:
            continue
        print(f"\ncold start, {r['backend']} {r['size']} (a new process; medians of {cold['runs']} runs):")
        for name in ("current_no_snapshot", "current", "baseline"):
            if name in cold:
                c = cold[name]
                print(f"  {name:20} open {c['open_ms']:>8.1f} ms  first search {c['first_search_ms']:>8.1f} ms  "
                      f"second {c['second_search_ms']:>7.1f} ms  close {c['close_ms']:>7.1f} ms")
        if "ratio_first_search" in cold:
            print(f"  first search, current / baseline: {cold['ratio_first_search']:.2f}x")
    print("\nbuilds:")
    for r in report["runs"]:
        b = r["build"]
        st = b.get("stats", {})
        deg = st.get("main_fact_degree", {})
        how = "cached, built" if b["reused"] else "built"
        opt = f"optimize {b['optimize']['seconds']}s" if "optimize" in b else "optimize not run"
        print(f"  {r['backend']:8} {r['size']:>7}: {how} in {b['build_s']}s (+{b.get('plan_s', '?')}s extraction), "
              f"{b.get('memories_per_s', '?')} memories/s "
              f"({b.get('with_optimize_memories_per_s', '?')}/s with optimize); "
              f"tenants {r['tenant_sizes']}; "
              f"main: {deg.get('entities', '?')} entities, {st.get('main_facts_per_memory', '?')} facts/memory, "
              f"fact degree p50 {deg.get('p50', '?')} p99 {deg.get('p99', '?')} max {deg.get('max', '?')}; "
              f"{opt}; "
              f"load {r['loadavg_before'][0]}->{r['loadavg_after'][0]}")
    t = TARGET
    for r in report["runs"]:
        if r["backend"] == t["backend"] and r["size"] == t["size"] and t["mode"] in r["modes"]:
            s = r["modes"][t["mode"]]
            ok = s["p50_ms"] <= t["p50_ms"] and s["round_trips"] <= t["round_trips"]
            print(f"\ntarget {t['backend']} {t['mode']} p50 <= {t['p50_ms']} ms at {t['size']} in "
                  f"{t['round_trips']} round trip: {s['p50_ms']:.2f} ms, {s['round_trips']:.2f} round trips -> "
                  f"{'met' if ok else 'NOT met'}")
    t = SQLITE_TARGET
    for r in report["runs"]:
        if r["backend"] != t["backend"] or r["size"] != t["size"]:
            continue
        checks = []
        if "loadavg_before" in r and t["mode"] in r["modes"]:
            checks.append((f"hybrid p50 <= {t['p50_ms']} ms", r["modes"][t["mode"]]["p50_ms"], t["p50_ms"]))
        if "common" in r and t["mode"] in r["common"]["modes"]:
            c = r["common"]["modes"][t["mode"]]
            checks.append(("common-word hybrid p95 / p50 <= 2", round(c["p95_ms"] / c["p50_ms"], 2),
                           t["common_p95_over_p50"]))
        if "cold_start" in r:
            checks.append((f"first search <= {t['cold_first_search_ms']} ms",
                           r["cold_start"]["current"]["first_search_ms"], t["cold_first_search_ms"]))
        for what, got, limit in checks:
            print(f"target sqlite {t['size']} {what}: {got} -> {'met' if got <= limit else 'NOT met'}")
    misses = sum(r.get("embedder_misses", 0) for r in report["runs"] if r.get("embedder_misses", 0) > 0)
    if misses:
        print(f"warning: {misses} queries were embedded inside the timed call")


if __name__ == "__main__":
    sys.exit(main())
