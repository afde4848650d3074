"""Ontology, SHACL shapes and the write guard.

``Ontology.load(...)`` compiles Turtle files once (classes, relations, surface forms, Neo4j names);
``Guard(ontology).check(triples, types, context)`` returns one verdict per new triple;
``check_files`` lints ontology and shapes files; ``load_cases``/``run_cases`` run W3C-manifest or DASH
example cases through ``run_shacl``, the one validation entry point. The modeller CLI
(``graphmem ontology check|show|test``) is :data:`graphmem.ontology.cli.ontology_app`.

The names are imported on first access: ``graphmem.ontology.naming`` (what the stores and the LLM
extractor read) must not pull in rdflib, owlrl and pySHACL.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import OntologyError

if TYPE_CHECKING:
    from .diagnostics import Problem
    from .guard import Guard, GuardReport, Triple, TypedLiteral, Verdict, entity_iri, entity_key
    from .lint import check as check_files
    from .manifest import Case, CaseResult, load_cases, run_cases
    from .model import Ambiguity, ClassInfo, Ontology, RelationInfo, default_paths
    from .naming import SAFE_NAME, is_safe, local_name, normalize_surface, to_label, to_rel_type
    from .results import (
        ENTITY_NS,
        GRAPHMEM,
        UNKNOWN_CLASS,
        UNKNOWN_RELATION,
        WRONG_PROPERTY_KIND,
        PathOp,
        ShaclResult,
    )
    from .validation import Outcome, compile_shapes, run_shacl

_LAZY: dict[str, tuple[str, str]] = {
    "Problem": (".diagnostics", "Problem"),
    "Guard": (".guard", "Guard"),
    "GuardReport": (".guard", "GuardReport"),
    "Triple": (".guard", "Triple"),
    "TypedLiteral": (".guard", "TypedLiteral"),
    "Verdict": (".guard", "Verdict"),
    "entity_iri": (".guard", "entity_iri"),
    "entity_key": (".guard", "entity_key"),
    "check_files": (".lint", "check"),
    "Case": (".manifest", "Case"),
    "CaseResult": (".manifest", "CaseResult"),
    "load_cases": (".manifest", "load_cases"),
    "run_cases": (".manifest", "run_cases"),
    "Ambiguity": (".model", "Ambiguity"),
    "ClassInfo": (".model", "ClassInfo"),
    "Ontology": (".model", "Ontology"),
    "RelationInfo": (".model", "RelationInfo"),
    "default_paths": (".model", "default_paths"),
    "SAFE_NAME": (".naming", "SAFE_NAME"),
    "is_safe": (".naming", "is_safe"),
    "local_name": (".naming", "local_name"),
    "normalize_surface": (".naming", "normalize_surface"),
    "to_label": (".naming", "to_label"),
    "to_rel_type": (".naming", "to_rel_type"),
    "ENTITY_NS": (".results", "ENTITY_NS"),
    "GRAPHMEM": (".results", "GRAPHMEM"),
    "UNKNOWN_CLASS": (".results", "UNKNOWN_CLASS"),
    "UNKNOWN_RELATION": (".results", "UNKNOWN_RELATION"),
    "WRONG_PROPERTY_KIND": (".results", "WRONG_PROPERTY_KIND"),
    "PathOp": (".results", "PathOp"),
    "ShaclResult": (".results", "ShaclResult"),
    "Outcome": (".validation", "Outcome"),
    "compile_shapes": (".validation", "compile_shapes"),
    "run_shacl": (".validation", "run_shacl"),
}

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


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0], __name__), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
