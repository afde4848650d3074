"""The write guard: new triples in, one verdict per triple out, with the SHACL results that concern it.

The data graph of one check holds the ontology's ``rdfs:subClassOf`` closure (so ``sh:class`` accepts
subclass instances with inference off), the types of the entities involved (new and stored), the
stored context edges and literals of those entities (so ``sh:maxCount`` counts stored facts), and the
new triples. pySHACL validates it with the new triples' endpoints as focus nodes. The context must be
the state *after* conflict resolution: a functional property's superseded edge is not in it.

Checks before SHACL, each a synthetic result in the ``graphmem:`` namespace:
``graphmem:UnknownRelation`` (the relation resolves to no ontology property),
``graphmem:WrongPropertyKind`` (a literal for an object property or an entity for a datatype one),
``graphmem:UnknownClass`` (an endpoint typed with a class outside the ontology). Such triples are
rejected and left out of the data graph.

How a SHACL result is mapped back to the new triples it concerns (``F`` focus, ``p`` path, ``V`` value):

1. Path ``p`` (a predicate): the new triples ``(F, p, o)``; when the result has a value, only ``o = V``.
   ``sh:maxCount`` has no value, so every new ``(F, p, *)`` is concerned (the stored values are what
   make it too many, but only the new ones can be refused).
2. Path ``^p`` (inverse): the new triples ``(s, p, F)``; with a value, only ``s = V``.
3. Property-pair constraints (``sh:lessThan``, ``sh:lessThanOrEquals``, ``sh:equals``, ``sh:disjoint``)
   also concern the new triples ``(F, q, *)`` of the compared property ``q``.
4. Other paths (sequences, alternatives, ``*``/``+``/``?``): the new triples whose predicate occurs in
   the path and which lie on a path walk from ``F`` in the data graph.
5. No path (a node-level constraint such as ``sh:class`` or ``sh:not`` on the node itself): when the
   source shape selects its targets only by ``sh:targetSubjectsOf``/``sh:targetObjectsOf``, the new
   triples with one of those predicates that have ``F`` on that side. Otherwise the new triples
   touching ``F``, but only if the result goes away when ``F`` is validated again without the batch's
   triples (and without the types of the batch's ``new_entities``): a node that was already invalid
   in the store does not block new triples about it.

A result that concerns no new triple (it was caused by stored data alone, or reports something
missing such as ``sh:minCount``) rejects nothing: it is returned in ``GuardReport.unattributed``.
Only ``sh:Violation`` results reject; warnings and infos are attached to accepted triples. Stored
context is never judged: its triples get no verdict.

Because only results that concern the batch matter, flat shapes (see :mod:`.shapeplan`) are
validated with the property shapes and stored edges that cannot touch the batch's predicates left
out: same verdicts, a fraction of the work. ``unattributed`` then only holds what the remaining
shapes came across.

Limits: focus nodes are the batch's entities, so a shape reaching a new triple from a node further
away (a sequence path starting two hops back) does not see it; and only the context the store hands
over (edges touching the batch's entities) is counted.
"""

from __future__ import annotations

import difflib
import functools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote

from rdflib import Graph, URIRef
from rdflib import Literal as RDFLiteral
from rdflib.namespace import RDF, SH, XSD
from rdflib.term import Node

from .model import Ontology
from .naming import normalize_surface
from .results import (
    ENTITY_NS,
    UNKNOWN_CLASS,
    UNKNOWN_RELATION,
    WRONG_PROPERTY_KIND,
    PathExpr,
    PathOp,
    Renderer,
    ShaclResult,
    make_result,
    path_predicates,
)
from .shapeplan import ShapePlan

if TYPE_CHECKING:
    from pyshacl import ShapesGraph

    from .validation import Outcome

_PAIR_COMPONENTS: Final = {
    SH.LessThanConstraintComponent: SH.lessThan,
    SH.LessThanOrEqualsConstraintComponent: SH.lessThanOrEquals,
    SH.EqualsConstraintComponent: SH.equals,
    SH.DisjointConstraintComponent: SH.disjoint,
}


