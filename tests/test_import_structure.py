"""graphmem's import structure: no cycle between its modules, and no module importing a later stage.

Data flows one way, the API -> the pipeline -> the store, so a reader (or a new backend's author) can
understand a layer from the layers under it alone. ``LAYERS`` names the stages from the ground floor
up; a module may import its own layer and the ones below, never one above, and no two modules may
import each other, however long the loop. The imports are read from the source with ``ast``, so
nothing of graphmem is executed, and every import counts wherever it stands:

- inside a function: a lazy import is a dependency all the same, only paid for later;
- under ``if TYPE_CHECKING:``: a type named in a signature is part of the module's meaning (it cannot
  be read or checked without the other module), and such an import is how a cycle hides;
- ``from pkg import name``: the submodule ``pkg.name`` when there is one, else ``pkg``'s ``__init__``.

Not counted: a package's ``__init__`` that Python runs before a submodule (loading order, not a choice of
the importing module), and modules loaded by name through ``importlib`` (the root's lazy names, the
stores' and extractors' entry points), which the source does not spell as imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import graphmem

LAYERS: list[tuple[str, ...]] = [
    # the ground floor: no memory, no configuration; anything may use them
    ("errors", "version", "private_files", "cachedir", "sansio", "terminal", "plugins"),
    # the records every stage passes on, and the configuration every stage reads
    ("models", "config"),
    # what is checked and prepared before anything is written: ontology, filters, arguments, chunks
    ("ontology", "filters", "inputs", "mem0", "chunking"),
    # the engines the pipeline drives: embedders and the storage backends (which never import the
    # pipeline or search)
    ("embedding", "stores"),
    # reading a chunk into memories, entities and triples
    ("extraction",),
    # the write path and the dump, both over the store
    ("pipeline", "transfer"),
    # the read path
    ("search",),
    # the public API
    ("memory",),
    # the faces over the API; "__init__" is the package root, whose lazy names reach the API
    ("adapters", "servers", "cli", "testing", "__main__", "__init__"),
]
"""Stages of graphmem's data flow, the ground floor first, by top-level module or package."""


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module's dotted name."""
    path: Path
    line: int
    target: str
    """The imported module of the same package, dotted."""

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root).as_posix()}:{self.line} -> {self.target}"


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_imports(package: Path) -> list[Import]:
    """Every import between modules of ``package`` (a folder), lazy and type-only ones included."""
    files = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    out: list[Import] = []
    for source, path in files.items():
        here = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            for name in dict.fromkeys(wanted):
                while name and name not in files:  # ``import pkg.mod.attr`` and the like: the module
                    name = name.rpartition(".")[0]
                if name and name != source:
                    out.append(Import(source, path, node.lineno, name))
    return out


def cycles(imports: Iterable[Import]) -> list[list[Import]]:
    """The imports inside each loop of modules (a strongly connected component of more than one)."""
    edges: dict[str, list[Import]] = {}
    for imp in imports:
        edges.setdefault(imp.source, []).append(imp)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; graphmem's depth is far below the recursion limit
        index[node] = low[node] = len(index)
        stack.append(node)
        for imp in edges.get(node, ()):
            if imp.target not in index:
                visit(imp.target)
                low[node] = min(low[node], low[imp.target])
            elif imp.target in stack:
                low[node] = min(low[node], index[imp.target])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [sorted((i for m in sorted(c) for i in edges.get(m, ()) if i.target in c), key=lambda i: (i.source, i.line))
            for c in found]


def layer_of(module: str, layers: Sequence[tuple[str, ...]]) -> int | None:
    top = module.split(".")[1] if "." in module else "__init__"
    return next((n for n, layer in enumerate(layers) if top in layer), None)


def upward(imports: Iterable[Import], layers: Sequence[tuple[str, ...]]) -> list[tuple[Import, int, int]]:
    """Each import of a module on a higher layer than the importer's, with both layers."""
    out = []
    for imp in imports:
        low, high = layer_of(imp.source, layers), layer_of(imp.target, layers)
        if low is not None and high is not None and high > low:
            out.append((imp, low, high))
    return out


