"""The notebooks under ``notebooks/`` are tests: each one runs top to bottom in a real Jupyter kernel
(nbclient and ipykernel, on this virtualenv's Python), and any cell that raises, including the
notebooks' own ``assert`` cells, fails the test.

The kernel gets a newcomer's environment: no ``GRAPHMEM_*`` or ``OPENAI_*`` settings of the
developer's (the suite's ontology cache aside), matplotlib's Agg backend, Jupyter and IPython folders
in the test's temporary folder, and a ``GRAPHMEM_HOME`` that must stay empty, since every notebook has
to make its own temporary home. Notebooks that need Neo4j get the suite's server (``NEO4J_URI`` …, see
``conftest.py``): they skip without one on a laptop and fail under ``CI=true``. The analysts' notebook
also runs as a user runs it, ``jupyter nbconvert --execute`` (the ``notebooks`` extra), without
``NEO4J_URI``: it must then start a Neo4j server of its own on a free port and stop it at the end.

Committed notebooks carry no outputs, execution counts or run metadata (``notebooks/strip.py``,
``make notebooks-strip``); what a run adds is exactly what stripping removes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import IN_CI, NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NEEDS_NEO4J = {"03-analysts.ipynb"}
EXPECTED = {"01-quickstart.ipynb", "02-ontology-authoring.ipynb", "03-analysts.ipynb"}
CELL_TIMEOUT_S = 120
KERNEL = "graphmem-test"


def _strip_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebook_strip", NOTEBOOKS / "strip.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


strip = _strip_module()


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _params() -> list[object]:
    return [pytest.param(p.name, marks=[pytest.mark.neo4j] if p.name in NEEDS_NEO4J else [], id=p.stem)
            for p in notebooks()]


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernel spec for this Python, and the environment the kernel inherits; returns the
    ``GRAPHMEM_HOME`` that must stay empty."""
    for name in list(os.environ):
        if name.upper().startswith(("GRAPHMEM_", "OPENAI_")) and name != "GRAPHMEM_CACHE_DIR":
            monkeypatch.delenv(name)
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "graphmem tests", "language": "python"}), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("NEO4J_URI", NEO4J_URI)
    monkeypatch.setenv("NEO4J_USER", NEO4J_USER)
    monkeypatch.setenv("NEO4J_PASSWORD", NEO4J_PASSWORD)
    untouched = tmp_path / "home-must-stay-empty"
    monkeypatch.setenv("GRAPHMEM_HOME", str(untouched))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return untouched


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S, allow_errors=False,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", _params())
def test_notebook_runs(name: str, kernel_env: Path, request: pytest.FixtureRequest) -> None:
    if name in NEEDS_NEO4J and not request.getfixturevalue("neo4j_available"):
        pytest.skip(f"no Neo4j at {NEO4J_URI} (run `make test`, which starts one)")
    path = NOTEBOOKS / name
    nb = execute(path, Path.cwd())  # a failing cell raises CellExecutionError with its traceback
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "a code cell was not run"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert not kernel_env.exists(), f"{name} wrote to the GRAPHMEM_HOME it inherited instead of its own"
    assert nbformat.writes(strip.strip(nb)) + "\n" == path.read_text(encoding="utf-8"), (
        f"{name}: a run changed more than outputs and run metadata")


@pytest.mark.slow
@pytest.mark.neo4j
@pytest.mark.timeout(600)
def test_analysts_notebook_starts_its_own_neo4j_under_nbconvert(kernel_env: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``NEO4J_URI`` the notebook never falls back to a server on the default port (whoever's it
    is): it starts one of its own with the checkout's launcher, on a free port, and stops it."""
    if shutil.which(os.environ.get("JAVA", "java")) is None:
        if IN_CI:
            pytest.fail("CI=true but there is no java for the notebook's own Neo4j", pytrace=False)
        pytest.skip("no java: the analysts' notebook starts a Neo4j of its own without NEO4J_URI")
    monkeypatch.delenv("NEO4J_URI")
    out = tmp_path / "out"
    done = subprocess.run([str(Path(sys.executable).with_name("jupyter")), "nbconvert", "--to", "notebook",
                           "--execute", f"--ExecutePreprocessor.kernel_name={KERNEL}",
                           f"--ExecutePreprocessor.timeout={CELL_TIMEOUT_S * 2}", "--output-dir", str(out),
                           str(NOTEBOOKS / "03-analysts.ipynb")], capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-4000:]
    nb = nbformat.read(out / "03-analysts.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code) and not [o for c in code for o in c.outputs if o.output_type == "error"]
    said = "".join(o.get("text", "") for o in code[0].outputs)
    started = re.search(r"Neo4j at bolt://127\.0\.0\.1:(\d+) \(started here\)", said)
    assert started, said
    port = int(started.group(1))
    assert port != 7687 and f":{port}" not in NEO4J_URI
    with socket.socket() as s:  # stopped at the end: nothing listens there any more
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert not kernel_env.exists()
    assert nbformat.writes(strip.strip(nb)) + "\n" == (NOTEBOOKS / "03-analysts.ipynb").read_text(encoding="utf-8")


def test_the_neo4j_notebook_has_no_default_server() -> None:
    """Only NEO4J_URI or a server the notebook started: no fallback address in its code."""
    nb = nbformat.read(NOTEBOOKS / "03-analysts.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert 'os.environ.get("NEO4J_URI")' in code and "7687" not in code and "localhost" not in code


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_committed_notebook_is_stripped(path: Path) -> None:
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} cell {cell.id} has outputs: run `make notebooks-strip`")
        assert not set(cell.metadata) & set(strip.RUN_METADATA), f"{path.name} cell {cell.id}: run metadata"
    assert strip.stripped_text(path) == path.read_text(encoding="utf-8"), f"{path.name}: run `make notebooks-strip`"


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_notebook_asserts_and_explains(path: Path) -> None:
    """A tutorial that checks nothing can go stale silently, and one without prose is not a tutorial."""
    nb = nbformat.read(path, as_version=4)
    asserts = sum(line.lstrip().startswith("assert ") for c in nb.cells if c.cell_type == "code"
                  for line in c.source.splitlines())
    prose = [c for c in nb.cells if c.cell_type == "markdown"]
    assert asserts >= 5, f"{path.name} asserts only {asserts} things"
    assert len(prose) >= 5 and nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "from graphmem import Memory" in sources and "tempfile" in sources and '"GRAPHMEM_HOME"' in sources
    assert '"hashing"' in sources, f"{path.name} must run offline: the hashing embedder"
    assert '"llm"' not in sources, f"{path.name} must run offline: no LLM"


def test_every_notebook_is_known() -> None:
    assert {p.name for p in notebooks()} == EXPECTED


def test_strip_removes_what_a_run_adds(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOKS / "01-quickstart.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    cell.execution_count = 3
    cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00Z"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    dirty = tmp_path / "dirty.ipynb"
    nbformat.write(nb, dirty)
    assert strip.main(["--check", str(dirty)]) == 1
    assert strip.main([str(dirty)]) == 0
    assert dirty.read_text(encoding="utf-8") == (NOTEBOOKS / "01-quickstart.ipynb").read_text(encoding="utf-8")
    assert strip.main(["--check", str(dirty)]) == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_failing_cell_fails_the_run(kernel_env: Path, tmp_path: Path) -> None:
    """The harness itself: a notebook whose assert cell fails must not pass."""
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("assert x == 2, 'x is not 2'")])
    path = tmp_path / "failing.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(CellExecutionError, match="x is not 2"):
        execute(path, tmp_path)