class _DropIllTyped(logging.Filter):
    """rdflib logs a traceback for every ill-typed literal; the guard reports those as results instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to convert Literal lexical form")


logging.getLogger("rdflib.term").addFilter(_DropIllTyped())


@functools.lru_cache(maxsize=8_192)  # ~300 B each: the entities of the writes in flight
def entity_iri(key: str) -> URIRef:
    """The RDF node of an entity key in guard data graphs (``urn:graphmem:entity:<percent-encoded key>``)."""
    return URIRef(ENTITY_NS + quote(key, safe=""))


def entity_key(node: Node) -> str | None:
    text = str(node)
    return unquote(text[len(ENTITY_NS):]) if isinstance(node, URIRef) and text.startswith(ENTITY_NS) else None


@dataclass(frozen=True)
class TypedLiteral:
    """A literal object: its lexical form plus a datatype (IRI or ``xsd:…``) or a language tag."""

    value: str
    datatype: str | None = None
    lang: str | None = None


ObjectValue = str | TypedLiteral | RDFLiteral
"""A ``str`` is an entity key; a literal is a :class:`TypedLiteral` or an rdflib ``Literal``."""


def is_entity(value: ObjectValue) -> bool:
    """An entity key, not a literal (an rdflib ``Literal`` is a ``str`` too)."""
    return isinstance(value, str) and not isinstance(value, Node)


@dataclass(frozen=True)
class Triple:
    """``subject`` and an entity ``object`` are entity keys; ``relation`` is an IRI or any surface form."""

    subject: str
    relation: str
    object: ObjectValue

    def to_dict(self) -> dict[str, Any]:
        obj = self.object
        if not isinstance(obj, TypedLiteral | RDFLiteral):
            return {"subject": self.subject, "relation": self.relation, "object": obj}
        if isinstance(obj, RDFLiteral):
            obj = TypedLiteral(str(obj), str(obj.datatype) if obj.datatype else None, obj.language)
        return {"subject": self.subject, "relation": self.relation,
                "object": {"value": obj.value, "datatype": obj.datatype, "lang": obj.lang}}


@dataclass(frozen=True)
class Verdict:
    """The guard's decision on one new triple."""

    triple: Triple
    accepted: bool
    relation: str | None
    """The resolved relation IRI (``None`` when it is unknown)."""
    results: tuple[ShaclResult, ...] = ()
    """Violations (when rejected), then warnings and infos."""

    @property
    def violations(self) -> list[ShaclResult]:
        return [r for r in self.results if r.blocking]

    @property
    def warnings(self) -> list[ShaclResult]:
        return [r for r in self.results if not r.blocking]

    def reasons(self) -> list[str]:
        """One readable line per result, e.g. for the LLM repair prompt or the quarantine record."""
        return [r.text for r in self.results]

    def to_dict(self) -> dict[str, Any]:
        return {"triple": self.triple.to_dict(), "relation_iri": self.relation, "accepted": self.accepted,
                "results": [r.to_dict() for r in self.results]}

    def __str__(self) -> str:
        t = self.triple
        obj = t.object if is_entity(t.object) else _show_literal(t.object)
        head = f"{'accepted' if self.accepted else 'REJECTED'}: ({t.subject}, {t.relation}, {obj})"
        return "\n  ".join([head, *self.reasons()])


@dataclass
class GuardReport:
    """Verdicts in input order, plus results that concern no new triple (logged, never blocking)."""

    verdicts: list[Verdict]
    unattributed: list[ShaclResult] = field(default_factory=list)
    fingerprint: str = ""
    elapsed_ms: float = 0.0
    data_triples: int = 0
    """Size of the data graph validated (0 when nothing reached SHACL)."""

    @property
    def accepted(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.accepted]

    @property
    def rejected(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.accepted]

    @property
    def ok(self) -> bool:
        return all(v.accepted for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "elapsed_ms": round(self.elapsed_ms, 3),
                "data_triples": self.data_triples,
                "verdicts": [v.to_dict() for v in self.verdicts],
                "unattributed": [r.to_dict() for r in self.unattributed]}


