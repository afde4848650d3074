"""``graphmem serve`` with a probe, for ``bench/soak.py --probe`` / ``--tracemalloc N``: what grows, and where.

    SOAK_PROBE_DIR=/tmp/x [SOAK_TRACEMALLOC_FRAMES=25] python bench/soak_server.py serve --config C --port P

Runs graphmem's CLI unchanged. Each SIGUSR1 (the soak sends one when the server is ready, then every
``--probe-every`` seconds) makes a background thread write ``probe-NNN.json`` into ``$SOAK_PROBE_DIR``:

- native memory: glibc's ``mallinfo2`` (bytes in use, free bytes held in the heaps, mmapped chunks),
  SQLite's ``sqlite3_memory_used`` (page caches, schemas, prepared statements of every connection),
  the process's RSS and threads: what tracemalloc cannot see;
- graphmem's structures that may grow, found among the live objects: the SQLite store's connections,
  the entity-vector and memory-vector caches per scope, the rule extractor's caches, the access log,
  the Neo4j store's per-scope notes and bookmarks, every ``functools.lru_cache`` of graphmem's modules
  (filled/bound), ``re``'s pattern cache;
- with ``$SOAK_TRACEMALLOC_FRAMES``: tracing starts at the first signal (tracing the imports and the
  model load would only slow the start; ``python -X tracemalloc=N`` traces from the start instead), and
  each dump lists the allocations still alive that grew most against the first snapshot (the
  baseline) and against the previous one, by traceback and by line. Frames of tracemalloc and of
  this script are filtered out. Taking and comparing snapshots holds the GIL for seconds and the
  snapshots kept take memory: latencies and RSS of a traced run are not the server's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import json
import linecache
import os
import re
import resource
import signal
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

TOP = 40


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _native() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        m = libc.mallinfo2()
        out.update(malloc_in_use_mb=round((m.uordblks + m.hblkhd) / 2**20, 1),
                   malloc_free_held_mb=round(m.fordblks / 2**20, 1), malloc_mmapped_mb=round(m.hblkhd / 2**20, 1),
                   malloc_heap_mb=round(m.arena / 2**20, 1))
    except (OSError, AttributeError):
        pass
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")  # the one _sqlite3 links (already loaded)
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        lib.sqlite3_memory_highwater.restype = ctypes.c_int64
        lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
        out.update(sqlite_memory_mb=round(lib.sqlite3_memory_used() / 2**20, 2),
                   sqlite_memory_highwater_mb=round(lib.sqlite3_memory_highwater(0) / 2**20, 2))
    except (OSError, AttributeError):
        pass
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "Threads"):
            out[name.lower()] = round(int(value.split()[0]) / 1024, 1) if name != "Threads" else int(value)
    out["maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["python_threads"] = threading.active_count()
    return out


def _nbytes(value: Any) -> int:
    return int(getattr(value, "nbytes", 0))


MEMORIES: list[Any] = []
"""The ``Memory`` objects the server made (see :func:`main`)."""


def _reachable(roots: list[Any]) -> list[Any]:
    """graphmem's objects reachable from ``roots`` through graphmem objects and the containers they hold.
    (Not ``gc.get_objects()``: the rule extractor calls ``gc.freeze()``, which hides what existed then.)"""
    found: list[Any] = []
    seen: set[int] = set()
    queue: list[tuple[Any, int]] = [(r, 0) for r in roots]
    while queue:
        obj, hops = queue.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        ours = type(obj).__module__.startswith("graphmem")
        if ours:
            found.append(obj)
        elif hops > 2:
            continue
        for ref in gc.get_referents(obj):
            if type(ref).__module__.startswith("graphmem"):
                queue.append((ref, 0))
            elif isinstance(ref, (dict, list, tuple, set, frozenset)) or hasattr(ref, "__self__"):
                queue.append((ref, hops + 1))  # a graphmem object's dict, list, bound method...
    return found


def _structures() -> dict[str, Any]:
    """graphmem's objects that hold per-scope, per-text or per-connection state, and what they hold."""
    out: dict[str, Any] = {}
    seen: dict[str, int] = {}
    unfrozen = [o for o in gc.get_objects() if type(o).__module__.startswith("graphmem")]
    for obj in {id(o): o for o in [*_reachable(MEMORIES), *unfrozen]}.values():
        kind = type(obj)
        name = kind.__name__
        seen[name] = seen.get(name, 0) + 1
        try:
            if name == "SQLiteStore":
                out["sqlite_connections"] = len(obj._conns)
            elif name == "EntityVectors":
                out["entity_vectors_scopes"] = len(obj._scopes)
                out["entity_vectors_mb"] = round(sum(_nbytes(v[2]) for v in obj._scopes.values()) / 2**20, 2)
            elif name == "VectorCache":
                blocks = list(obj.blocks.values())
                out["vector_cache_blocks"] = len(blocks)
                out["vector_cache_rows"] = sum(b.n for b in blocks)
                out["vector_cache_capacity_rows"] = sum(len(b.matrix) for b in blocks)
                out["vector_cache_mb"] = round(sum(_nbytes(b.matrix) + _nbytes(b.coarse) for b in blocks) / 2**20, 2)
                out["vector_cache_codes"] = [len(c) for c in obj.codes]
            elif name == "SemanticMap":
                out["semantic_vectors"] = len(obj._vectors)
                out["semantic_classes"] = len(obj._classes)
            elif name == "StatementReader":
                info = obj._read.cache_info()
                out["statement_reader"] = [info.currsize, info.maxsize]
            elif name == "AccessLog":
                out["access_log"] = [len(obj._pending), len(obj._uses)]
            elif name == "Neo4jStore":
                out["neo4j_big_until"] = len(obj._big_until)
            elif name == "SharedBookmarks":
                out["neo4j_bookmarks"] = len(obj._held)
        except (AttributeError, TypeError) as exc:  # the engine changed: say so, do not fail
            out[f"{name}_error"] = repr(exc)
    caches = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("graphmem") or mod is None:
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, functools._lru_cache_wrapper):
                got = value.cache_info()
                caches[f"{mod_name}.{attr}"] = [got.currsize, got.maxsize]
    out["lru_caches"] = caches
    out["re_cache"] = len(getattr(re, "_cache", {}))
    out["graphmem_objects"] = {k: v for k, v in sorted(seen.items(), key=lambda kv: -kv[1])[:15]}
    out["gc_objects"] = len(gc.get_objects())
    out["gc_frozen"] = gc.get_freeze_count()
    return out


