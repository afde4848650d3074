"""SHACL validation results as plain records: readable by a person (``str``) and by a program (``to_dict``).

A report graph is flattened into :class:`ShaclResult` records. Paths are parsed into a small
algebra (:data:`PathExpr`) so the guard can map results to triples and the test runner can compare
complex paths without caring about blank-node identity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias
from urllib.parse import unquote

from rdflib import BNode, Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.namespace import RDF, SH
from rdflib.term import Node

GRAPHMEM: Final = Namespace("https://graphmem.dev/guard#")
"""Namespace of the guard's own (non-SHACL) constraint components, e.g. ``graphmem:UnknownRelation``."""
ENTITY_NS: Final = "urn:graphmem:entity:"
"""Entities become ``urn:graphmem:entity:<percent-encoded key>`` nodes in guard data graphs."""
SKOLEM_NS: Final = "urn:graphmem:shape:"
"""IRIs the guard gives blank-node property shapes; shown by their parent shape and path."""
UNKNOWN_RELATION: Final = GRAPHMEM.UnknownRelation
UNKNOWN_CLASS: Final = GRAPHMEM.UnknownClass
WRONG_PROPERTY_KIND: Final = GRAPHMEM.WrongPropertyKind

@dataclass(frozen=True)
class PathOp:
    """A complex SHACL path: ``^`` (inverse), ``/`` (sequence), ``|`` (alternative), ``*``, ``+``, ``?``."""

    op: str
    args: tuple[PathExpr, ...]


PathExpr: TypeAlias = "str | PathOp"
"""A SHACL path: a predicate IRI, or a :class:`PathOp` over sub-paths."""

_UNARY: Final = {SH.inversePath: "^", SH.zeroOrMorePath: "*", SH.oneOrMorePath: "+", SH.zeroOrOnePath: "?"}


def parse_path(graph: Graph, node: Node, _depth: int = 0) -> PathExpr:
    """Read a SHACL property path from ``graph`` (blank-node structure) into a :data:`PathExpr`."""
    if _depth > 32:
        raise ValueError("SHACL path nested too deeply")
    if isinstance(node, URIRef):
        return str(node)
    for pred, op in _UNARY.items():
        inner = graph.value(node, pred)
        if inner is not None:
            return PathOp(op, (parse_path(graph, inner, _depth + 1),))
    alt = graph.value(node, SH.alternativePath)
    if alt is not None:
        return PathOp("|", tuple(parse_path(graph, m, _depth + 1) for m in Collection(graph, alt)))
    if graph.value(node, RDF.first) is not None:
        return PathOp("/", tuple(parse_path(graph, m, _depth + 1) for m in Collection(graph, node)))
    raise ValueError(f"not a SHACL path: {node.n3()}")


def path_predicates(path: PathExpr, inverse: bool = False) -> set[tuple[str, bool]]:
    """Every predicate in the path with whether it is walked backwards."""
    if isinstance(path, str):
        return {(path, inverse)}
    flip = inverse != (path.op == "^")
    out: set[tuple[str, bool]] = set()
    for arg in path.args:
        out |= path_predicates(arg, flip)
    return out


def render_path(path: PathExpr, name: Callable[[str], str]) -> str:
    """SPARQL property-path syntax, with IRIs spelled by ``name``."""
    if isinstance(path, str):
        return name(path)
    if path.op == "^":
        return "^" + render_path(path.args[0], name)
    if path.op in ("/", "|"):
        return "(" + path.op.join(render_path(m, name) for m in path.args) + ")"
    return render_path(path.args[0], name) + path.op


class Renderer:
    """Spells terms for people: known prefixes become ``prefix:local``, entity IRIs become their key, and
    a blank-node property shape becomes ``ParentShape[path]``."""

    def __init__(self, prefixes: Mapping[str, str] | None = None, shapes: Graph | None = None) -> None:
        base = {"sh": str(SH), "graphmem": str(GRAPHMEM), "xsd": "http://www.w3.org/2001/XMLSchema#",
                "rdf": str(RDF), "rdfs": "http://www.w3.org/2000/01/rdf-schema#", "owl": "http://www.w3.org/2002/07/owl#"}
        base.update({p: ns for p, ns in (prefixes or {}).items() if p and ns})
        self._ns = sorted(((ns, p) for p, ns in base.items()), key=lambda x: -len(x[0]))
        self._shapes = shapes

    def iri(self, iri: str) -> str:
        if iri.startswith(ENTITY_NS):
            return unquote(iri[len(ENTITY_NS):])
        for ns, prefix in self._ns:
            if iri.startswith(ns) and len(iri) > len(ns):
                return f"{prefix}:{iri[len(ns):]}"
        return f"<{iri}>"

    def shape(self, shape: Node | None) -> str | None:
        if shape is None:
            return None
        if not is_anonymous(shape):
            return self.node(shape)
        if self._shapes is not None:
            parent = self._shapes.value(None, SH.property, shape)
            path = self._shapes.value(shape, SH.path)
            if parent is not None and not isinstance(parent, BNode):
                try:
                    shown = render_path(parse_path(self._shapes, path), self.iri) if path is not None else ""
                except ValueError:
                    shown = ""
                return f"{self.node(parent)}[{shown}]"
        return None

    def node(self, node: Node | None) -> str:
        if node is None:
            return "-"
        if isinstance(node, URIRef):
            return self.iri(str(node))
        if isinstance(node, Literal):
            text = f'"{node}"'
            if node.language:
                return f"{text}@{node.language}"
            if node.datatype is not None and str(node.datatype) != "http://www.w3.org/2001/XMLSchema#string":
                return f"{text}^^{self.iri(str(node.datatype))}"
            return text
        return node.n3()


