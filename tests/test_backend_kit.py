"""The backend kit works for an outside package: the example in-memory backend, installed as a plugin
(``make venv`` installs it), passes every test of ``graphmem.testing.kit`` when pytest runs in its
own folder, found by name through its ``graphmem.stores`` entry point."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from graphmem.testing import kit

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "memory_backend"
KIT_TESTS = sorted(name for name in kit.__all__ if name.startswith("test_"))
MIN_KIT_RUNS = 48
"""The kit's test functions with their parameters expanded (texts, times, bad inputs): 48 today."""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_example_backend_passes_the_kit_from_its_own_folder(tmp_path: Path) -> None:
    found = [ep for ep in entry_points(group="graphmem.stores") if ep.name == "memory"]
    assert found, "the example backend is not installed: pip install -e examples/memory_backend (make venv does)"
    assert found[0].value == "graphmem_memory_backend:make_store"
    report = tmp_path / "kit.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
                         cwd=EXAMPLE, capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    cases = ET.parse(report).getroot().iter("testcase")
    outcomes = {f"{c.get('classname')}::{c.get('name')}": [x.tag for x in c] for c in cases}
    kit_runs = {name: tags for name, tags in outcomes.items() if name.startswith("tests.test_graphmem_kit::")}
    assert all(tags == [] for tags in kit_runs.values()), {n: t for n, t in kit_runs.items() if t}  # no skip either
    assert len(kit_runs) >= MIN_KIT_RUNS, sorted(kit_runs)
    ran = {name.split("::")[1].split("[")[0] for name in kit_runs}
    assert ran == set(KIT_TESTS)  # every test of the kit, each on the provider "memory"
    assert all(name.endswith("[memory]") or "[memory-" in name for name in kit_runs), sorted(kit_runs)


def test_the_kit_names_its_store_by_option_and_never_runs_without_one(tmp_path: Path) -> None:
    """In a project of its own: no provider named fails every kit test (a kit testing nothing must not
    pass); ``--graphmem-provider`` runs them on the store it names."""
    (tmp_path / "test_kit.py").write_text("from graphmem.testing.kit import *  # noqa: F403\n", encoding="utf-8")
    pick = ["-k", "exact_duplicate or history_outlives"]

    def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pick, *args],
                              cwd=folder, capture_output=True, text=True, timeout=240)

    bare = pytest_in(tmp_path)
    assert bare.returncode == 1 and "2 errors" in bare.stdout, bare.stdout[-2000:]
    assert "needs a store to test: run pytest with --graphmem-provider NAME" in bare.stdout
    named = pytest_in(tmp_path, "--graphmem-provider", "sqlite", "-rA")
    assert named.returncode == 0 and "2 passed" in named.stdout, named.stdout[-2000:]
    assert "PASSED test_kit.py::test_exact_duplicate_is_not_stored_twice[sqlite]" in named.stdout
