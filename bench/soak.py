"""Soak test of the REST server: RSS, files, threads and latency under mixed load for a long time.

    python bench/soak.py [--minutes 30] [--clients 8] [--backends sqlite,neo4j]
                         [--out bench/results/soak_{backend}.json] [--plot bench/results/soak_{backend}.png]

For each backend, ``graphmem serve`` runs in its own process (data in a temporary folder, the default
embedder, the rule extractor) with one API key per client, each bound to its own user. ``--clients``
threads, each with its own keep-alive ``httpx.Client``, send a mix (``--mix``) of

- ``add_infer``: ``POST /v1/memories`` with ``infer: true``, natural sentences about people, places
  and jobs with ever new names, so the rule extractor keeps making entities and facts;
- ``add_verbatim``: the same with ``infer: false`` (notes, reminders);
- ``search``: ``POST /v1/search``, questions about names the client added;
- ``get_all``: ``GET /v1/memories`` (a page of up to 100);
- ``delete``: ``DELETE /v1/memories/{id}`` of a random memory of the client's working set.

Each client keeps at most ``--working-set`` memories (default 150): beyond, it deletes its oldest
(also counted as ``delete``), so the store's size levels off and RSS growth can be told from data
growth. Adds carry a ``run_id`` that changes every ``--run-every`` adds of a client (a conversation),
as an agent's do, so per-scope state is exercised too (0: no run_id). Every ``--pause-every`` minutes
all clients pause for ``--pause-seconds`` (15): traffic comes in bursts, and the server's idle worker
threads (AnyIO retires those idle for 10 s) are replaced by new ones, as between a real server's busy
spells (0: never).

Every ``--interval`` seconds (10) it samples the server process (psutil): RSS (also its anonymous
and file-backed parts), open files and descriptors, threads, CPU; per operation the requests, p50/p95/p99
and errors of that window; and the store's size (memories, entities, facts, history of the soak's
users). Writes JSON (``--out``: samples, totals, every distinct error text, verdict) and a PNG
(``--plot``: RSS and store size, p95 per operation, throughput) per backend, and prints a table.

Verdict, over the last 20 minutes of the run (the last 2/3 when the run is shorter than 30 minutes):
- ``rss_flat``: max/min in that window of RSS less the SQLite store's mapped pages <= 1.10 (RSS
  counts a page of the database once per connection that mapped it: see ``file_maps``; both are saved);
- ``no_errors``: no failed request (any non-2xx answer or transport error) in the whole run;
- ``p95_stable``: for every operation, the p95 of the last minute (its requests pooled) <= 1.5x the
  median of the per-sample p95s in the window.

Neo4j comes from ``NEO4J_URI`` / ``NEO4J_USER`` / ``NEO4J_PASSWORD``; a Neo4j store is pinned to the
embedder that first wrote it, so use a database of its own (``make bench-soak`` starts one on port
7689, data in ``.cache/neo4j-soak``). The soak's users are deleted from it afterwards (``DELETE
/v1/memories`` per key; their history events stay, as ``delete_all`` keeps them).

Finding what grows: ``--probe`` starts the server through ``bench/soak_server.py`` and sends it
SIGUSR1 when it is ready, then every ``--probe-every`` seconds (60); each signal records glibc's and
SQLite's memory, and how full graphmem's caches and per-scope structures are (``probes`` in the
JSON). ``--tracemalloc 25`` also traces Python's allocations (25 frames) from the first signal on:
each probe then lists the allocations still alive that grew since the first, by traceback; the last
probe's top entries go into the JSON (latencies and RSS of such a run are not the server's).
``--server-env MALLOC_ARENA_MAX=2`` and the like pass environment variables to the server.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import serving  # bench/serving.py: this folder is the script's first import path

from graphmem.servers.auth import new_key

ROOT = Path(__file__).resolve().parent.parent
OPS = ("add_infer", "add_verbatim", "search", "get_all", "delete")
DEFAULT_MIX = "add_infer=30,add_verbatim=15,search=35,get_all=10,delete=10"

# -- what the clients say ----------------------------------------------------------------------------
FIRST = """Maria Tomas Priya Kenji Lena Omar Sara Carlos Aisha Jonas Yuki Ingrid Mateo Chloe Rahul Fatima
Lucas Elena Hiroshi Amara Noah Sofia Diego Leila Anders Mei Kwame Hannah Pavel Zara Felix Nadia Oscar
Ines Tariq Greta Jamal Olga Rafael Keiko Emil Beatriz Samir Freya Viktor Lucia Arjun Maya Bruno Ayumi
Liam Nora Khalid Astrid Marco Daniela Ravi Helga Jonah Paloma""".split()
LAST = """Okafor Berg Nair Sato Fischer Haddad Mendez Bello Weber Tanaka Larsen Rossi Dubois Sharma Khan
Silva Novak Costa Yamamoto Mensah Cohen Moreau Lindqvist Petrov Kowalski Eriksen Alvarez Park Nguyen
Schmidt Ibrahim Jensen Romano Wagner Kaur Ortiz Hansen Ferreira Suzuki Adeyemi Bauer Lopez Nielsen
Kovacs Marino Hoffman Osei Duarte Ivanova Brennan Castillo Varga Sorensen Takahashi Mwangi Richter
Moretti Andersen Vargas Keller""".split()
CITIES = """Lisbon Oslo Chicago Kyoto Munich Denver Austin Nairobi Toronto Madrid Dublin Seoul Lagos Prague
Vienna Boston Seattle Lyon Porto Bergen Osaka Accra Krakow Hamburg Melbourne Auckland Montreal Sevilla
Gothenburg Rotterdam Bologna Valencia Edinburgh Calgary Phoenix Atlanta Helsinki Tallinn Riga Zagreb
Budapest Athens Istanbul Marseille Antwerp Geneva Zurich Copenhagen Stockholm Warsaw""".split()
JOBS = ["nurse", "software engineer", "teacher", "architect", "pharmacist", "accountant", "chef",
        "electrician", "journalist", "dentist", "lawyer", "data scientist", "pilot", "photographer",
        "mechanic", "librarian", "veterinarian", "physiotherapist", "carpenter", "translator"]
ORG_A = """Northwind Bluefin Globex Initech Umbrella Stark Wayne Acme Vandelay Hooli Pied Soylent Cyberdyne
Tyrell Wonka Aperture Gringotts Oscorp Massive Dunder Sterling Prestige Monarch Oceanic Nakatomi""".split()
ORG_B = ["Logistics", "Analytics", "Foods", "Labs", "Systems", "Health", "Media", "Robotics", "Energy",
         "Bank", "Studios", "Pharma", "Airlines", "Consulting", "Hospital"]
RELATIVES = ["brother", "sister", "cousin", "friend", "colleague", "neighbour", "aunt", "uncle"]
FOODS = ["peanuts", "shellfish", "gluten", "penicillin", "cats", "pollen", "lactose", "eggs"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
TOPICS = ["budget", "launch", "hiring", "quarterly report", "migration", "roadmap", "offsite", "audit",
          "contract renewal", "customer visit", "security review", "onboarding"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]

FACTS = [  # infer=True: what the rule extractor turns into entities and facts
    "{p} lives in {city} and works as a {job} at {org}.",
    "My {rel} {p} moved to {city} last year.",
    "{p} works for {org} in {city}.",
    "I met {p} in {city}; {pr} is a {job}.",
    "{p} was born in {city} in {year}.",
    "{p} is married to {q}.",
    "I started working at {org} in {month}.",
    "{p} is the manager of the {city} office.",
    "My friend {p} is allergic to {food}.",
    "{p} left {org} in {month} and joined {org2}.",
    "I live in {city} now.",
    "{p} and {q} both work at {org}.",
]
NOTES = [  # infer=False: stored as they are
    "Reminder: call {p} about the {topic} on {day}.",
    "Meeting notes: {p} presented the {topic} plan for {org}; follow up with {q} by {day}.",
    "Todo: book the flight to {city} for the {topic} with {p}.",
    "{p} prefers email over phone calls, and answers fastest on {day} mornings.",
    "The {topic} at {org} moved to {month}; {p} owns it.",
]
QUESTIONS = [
    "Where does {p} live?", "Who works at {org}?", "What does {p} do for a living?", "Who did I meet in {city}?",
    "{topic} with {p}", "Who is {p} married to?", "What is {p} allergic to?", "Where was {p} born?",
    "Who manages the {city} office?", "When did I start at {org}?",
]


class Talk:
    """A client's sentences: new people, places and jobs every time, names it can ask about later."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def person(self) -> str:
        return f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"

    def org(self) -> str:
        return f"{self.rng.choice(ORG_A)} {self.rng.choice(ORG_B)}"

    def fill(self, template: str) -> tuple[str, list[str]]:
        r = self.rng
        p, q = self.person(), self.person()
        org = self.org()
        text = template.format(p=p, q=q, city=r.choice(CITIES), job=r.choice(JOBS), org=org, org2=self.org(),
                               rel=r.choice(RELATIVES), pr=r.choice(["he", "she"]), food=r.choice(FOODS),
                               month=r.choice(MONTHS), year=r.randint(1950, 2004), topic=r.choice(TOPICS),
                               day=r.choice(DAYS))
        return text, [n for n in (p, q, org) if n in text]

    def fact(self) -> tuple[str, list[str]]:
        return self.fill(self.rng.choice(FACTS))

    def note(self) -> tuple[str, list[str]]:
        return self.fill(self.rng.choice(NOTES))

    def question(self, names: list[str]) -> str:
        r = self.rng
        name = r.choice(names) if names and r.random() < 0.8 else self.person()
        return r.choice(QUESTIONS).format(p=name, org=name if " " in name and r.random() < 0.3 else self.org(),
                                          city=r.choice(CITIES), topic=r.choice(TOPICS))


