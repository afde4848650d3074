"""Ontology, SHACL shapes and the write guard.

``Ontology.load(...)`` compiles Turtle files once (classes, relations, surface forms, Neo4j names);
``Guard(ontology).check(triples, types, context)`` returns one verdict per new triple;
``check_files`` lints ontology and shapes files; ``load_cases``/``run_cases`` run W3C-manifest or DASH
example cases through ``run_shacl``, the one validation entry point. The modeller CLI
(``graphmem ontology check|show|test``) is :data:`graphmem.ontology.cli.ontology_app`.
"""

from __future__ import annotations

from ..errors import OntologyError
from .diagnostics import Problem
from .guard import Guard, GuardReport, Triple, TypedLiteral, Verdict, entity_iri, entity_key
from .lint import check as check_files
from .manifest import Case, CaseResult, load_cases, run_cases
from .model import Ambiguity, ClassInfo, Ontology, RelationInfo, default_paths
from .naming import SAFE_NAME, is_safe, local_name, normalize_surface, to_label, to_rel_type
from .results import ENTITY_NS, GRAPHMEM, UNKNOWN_CLASS, UNKNOWN_RELATION, WRONG_PROPERTY_KIND, PathOp, ShaclResult
from .validation import Outcome, compile_shapes, run_shacl

__all__ = [
    "ENTITY_NS",
    "GRAPHMEM",
    "SAFE_NAME",
    "UNKNOWN_CLASS",
    "UNKNOWN_RELATION",
    "WRONG_PROPERTY_KIND",
    "Ambiguity",
    "Case",
    "CaseResult",
    "ClassInfo",
    "Guard",
    "GuardReport",
    "Ontology",
    "OntologyError",
    "Outcome",
    "PathOp",
    "Problem",
    "RelationInfo",
    "ShaclResult",
    "Triple",
    "TypedLiteral",
    "Verdict",
    "check_files",
    "compile_shapes",
    "default_paths",
    "entity_iri",
    "entity_key",
    "is_safe",
    "load_cases",
    "local_name",
    "normalize_surface",
    "run_cases",
    "run_shacl",
    "to_label",
    "to_rel_type",
]
