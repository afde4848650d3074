"""The single SHACL entry point: the guard, ``graphmem ontology test`` and the W3C suite all go through it.

Inference is always off: reasoning before validation turns a wrong range into an inferred type that
passes ``sh:class``. What ``sh:class`` needs from the ontology (``rdfs:subClassOf``) is put into the
data graph by the caller, or passed as ``ont_graph`` (pySHACL then copies the data graph first).

pySHACL's ``Validator`` is used directly rather than ``pyshacl.validate``: the shapes graph is compiled
once (:func:`compile_shapes`) instead of on every call, and pySHACL's messages go to graphmem's logger
instead of a stderr handler that ``pyshacl.validate`` installs on every call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyshacl import ShapesGraph, Validator
from pyshacl.errors import ReportableRuntimeError, ValidationFailure
from pyshacl.graph_abstraction import DataGraph
from pyshacl.monkey import apply_patches
from rdflib import Graph, URIRef

from ..errors import OntologyError
from .results import Renderer, ShaclResult, results_from_report

log = logging.getLogger("graphmem.ontology.shacl")
apply_patches()  # type: ignore[no-untyped-call]


@dataclass
class Outcome:
    """What one validation run found."""

    conforms: bool
    results: list[ShaclResult]
    report: Graph = field(repr=False)
    text: str = field(repr=False)


def compile_shapes(shapes: Graph) -> ShapesGraph:
    """Harvest the shapes of ``shapes`` once, for many validations (not thread-safe: one user at a time)."""
    compiled = ShapesGraph(shapes, False, log)
    try:
        _ = compiled.shapes
    except (ReportableRuntimeError, ValidationFailure) as exc:
        raise OntologyError(f"the shapes cannot be read: {getattr(exc, 'message', exc)}") from None
    return compiled


def run_shacl(
    data: Graph,
    shapes: Graph | ShapesGraph,
    *,
    focus_nodes: Sequence[URIRef] | None = None,
    ont_graph: Graph | None = None,
    renderer: Renderer | None = None,
) -> Outcome:
    """Validate ``data`` against ``shapes`` (a parsed graph, or compiled by :func:`compile_shapes`).

    ``focus_nodes`` limits validation to those nodes (``None`` or empty: the whole graph, as in
    pySHACL, so callers with nothing to check must not call). ``data`` is not modified unless
    ``ont_graph`` is ``None`` (then it is validated in place, which is read-only in SHACL Core).
    Shapes that cannot be evaluated (a bad regex, unsupported SPARQL) raise :class:`OntologyError`.
    """
    options = {
        "inference": "none",
        "inplace": ont_graph is None,
        "advanced": False,
        "focus_nodes": list(focus_nodes) if focus_nodes else None,
        "logger": log,
    }
    shapes_graph = shapes.graph if isinstance(shapes, ShapesGraph) else shapes
    try:
        validator = Validator(DataGraph.from_rdflib(data), shacl_graph=shapes_graph, ont_graph=ont_graph,
                              options=options)
        if isinstance(shapes, ShapesGraph):
            validator.shacl_graph = shapes
        conforms, report, text = validator.run()  # type: ignore[no-untyped-call]
    except (ReportableRuntimeError, ValidationFailure, NotImplementedError) as exc:
        raise OntologyError(f"the shapes cannot be evaluated: {getattr(exc, 'message', exc)}") from None
    return Outcome(bool(conforms), results_from_report(report, renderer), report, str(text))