def is_anonymous(node: Node) -> bool:
    """A blank node, or a blank node the guard named (its name means nothing to people)."""
    return isinstance(node, BNode) or str(node).startswith(SKOLEM_NS)


def term_str(node: Node | None) -> str | None:
    """Program form of a term: an IRI as is, a literal or blank node in N-Triples syntax."""
    if node is None:
        return None
    if isinstance(node, URIRef):
        return str(node)
    return node.n3()


@dataclass(frozen=True)
class ShaclResult:
    """One SHACL validation result (or one of the guard's own checks, in the ``graphmem:`` namespace)."""

    focus: Node
    path: PathExpr | None
    value: Node | None
    constraint: str
    shape: Node | None
    severity: str
    """Local name of ``sh:resultSeverity``: ``Violation``, ``Warning``, ``Info`` (or a custom one)."""
    message: str
    text: str
    """The whole result in one line for people and LLM repair prompts."""
    shape_label: str | None = None
    """The source shape for people: its prefixed name, or ``Parent[path]`` for an anonymous one."""

    @property
    def blocking(self) -> bool:
        return self.severity == "Violation"

    def to_dict(self) -> dict[str, Any]:
        return {
            "focus_node": term_str(self.focus),
            "path": None if self.path is None else self.path if isinstance(self.path, str)
            else render_path(self.path, lambda i: f"<{i}>"),
            "value": term_str(self.value),
            "constraint": self.constraint,
            "shape": None if self.shape is None or is_anonymous(self.shape) else str(self.shape),
            "shape_label": self.shape_label,
            "severity": self.severity,
            "message": self.message,
            "text": self.text,
        }

    def __str__(self) -> str:
        return self.text


def make_result(
    *, focus: Node, path: PathExpr | None, value: Node | None, constraint: str, shape: Node | None,
    severity: str, message: str, renderer: Renderer,
) -> ShaclResult:
    where = renderer.node(focus)
    if path is not None:
        where += f" {render_path(path, renderer.iri)}"
    if value is not None:
        where += f" {renderer.node(value)}"
    shown = renderer.shape(shape)
    shape_txt = f", shape {shown}" if shown else ""
    text = f"{severity}: {where}: {message or 'constraint not met'} [{renderer.iri(constraint)}{shape_txt}]"
    return ShaclResult(focus, path, value, constraint, shape, severity, message, text, shown)


def _message(graph: Graph, result: Node) -> str:
    msgs = list(graph.objects(result, SH.resultMessage))
    english = [m for m in msgs if isinstance(m, Literal) and m.language in (None, "", "en")]
    return " ".join(sorted(str(m) for m in (english or msgs)))


def results_from_report(report: Graph, renderer: Renderer | None = None) -> list[ShaclResult]:
    """Flatten every ``sh:result`` of every ``sh:ValidationReport`` in ``report``."""
    r = renderer or Renderer()
    out = []
    for rep in report.subjects(RDF.type, SH.ValidationReport):
        for res in report.objects(rep, SH.result):
            path_node = report.value(res, SH.resultPath)
            sev = report.value(res, SH.resultSeverity)
            sev_name = str(sev).rsplit("#", 1)[-1] if sev is not None else "Violation"
            out.append(make_result(
                focus=report.value(res, SH.focusNode) or BNode(),
                path=parse_path(report, path_node) if path_node is not None else None,
                value=report.value(res, SH.value),
                constraint=str(report.value(res, SH.sourceConstraintComponent) or ""),
                shape=report.value(res, SH.sourceShape),
                severity=sev_name,
                message=_message(report, res),
                renderer=r,
            ))
    return sorted(out, key=lambda x: x.text)


def canonical_node(graph: Graph, node: Node | None, depth: int = 4) -> Any:
    """A hashable, blank-node-free key: blank nodes are compared by what they hold, not their id."""
    if node is None:
        return None
    if isinstance(node, URIRef):
        return ("iri", str(node))
    if isinstance(node, Literal):
        return ("lit", str(node), str(node.datatype or ""), node.language or "")
    if depth <= 0:
        return ("bnode",)
    return ("bnode", frozenset((str(p), canonical_node(graph, o, depth - 1)) for p, o in graph.predicate_objects(node)))


def canonical_results(graph: Graph, results: Iterable[Node]) -> set[tuple[Any, ...]]:
    """``(focus, path, constraint, severity, value)`` of each result node, for comparing reports."""
    out = set()
    for res in results:
        path_node = graph.value(res, SH.resultPath)
        out.add((
            canonical_node(graph, graph.value(res, SH.focusNode)),
            parse_path(graph, path_node) if path_node is not None else None,
            str(graph.value(res, SH.sourceConstraintComponent)),
            str(graph.value(res, SH.resultSeverity)),
            canonical_node(graph, graph.value(res, SH.value)),
        ))
    return out