@dataclass
class _Prepared:
    index: int
    s: URIRef
    p: URIRef
    o: URIRef | RDFLiteral


class Guard:
    """Validates batches of new triples against one compiled :class:`Ontology` and its shapes.

    Safe to share between threads: checks are serialized, because rdflib graphs (the shared shapes
    graph) are not thread-safe and the work is CPU-bound anyway. Use processes for parallelism.
    """

    def __init__(self, ontology: Ontology, *, optimize: bool = True) -> None:
        """``optimize=False`` validates every shape against the whole context given (same verdicts,
        slower; for tests and benchmarks).

        The shapes are planned and compiled (and pySHACL imported) on the first check that has
        triples, or the first read of :attr:`plan` / :attr:`optimized`: a process that only stores
        text never pays for them."""
        self.ontology = ontology
        self._optimize = optimize
        self._lock = threading.Lock()
        self._ready_lock = threading.Lock()
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            shapes_graph = self.ontology.shapes_graph
            self._plan = ShapePlan.build(shapes_graph)
            self._shape_targets = self._index_shape_targets()
            self._renderer = Renderer(self.ontology.prefixes, self._plan.graph)
            self._shapes: ShapesGraph | None = None
            if len(shapes_graph):
                from .validation import compile_shapes

                self._shapes = compile_shapes(self._plan.graph)
            # Skipping property shapes uses pySHACL's own filter for unselected shapes (an internal of
            # ShapesGraph): without it, every shape runs, which is correct, only slower.
            self._optimized = bool(self._optimize and self._plan.flat and self._shapes is not None
                                   and isinstance(getattr(self._shapes, "_filtered_out_shapes", None), set)
                                   and hasattr(self._shapes, "is_filtered_out_shape"))
            self._ready = True

    def warm(self) -> None:
        """Parse and compile the shapes and run pySHACL once now (on an empty graph), not in the first write."""
        self._prepare()
        if self._shapes is not None:
            self._validate(Graph(), [], set())

    @property
    def plan(self) -> ShapePlan:
        """What the shapes allow the guard to skip (see :mod:`.shapeplan`)."""
        self._prepare()
        return self._plan

    @property
    def optimized(self) -> bool:
        """Whether checks skip the property shapes and stored edges a batch cannot concern."""
        self._prepare()
        return self._optimized

    def _index_shape_targets(self) -> dict[Node, tuple[bool, set[str], set[str]]]:
        """Per shape: (selected only by subjects-of/objects-of targets, subject preds, object preds)."""
        sg = self._plan.graph
        out: dict[Node, tuple[bool, set[str], set[str]]] = {}
        for shape in set(sg.subjects(SH.targetSubjectsOf)) | set(sg.subjects(SH.targetObjectsOf)):
            other = any(sg.value(shape, t) is not None for t in (SH.targetClass, SH.targetNode, SH.target))
            other = other or (shape, RDF.type, URIRef("http://www.w3.org/2000/01/rdf-schema#Class")) in sg
            other = other or (shape, RDF.type, URIRef("http://www.w3.org/2002/07/owl#Class")) in sg
            subj = {str(p) for p in sg.objects(shape, SH.targetSubjectsOf)}
            obj = {str(p) for p in sg.objects(shape, SH.targetObjectsOf)}
            out[shape] = (not other, subj, obj)
        return out

    # ------------------------------------------------------------------ input to RDF

    def _literal(self, value: ObjectValue) -> RDFLiteral:
        if isinstance(value, RDFLiteral):
            return value
        if not isinstance(value, TypedLiteral):  # a URIRef where a literal belongs: keep its text
            return RDFLiteral(str(value))
        if value.lang:
            return RDFLiteral(value.value, lang=value.lang)
        dt = value.datatype
        if dt and not dt.startswith(("http://", "https://", "urn:")):
            prefix, _, local = dt.partition(":")
            ns = self.ontology.prefixes.get(prefix) or (str(XSD) if prefix == "xsd" else None)
            dt = ns + local if ns else dt
        if dt == str(XSD.string):  # RDF 1.1: a plain literal *is* an xsd:string, but rdflib tells them
            dt = None  # apart, and pySHACL's sh:in ( "a" "b" ) would never match a typed one
        return RDFLiteral(value.value, datatype=URIRef(dt) if dt else None)

    def literal_for(self, relation: str, value: object) -> RDFLiteral:
        """A literal for a datatype property typed with its declared range (when it has exactly one
        datatype), so ``"1990-05-01"`` for a date property becomes an ``xsd:date`` - or an ill-typed one
        that the shapes then reject, never a silently different value."""
        rel = self.ontology.relation_info(relation)
        dts = [d for d in (rel.range if rel else ()) if d.startswith(str(XSD))]
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return RDFLiteral(text, datatype=URIRef(dts[0])) if len(dts) == 1 else RDFLiteral(text)

    # ------------------------------------------------------------------ the check

    def check(
        self,
        triples: Sequence[Triple],
        types: Mapping[str, str | Iterable[str]] | None = None,
        context: Iterable[Triple] = (),
        new_entities: Iterable[str] = (),
    ) -> GuardReport:
        """Judge ``triples``. ``types`` maps entity keys (new and stored) to class names or IRIs;
        ``context`` holds the stored edges and literals of those entities (never judged);
        ``new_entities`` names the keys this batch creates, whose types arrive with it (a node-level
        violation caused by a new entity's type then concerns its triples, see rule 5)."""
        start = time.perf_counter()
        onto = self.ontology
        if not triples:
            return GuardReport([], [], onto.fingerprint, (time.perf_counter() - start) * 1000, 0)
        self._prepare()
        types = types or {}
        resolved_types: dict[str, list[str]] = {}
        unknown_types: dict[str, list[str]] = {}
        for key, names in types.items():
            for name in [names] if isinstance(names, str) else names:
                iri = onto.resolve_class(name)
                (resolved_types.setdefault(key, []) if iri else unknown_types.setdefault(key, [])).append(
                    iri or name)
        renderer = self._renderer
        node = entity_iri

        early: dict[int, list[ShaclResult]] = defaultdict(list)
        prepared: list[_Prepared] = []
        relation_iris: list[str | None] = []
        for i, t in enumerate(triples):
            s = node(t.subject)
            rel_iri = onto.resolve_relation(t.relation)
            relation_iris.append(rel_iri)
            obj_node = node(t.object) if isinstance(t.object, str) and is_entity(t.object) else self._literal(t.object)
            if rel_iri is None:
                early[i].append(make_result(
                    focus=s, path=None, value=obj_node, constraint=str(UNKNOWN_RELATION), shape=None,
                    severity="Violation", message=self._unknown_relation_message(t.relation), renderer=renderer))
                continue
            rel = onto.relations[rel_iri]
            if (rel.kind == "object") != is_entity(t.object):
                want = (f"links two entities (range {', '.join(map(onto.short, rel.range)) or 'any entity'})"
                        if rel.kind == "object" else
                        f"takes a literal value ({', '.join(map(onto.short, rel.range)) or 'any literal'})")
                got = "an entity" if is_entity(t.object) else "a literal"
                early[i].append(make_result(
                    focus=s, path=rel_iri, value=obj_node, constraint=str(WRONG_PROPERTY_KIND), shape=None,
                    severity="Violation", message=f"{onto.short(rel_iri)} {want}, but got {got}", renderer=renderer))
                continue
            ends = [t.subject, *([t.object] if isinstance(t.object, str) and is_entity(t.object) else [])]
            for end in ends:
                for bad in unknown_types.get(end, []):
                    early[i].append(make_result(
                        focus=node(end), path=None, value=RDFLiteral(bad), constraint=str(UNKNOWN_CLASS), shape=None,
                        severity="Violation", message=self._unknown_class_message(bad), renderer=renderer))
            if not early[i]:
                prepared.append(_Prepared(i, s, URIRef(rel_iri), obj_node))

        results_by_triple: dict[int, list[ShaclResult]] = defaultdict(list)
        unattributed: list[ShaclResult] = []
        size = 0
        if prepared and self._shapes is not None:
            focus = sorted({p.s for p in prepared} | {p.o for p in prepared if isinstance(p.o, URIRef)})
            batch_preds = {str(p.p) for p in prepared}
            skipped = self.plan.skipped_shapes(batch_preds) if self.optimized else set()
            data, added = self._data_graph(prepared, resolved_types, context, set(focus), batch_preds, skipped)
            size = len(data)
            with self._lock:
                outcome = self._validate(data, focus, skipped)
            mapped = [(res, self._concerned(res, prepared, data)) for res in outcome.results]
            doubtful = [res for res, idx in mapped if idx and res.path is None and not self._restricted(res)]
            if doubtful:  # rule 5: did the batch cause it, or was it there before?
                born = {entity_iri(k) for k in new_entities}
                for gone in added + [x for x in data.triples((None, RDF.type, None)) if x[0] in born]:
                    data.remove(gone)
                nodes = sorted({r.focus for r in doubtful if isinstance(r.focus, URIRef)})
                with self._lock:
                    before = self._validate(data, nodes, skipped)
                seen = {_key(r) for r in before.results}
                mapped = [(res, [] if res in doubtful and _key(res) in seen else idx) for res, idx in mapped]
            for res, concerned in mapped:
                if not concerned:
                    unattributed.append(res)
                for idx in concerned:
                    results_by_triple[idx].append(res)

        verdicts = []
        for i, t in enumerate(triples):
            found = early.get(i) or results_by_triple.get(i, [])
            ordered = sorted(found, key=lambda r: (not r.blocking, r.text))
            verdicts.append(Verdict(t, not any(r.blocking for r in ordered), relation_iris[i], tuple(ordered)))
        return GuardReport(verdicts, unattributed, onto.fingerprint, (time.perf_counter() - start) * 1000, size)

    def _validate(self, data: Graph, focus: list[URIRef], skipped: set[URIRef]) -> Outcome:
        from .validation import run_shacl

        assert self._shapes is not None
        if not self.optimized:
            return run_shacl(data, self._shapes, focus_nodes=focus, renderer=self._renderer)
        self._shapes._filtered_out_shapes = skipped
        try:
            return run_shacl(data, self._shapes, focus_nodes=focus, renderer=self._renderer)
        finally:
            self._shapes._filtered_out_shapes = set()

    def _data_graph(self, prepared: list[_Prepared], types: Mapping[str, list[str]], context: Iterable[Triple],
                    focus: set[URIRef], batch_preds: set[str], skipped: set[URIRef],
                    ) -> tuple[Graph, list[tuple[Node, Node, Node]]]:
        """Subclass closure + types + stored context + the batch (and which batch triples were not in the
        context already). With flat shapes, only the stored edges a result concerning the batch can
        depend on (see :mod:`.shapeplan`), and the types of their ends."""
        onto = self.ontology
        relevant = self.plan.relevant_predicates(batch_preds)
        targets = self.plan.target_predicates(batch_preds, skipped)
        edges = []
        for fact in context:
            rel = onto.resolve_relation(fact.relation)
            if rel is None:  # stored under an older ontology: still context, under its own IRI
                rel = fact.relation if fact.relation.startswith(("http://", "https://", "urn:")) else None
            if rel is None:
                continue
            s = entity_iri(fact.subject)
            obj = fact.object
            o = entity_iri(obj) if isinstance(obj, str) and is_entity(obj) else self._literal(obj)
            if not self.optimized or self.plan.keeps(rel, s in focus, o in focus, relevant, targets):
                edges.append((s, URIRef(rel), o))
        g = Graph()
        for t in onto.tbox:
            g.add(t)
        needed = focus | {n for s, _, o in edges for n in (s, o)}
        for key, classes in types.items():
            n = entity_iri(key)
            if not self.optimized or n in needed:
                for c in classes:
                    g.add((n, RDF.type, URIRef(c)))
        for e in edges:
            g.add(e)
        added: list[tuple[Node, Node, Node]] = []
        for p in prepared:
            t = (p.s, p.p, p.o)
            if t not in g:
                g.add(t)
                added.append(t)
        return g, added

    # ------------------------------------------------------------------ mapping results to triples

    def _restricted(self, res: ShaclResult) -> bool:
        """The result's shape selects its focus nodes only by subjects-of/objects-of targets."""
        return res.shape is not None and self._shape_targets.get(res.shape, (False, set(), set()))[0]

    def _concerned(self, res: ShaclResult, prepared: list[_Prepared], data: Graph) -> list[int]:
        f, v, path = res.focus, res.value, res.path
        out: set[int] = set()
        if path is None:
            only, subj, obj = self._shape_targets.get(res.shape, (False, set(), set())) if res.shape else (
                False, set(), set())
            for p in prepared:
                if only:
                    if (p.s == f and str(p.p) in subj) or (p.o == f and str(p.p) in obj):
                        out.add(p.index)
                elif f in (p.s, p.o):
                    out.add(p.index)
        elif isinstance(path, str):
            out |= {p.index for p in prepared if p.s == f and str(p.p) == path and (v is None or p.o == v)}
        elif path.op == "^" and isinstance(path.args[0], str):
            out |= {p.index for p in prepared if p.o == f and str(p.p) == path.args[0] and (v is None or p.s == v)}
        else:
            out |= self._on_walk(f, path, prepared, data)
        pair = _PAIR_COMPONENTS.get(URIRef(res.constraint))
        if pair is not None and res.shape is not None:
            others = {str(o) for o in self.plan.graph.objects(res.shape, pair)}
            out |= {p.index for p in prepared if p.s == f and str(p.p) in others}
        return sorted(out)

    def _on_walk(self, focus: Node, path: PathExpr | PathOp, prepared: list[_Prepared], data: Graph) -> set[int]:
        """New triples with a path predicate that a walk from ``focus`` over path predicates can reach."""
        preds = path_predicates(path)
        seen = {focus}
        frontier = [focus]
        for _ in range(16):
            nxt = []
            for n in frontier:
                for pred, inverse in preds:
                    found = data.subjects(URIRef(pred), n) if inverse else data.objects(n, URIRef(pred))
                    for m in found:
                        if m not in seen:
                            seen.add(m)
                            nxt.append(m)
            if not nxt:
                break
            frontier = nxt
        names = {p for p, _ in preds}
        return {p.index for p in prepared if str(p.p) in names and (p.s in seen or p.o in seen)}

    # ------------------------------------------------------------------ messages

    def _suggest(self, text: str, names: Iterable[str]) -> str:
        table = {normalize_surface(n): n for n in names}
        close = difflib.get_close_matches(normalize_surface(text), list(table), n=3, cutoff=0.6)
        return f"; did you mean {', '.join(table[c] for c in close)}?" if close else ""

    def _unknown_relation_message(self, text: str) -> str:
        names = [r.name for r in self.ontology.relations.values()]
        return f"{text!r} is not a relation of the ontology{self._suggest(text, names)}"

    def _unknown_class_message(self, text: str) -> str:
        names = [c.name for c in self.ontology.classes.values()]
        return f"{text!r} is not a class of the ontology{self._suggest(text, names)}"


def _key(res: ShaclResult) -> tuple[Node, str, Node | None, Node | None]:
    return (res.focus, res.constraint, res.shape, res.value)


def _show_literal(value: ObjectValue) -> str:
    if isinstance(value, TypedLiteral):
        text = f'"{value.value}"'
        if value.lang:
            return f"{text}@{value.lang}"
        dt = value.datatype
        return text if not dt else f"{text}^^{dt}" if "://" not in dt else f"{text}^^<{dt}>"
    return value.n3() if isinstance(value, RDFLiteral) else str(value)
