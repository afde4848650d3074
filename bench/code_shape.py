"""The shape of the code, now and at a baseline commit: how much a reader and a backend author face.

    python bench/code_shape.py [--baseline-ref 900dae3] [--out bench/results/code_shape.json]

Measured on both trees in the same run (the baseline checked out into a temporary git worktree):
configuration leaf fields and ``SearchConfig``'s top-level fields; the abstract methods a new store
must implement; the five largest classes and functions by lines; how many functions exceed 60
lines. Prints a table with the change and writes JSON.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import json
from pydantic import BaseModel
from graphmem.config import MemoryConfig, SearchConfig
from graphmem.stores.base import Store

def leaves(model):
    n = 0
    for f in model.model_fields.values():
        t = f.annotation
        n += leaves(t) if isinstance(t, type) and issubclass(t, BaseModel) else 1
    return n

print(json.dumps({"config_fields": leaves(MemoryConfig), "search_top_level": len(SearchConfig.model_fields),
                  "store_abstract_methods": len(Store.__abstractmethods__)}))
"""


def units(tree: Path) -> list[tuple[int, str]]:
    """(lines, "path:Name") of every class and function under ``tree/graphmem``."""
    out = []
    for path in sorted((tree / "graphmem").rglob("*.py")):
        rel = path.relative_to(tree)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                kind = "class" if isinstance(node, ast.ClassDef) else "def"
                out.append((node.end_lineno - node.lineno + 1, f"{kind} {rel}:{node.name}"))  # type: ignore[operator]
    return sorted(out, reverse=True)


def measure(tree: Path) -> dict[str, Any]:
    probe = subprocess.run([sys.executable, "-c", _PROBE], cwd=tree, env={"PYTHONPATH": str(tree), "PATH": ""},
                           capture_output=True, text=True, check=True)
    found = units(tree)
    return {**json.loads(probe.stdout), "largest_units": [{"lines": n, "unit": u} for n, u in found[:5]],
            "functions_over_60_lines": sum(1 for n, u in found if u.startswith("def ") and n > 60)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-ref", default="900dae3")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "code_shape.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.baseline_ref],
                       check=True)
        try:
            before = measure(base)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    now = measure(ROOT)
    print(f"{'measure':<28} {args.baseline_ref:>10} {'now':>8}")
    for key in ("config_fields", "search_top_level", "store_abstract_methods", "functions_over_60_lines"):
        print(f"{key:<28} {before[key]:>10} {now[key]:>8}")
    for label, res in ((args.baseline_ref, before), ("now", now)):
        print(f"largest units at {label}:")
        for u in res["largest_units"]:
            print(f"  {u['lines']:>5}  {u['unit']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"baseline_ref": args.baseline_ref, "baseline": before, "now": now}, indent=1)
                        + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