def unplaced(package: Path, layers: Sequence[tuple[str, ...]]) -> list[str]:
    """Top-level modules and packages on no layer: a new one needs its stage decided."""
    tops = {p.stem for p in package.glob("*.py")} | {p.parent.name for p in package.glob("*/__init__.py")}
    return sorted(t for t in tops if not any(t in layer for layer in layers))


def problems(package: Path, layers: Sequence[tuple[str, ...]]) -> list[str]:
    """Everything wrong with ``package``'s imports, one readable line each (none: all is well)."""
    root = package.parent
    imports = read_imports(package)
    lines = [f"{t} is on no layer: add it to LAYERS" for t in unplaced(package, layers)]
    for loop in cycles(imports):
        lines.append(f"import cycle between {', '.join(sorted({i.source for i in loop}))}:")
        lines.extend(f"  {i.where(root)}" for i in loop)
    for imp, low, high in upward(imports, layers):  # layers counted from 1, as docs/architecture.md does
        lines.append(f"upward import: {imp.where(root)} "
                     f"(layer {low + 1} {layers[low]} imports layer {high + 1} {layers[high]})")
    return lines


PACKAGE = Path(graphmem.__file__).parent


def test_graphmem_has_no_import_cycle_and_no_upward_import() -> None:
    found = problems(PACKAGE, LAYERS)
    assert not found, "graphmem's import structure is broken (see tests/test_import_structure.py):\n" + "\n".join(found)


def test_the_reader_sees_graphmem_imports() -> None:
    """The check is only as good as its reading: an import of each kind must be among the edges."""
    edges = {(i.source, i.target) for i in read_imports(PACKAGE)}
    assert ("graphmem.memory", "graphmem.inputs") in edges  # ``from . import inputs``
    assert ("graphmem.extraction.rules.resources", "graphmem.extraction.rules.semantic") in edges  # in a function
    assert ("graphmem.extraction.rules.resources", "graphmem.ontology") in edges  # under TYPE_CHECKING


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


TOY_LAYERS = [("low",), ("mid", "side"), ("high", "__init__")]


def test_checker_passes_a_clean_package(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "__init__.py": "from .high import run\n",
        "low.py": "import os\n",
        "mid/__init__.py": "from .core import thing\n",
        "mid/core.py": "from ..low import os\nfrom . import helpers\n",
        "mid/helpers.py": "import pkg.low\n",
        "side.py": "from .mid import thing\n",
        "high.py": "from . import mid, low\nfrom .side import *\n",
    })
    assert problems(pkg, TOY_LAYERS) == []
    targets = {(i.source, i.target) for i in read_imports(pkg)}
    assert {("pkg.mid.core", "pkg.mid.helpers"), ("pkg.mid.helpers", "pkg.low"), ("pkg.side", "pkg.mid"),
            ("pkg.high", "pkg.mid"), ("pkg.high", "pkg.low"), ("pkg.mid.core", "pkg.low")} <= targets


def test_checker_names_a_cycle_held_by_lazy_and_type_only_imports(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "",
        "mid.py": "def f():\n    from .side import g\n    return g\n",
        "side.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .mid import f\n",
        "high.py": "",
    })
    assert problems(pkg, TOY_LAYERS) == [
        "import cycle between pkg.mid, pkg.side:", "  pkg/mid.py:2 -> pkg.side", "  pkg/side.py:3 -> pkg.mid"]


def test_checker_names_an_upward_import_and_an_unplaced_module(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "X = 1\n\n\ndef version():\n    from . import high\n    return high\n",
        "mid.py": "from .low import X\n",
        "high.py": "from .mid import X\n",
        "extra.py": "",
    })
    assert problems(pkg, TOY_LAYERS) == [
        "extra is on no layer: add it to LAYERS",
        "import cycle between pkg.high, pkg.low, pkg.mid:",
        "  pkg/high.py:1 -> pkg.mid",
        "  pkg/low.py:5 -> pkg.high",
        "  pkg/mid.py:1 -> pkg.low",
        "upward import: pkg/low.py:5 -> pkg.high (layer 1 ('low',) imports layer 3 ('high', '__init__'))",
    ]
    (pkg / "low.py").write_text("X = 1\n")
    assert problems(pkg, TOY_LAYERS) == ["extra is on no layer: add it to LAYERS"]
