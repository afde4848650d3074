"""How long graphmem takes to start: fresh processes, this checkout against a baseline commit.

    python bench/startup.py [--runs 5] [--baseline-ref 900dae3] [--no-baseline] [--only TEXT]
                            [--python PATH] [--out F]

Every figure is the median of ``--runs`` fresh interpreters (the two trees alternate, so load from
other work on the machine falls on both alike):

- ``import graphmem``: the ``graphmem`` line of ``python -X importtime`` (cumulative), and the
  wall time of the whole process; ``from graphmem import Memory`` timed inside the process (with
  lazy names, ``-X importtime`` books the engine outside the ``graphmem`` line);
- ``graphmem --help`` and a few typical commands (``list``, ``search``, ``ontology show``) on a
  small store, wall time of ``python -m graphmem ...``;
- the first ``add`` + ``search`` of a fresh process on the embedded SQLite store with the hashing
  embedder and with the default one (``auto``: all-MiniLM-L6-v2 through ONNX Runtime here, hashing in
  trees before it), ``infer`` on (no LLM configured: the rule extractor) and off, each on a new store;
  for this tree also with an empty ontology cache (``cold``), as the very first run after an install.
  The embedding model's files are the user's (``graphmem models pull``), linked into every cache.

The baseline is ``--baseline-ref`` checked out into a temporary ``git worktree`` and run with
``PYTHONPATH`` pointing at it, in the same interpreter and virtualenv: ``--python``, by default this
one; ``make bench-startup`` passes a virtualenv with graphmem's default install only (no extras), as
a user's ``pip install graphmem`` (spaCy's start reads every installed package's entry points, so a
virtualenv with the test, server and notebook extras starts slower). The environment is a user's
plain setup: no ``GRAPHMEM_*`` variables and no OpenAI key; the ontology cache of each tree lives in
a temporary folder (warmed by one untimed run). Prints a table with ratios and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "900dae3"
"""The commit before the fast-start work (issue 15)."""

FIRST_USE = """
import sys, time
t0 = time.perf_counter()
from graphmem import Memory, MemoryConfig
m = Memory(MemoryConfig.load({{'home': sys.argv[1], 'embedder': {{'provider': '{embedder}'}}}}))
m.add('I moved to Lisbon last year and work for Northwind.', user_id='u1', infer={infer})
m.search('where do I live', user_id='u1')
print('ELAPSED', time.perf_counter() - t0)
"""
SEED = """
import sys
from graphmem import Memory
with Memory({'home': sys.argv[1], 'embedder': {'provider': 'hashing'}}) as m:
    m.add('I moved to Lisbon last year and work for Northwind.', user_id='u1', infer=False)
"""


class Tree:
    """One source tree to measure: its folder on ``PYTHONPATH`` and its own ontology cache."""

    python = sys.executable
    """The interpreter of the fresh processes (``--python``)."""

    def __init__(self, name: str, path: Path, work: Path) -> None:
        self.name = name
        self.path = path
        self.work = work / name
        self.cache = self.work / "cache"
        self.work.mkdir(parents=True)
        link_models(self.cache)

    def env(self, cache: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_") and k != "OPENAI_API_KEY"}
        env.update(PYTHONPATH=str(self.path), GRAPHMEM_HOME=str(self.work / "home"),
                   GRAPHMEM_CACHE_DIR=str(cache or self.cache), XDG_CACHE_HOME=str(self.work / "xdg"))
        return env

    def run(self, args: list[str], cache: Path | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([self.python, *args], cwd=self.work, env=self.env(cache), capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {' '.join(args)[:80]} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return done


def link_models(cache: Path) -> None:
    """The user's embedding model files in a bench cache folder: fetched once, not per tree or run."""
    from graphmem.embedding import files

    models = files.locate(files.DEFAULT_MODEL).parent if files._installed() is None else None
    cache.mkdir(parents=True, exist_ok=True)
    if models is not None and not (cache / "models").exists():
        (cache / "models").symlink_to(models, target_is_directory=True)


def wall(tree: Tree, args: list[str], cache: Path | None = None) -> float:
    start = time.perf_counter()
    tree.run(args, cache)
    return time.perf_counter() - start


def importtime(tree: Tree, statement: str) -> float:
    """Seconds ``-X importtime`` reports for the ``graphmem`` package itself (cumulative)."""
    err = tree.run(["-X", "importtime", "-c", statement]).stderr
    found = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| graphmem$", err, re.MULTILINE)
    if not found:
        raise RuntimeError(f"{tree.name}: no graphmem line in -X importtime output")
    return int(found.group(1)) / 1e6


def in_process(tree: Tree, statement: str) -> float:
    """Seconds ``statement`` takes in a fresh interpreter, timed inside it (interpreter start excluded)."""
    code = f"import time\nt0 = time.perf_counter()\n{statement}\nprint('ELAPSED', time.perf_counter() - t0)"
    out = tree.run(["-c", code]).stdout
    return float(out.rsplit("ELAPSED", 1)[1])


