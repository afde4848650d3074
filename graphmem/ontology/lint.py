"""``graphmem ontology check``: every problem a modeller can make in ontology and shapes files, with its line.

Beyond what loading refuses (syntax, unsafe or colliding names), it checks the shapes: meta-SHACL
(pySHACL's SHACL-for-SHACL), ``sh:`` terms that SHACL does not define (``sh:minlength`` is silently
ignored by every validator), classes and properties the ontology does not have, counts that cannot be
met, unknown datatypes and regular expressions that do not compile.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final, Literal

from pyshacl.entrypoints import meta_validate
from rdflib import Graph, URIRef
from rdflib import Literal as RDFLiteral
from rdflib.collection import Collection
from rdflib.namespace import RDF, SH, XSD
from rdflib.term import Node

from ..errors import OntologyError
from .diagnostics import Problem, sort_problems
from .model import Ontology, PathsArg, as_paths, default_paths, is_builtin, is_datatype_iri
from .results import Renderer, parse_path, path_predicates
from .sources import SourceFile, expand_paths, parse_into

_SH_EXTRA: Final = {"shapesGraph", "filterShape", "values"}
"""Terms of the SHACL documents (SHACL-AF node expressions, sh:shapesGraph) missing from rdflib's list."""
_SH_TERMS: Final = frozenset(SH.__annotations__) | frozenset(SH._extras) | _SH_EXTRA
_XSD_TERMS: Final = frozenset(XSD.__annotations__) | frozenset(XSD._extras)
_COUNTS: Final = (SH.minCount, SH.maxCount, SH.minLength, SH.maxLength, SH.qualifiedMinCount, SH.qualifiedMaxCount)
_PAIRS: Final = ((SH.minCount, SH.maxCount), (SH.minLength, SH.maxLength), (SH.qualifiedMinCount, SH.qualifiedMaxCount))
_PROPERTY_PARAMS: Final = (SH.targetSubjectsOf, SH.targetObjectsOf, SH.equals, SH.disjoint, SH.lessThan,
                           SH.lessThanOrEquals)
_INTEGER_TYPES: Final = {str(XSD.integer), str(XSD.nonNegativeInteger), str(XSD.positiveInteger), str(XSD.int),
                         str(XSD.long), str(XSD.short), str(XSD.byte), str(XSD.unsignedInt), str(XSD.unsignedLong)}