# -- measuring ---------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def lat_stats(ms: list[float], seconds: float, errors: int) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": len(ms), "errors": errors, "rps": round(len(ms) / seconds, 2) if seconds else 0}
    if ms:
        out.update(p50_ms=round(percentile(ms, 0.5), 1), p95_ms=round(percentile(ms, 0.95), 1),
                   p99_ms=round(percentile(ms, 0.99), 1), max_ms=round(max(ms), 1))
    return out


class Recorder:
    """Latencies and errors of every client, per sampling window and in total."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.window: dict[str, list[float]] = {op: [] for op in OPS}
        self.window_errors: collections.Counter[str] = collections.Counter()
        self.total: dict[str, list[float]] = {op: [] for op in OPS}
        self.total_errors: collections.Counter[str] = collections.Counter()
        self.error_texts: dict[str, dict[str, Any]] = {}
        self.started = time.monotonic()

    def ok(self, op: str, seconds: float) -> None:
        ms = seconds * 1000
        with self.lock:
            self.window[op].append(ms)
            self.total[op].append(ms)

    def error(self, op: str, text: str) -> None:
        key = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
        key = re.sub(r"soak-[0-9a-f]+-c\d+", "<user>", key)
        with self.lock:
            self.window_errors[op] += 1
            self.total_errors[op] += 1
            seen = self.error_texts.get(key)
            if seen is None:
                self.error_texts[key] = {"op": op, "count": 1, "first_t_s": round(time.monotonic() - self.started, 1),
                                         "text": text}
            else:
                seen["count"] += 1

    def swap(self) -> tuple[dict[str, list[float]], collections.Counter[str]]:
        with self.lock:
            window, errors = self.window, self.window_errors
            self.window, self.window_errors = {op: [] for op in OPS}, collections.Counter()
        return window, errors


class Client(threading.Thread):
    """One agent: its own keep-alive connection, user (its API key's), working set and sentences."""

    def __init__(self, i: int, url: str, key: str, args: argparse.Namespace, rec: Recorder,
                 stop: threading.Event, mix: dict[str, float], paused: threading.Event) -> None:
        super().__init__(name=f"soak-client-{i}", daemon=True)
        self.i, self.url, self.key, self.args, self.rec, self.stop = i, url, key, args, rec, stop
        self.paused = paused
        self.talk = Talk(1000 + i)
        self.rng = random.Random(2000 + i)
        self.ops, self.weights = list(mix), list(mix.values())
        self.units: deque[tuple[list[str], list[str]]] = deque()  # (memory ids, names) per add, oldest first
        self.size = 0
        self.adds = 0
        self.http: httpx.Client | None = None

    def run(self) -> None:
        with httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"},
                          timeout=self.args.timeout) as self.http:
            while not self.stop.is_set():
                if self.paused.is_set():
                    time.sleep(0.2)
                    continue
                op = self.rng.choices(self.ops, self.weights)[0]
                if op == "delete" and not self.units:
                    op = "add_infer"
                getattr(self, op)()

    def _call(self, op: str, method: str, path: str, **kw: Any) -> Any:
        assert self.http is not None
        t = time.perf_counter()
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            self.rec.error(op, f"{method} {path}: {type(exc).__name__}: {exc}")
            return None
        elapsed = time.perf_counter() - t
        if r.status_code >= 300:
            self.rec.error(op, f"{method} {path} -> {r.status_code}: {r.text}")
            return None
        self.rec.ok(op, elapsed)
        return r.json()

    def _run_id(self) -> dict[str, str]:
        if not self.args.run_every:
            return {}
        return {"run_id": f"run-{self.adds // self.args.run_every}"}

    def _add(self, op: str, infer: bool) -> None:
        text, names = self.talk.fact() if infer else self.talk.note()
        body = {"messages": [{"role": "user", "content": text}], "infer": infer, "metadata": {"soak": op},
                **self._run_id()}
        self.adds += 1
        got = self._call(op, "POST", "/v1/memories", json=body)
        if got is None:
            return
        ids = [x["id"] for x in got.get("results", []) if x.get("event") == "ADD" and x.get("id")]
        if ids:
            self.units.append((ids, names))
            self.size += len(ids)
        while self.size > self.args.working_set and self.units:
            old, _ = self.units.popleft()
            self.size -= len(old)
            for mid in old:
                self._call("delete", "DELETE", f"/v1/memories/{mid}")

    def add_infer(self) -> None:
        self._add("add_infer", True)

    def add_verbatim(self) -> None:
        self._add("add_verbatim", False)

    def search(self) -> None:
        recent = [n for _, names in list(self.units)[-40:] for n in names]
        body: dict[str, Any] = {"query": self.talk.question(recent), "top_k": 10}
        if self.args.run_every and self.rng.random() < 0.2:
            body.update(self._run_id())
        self._call("search", "POST", "/v1/search", json=body)

    def get_all(self) -> None:
        self._call("get_all", "GET", "/v1/memories", params={"limit": self.rng.choice([20, 50, 100])})

    def delete(self) -> None:
        k = self.rng.randrange(len(self.units))
        ids, _ = self.units[k]
        mid = ids.pop(self.rng.randrange(len(ids)))
        self.size -= 1
        if not ids:
            del self.units[k]
        self._call("delete", "DELETE", f"/v1/memories/{mid}")