def _where(frame: tracemalloc.Frame) -> str:
    line = linecache.getline(frame.filename, frame.lineno).strip()
    name = re.sub(r"^.*/(site-packages|lib/python3\.\d+)/", "", frame.filename)  # a module's own path
    name = re.sub(r"^.*/(graphmem|bench)/", r"\1/", name)
    return f"{name}:{frame.lineno}  {line[:120]}"


def _stats(stats: list[tracemalloc.StatisticDiff] | list[tracemalloc.Statistic], frames: int) -> list[dict[str, Any]]:
    out = []
    for stat in stats[:TOP]:
        row: dict[str, Any] = {"size_kb": round(stat.size / 1024, 1), "count": stat.count}
        if isinstance(stat, tracemalloc.StatisticDiff):
            row = {"size_diff_kb": round(stat.size_diff / 1024, 1), "count_diff": stat.count_diff, **row}
        row["traceback"] = [_where(f) for f in list(stat.traceback)[-frames:]]  # innermost frame last
        out.append(row)
    return out


class Prober:
    def __init__(self, folder: Path, frames: int) -> None:
        self.folder = folder
        self.frames = frames
        self.wake = threading.Event()
        self.baseline: tracemalloc.Snapshot | None = None
        self.previous: tracemalloc.Snapshot | None = None
        self.n = 0
        self.started = time.monotonic()

    def loop(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            try:
                self.probe()
            except Exception as exc:  # a failed probe must not take the server down
                print(f"soak_server: probe failed: {exc!r}", file=sys.stderr, flush=True)

    def probe(self) -> None:
        t0 = time.perf_counter()
        report: dict[str, Any] = {"n": self.n, "t_s": round(time.monotonic() - self.started, 1),
                                  "native": _native(), "structures": _structures()}
        if self.frames:
            report["tracemalloc"] = self._trace()
        report["probe_s"] = round(time.perf_counter() - t0, 2)
        path = self.folder / f"probe-{self.n:03d}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        tmp.rename(path)
        self.n += 1

    def _trace(self) -> dict[str, Any]:
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        snap = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__),
             tracemalloc.Filter(False, linecache.__file__),  # the source lines _where reads
             tracemalloc.Filter(False, "<frozen importlib._bootstrap>")))
        current, peak = tracemalloc.get_traced_memory()
        report: dict[str, Any] = {"traced_mb": round(current / 2**20, 2), "peak_mb": round(peak / 2**20, 2),
                                  "overhead_mb": round(tracemalloc.get_tracemalloc_memory() / 2**20, 2)}
        report["top_lines"] = _stats(snap.statistics("lineno"), 1)
        if self.baseline is not None:
            report["vs_baseline_traceback"] = _stats(snap.compare_to(self.baseline, "traceback"), 12)
            report["vs_baseline_lineno"] = _stats(snap.compare_to(self.baseline, "lineno"), 1)
        if self.previous is not None and self.previous is not self.baseline:
            report["vs_previous_lineno"] = _stats(snap.compare_to(self.previous, "lineno"), 1)
        if self.baseline is None:
            self.baseline = snap
        self.previous = snap
        return report


def main() -> None:
    folder = Path(os.environ.get("SOAK_PROBE_DIR", "."))
    folder.mkdir(parents=True, exist_ok=True)
    prober = Prober(folder, int(os.environ.get("SOAK_TRACEMALLOC_FRAMES", "0") or 0))
    threading.Thread(target=prober.loop, name="soak-probe", daemon=True).start()
    signal.signal(signal.SIGUSR1, lambda *_: prober.wake.set())  # uvicorn handles only SIGINT/SIGTERM
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]  # bench/*.py must not shadow modules
    from graphmem import memory
    from graphmem.cli import app

    made = memory.Memory.__init__

    def remember(self: Any, *args: Any, **kwargs: Any) -> None:  # this process only: graphmem is unchanged
        made(self, *args, **kwargs)
        MEMORIES.append(self)

    memory.Memory.__init__ = remember  # type: ignore[method-assign]

    sys.argv = ["graphmem", *sys.argv[1:]]
    app()


if __name__ == "__main__":
    main()