class _Linter:
    def __init__(self, onto: Ontology) -> None:
        self.o = onto
        self.sg = onto.shapes_graph
        self.sources = onto.shape_sources
        self.problems: list[Problem] = []
        self.short = Renderer(onto.prefixes).iri

    def add(self, severity: Literal["error", "warning"], code: str, message: str,
            where: tuple[Path | None, int | None]) -> None:
        self.problems.append(Problem(severity, code, message, *where))

    def at_term(self, iri: str, after: str | None = None) -> tuple[Path | None, int | None]:
        for src in self.sources:
            line = src.line_of(iri, after=after) if after else src.line_of(iri)
            if line is None and after:
                line = src.line_of(iri)
            if line is not None:
                return src.path, line
        return (self.sources[0].path if self.sources else None), None

    def at_value(self, predicate: str, value: Node) -> tuple[Path | None, int | None]:
        if isinstance(value, URIRef):
            return self.at_term(str(value), after=predicate)
        for src in self.sources:
            line = src.line_of_value(predicate, str(value))
            if line is not None:
                return src.path, line
        return (self.sources[0].path if self.sources else None), None

    def run(self) -> list[Problem]:
        self.unknown_sh_terms()
        counted = self.counts()
        self.meta_shacl(skip=counted)
        self.missing_terms()
        self.datatypes_and_patterns()
        return self.problems

    def _iris(self) -> Iterator[URIRef]:
        for triple in self.sg:
            for term in triple:
                if isinstance(term, URIRef):
                    yield term

    def unknown_sh_terms(self) -> None:
        sh = str(SH)
        for term in sorted(set(self._iris())):
            name = str(term)[len(sh):] if str(term).startswith(sh) else None
            if name is not None and name not in _SH_TERMS:
                close = [t for t in _SH_TERMS if t.lower() == name.lower()]
                hint = f"; did you mean sh:{close[0]}?" if close else ""
                self.add("error", "unknown-sh-term",
                         f"sh:{name} is not a SHACL term, so validators ignore it{hint}", self.at_term(str(term)))

    def counts(self) -> set[tuple[str, str]]:
        """Counts must be non-negative integers and minimum <= maximum; returns (predicate, value) flagged."""
        flagged: set[tuple[str, str]] = set()
        for pred in _COUNTS:
            for _shape, value in self.sg.subject_objects(pred):
                bad = None
                if (not isinstance(value, RDFLiteral) or str(value.datatype or "") not in _INTEGER_TYPES
                        or value.ill_typed or not isinstance(value.toPython(), int)):
                    bad = f"{self.short(str(pred))} must be an integer, got {value.n3()}"
                elif int(value.toPython()) < 0:
                    bad = f"{self.short(str(pred))} cannot be negative (got {value}); no data can satisfy it"
                if bad:
                    flagged.add((str(pred), str(value)))
                    self.add("error", "impossible-count", bad, self.at_value(str(pred), value))
        for low_p, high_p in _PAIRS:
            for shape, low in self.sg.subject_objects(low_p):
                high = self.sg.value(shape, high_p)
                lo, hi = _as_int(low), _as_int(high)
                if lo is not None and hi is not None and lo > hi:
                    self.add("error", "impossible-count",
                             f"{self.short(str(low_p))} {lo} is greater than {self.short(str(high_p))} {hi}; "
                             "no data can satisfy both", self.at_value(str(low_p), low))
        return flagged

    def meta_shacl(self, skip: set[tuple[str, str]]) -> None:
        try:
            conforms, report, _text = meta_validate(self.sg, inference="none")
        except Exception as exc:  # pySHACL raises on shapes it cannot even read
            self.add("error", "meta-shacl", f"pySHACL cannot read the shapes: {exc}", (None, None))
            return
        if conforms or not isinstance(report, Graph):
            return
        for res in report.subjects(RDF.type, SH.ValidationResult):
            path = report.value(res, SH.resultPath)
            value = report.value(res, SH.value)
            if path is not None and value is not None and (str(path), str(value)) in skip:
                continue
            message = " ".join(str(m) for m in report.objects(res, SH.resultMessage)) or "does not conform"
            where = self.at_value(str(path), value) if path is not None and value is not None else (
                self.at_term(str(report.value(res, SH.focusNode))) if isinstance(
                    report.value(res, SH.focusNode), URIRef) else (None, None))
            about = f"{self.short(str(path))} {value.n3() if value is not None else ''}".strip() if path else "shape"
            self.add("error", "meta-shacl", f"meta-SHACL: {about}: {message}", where)

    def _path_properties(self) -> Iterable[tuple[str, str]]:
        """(property IRI, the shapes predicate that names it) for every property the shapes mention."""
        for _shape, path in self.sg.subject_objects(SH.path):
            try:
                for iri, _inverse in path_predicates(parse_path(self.sg, path)):
                    yield iri, str(SH.path)
            except ValueError:
                continue
        for pred in _PROPERTY_PARAMS:
            for o in self.sg.objects(None, pred):
                if isinstance(o, URIRef):
                    yield str(o), str(pred)
        for lst in self.sg.objects(None, SH.ignoredProperties):
            for m in Collection(self.sg, lst):
                if isinstance(m, URIRef):
                    yield str(m), str(SH.ignoredProperties)

    def missing_terms(self) -> None:
        for pred in (SH["class"], SH.targetClass):
            for iri in sorted({str(o) for o in self.sg.objects(None, pred) if isinstance(o, URIRef)}):
                if iri not in self.o.classes and not is_builtin(iri):
                    self.add("error", "missing-class", f"{self.short(str(pred))} names {self.short(iri)}, "
                             "which is not a class of the ontology", self.at_term(iri, after=str(pred)))
        seen: set[str] = set()
        for iri, via in self._path_properties():
            if iri in seen or iri in self.o.relations or is_builtin(iri):
                continue
            seen.add(iri)
            self.add("error", "missing-property", f"{self.short(via)} names {self.short(iri)}, "
                     "which is not a property of the ontology", self.at_term(iri, after=via))
        for shape, path in self.sg.subject_objects(SH.path):
            if not isinstance(path, URIRef) or str(path) not in self.o.relations:
                continue
            rel = self.o.relations[str(path)]
            if rel.kind == "datatype" and self.sg.value(shape, SH["class"]) is not None:
                self.add("warning", "kind-mismatch", f"sh:class on {self.short(rel.iri)}, a datatype property: "
                         "its values are literals, never instances", self.at_term(rel.iri, after=str(SH.path)))
            if rel.kind == "object" and self.sg.value(shape, SH.datatype) is not None:
                self.add("warning", "kind-mismatch", f"sh:datatype on {self.short(rel.iri)}, an object property: "
                         "its values are entities, never literals", self.at_term(rel.iri, after=str(SH.path)))

    def datatypes_and_patterns(self) -> None:
        for dt in sorted({str(o) for o in self.sg.objects(None, SH.datatype)}):
            known = is_datatype_iri(dt) and (not dt.startswith(str(XSD)) or dt[len(str(XSD)):] in _XSD_TERMS)
            if not known:
                self.add("error", "unknown-datatype", f"sh:datatype {self.short(dt)} is not an XSD or RDF datatype",
                         self.at_term(dt, after=str(SH.datatype)))
        for shape, pattern in self.sg.subject_objects(SH.pattern):
            flags = str(self.sg.value(shape, SH.flags) or "")
            try:
                re.compile(str(pattern), re.IGNORECASE if "i" in flags else 0)
            except re.error as exc:
                self.add("error", "bad-pattern", f"sh:pattern {pattern.n3()} is not a valid regular expression: {exc}",
                         self.at_value(str(SH.pattern), pattern))


