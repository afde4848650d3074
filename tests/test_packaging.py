"""The built wheel works outside a source checkout: it carries the default ontology and shapes, so
``Memory()`` with no configuration validates and writes a typed graph (``pip install graphmem``), and
the shapes' example cases, so ``graphmem ontology test`` runs them.

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


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources and installed with ``--target`` (scripts in ``bin/``)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, wheels, target, work = tmp / "src", tmp / "wheels", tmp / "site", tmp / "work"
    work.mkdir()
    src.mkdir()
    # a copy of the sources: setuptools builds in the source folder, whose build/ could hold an older build
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)], check=True, cwd=work, timeout=240)
    (wheel,) = wheels.glob("graphmem-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("ontology", "shapes", "shapes/tests", "shapes/tests/data"):
        shipped = sorted(n for n in names if n.startswith(f"graphmem/data/{folder}/") and "/" not in
                         n[len(f"graphmem/data/{folder}/"):])
        expected = sorted(f"graphmem/data/{folder}/{p.name}" for p in (ROOT / folder).glob("*.ttl"))
        assert expected and shipped == expected, folder
    static = ROOT / "graphmem" / "servers" / "static"  # the graph view's page and its vendored library
    expected_static = sorted(p.relative_to(ROOT).as_posix() for p in static.rglob("*") if p.is_file())
    assert expected_static and set(expected_static) <= set(names), sorted(set(expected_static) - set(names))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, timeout=240)
    return target


def plain_env(target: Path, tmp_path: Path) -> dict[str, str]:
    """A user's plain setup: no graphmem variables, home and caches in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(PYTHONPATH=str(target), GRAPHMEM_HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return env


@pytest.mark.slow
def test_wheel_carries_the_default_ontology_and_shapes(installed: Path, tmp_path: Path) -> None:
    target, work = installed, tmp_path / "work"
    work.mkdir()
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=work, env=plain_env(target, tmp_path),
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["package"]).is_relative_to(target)
    assert got["ontology"] == [str(target / "graphmem" / "data" / "ontology")]
    assert got["shapes"] == [str(target / "graphmem" / "data" / "shapes")]
    # the rule extractor typed the graph from the packaged ontology, and its shapes refused the rest
    assert any(r["source"] == "Alice" and r["target"] == "Lisbon" for r in got["added"]), got["added"]
    assert got["rejected"] == 1


@pytest.mark.slow
def test_ontology_test_runs_the_shipped_example_cases(installed: Path, tmp_path: Path) -> None:
    script = installed / "bin" / "graphmem"
    assert script.is_file(), "the wheel's console script was not installed"
    run = subprocess.run([sys.executable, str(script), "ontology", "test", "--json"], cwd=tmp_path,
                         env=plain_env(installed, tmp_path), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    cases = len(list((ROOT / "shapes" / "tests" / "data").glob("*.ttl")))
    assert got["failed"] == 0 and got["passed"] == len(got["cases"]) >= cases > 0, got
    # the cases came from the wheel's copy, not from a checkout
    assert {c["manifest"] for c in got["cases"]} == {
        str(installed / "graphmem" / "data" / "shapes" / "tests" / "manifest.ttl")}


VIEW_CHILD = """
import json
from graphmem.servers import view
html = view.page(graph_url="graph", memory_url="memories/", assets_url="assets/", auth="none")
sizes = {name: len(view.asset_response(name).body) for name in view.ASSETS}
print(json.dumps({"module": view.__file__, "page": "cytoscape.min.js" in html, "sizes": sizes}))
"""


@pytest.mark.slow
def test_wheel_serves_the_graph_view(installed: Path, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", VIEW_CHILD], cwd=tmp_path, env=plain_env(installed, tmp_path),
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["module"]).is_relative_to(installed) and got["page"]
    from graphmem.servers.view import ASSETS

    static = ROOT / "graphmem" / "servers" / "static"
    assert got["sizes"] == {name: (static / path).stat().st_size for name, (path, _) in ASSETS.items()}
