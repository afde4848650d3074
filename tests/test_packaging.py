"""The built wheel works outside a source checkout: it carries the default ontology and shapes, so
``Memory()`` with no configuration validates and writes a typed graph (``pip install graphmem``).

The wheel is built from the working tree (pip, with build isolation, as a user's install builds it)
and installed with ``--target`` into a folder that is put first on ``sys.path`` of a child process
running from an unrelated folder, so neither the checkout's ``ontology/`` nor the editable install
can stand in for what the wheel holds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "graphmem", "ontology", "shapes")

CHILD = """
import json, graphmem
from graphmem import Memory
from graphmem.ontology.model import default_paths
onto, shapes = default_paths()
m = Memory({"embedder": {"provider": "hashing"}, "llm": {"provider": "none"}})
out = m.add([{"role": "user", "name": "Alice", "content": "I moved to Lisbon last year."}], user_id="alice")
bad = m.add("x", infer=False, user_id="alice",
            triples=[{"source": "Lisbon", "relation": "livesIn", "target": "Alice",
                      "source_type": "City", "target_type": "Person"}])
print(json.dumps({"package": graphmem.__file__, "ontology": [str(p) for p in onto], "shapes": [str(p) for p in shapes],
                  "added": out["relations"]["added"], "rejected": len(bad["relations"]["rejected"])}))
"""


@pytest.mark.slow
def test_wheel_carries_the_default_ontology_and_shapes(tmp_path: Path) -> None:
    src, wheels, target, work = tmp_path / "src", tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    work.mkdir()
    src.mkdir()
    # a copy of the sources: setuptools builds in the source folder, whose build/ could hold an older build
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)], check=True, cwd=work, timeout=240)
    (wheel,) = wheels.glob("graphmem-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("ontology", "shapes"):
        shipped = sorted(n for n in names if n.startswith(f"graphmem/data/{folder}/"))
        assert shipped == sorted(f"graphmem/data/{folder}/{p.name}" for p in (ROOT / folder).glob("*.ttl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, timeout=240)

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}  # a user's plain setup
    env.update(PYTHONPATH=str(target), GRAPHMEM_HOME=str(tmp_path / "home"))
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=work, env=env, capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["package"]).is_relative_to(target)
    assert got["ontology"] == [str(target / "graphmem" / "data" / "ontology")]
    assert got["shapes"] == [str(target / "graphmem" / "data" / "shapes")]
    # the rule extractor typed the graph from the packaged ontology, and its shapes refused the rest
    assert any(r["source"] == "Alice" and r["target"] == "Lisbon" for r in got["added"]), got["added"]
    assert got["rejected"] == 1