def _as_int(node: Node | None) -> int | None:
    value = node.toPython() if isinstance(node, RDFLiteral) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parse_each(paths: list[Path]) -> list[Problem]:
    problems = []
    for p in paths:
        try:
            parse_into(Graph(), SourceFile.read(p))
        except OntologyError as exc:
            problems.append(Problem("error", "parse-error", exc.reason, exc.path, exc.line))
    return problems


def check(ontology: PathsArg = None, shapes: PathsArg = None) -> list[Problem]:
    """Every problem found in the ontology and shapes files (empty when they are clean)."""
    try:
        if ontology is None:
            onto_default, shapes_default = default_paths()
            onto_paths = expand_paths(onto_default, what="ontology")
            shape_paths = expand_paths(shapes_default if shapes is None else as_paths(shapes), what="shapes")
        else:
            onto_paths = expand_paths(as_paths(ontology), what="ontology")
            shape_paths = expand_paths(as_paths(shapes), what="shapes")
    except OntologyError as exc:
        return [Problem("error", "missing-file", exc.reason, exc.path, exc.line)]
    parse_errors = _parse_each(onto_paths + shape_paths)
    if parse_errors:
        return sort_problems(parse_errors)
    try:
        onto = Ontology.load(onto_paths, shape_paths, strict=False)
    except OntologyError as exc:  # an imported file that does not parse
        return [Problem("error", "parse-error", exc.reason, exc.path, exc.line)]
    return sort_problems([*onto.problems, *_Linter(onto).run()])
