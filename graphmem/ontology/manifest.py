"""Example cases for shapes, in the W3C SHACL test-manifest format (and DASH test cases), run through
the same validation entry point as the guard.

A manifest (``mf:Manifest``) lists ``sht:Validate`` entries in ``mf:entries`` and other manifests in
``mf:include``; each entry names a data graph and a shapes graph in ``mf:action`` and the expected
``sh:ValidationReport`` (or ``sht:Failure``) in ``mf:result``. A DASH file holds
``dash:GraphValidationTestCase`` nodes whose ``dash:expectedResult`` is the report; the file is both
data and shapes. A case passes when ``sh:conforms`` matches and the set of
``(focus node, path, constraint component, severity, value)`` of the results is the same; blank
nodes compare by content, messages and source shapes are not compared.

With ``tbox`` given (the ``graphmem ontology test`` default), the ontology's ``rdfs:subClassOf`` closure
is merged into every data graph first, exactly as the guard builds its data graphs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote, urlparse

from pyshacl import ShapesGraph
from pyshacl.monkey import rdflib_bool_patch, rdflib_bool_unpatch
from rdflib import Graph, Namespace
from rdflib.collection import Collection
from rdflib.namespace import RDF, RDFS, SH
from rdflib.term import Node

from ..errors import OntologyError
from .results import Renderer, canonical_results, render_path
from .sources import SourceFile, parse_into
from .validation import compile_shapes, run_shacl

MF: Final = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
SHT: Final = Namespace("http://www.w3.org/ns/shacl-test#")
DASH: Final = Namespace("http://datashapes.org/dash#")

Status = Literal["pass", "fail", "error"]


@dataclass
class Case:
    """One example: data and shapes files, and the expected report (``None`` = a failure is expected)."""

    id: str
    label: str
    manifest: Path
    data: Path
    shapes: Path
    expected_graph: Graph = field(repr=False)
    expected: Node | None


@dataclass
class CaseResult:
    case: Case
    status: Status
    expected_conforms: bool | None = None
    conforms: bool | None = None
    missing: list[str] = field(default_factory=list)
    """Expected results that validation did not produce."""
    unexpected: list[str] = field(default_factory=list)
    """Results that validation produced but the case does not expect."""
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.case.id, "label": self.case.label, "manifest": str(self.case.manifest),
                "status": self.status, "expected_conforms": self.expected_conforms, "conforms": self.conforms,
                "missing": self.missing, "unexpected": self.unexpected, "detail": self.detail}


def _file_of(iri: Node, what: str, manifest: Path) -> Path:
    text = str(iri)
    if not text.startswith("file:"):
        raise OntologyError(f"{what} <{text}> is not a local file", path=manifest)
    return Path(unquote(urlparse(text).path))


def _parse(path: Path, shapes: bool = False) -> Graph:
    g = Graph()
    if shapes:
        rdflib_bool_patch()  # type: ignore[no-untyped-call]  # pySHACL reads shapes graphs with literals kept as written
    try:
        parse_into(g, SourceFile.read(path))
    finally:
        if shapes:
            rdflib_bool_unpatch()  # type: ignore[no-untyped-call]
    return g


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    """Cases of the given manifests (or folders holding a ``manifest.ttl``, or DASH test files)."""
    cases: list[Case] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            p = p / "manifest.ttl"
        if not p.is_file():
            raise OntologyError("test manifest not found", path=p)
        _collect(p.resolve(), cases, seen, 0)
    return cases


def _collect(path: Path, cases: list[Case], seen: set[Path], depth: int) -> None:
    if path in seen:
        return
    if depth > 16:
        raise OntologyError("mf:include chain too deep", path=path)
    seen.add(path)
    g = _parse(path)
    for tc in sorted(g.subjects(RDF.type, DASH.GraphValidationTestCase), key=str):
        cases.append(Case(str(tc), str(g.value(tc, RDFS.label) or _label(g, tc, path)), path, path, path, g,
                          g.value(tc, DASH.expectedResult)))
    for manifest in sorted(g.subjects(RDF.type, MF.Manifest), key=str):
        for inc in sorted(g.objects(manifest, MF.include), key=str):
            _collect(_file_of(inc, "mf:include", path).resolve(), cases, seen, depth + 1)
        entries = g.value(manifest, MF.entries)
        for entry in Collection(g, entries) if entries is not None else []:
            if (entry, RDF.type, SHT.Validate) not in g:
                continue
            action = g.value(entry, MF.action)
            data = g.value(action, SHT.dataGraph) if action is not None else None
            shapes = g.value(action, SHT.shapesGraph) if action is not None else None
            if data is None or shapes is None:
                raise OntologyError(f"entry <{entry}> needs sht:dataGraph and sht:shapesGraph in mf:action",
                                    path=path, line=SourceFile.read(path).line_of(str(entry)))
            result = g.value(entry, MF.result)
            cases.append(Case(str(entry), str(g.value(entry, RDFS.label) or _label(g, entry, path)), path,
                              _file_of(data, "sht:dataGraph", path), _file_of(shapes, "sht:shapesGraph", path), g,
                              None if result == SHT.Failure else result))


def _label(g: Graph, node: Node, path: Path) -> str:
    text = str(node)
    return text.rsplit("/", 1)[-1] if text.startswith("file:") else text


def _report_results(g: Graph, report: Node) -> list[Node]:
    return list(g.objects(report, SH.result))


def run_case(case: Case, *, tbox: Graph | None = None, cache: dict[Path, ShapesGraph] | None = None,
             renderer: Renderer | None = None) -> CaseResult:
    """Validate one case through :func:`run_shacl` and compare with what it expects."""
    cache = cache if cache is not None else {}
    try:
        data = _parse(case.data)
        if tbox is not None:
            for t in tbox:
                data.add(t)
        shapes_graph = _parse(case.shapes, shapes=True) if case.shapes not in cache else None
    except OntologyError as exc:
        return CaseResult(case, "error", detail=str(exc))
    try:
        if shapes_graph is not None:
            cache[case.shapes] = compile_shapes(shapes_graph)
        outcome = run_shacl(data, cache[case.shapes], renderer=renderer)
    except OntologyError as exc:
        if case.expected is None:
            return CaseResult(case, "pass", detail=f"failed as expected: {exc}")
        return CaseResult(case, "fail", detail=str(exc))
    if case.expected is None:
        return CaseResult(case, "fail", conforms=outcome.conforms, detail="expected a validation failure")
    g = case.expected_graph
    conf = g.value(case.expected, SH.conforms)
    expected_conforms = None if conf is None else str(conf).lower() in ("true", "1")
    want = canonical_results(g, _report_results(g, case.expected))
    reports = list(outcome.report.subjects(RDF.type, SH.ValidationReport))
    got = canonical_results(outcome.report, [r for rep in reports for r in _report_results(outcome.report, rep)])
    r = renderer or Renderer({p: str(ns) for p, ns in g.namespaces()})
    show = [_show(k, r) for k in sorted(want - got, key=repr)], [_show(k, r) for k in sorted(got - want, key=repr)]
    ok = want == got and (expected_conforms is None or expected_conforms == outcome.conforms)
    return CaseResult(case, "pass" if ok else "fail", expected_conforms, outcome.conforms, show[0], show[1])


def _show(key: tuple[Any, ...], r: Renderer) -> str:
    def node(k: Any) -> str:
        if k is None:
            return "-"
        if k[0] == "iri":
            return r.iri(k[1])
        if k[0] == "lit":
            return f'"{k[1]}"' + (f"^^{r.iri(k[2])}" if k[2] else "") + (f"@{k[3]}" if k[3] else "")
        return "[]"

    focus, path, constraint, severity, value = key
    shown_path = "-" if path is None else render_path(path, r.iri)
    return f"{r.iri(severity)} {node(focus)} {shown_path} {node(value)} [{r.iri(constraint)}]"


def run_cases(cases: Sequence[Case], *, tbox: Graph | None = None, renderer: Renderer | None = None,
              shapes_cache: dict[Path, ShapesGraph] | None = None) -> list[CaseResult]:
    """Run every case; each shapes file is parsed and compiled once for all cases that use it."""
    cache: dict[Path, ShapesGraph] = shapes_cache if shapes_cache is not None else {}
    return [run_case(c, tbox=tbox, cache=cache, renderer=renderer) for c in cases]
