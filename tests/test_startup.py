"""A fast start: what ``import graphmem``, ``graphmem --help`` and a text-only first use import.

Each check runs in a fresh interpreter (what is imported is per process) and asserts on
``sys.modules``, never on timings; ``bench/startup.py`` measures the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import graphmem

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pydantic", "numpy", "rdflib", "owlrl", "pyshacl", "spacy", "torch", "neo4j", "openai", "tiktoken",
         "sentence_transformers", "yaml", "graphmem.memory", "graphmem.config")


def loaded_after(code: str, tmp_path: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = code + "\nimport json, sys\nprint('MODULES', json.dumps(sorted(sys.modules)))\n"
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=full_env, capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.rsplit("MODULES", 1)[1]))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in HEAVY if m in modules}


def test_import_graphmem_loads_only_the_errors(tmp_path: Path) -> None:
    assert heavy(loaded_after("import graphmem", tmp_path)) == set()


def test_the_public_names_resolve_on_first_use() -> None:
    for name in graphmem.__all__:
        assert getattr(graphmem, name) is not None, name
    assert set(graphmem.__all__) <= set(dir(graphmem))
    from graphmem import AsyncMemory, Memory, MemoryConfig, MemoryType, Scope
    from graphmem.config import MemoryConfig as Config
    from graphmem.memory import AsyncMemory as Async
    from graphmem.memory import Memory as Mem
    from graphmem.models import MemoryType as Type
    from graphmem.models import Scope as S

    assert (Memory, AsyncMemory, MemoryConfig, MemoryType, Scope) == (Mem, Async, Config, Type, S)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = graphmem.Nope  # type: ignore[attr-defined]


def test_star_import_gives_every_public_name(tmp_path: Path) -> None:
    code = "from graphmem import *\nassert Memory and AsyncMemory and MemoryConfig and Scope and GraphmemError"
    assert "graphmem.memory" in loaded_after(code, tmp_path)


def test_the_ontology_package_is_lazy_too(tmp_path: Path) -> None:
    from graphmem import ontology

    assert set(ontology.__all__) <= set(dir(ontology))
    assert all(getattr(ontology, n) is not None for n in ontology.__all__)
    # what the stores and the LLM extractor import for names: no RDF stack
    assert heavy(loaded_after("import graphmem.ontology.naming", tmp_path)) == set()


def test_help_does_not_import_the_engine(tmp_path: Path) -> None:
    code = "from graphmem.cli import app\ntry:\n    app(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
    assert heavy(loaded_after(code, tmp_path)) == set()
    code = code.replace("['--help']", "['ontology', '--help']")
    assert heavy(loaded_after(code, tmp_path)) - {"pydantic"} == set()  # typer's sub-command parsing uses pydantic


def test_a_text_only_first_use_loads_no_ontology_machinery(tmp_path: Path) -> None:
    code = f"""
from graphmem import Memory
m = Memory({{'home': {str(tmp_path / 'home')!r}, 'embedder': {{'provider': 'hashing'}}}})
m.add('I moved to Lisbon last year.', user_id='u1', infer=False)
assert m.search('Lisbon', user_id='u1')['results']
"""
    loaded = loaded_after(code, tmp_path, {"GRAPHMEM_CACHE_DIR": str(tmp_path / "cache")})
    assert "graphmem.memory" in loaded
    assert {"owlrl", "pyshacl", "spacy"} & loaded == set()  # no facts: the ontology is never compiled


def test_the_rules_import_spacy_without_its_command_line(tmp_path: Path) -> None:
    """spaCy's ``__init__`` imports its command line (typer, weasel, httpx) for ``spacy.info``; the
    rules never use it, so the first add does without. Afterwards ``spacy.info`` and ``spacy.cli``
    are spaCy's own, imported on first use."""
    code = f"""
from graphmem import Memory
m = Memory({{'home': {str(tmp_path / 'home')!r}, 'embedder': {{'provider': 'hashing'}}}})
m.add('I moved to Lisbon last year.', user_id='u1', speaker='Ana')
import sys
assert 'spacy' in sys.modules and 'spacy.cli' not in sys.modules and 'weasel' not in sys.modules, 'cli loaded'
import spacy
assert spacy.info(silent=True)['spacy_version'] == spacy.__version__
assert spacy.cli.download is sys.modules['spacy.cli'].download
"""
    loaded = loaded_after(code, tmp_path, {"GRAPHMEM_CACHE_DIR": str(tmp_path / "cache")})
    assert {"spacy.cli", "weasel"} <= loaded


def test_a_second_process_takes_the_compiled_ontology_from_the_cache(tmp_path: Path) -> None:
    code = f"""
from graphmem import Memory
m = Memory({{'home': {str(tmp_path / 'home')!r}, 'embedder': {{'provider': 'hashing'}}}})
out = m.add('Ana lives in Lisbon.', user_id='u1', infer=False,
            triples=[{{'source': 'Ana', 'relation': 'livesIn', 'target': 'Lisbon', 'source_type': 'Person',
                       'target_type': 'City'}}])
assert out['relations']['added']
"""
    env = {"GRAPHMEM_CACHE_DIR": str(tmp_path / "cache")}
    cold = loaded_after(code, tmp_path, env)
    assert "owlrl" in cold  # the first process compiles the ontology and caches it
    warm = loaded_after(code, tmp_path, env)
    assert "owlrl" not in warm and "pyshacl" in warm  # the guard still validates; the closure is cached


def test_warm_loads_what_the_first_add_and_search_would(tmp_path: Path) -> None:
    """After ``warm`` (what the servers run before they answer), the first add and search import
    nothing more, the loaded spaCy pipeline is out of the collector's reach, and warm wrote nothing."""
    code = (
        "import gc, sys\n"
        "from graphmem import Memory\n"
        f"m = Memory({{'home': {str(tmp_path / 'home')!r}}}).warm()\n"
        "assert gc.get_freeze_count() > 0\n"
        "assert m.store.count() == 0\n"
        "before = set(sys.modules)\n"
        "m.add('I moved to Lisbon last year and work for Northwind.', user_id='u')\n"
        "m.search('where does the user live now?', user_id='u')\n"
        "print('NEW', sorted(set(sys.modules) - before))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.rsplit("NEW", 1)[1].strip() == "[]"