# -- the store's size --------------------------------------------------------------------------------
class SqliteSize:
    def __init__(self, path: Path, users: list[str]) -> None:
        self.path, self.users = path, users

    def __call__(self) -> dict[str, Any]:
        marks = ",".join("?" * len(self.users))
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        try:
            out = {name: conn.execute(f"SELECT count(*) FROM {table} WHERE user_id IN ({marks})",
                                      self.users).fetchone()[0]
                   for name, table in (("memories", "memories"), ("entities", "entities"), ("facts", "relations"),
                                       ("history", "history"))}
        finally:
            conn.close()
        out["file_mb"] = round(sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")) / 2**20, 1)
        return out

    def close(self) -> None:
        pass


class Neo4jSize:
    def __init__(self, users: list[str]) -> None:
        from neo4j import GraphDatabase

        self.users = users
        self.driver = GraphDatabase.driver(os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                                           auth=(os.environ.get("NEO4J_USER", "neo4j"),
                                                 os.environ.get("NEO4J_PASSWORD", "graphmem-test")),
                                           notifications_min_severity="OFF")

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with self.driver.session() as s:
            for name, label in (("memories", "Memory"), ("entities", "Entity"), ("history", "HistoryEvent")):
                out[name] = s.run(f"MATCH (n:{label}) WHERE n.user_id IN $users RETURN count(n) AS c",
                                  users=self.users).single()["c"]
            out["facts"] = s.run("MATCH (e:Entity)-[r]->() WHERE e.user_id IN $users AND type(r) <> 'MENTIONS' "
                                 "RETURN count(r) AS c", users=self.users).single()["c"]
        return out

    def close(self) -> None:
        self.driver.close()


def proc_status(pid: int) -> dict[str, float]:
    """RssAnon/RssFile/VmHWM of /proc/PID/status in MB (anonymous memory is what a leak grows)."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile", "VmHWM"):
                out[name.lower()] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def file_maps(ps: psutil.Process, top: int = 8) -> tuple[dict[str, float], float, float | None]:
    """The files mapped into the process with the most resident pages (MB), what RssFile is made of;
    the resident pages of the SQLite store's own files (MB); and RSS less those (MB), from the same
    read of the maps (SQLite remaps the file as it grows: RSS read apart would not match).

    Why the second apart: SQLite reads the database through a map per connection (``mmap_size``), and
    RSS counts a page of the OS's page cache once per connection that touched it since the map was
    last remapped (the file grows, SQLite maps it again): it rises and falls with which connections
    ran lately, over pages the kernel holds once. RSS less those pages is the process's own memory."""
    try:
        maps = ps.memory_maps(grouped=True)
    except (psutil.Error, OSError):
        return {}, 0.0, None
    files = sorted(((m.path, m.rss) for m in maps if m.path.startswith("/")), key=lambda x: -x[1])
    store = sum(rss for path, rss in files if Path(path).name.startswith("graphmem.db"))
    own = sum(m.rss for m in maps) - store
    return ({path: round(rss / 2**20, 1) for path, rss in files[:top]}, round(store / 2**20, 1),
            round(own / 2**20, 1))


# -- the server --------------------------------------------------------------------------------------
def store_config(backend: str, home: Path) -> dict[str, Any]:
    if backend == "sqlite":
        return {"provider": "sqlite", "path": str(home / "graphmem.db")}
    return {"provider": "neo4j", "uri": os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
            "user": os.environ.get("NEO4J_USER", "neo4j"),
            "password": os.environ.get("NEO4J_PASSWORD", "graphmem-test")}


def embedder_label(args: argparse.Namespace) -> str:
    if args.embedder != "auto":
        return args.embedder
    return "auto: openai (OPENAI_API_KEY is set)" if os.environ.get("OPENAI_API_KEY") else \
        "auto: onnx all-MiniLM-L6-v2 (ONNX Runtime)"


def neo4j_pin() -> dict[str, Any] | None:
    from neo4j import GraphDatabase

    with GraphDatabase.driver(os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"),
                              auth=(os.environ.get("NEO4J_USER", "neo4j"),
                                    os.environ.get("NEO4J_PASSWORD", "graphmem-test")),
                              notifications_min_severity="OFF") as d, d.session() as s:
        row = s.run("MATCH (g:GraphmemMeta {key: 'schema'}) RETURN g.embedder AS embedder, g.dims AS dims").single()
    return None if row is None else dict(row)


def start_server(cfg: dict[str, Any], home: Path, port: int, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    for item in args.server_env:
        name, _, value = item.partition("=")
        env[name] = value
    if not args.probe:
        return serving.start_server(cfg, home, port, env=env)
    env["SOAK_PROBE_DIR"] = str(home / "probes")
    env["SOAK_TRACEMALLOC_FRAMES"] = str(args.tracemalloc)
    wrapper = [sys.executable, str(ROOT / "bench" / "soak_server.py")]
    return serving.start_server(cfg, home, port, env=env, program=wrapper)


def log_notes(path: Path, limit: int = 40) -> dict[str, Any]:
    """The server log's warnings and errors (its lines are JSON), and how many lines it has."""
    lines = 0
    notes: collections.Counter[str] = collections.Counter()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        lines += 1
        try:
            rec = json.loads(line)
        except ValueError:
            if line.strip():
                notes[line.strip()[:2000]] += 1
            continue
        level = str(rec.get("level", rec.get("levelname", ""))).upper()
        status = rec.get("status") or rec.get("status_code")
        if level in ("WARNING", "ERROR", "CRITICAL") or (isinstance(status, int) and status >= 500):
            text = {k: v for k, v in rec.items() if k not in ("time", "ts", "timestamp", "duration_ms", "request_id")}
            notes[json.dumps(text, sort_keys=True)[:4000]] += 1
    return {"lines": lines, "warnings_and_errors": [{"count": n, "line": t} for t, n in notes.most_common(limit)]}


# -- one soak ----------------------------------------------------------------------------------------
def soak(backend: str, args: argparse.Namespace, mix: dict[str, float]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"graphmem-soak-{backend}-"))
    run = uuid.uuid4().hex[:8]
    users = [f"soak-{run}-c{i}" for i in range(args.clients)]
    keys = [new_key() for _ in users]
    cfg: dict[str, Any] = {
        "home": str(home), "store": store_config(backend, home),
        "llm": {"provider": "none"}, "extraction": {"provider": "rules"},
        "server": {"keys": [{"id": f"c{i}", "api_key": k, "user_id": u}
                            for i, (k, u) in enumerate(zip(keys, users, strict=True))]},
    }
    if args.embedder != "auto":
        cfg["embedder"] = {"provider": args.embedder}
    label = embedder_label(args)
    if backend == "neo4j":
        pin = neo4j_pin()
        pinned = None if pin is None else str(pin["embedder"])
        if pinned is not None and args.embedder == "auto" and "onnx" in label and "all-MiniLM-L6-v2" not in pinned:
            raise SystemExit(f"the Neo4j store at {os.environ.get('NEO4J_URI')} is pinned to embedder {pinned!r}, "
                             "so `auto` would use that one, not the default users get: give the soak a database of its "
                             "own (make bench-soak starts one on port 7689) or pass --embedder explicitly")
    port = serving.free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(cfg, home, port, args)
    sizer: SqliteSize | Neo4jSize = (SqliteSize(home / "graphmem.db", users) if backend == "sqlite"
                                     else Neo4jSize(users))
    result: dict[str, Any] = {
        "backend": backend, "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "minutes": args.minutes, "clients": args.clients, "interval_s": args.interval, "mix": mix,
        "working_set_per_client": args.working_set, "run_every": args.run_every, "embedder": label,
        "pause_every_min": args.pause_every, "pause_s": args.pause_seconds,
        "extractor": "rules", "probe": args.probe, "tracemalloc_frames": args.tracemalloc,
        "server_env": args.server_env,
        "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    rec = Recorder()
    stop = threading.Event()
    paused = threading.Event()
    samples: list[dict[str, Any]] = []
    raw: list[tuple[float, dict[str, list[float]]]] = []  # per sample, for the last-minute p95
    clients: list[Client] = []
    try:
        t_ready = time.perf_counter()
        serving.wait_ready(url, proc)
        result["ready_s"] = round(time.perf_counter() - t_ready, 1)
        ps = psutil.Process(proc.pid)
        ps.cpu_percent(None)
        rec.started = start = time.monotonic()
        clients = [Client(i, url, keys[i], args, rec, stop, mix, paused) for i in range(args.clients)]
        for c in clients:
            c.start()
        end = start + args.minutes * 60
        if args.pause_every > 0:
            threading.Thread(target=pacer, args=(args, stop, paused, end), daemon=True).start()
        next_at = start + args.interval
        next_dump = start + args.probe_every if args.probe else float("inf")
        if args.probe:
            proc.send_signal(signal.SIGUSR1)  # the baseline, before anything was added
        last = start
        while True:
            time.sleep(max(0.0, min(next_at, end) - time.monotonic()))
            now = time.monotonic()
            if proc.poll() is not None:
                raise RuntimeError(f"graphmem serve exited with {proc.returncode} during the soak")
            window, errors = rec.swap()
            seconds = now - last
            last = now
            sample = {"t_s": round(now - start, 1)}
            with ps.oneshot():
                mem = ps.memory_info()
                files = ps.open_files()
                sample.update(rss_mb=round(mem.rss / 2**20, 1), vms_mb=round(mem.vms / 2**20, 1),
                              **proc_status(proc.pid), threads=ps.num_threads(), fds=ps.num_fds(),
                              open_files=len(files), store_files=sum(1 for f in files if "graphmem.db" in f.path),
                              cpu_percent=ps.cpu_percent(None))
            sample["tcp"] = len(ps.net_connections(kind="tcp"))
            sample["file_maps"], sample["store_mapped_mb"], sample["rss_own_mb"] = file_maps(ps)
            try:
                sample["store"] = sizer()
            except Exception as exc:  # a busy store must not end the soak
                sample["store"] = {"error": f"{type(exc).__name__}: {exc}"}
            sample["ops"] = {op: lat_stats(window[op], seconds, errors[op]) for op in OPS}
            sample["rps"] = round(sum(len(v) for v in window.values()) / seconds, 2)
            sample["errors"] = sum(errors.values())
            samples.append(sample)
            raw.append((sample["t_s"], window))
            print(f"  {backend} {sample['t_s'] / 60:5.1f} min  rss {sample['rss_mb']:7.1f} MB (anon "
                  f"{sample.get('rssanon', 0):6.1f})  threads {sample['threads']:3d}  fds {sample['fds']:3d}  "
                  f"memories {sample['store'].get('memories', '?'):>5}  "
                  f"entities {sample['store'].get('entities', '?'):>5}  "
                  f"{sample['rps']:6.1f} req/s  errors {sample['errors']}", flush=True)
            if now >= next_dump:
                proc.send_signal(signal.SIGUSR1)
                next_dump += args.probe_every
            if now >= end - 0.01:
                break
            next_at += args.interval
        duration = time.monotonic() - start
        stop.set()
        for c in clients:
            c.join(timeout=args.timeout + 5)
        if args.probe:
            time.sleep(2)
            proc.send_signal(signal.SIGUSR1)  # the final state, load stopped
            folder = home / "probes"
            deadline = time.monotonic() + 600
            n_expected = 2 + int((duration - 0.01) // args.probe_every)
            while time.monotonic() < deadline and len(list(folder.glob("probe-*.json"))) < n_expected:
                time.sleep(1)
        if backend == "neo4j":
            for k in keys:  # the soak's users leave nothing behind
                httpx.delete(f"{url}/v1/memories", headers={"Authorization": f"Bearer {k}"}, timeout=600)
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        sizer.close()
    result["duration_s"] = round(duration, 1)
    result["samples"] = samples
    result["totals"] = {op: lat_stats(rec.total[op], duration, rec.total_errors[op]) for op in OPS}
    result["totals"]["all"] = {"requests": sum(len(v) for v in rec.total.values()),
                               "errors": sum(rec.total_errors.values()),
                               "rps": round(sum(len(v) for v in rec.total.values()) / duration, 2)}
    result["errors"] = sorted(rec.error_texts.values(), key=lambda e: -e["count"])
    result["verdict"] = verdict(samples, raw, duration, result["totals"]["all"]["errors"])
    result["server_log"] = log_notes(home / "server.log")
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.probe:
        result.update(probe_summary(home / "probes"))
    if args.keep:
        result["home"] = str(home)
        print(f"  kept {home}")
    else:
        shutil.rmtree(home, ignore_errors=True)
    return result


def pacer(args: argparse.Namespace, stop: threading.Event, paused: threading.Event, end: float) -> None:
    """Pause every client for ``--pause-seconds`` every ``--pause-every`` minutes (not at the very end)."""
    while not stop.wait(args.pause_every * 60):
        if time.monotonic() + args.pause_seconds + 30 > end:
            return
        paused.set()
        stop.wait(args.pause_seconds)
        paused.clear()


def probe_summary(folder: Path) -> dict[str, Any]:
    """The probes (native memory, graphmem's structures) and the last one's tracemalloc tops."""
    probes = [json.loads(p.read_text()) for p in sorted(folder.glob("probe-*.json"))]
    out: dict[str, Any] = {"probes": [{k: p[k] for k in ("t_s", "native", "structures", "probe_s")} for p in probes]}
    traced = [p for p in probes if "tracemalloc" in p]
    if traced:
        final = traced[-1]["tracemalloc"]
        out["tracemalloc"] = {
            "traced_mb": [(p["t_s"], p["tracemalloc"]["traced_mb"]) for p in traced],
            "overhead_mb": [(p["t_s"], p["tracemalloc"]["overhead_mb"]) for p in traced],
            "final_vs_baseline_lineno": final.get("vs_baseline_lineno", [])[:25],
            "final_vs_baseline_traceback": final.get("vs_baseline_traceback", [])[:15],
            "final_vs_previous_lineno": final.get("vs_previous_lineno", [])[:15],
            "final_top_lines": final.get("top_lines", [])[:15]}
    return out


def slope_per_min(points: list[tuple[float, float]]) -> float | None:
    if len(points) < 2:
        return None
    xs = [t / 60 for t, _ in points]
    ys = [v for _, v in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den, 3) if den else None


def verdict(samples: list[dict[str, Any]], raw: list[tuple[float, dict[str, list[float]]]],
            duration: float, errors: int) -> dict[str, Any]:
    span = min(20 * 60.0, duration * 2 / 3)
    since = duration - span
    inside = [s for s in samples if s["t_s"] >= since - 1e-6]
    rss = [s["rss_mb"] for s in inside]
    own = [s.get("rss_own_mb") or s["rss_mb"] for s in inside]
    out: dict[str, Any] = {
        "window": f"last {span / 60:.1f} of {duration / 60:.1f} minutes (the last 20, or 2/3 of a shorter run)",
        "window_from_s": round(since, 1),
        "rss_start_mb": samples[0]["rss_mb"] if samples else None,
        "rss_window_min_mb": min(rss) if rss else None, "rss_window_max_mb": max(rss) if rss else None,
        "rss_end_mb": samples[-1]["rss_mb"] if samples else None,
        "rss_max_over_min": round(max(rss) / min(rss), 3) if rss else None,
        "rss_slope_mb_per_min": slope_per_min([(s["t_s"], s["rss_mb"]) for s in inside]),
        "rss_anon_slope_mb_per_min": slope_per_min([(s["t_s"], s["rssanon"]) for s in inside if "rssanon" in s]),
        "rss_own_window_mb": [min(own), max(own)] if own else None,
        "rss_own_max_over_min": round(max(own) / min(own), 3) if own else None,
        "rss_own_slope_mb_per_min": slope_per_min([(s["t_s"], s.get("rss_own_mb") or s["rss_mb"]) for s in inside]),
        "store_mapped_window_mb": [min(s.get("store_mapped_mb", 0) for s in inside),
                                   max(s.get("store_mapped_mb", 0) for s in inside)] if inside else None,
        "threads_window": [min(s["threads"] for s in inside), max(s["threads"] for s in inside)] if inside else None,
        "fds_window": [min(s["fds"] for s in inside), max(s["fds"] for s in inside)] if inside else None,
    }
    mems = [s["store"]["memories"] for s in inside if isinstance(s["store"].get("memories"), int)]
    ents = [s["store"]["entities"] for s in inside if isinstance(s["store"].get("entities"), int)]
    out["store_memories_window"] = [min(mems), max(mems)] if mems else None
    out["store_entities_window"] = [min(ents), max(ents)] if ents else None
    out["rss_flat"] = bool(own) and max(own) / min(own) <= 1.10
    out["rss_flat_definition"] = ("RSS less the store file's mapped pages (rss_own_mb: see file_maps in "
                                  "bench/soak.py), max/min over the window <= 1.10")
    out["errors"] = errors
    out["no_errors"] = errors == 0
    p95: dict[str, Any] = {}
    stable = True
    for op in OPS:
        per = [s["ops"][op]["p95_ms"] for s in inside if s["ops"][op]["requests"] >= 5]
        last = [x for t, w in raw if t >= duration - 60 for x in w[op]]
        if not per or not last:
            continue
        median, tail = statistics.median(per), percentile(last, 0.95)
        ok = tail <= 1.5 * median
        stable &= ok
        p95[op] = {"window_median_p95_ms": round(median, 1), "last_minute_p95_ms": round(tail, 1),
                   "ratio": round(tail / median, 2), "stable": ok,
                   "slope_ms_per_min": slope_per_min([(s["t_s"], s["ops"][op]["p95_ms"]) for s in inside
                                                      if s["ops"][op]["requests"] >= 5])}
    out["p95"] = p95
    out["p95_definition"] = ("per operation: p95 of the last minute's requests pooled <= 1.5x the median of the "
                             "per-sample p95s over the window")
    out["p95_stable"] = stable
    out["pass"] = bool(out["rss_flat"] and out["no_errors"] and stable)
    return out


# -- output ------------------------------------------------------------------------------------------
def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = result["samples"]
    t = [s["t_s"] / 60 for s in samples]
    probes = result.get("probes", [])
    fig, axes = plt.subplots(4 if probes else 3, 1, figsize=(11, 13 if probes else 10), sharex=True)
    ax = axes[0]
    ax.plot(t, [s["rss_mb"] for s in samples], label="RSS", color="black")
    if samples and any(s.get("store_mapped_mb") for s in samples):
        ax.plot(t, [s.get("rss_own_mb") for s in samples], label="RSS less the mapped store", color="tab:red")
    if samples and "rssanon" in samples[0]:
        ax.plot(t, [s.get("rssanon") for s in samples], label="RSS anonymous", color="grey", ls="--")
    ax.set_ylabel("MB")
    v = result["verdict"]
    ax.axvspan(v["window_from_s"] / 60, t[-1] if t else 0, color="tab:green", alpha=0.08, label="verdict window")
    ax2 = ax.twinx()
    ax2.plot(t, [s["store"].get("memories") for s in samples], color="tab:blue", alpha=0.6, label="memories")
    ax2.plot(t, [s["store"].get("entities") for s in samples], color="tab:orange", alpha=0.6, label="entities")
    ax2.set_ylabel("store size")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="lower right", fontsize=8)
    verdict_text = (f"RSS max/min {v['rss_max_over_min']} (less the mapped store "
                    f"{v.get('rss_own_max_over_min')})  slope {v['rss_slope_mb_per_min']} MB/min  "
                    f"errors {v['errors']}  p95 stable {v['p95_stable']}  -> {'PASS' if v['pass'] else 'FAIL'}")
    ax.set_title(f"graphmem serve soak, {result['backend']}: {result['clients']} clients, "
                 f"{result['duration_s'] / 60:.1f} min\n{verdict_text}", fontsize=10)
    for op in OPS:
        axes[1].plot(t, [s["ops"][op].get("p95_ms") for s in samples], label=op)
        axes[2].plot(t, [s["ops"][op]["rps"] for s in samples], label=op)
    axes[2].plot(t, [s["rps"] for s in samples], label="all", color="black")
    axes[1].set_ylabel("p95 ms")
    axes[1].set_yscale("log")
    axes[1].legend(fontsize=8, ncol=5)
    axes[2].set_ylabel("requests/s")
    axes[-1].set_xlabel("minutes")
    axes[2].legend(fontsize=8, ncol=6)
    if probes:  # what --probe saw inside the server
        ax = axes[3]
        tp = [p["t_s"] / 60 for p in probes]
        series = {("malloc in use MB", "tab:gray"): [p["native"].get("malloc_in_use_mb") for p in probes],
                  ("SQLite memory MB", "tab:red"): [p["native"].get("sqlite_memory_mb") for p in probes],
                  ("entity vectors MB", "tab:green"): [p["structures"].get("entity_vectors_mb") for p in probes]}
        for (label, color), values in series.items():
            if any(v is not None for v in values):
                ax.plot(tp, values, marker=".", label=label, color=color)
        ax.set_ylabel("MB")
        ax3 = ax.twinx()
        for label, key, color in (("SQLite connections", "sqlite_connections", "tab:purple"),
                                  ("entity-vector scopes", "entity_vectors_scopes", "tab:brown")):
            values = [p["structures"].get(key) for p in probes]
            if any(v is not None for v in values):
                ax3.plot(tp, values, ls="--", marker=".", label=label, color=color)
        ax3.set_ylabel("count")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax3.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8, ncol=3, loc="upper left")
    for a in axes:
        a.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(result: dict[str, Any]) -> None:
    print(f"\n{result['backend']}: {result['duration_s'] / 60:.1f} min, {result['clients']} clients, "
          f"embedder {result['embedder']}")
    header = f"{'operation':13} {'requests':>9} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
    print(header)
    print("-" * len(header))
    for op in OPS:
        x = result["totals"][op]
        print(f"{op:13} {x['requests']:9d} {x['rps']:7.2f} {x.get('p50_ms', 0):8.1f} {x.get('p95_ms', 0):8.1f} "
              f"{x.get('p99_ms', 0):8.1f} {x['errors']:7d}")
    a = result["totals"]["all"]
    print(f"{'all':13} {a['requests']:9d} {a['rps']:7.2f} {'':8} {'':8} {'':8} {a['errors']:7d}")
    v = result["verdict"]
    print(f"RSS {v['rss_start_mb']} MB at start, {v['rss_window_min_mb']}-{v['rss_window_max_mb']} MB in the "
          f"{v['window']} (max/min {v['rss_max_over_min']}, {v['rss_slope_mb_per_min']} MB/min), "
          f"{v['rss_end_mb']} MB at the end; less the mapped store {v.get('rss_own_window_mb')} MB "
          f"(max/min {v.get('rss_own_max_over_min')}, {v.get('rss_own_slope_mb_per_min')} MB/min); "
          f"memories {v['store_memories_window']}, entities "
          f"{v['store_entities_window']}; threads {v['threads_window']}, fds {v['fds_window']}")
    for op, p in v["p95"].items():
        print(f"  p95 {op:13} median {p['window_median_p95_ms']:8.1f} ms, "
              f"last minute {p['last_minute_p95_ms']:8.1f} ms "
              f"(x{p['ratio']}){'' if p['stable'] else '  UNSTABLE'}")
    print(f"verdict: rss_flat={v['rss_flat']} no_errors={v['no_errors']} p95_stable={v['p95_stable']} -> "
          f"{'PASS' if v['pass'] else 'FAIL'}")
    for e in result["errors"][:10]:
        print(f"  error x{e['count']} ({e['op']}, first at {e['first_t_s']} s): {e['text'][:400]}")


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in OPS:
            raise SystemExit(f"--mix: unknown operation {name!r} (known: {', '.join(OPS)})")
        mix[name.strip()] = float(weight)
    return {op: w for op, w in mix.items() if w > 0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--backends", default="sqlite,neo4j")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--working-set", type=int, default=150, help="memories each client keeps at most")
    p.add_argument("--run-every", type=int, default=20, help="a client's adds per run_id (0: no run_id)")
    p.add_argument("--pause-every", type=float, default=5.0, help="minutes between pauses of all clients (0: none)")
    p.add_argument("--pause-seconds", type=float, default=15.0, help="length of a pause")
    p.add_argument("--mix", default=DEFAULT_MIX, help="weights of the operations")
    p.add_argument("--embedder", default="auto", help="embedder.provider (default: auto, the one users get)")
    p.add_argument("--timeout", type=float, default=120.0, help="a request's timeout, seconds")
    p.add_argument("--out", default="bench/results/soak_{backend}.json")
    p.add_argument("--plot", default="bench/results/soak_{backend}.png")
    p.add_argument("--probe", action="store_true",
                   help="run the server through bench/soak_server.py and record its memory and caches")
    p.add_argument("--probe-every", type=float, default=60.0, help="seconds between probes")
    p.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                   help="also trace Python's allocations with this many frames (implies --probe)")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the server (repeatable), e.g. MALLOC_ARENA_MAX=2")
    p.add_argument("--keep", action="store_true", help="keep the server's temporary folder (log, tracemalloc dumps)")
    args = p.parse_args()
    args.probe = args.probe or args.tracemalloc > 0
    mix = parse_mix(args.mix)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for backend in backends:
        if backend not in ("sqlite", "neo4j"):
            raise SystemExit(f"--backends: unknown backend {backend!r}")
        print(f"{backend}: {args.clients} clients for {args.minutes:g} min, mix {args.mix}, embedder "
              f"{embedder_label(args)}", flush=True)
        result = soak(backend, args, mix)
        out = Path(args.out.format(backend=backend))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        plot_path = Path(args.plot.format(backend=backend))
        plot(result, plot_path)
        table(result)
        print(f"wrote {out} and {plot_path}", flush=True)


if __name__ == "__main__":
    main()