def first_use(tree: Tree, infer: bool, cold: bool = False, embedder: str = "hashing") -> float:
    """Wall time of a fresh process's first add + search on a new store (``cold``: empty ontology cache;
    ``embedder`` ``auto``: what a user gets by default)."""
    home = Path(tempfile.mkdtemp(dir=tree.work, prefix="first-"))
    cache = Path(tempfile.mkdtemp(dir=tree.work, prefix="cold-")) if cold else None
    if cache is not None:
        link_models(cache)
    try:
        return wall(tree, ["-c", FIRST_USE.format(infer=infer, embedder=embedder), str(home)], cache)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if cache:
            shutil.rmtree(cache, ignore_errors=True)


def measurements(tree: Tree) -> dict[str, Callable[[], float]]:
    store = tree.work / "store"
    cli = ["-m", "graphmem"]
    cfg = ["--user-id", "u1"]
    return {
        "import graphmem (importtime)": lambda: importtime(tree, "import graphmem"),
        "import graphmem (process)": lambda: wall(tree, ["-c", "import graphmem"]),
        "from graphmem import Memory (in process)": lambda: in_process(tree, "from graphmem import Memory"),
        "graphmem --help": lambda: wall(tree, [*cli, "--help"]),
        "graphmem list": lambda: wall(tree, [*cli, "list", *cfg, "--json", "--config", str(store / "c.yaml")]),
        "graphmem search": lambda: wall(tree, [*cli, "search", "Lisbon", *cfg, "--config", str(store / "c.yaml")]),
        "graphmem ontology show --json": lambda: wall(tree, [*cli, "ontology", "show", "--json"]),
        "first add+search, infer on": lambda: first_use(tree, True),
        "first add+search, infer off": lambda: first_use(tree, False),
        "first add+search, default embedder, infer on": lambda: first_use(tree, True, embedder="auto"),
        "first add+search, default embedder, infer off": lambda: first_use(tree, False, embedder="auto"),
        # the baseline has no ontology cache: for it these are the same runs as above
        "first add+search, infer on, cold cache": lambda: first_use(tree, True, cold=True),
        "first add+search, infer off, cold cache": lambda: first_use(tree, False, cold=True),
    }


def prepare(tree: Tree) -> None:
    """A small store for the CLI commands, and one untimed first use (writes the ontology cache)."""
    store = tree.work / "store"
    store.mkdir()
    (store / "c.yaml").write_text(f"home: {store}\nembedder:\n  provider: hashing\n")
    tree.run(["-c", SEED, str(store)])
    first_use(tree, True)


def checkout(ref: str, folder: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(folder), ref], check=True)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per figure (the median is kept)")
    ap.add_argument("--baseline-ref", default=DEFAULT_BASELINE, help="git ref to compare against")
    ap.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    ap.add_argument("--only", default="", help="measure only the figures whose name contains this text")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the measured processes")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = ap.parse_args()
    Tree.python = os.path.abspath(args.python)  # not resolved: a virtualenv's python is a symlink

    work = Path(tempfile.mkdtemp(prefix="graphmem-startup-"))
    baseline_dir = work / "baseline-src"
    try:
        trees = [Tree("current", ROOT, work)]
        if not args.no_baseline:
            trees.append(Tree("baseline", checkout(args.baseline_ref, baseline_dir), work))
        for tree in trees:
            prepare(tree)
        samples: dict[str, dict[str, list[float]]] = {t.name: {} for t in trees}
        plans = {t.name: measurements(t) for t in trees}
        for name in plans["current"]:
            if args.only not in name:
                continue
            for _ in range(args.runs):
                for tree in trees:  # alternate: the machine's load hits both trees alike
                    samples[tree.name].setdefault(name, []).append(plans[tree.name][name]())
    finally:
        if baseline_dir.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline_dir)], check=False)
        shutil.rmtree(work, ignore_errors=True)

    figures = {}
    print(f"{'seconds, median of ' + str(args.runs):<44} {'current':>8} {'baseline':>9} {'ratio':>6}")
    for name, values in samples["current"].items():
        cur = statistics.median(values)
        base_values = samples.get("baseline", {}).get(name)
        base = statistics.median(base_values) if base_values else None
        ratio = cur / base if base else None
        figures[name] = {"current_s": round(cur, 3), "baseline_s": round(base, 3) if base is not None else None,
                         "ratio": round(ratio, 2) if ratio is not None else None,
                         "current_runs": [round(v, 3) for v in values],
                         "baseline_runs": [round(v, 3) for v in base_values] if base_values else None}
        shown = f"{base:9.3f} {ratio:6.2f}" if base is not None and ratio is not None else f"{'-':>9} {'-':>6}"
        print(f"{name:<44} {cur:8.3f} {shown}")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    report = {"runs": args.runs, "current": head + ("+dirty" if dirty else ""),
              "baseline": None if args.no_baseline else args.baseline_ref,
              "python": platform.python_version(), "interpreter": args.python, "cpus": os.cpu_count(),
              "load_avg": [round(x, 2) for x in os.getloadavg()], "figures": figures}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
