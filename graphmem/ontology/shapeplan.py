"""What the guard needs to know about the shapes to validate a batch with as little work as correct.

pySHACL evaluates every property shape of every targeted node shape for every focus node, at a fixed
cost each, whatever the data. A batch of new triples can only be concerned by results on paths that
use its predicates (see the mapping rules in :mod:`.guard`), so when the shapes are *flat* the guard
skips the other property shapes and leaves the stored edges they would read out of the data graph.

Flat means every constraint reads the focus node's own edges: simple or inverse ``sh:path``s, no
``sh:node``/``sh:and``/``sh:or``/``sh:xone``/``sh:not``/``sh:qualifiedValueShape`` (whose results
fold nested paths into an outer one), no SPARQL, no custom components and no SHACL-AF targets. Any
other shapes graph is validated in full, with the whole context: correct, only slower.

Blank-node property shapes are given IRIs (``urn:graphmem:shape:N``) in the guard's copy of the
shapes graph, because pySHACL can only skip property shapes named by IRIs; results name them by
their parent shape and path instead.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Final

from rdflib import BNode, Graph, URIRef
from rdflib.namespace import RDF, SH
from rdflib.term import Node

from .results import SKOLEM_NS, PathOp, parse_path, path_predicates

_NESTING: Final = (SH.node, SH["and"], SH["or"], SH.xone, SH["not"], SH.qualifiedValueShape, SH.sparql,
                   SH.target, SH.js, SH.rule, SH.expression)
_PAIRS: Final = (SH.equals, SH.disjoint, SH.lessThan, SH.lessThanOrEquals)
_TARGETS: Final = (SH.targetClass, SH.targetNode, SH.targetSubjectsOf, SH.targetObjectsOf, SH.target)


def skolemize_property_shapes(shapes: Graph) -> Graph:
    """A copy of ``shapes`` where blank-node property shapes (objects of ``sh:property``) are IRIs."""
    out = Graph()
    for prefix, ns in shapes.namespaces():
        out.bind(prefix, ns)
    blanks = sorted({o for o in shapes.objects(None, SH.property) if isinstance(o, BNode)}, key=str)
    names: dict[Node, URIRef] = {b: URIRef(f"{SKOLEM_NS}{i}") for i, b in enumerate(blanks)}
    for s, p, o in shapes:
        out.add((names.get(s, s), p, names.get(o, o)))
    return out


@dataclass
class ShapePlan:
    graph: Graph
    """The shapes graph the guard validates with (property shapes skolemized)."""
    flat: bool = False
    why_not_flat: str = ""
    relevance: dict[URIRef, frozenset[str]] = field(default_factory=dict)
    """Skippable property shape -> the predicates whose presence in a batch makes it relevant."""
    partners: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Predicates compared by property-pair constraints (both directions)."""
    inverse_preds: set[str] = field(default_factory=set)
    targeting: list[tuple[frozenset[str], frozenset[str], frozenset[URIRef], frozenset[str]]] = field(
        default_factory=list)
    """Shapes selecting focus nodes by edges: (subjects-of preds, objects-of preds, their property
    shapes, predicates of their own path when they are property shapes themselves)."""

    @classmethod
    def build(cls, shapes: Graph) -> ShapePlan:
        g = skolemize_property_shapes(shapes)
        plan = cls(g)
        reasons = [f"uses {g.qname(p)}" for p in _NESTING if next(g.subject_objects(p), None) is not None]
        if next(g.subjects(RDF.type, SH.ConstraintComponent), None) is not None:
            reasons.append("declares custom constraint components")
        for ps, path_node in g.subject_objects(SH.path):
            try:
                path = parse_path(g, path_node)
            except ValueError:
                reasons.append(f"has a malformed path on {ps}")
                continue
            if isinstance(path, PathOp) and not (path.op == "^" and isinstance(path.args[0], str)):
                reasons.append("uses complex property paths")
            preds = path_predicates(path)
            plan.inverse_preds |= {p for p, inverse in preds if inverse}
            forward = {p for p, _ in preds}
            pair = {str(o) for q in _PAIRS for o in g.objects(ps, q)}
            for a in forward:
                for b in pair:
                    plan.partners[a].add(b)
                    plan.partners[b].add(a)
            skippable = (isinstance(ps, URIRef) and not any(g.value(ps, t) is not None for t in _TARGETS)
                         and all(p == SH.property for _, p in g.subject_predicates(ps)))
            if skippable and isinstance(ps, URIRef):
                plan.relevance[ps] = frozenset(forward | pair)
        for shape in set(g.subjects(SH.targetSubjectsOf)) | set(g.subjects(SH.targetObjectsOf)):
            own: set[str] = set()
            own_path = g.value(shape, SH.path)
            if own_path is not None:
                with contextlib.suppress(ValueError):  # reported as not flat above
                    own = {p for p, _ in path_predicates(parse_path(g, own_path))}
                own |= {str(o) for q in _PAIRS for o in g.objects(shape, q)}
            plan.targeting.append((
                frozenset(str(o) for o in g.objects(shape, SH.targetSubjectsOf)),
                frozenset(str(o) for o in g.objects(shape, SH.targetObjectsOf)),
                frozenset(o for o in g.objects(shape, SH.property) if isinstance(o, URIRef)),
                frozenset(own),
            ))
        plan.flat = not reasons
        plan.why_not_flat = "; ".join(sorted(set(reasons)))
        if not plan.flat:
            plan.relevance = {}
        return plan

    def relevant_predicates(self, batch: set[str]) -> set[str]:
        """The batch's predicates and those compared with them: all a result concerning it can be on."""
        out = set(batch)
        for p in batch:
            out |= self.partners.get(p, set())
        return out

    def skipped_shapes(self, batch: set[str]) -> set[URIRef]:
        return {ps for ps, preds in self.relevance.items() if not preds & batch}

    def target_predicates(self, batch: set[str], skipped: set[URIRef]) -> tuple[set[str], set[str]]:
        """Predicates whose stored edges select a focus node for a shape that still runs for this batch
        (as subject, as object). A shape whose property shapes are all skipped needs no stored edges to
        be selected: its node-level results only concern new triples with its target predicates, and
        those triples select the node themselves."""
        subj: set[str] = set()
        obj: set[str] = set()
        for t_subj, t_obj, props, own in self.targeting:
            if own & batch or any(ps not in skipped for ps in props):
                subj |= t_subj
                obj |= t_obj
        return subj, obj

    def keeps(self, p: str, subject_is_focus: bool, object_is_focus: bool, relevant: set[str],
              targets: tuple[set[str], set[str]]) -> bool:
        """Whether a stored edge can change a result that concerns the batch (flat shapes only)."""
        if subject_is_focus and (p in relevant or p in targets[0]):
            return True
        return object_is_focus and ((p in relevant and p in self.inverse_preds) or p in targets[1])
