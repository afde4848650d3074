"""The compiled ontology: what extraction, the guard, conflict resolution and search read.

Built once when graphmem starts: the Turtle files are parsed, local imports followed, and owlrl runs
over the ontology (TBox) alone, so class ancestors, inherited super-properties and domains are
precomputed tables, never reasoning per request. Stored data is never reasoned over. The tables are
cached on disk (:mod:`.cache`): a process that finds them there parses the shapes only when the guard
first needs them and the ontology graphs only when something reads them.

The Neo4j names come from :mod:`.naming`; an ontology whose names are unsafe or collide does not
load (``strict=True``), so every label and relationship type handed out here can be inlined in Cypher.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote, urlparse

from rdflib import BNode, Graph, URIRef
from rdflib import Literal as RDFLiteral
from rdflib.collection import Collection
from rdflib.namespace import OWL, RDF, RDFS, SH, SKOS, XSD
from rdflib.term import Node

from ..errors import OntologyError
from . import cache
from .diagnostics import Problem, sort_problems
from .naming import RESERVED_LABELS, RESERVED_TYPES, is_safe, local_name, neo4j_label, neo4j_type, normalize_surface
from .sources import LoadedGraph, SourceFile, expand_paths, fingerprint, load_graph, parse_into

PathsArg = str | Path | Sequence[str | Path] | None
Kind = Literal["object", "datatype"]
ONE_AT_A_TIME: Final = URIRef("https://graphmem.dev/ontology#oneAtATime")
"""graphmem's annotation of a property whose values follow one another in time (see ``RelationInfo``)."""
BECOMES: Final = URIRef("https://graphmem.dev/ontology#becomes")
"""graphmem's annotation of a property of plans: the property its value holds once the plan happens."""

BUILTIN_NAMESPACES: Final = (
    str(RDF), str(RDFS), str(OWL), str(XSD), str(SH), str(SKOS),
    "http://www.w3.org/XML/1998/namespace", "http://purl.org/dc/terms/", "http://purl.org/dc/elements/1.1/",
)
_OBJECT_MARKERS: Final = (OWL.ObjectProperty, OWL.SymmetricProperty, OWL.TransitiveProperty,
                          OWL.InverseFunctionalProperty, OWL.AsymmetricProperty, OWL.ReflexiveProperty,
                          OWL.IrreflexiveProperty)
_PROPERTY_MARKERS: Final = (*_OBJECT_MARKERS, OWL.DatatypeProperty, OWL.FunctionalProperty, RDF.Property)
_LITERAL_RANGES: Final = (str(RDFS.Literal), str(RDF.langString), str(RDF.PlainLiteral), str(RDF.HTML),
                          str(RDF.XMLLiteral))
_PREFIXED: Final = re.compile(r"^([A-Za-z_][\w.\-]*)?:([^\s/][^\s]*)?$")


def is_builtin(iri: str) -> bool:
    return iri.startswith(BUILTIN_NAMESPACES)


def is_datatype_iri(iri: str) -> bool:
    return iri.startswith(str(XSD)) or iri in _LITERAL_RANGES


@dataclass(frozen=True)
class ClassInfo:
    iri: str
    name: str
    """Local name as written in the ontology."""
    label: str
    alt_labels: tuple[str, ...]
    definition: str | None
    parents: tuple[str, ...]
    """Direct (asserted) superclasses."""
    ancestors: tuple[str, ...]
    """Every superclass after owlrl, nearest first is not guaranteed: sorted by IRI."""
    neo4j_label: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RelationInfo:
    iri: str
    name: str
    kind: Kind
    """``object`` (entity to entity, a Neo4j relationship) or ``datatype`` (entity to literal)."""
    label: str
    alt_labels: tuple[str, ...]
    hidden_labels: tuple[str, ...]
    """``skos:hiddenLabel``: misspellings and jargon users write, matched by extraction, never shown as names."""
    definition: str | None
    domain: tuple[str, ...]
    """Most specific declared or inherited domains (OWL semantics: all of them apply)."""
    range: tuple[str, ...]
    inverse: str | None
    symmetric: bool
    transitive: bool
    functional: bool
    one_at_a_time: bool
    """``gm:oneAtATime true``: values follow one another in time (a job), though two may hold at
    once; a question about the present reads the latest first (``search/validity.py``)."""
    becomes: str | None
    """``gm:becomes``: the relation a planned value turns into once the plan happens (``movingTo``
    becomes ``livesIn``); a question about the present reads the plan as a statement of it."""
    super_properties: tuple[str, ...]
    """Every super-property after owlrl, plus those implied through ``owl:inverseOf``."""
    neo4j_type: str | None
    """Relationship type for object properties; ``None`` for datatype properties."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ambiguity:
    """One surface form that names several classes (or several relations); ``winner`` is what resolves."""

    kind: Literal["class", "relation"]
    surface: str
    winner: str
    candidates: tuple[tuple[str, str], ...]
    """``(iri, how)`` pairs, how = ``local name``, ``label``, ``altLabel``; best first."""


_HOW_PRIORITY: Final = {"iri": 0, "local name": 1, "neo4j name": 1, "label": 2, "altLabel": 3, "hiddenLabel": 4}


def as_paths(arg: PathsArg) -> list[str | Path]:
    if arg is None:
        return []
    if isinstance(arg, str | Path):
        return [arg]
    return list(arg)


def default_paths() -> tuple[list[Path], list[Path]]:
    """The repository's ``ontology/`` and ``shapes/`` (a source checkout), else the packaged copies."""
    here = Path(__file__).resolve()
    for base in (here.parents[2], here.parents[1] / "data"):
        if (base / "ontology").is_dir():
            shapes = base / "shapes"
            return [base / "ontology"], [shapes] if shapes.is_dir() else []
    raise OntologyError("no default ontology found; pass ontology and shapes paths explicitly")


def _pick_label(graph: Graph, iri: URIRef) -> tuple[str | None, list[str]]:
    labels = [o for o in graph.objects(iri, RDFS.label) if isinstance(o, RDFLiteral)]
    labels += [o for o in graph.objects(iri, SKOS.prefLabel) if isinstance(o, RDFLiteral)]
    if not labels:
        return None, []
    rank = sorted(labels, key=lambda lit: (0 if lit.language == "en" else 1 if not lit.language else 2, str(lit)))
    return str(rank[0]), [str(x) for x in rank[1:]]


def _literals(graph: Graph, iri: URIRef, pred: URIRef) -> list[str]:
    return sorted({str(o) for o in graph.objects(iri, pred) if isinstance(o, RDFLiteral)})


def _definition(graph: Graph, iri: URIRef) -> str | None:
    for pred in (SKOS.definition, RDFS.comment):
        vals = [o for o in graph.objects(iri, pred) if isinstance(o, RDFLiteral)]
        if vals:
            vals.sort(key=lambda lit: (0 if lit.language in (None, "", "en") else 1, str(lit)))
            return str(vals[0])
    return None


def _closure(graph: Graph) -> Graph:
    """A copy of ``graph`` with its OWL 2 RL closure (owlrl is imported only when compiling)."""
    import owlrl  # type: ignore[import-untyped]

    inferred = Graph()
    for t in graph:
        inferred.add(t)
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(inferred)
    return inferred


def _parse_shapes(paths: Sequence[Path], skip_iris: Iterable[str]) -> LoadedGraph:
    """Shapes parsed the way pySHACL parses them (literals kept as written), so ``sh:in`` and
    ``sh:hasValue`` compare alike."""
    from pyshacl.monkey import rdflib_bool_patch, rdflib_bool_unpatch

    rdflib_bool_patch()  # type: ignore[no-untyped-call]
    try:
        return load_graph(paths, skip_iris=skip_iris)
    finally:
        rdflib_bool_unpatch()  # type: ignore[no-untyped-call]


def _reparse(sources: Sequence[SourceFile], *, shapes: bool) -> Graph:
    """The graph of files already read (and checked against the cache entry): the text kept in memory
    is parsed, so a file edited since :meth:`Ontology.load` cannot slip in under the old fingerprint."""
    graph = Graph()
    if not shapes:
        for src in sources:
            parse_into(graph, src)
        return graph
    from pyshacl.monkey import rdflib_bool_patch, rdflib_bool_unpatch

    rdflib_bool_patch()  # type: ignore[no-untyped-call]
    try:
        for src in sources:
            parse_into(graph, src)
    finally:
        rdflib_bool_unpatch()  # type: ignore[no-untyped-call]
    return graph


def _cached_source(item: Any) -> SourceFile | None:
    """The file a cache entry lists, re-read; ``None`` when its bytes are no longer what was compiled."""
    path, digest = item
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    source = SourceFile.from_bytes(Path(path), raw)
    return source if cache.sha256(source.text.encode()) == digest else None


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return value


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("expected an object of strings")
    return value


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"expected {what}")


def _field(kind: str, value: Any) -> Any:
    """One dataclass field from JSON, by its annotation; anything else raises ``ValueError``."""
    if kind in ("str", "Kind", "Severity") or kind.startswith("Literal["):
        _check(isinstance(value, str), "a string")
        return value
    if kind == "str | None":
        _check(value is None or isinstance(value, str), "a string or null")
        return value
    if kind == "bool":
        _check(isinstance(value, bool), "a boolean")
        return value
    if kind == "int | None":
        _check(value is None or (isinstance(value, int) and not isinstance(value, bool)), "an integer or null")
        return value
    if kind == "Path | None":
        _check(value is None or isinstance(value, str), "a path or null")
        return Path(value) if value is not None else None
    if kind == "tuple[str, ...]":
        return tuple(_strings(value))
    if kind == "tuple[tuple[str, str], ...]":
        _check(isinstance(value, list), "a list of pairs")
        pairs = [tuple(_strings(v)) for v in value]
        _check(all(len(p) == 2 for p in pairs), "a list of pairs")
        return tuple(pairs)
    raise ValueError(f"no decoder for {kind}")


def _decode(cls: type[Any], data: Any) -> Any:
    """A frozen dataclass from its ``asdict`` form; fields are checked, names must match exactly."""
    _check(isinstance(data, dict), "an object")
    names = [f.name for f in fields(cls)]
    _check(sorted(names) == sorted(data), f"the fields of {cls.__name__}")
    return cls(**{f.name: _field(str(f.type), data[f.name]) for f in fields(cls)})


class Ontology:
    """A compiled ontology plus its shapes. Build it with :meth:`load`; read-only afterwards.

    Thread-safe for reading. The rdflib graphs it keeps (``graph``, ``inferred``, ``shapes_graph``,
    ``tbox``) must not be modified; the guard copies what it needs into each data graph. When the
    tables came from the cache, each graph is parsed (or built) on first access.
    """

    fingerprint: str
    """SHA-256 of the normalized ontology and shapes files: which version judged a triple."""
    problems: list[Problem]
    ambiguities: list[Ambiguity]
    unresolved_imports: list[str]

    def __init__(self, ontology: LoadedGraph, shapes: LoadedGraph) -> None:
        self._init_sources(ontology.sources, shapes.sources, sorted(ontology.ontology_iris))
        self._graph: Graph | None = ontology.graph
        self._shapes_graph: Graph | None = shapes.graph
        self._inferred: Graph | None = _closure(ontology.graph)
        self._tbox: Graph | None = None
        for src, iri in ontology.unresolved_imports + shapes.unresolved_imports:
            self.unresolved_imports.append(iri)
            self.problems.append(Problem("warning", "unresolved-import",
                                         f"owl:imports <{iri}> matches no local file; it is ignored",
                                         src.path, src.line_of(iri)))
        self._compile_classes()
        self._compile_relations()
        self._compile_names()
        self._compile_index()
        self._link()
        self.problems = sort_problems(self.problems)

    def _init_sources(self, sources: list[SourceFile], shape_sources: list[SourceFile],
                      ontology_iris: list[str]) -> None:
        self._lock = threading.Lock()
        self.sources: list[SourceFile] = sources
        self.shape_sources: list[SourceFile] = shape_sources
        self.ontology_iris = ontology_iris
        self.fingerprint = fingerprint(sources, shape_sources)
        self.problems = []
        self.unresolved_imports = []
        self.prefixes: dict[str, str] = {}
        for src in [*self.sources, *self.shape_sources]:
            for p, ns in src.prefixes.items():
                self.prefixes.setdefault(p, ns)

    # ------------------------------------------------------------------ the graphs (lazy after a cache hit)

    @property
    def graph(self) -> Graph:
        """The asserted ontology triples (all files and followed imports)."""
        if self._graph is None:
            with self._lock:
                if self._graph is None:
                    self._graph = _reparse(self.sources, shapes=False)
        return self._graph

    @property
    def inferred(self) -> Graph:
        """``graph`` after owlrl (OWL 2 RL closure of the TBox)."""
        if self._inferred is None:
            graph = self.graph
            with self._lock:
                if self._inferred is None:
                    self._inferred = _closure(graph)
        return self._inferred

    @property
    def shapes_graph(self) -> Graph:
        if self._shapes_graph is None:
            with self._lock:
                if self._shapes_graph is None:
                    self._shapes_graph = _reparse(self.shape_sources, shapes=True)
        return self._shapes_graph

    @property
    def tbox(self) -> Graph:
        """The ``rdfs:subClassOf`` closure between ontology classes: merged into every data graph so
        that ``sh:class`` and ``sh:targetClass`` follow subclasses with inference off."""
        if self._tbox is None:
            with self._lock:
                if self._tbox is None:
                    tbox = Graph()
                    for c in self.classes.values():
                        for a in c.ancestors:
                            tbox.add((URIRef(c.iri), RDFS.subClassOf, URIRef(a)))
                    self._tbox = tbox
        return self._tbox

    # ------------------------------------------------------------------ construction

    @classmethod
    def load(cls, ontology: PathsArg = None, shapes: PathsArg = None, *, strict: bool = True,
             use_cache: bool = True) -> Ontology:
        """Parse and compile. With no ``ontology``, the default ontology and shapes are used; with an
        ``ontology`` but no ``shapes``, there are no shapes (the default ones name other classes).

        ``strict`` raises :class:`OntologyError` on any error-level problem (unsafe or colliding names);
        ``graphmem ontology check`` loads with ``strict=False`` to list them all instead.
        ``use_cache=False`` compiles even when the on-disk cache (:mod:`.cache`) holds these files.
        """
        if ontology is None:
            onto_paths, default_shapes = default_paths()
            shape_paths = default_shapes if shapes is None else expand_paths(as_paths(shapes), what="shapes")
            onto_paths = expand_paths(onto_paths, what="ontology")
            shape_paths = expand_paths(shape_paths, what="shapes")
        else:
            onto_paths = expand_paths(as_paths(ontology), what="ontology")
            shape_paths = expand_paths(as_paths(shapes), what="shapes")
        if not onto_paths:
            raise OntologyError("no ontology files (*.ttl) found in " + ", ".join(map(str, as_paths(ontology))))
        folder = cache.cache_dir() if use_cache else None
        key: str | None = None
        compiled: Ontology | None = None
        if folder is not None:
            try:
                key = cache.make_key(onto_paths, shape_paths, {})
            except OSError:  # unreadable: compiling reports it with the file's name
                key = None
            entry = cache.load(folder, key) if key else None
            compiled = cls._from_entry(entry) if entry else None
        if compiled is None:
            onto = load_graph(onto_paths)
            shp = _parse_shapes(shape_paths, onto.ontology_iris) if shape_paths else LoadedGraph(
                Graph(), [], [], set())
            compiled = cls(onto, shp)
            if folder is not None and key is not None:
                cache.store(folder, key, compiled._to_entry())
        errors = [p for p in compiled.problems if p.severity == "error"]
        if strict and errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more; run `graphmem ontology check`)" if len(errors) > 1 else ""
            raise OntologyError(first.message + more, path=first.path, line=first.line)
        return compiled

    def _to_entry(self) -> dict[str, Any]:
        """The compiled tables as JSON values (see :mod:`.cache`)."""
        return {
            "sources": [[str(s.path), cache.sha256(s.text.encode())] for s in self.sources],
            "shape_sources": [[str(s.path), cache.sha256(s.text.encode())] for s in self.shape_sources],
            "ontology_iris": self.ontology_iris,
            "unresolved_imports": self.unresolved_imports,
            "problems": [asdict(p) | {"path": str(p.path) if p.path else None} for p in self.problems],
            "classes": [asdict(c) for c in self.classes.values()],
            "relations": [asdict(r) for r in self.relations.values()],
            "ambiguities": [asdict(a) for a in self.ambiguities],
            "class_keys": self._class_keys,
            "relation_keys": self._relation_keys,
            "label_to_class": self._label_to_class,
            "type_to_relation": self._type_to_relation,
        }

    @classmethod
    def _from_entry(cls, entry: dict[str, Any]) -> Ontology | None:
        """An ontology from a cache entry, or ``None`` when a file it lists changed or the entry is malformed."""
        try:
            sources = [_cached_source(item) for item in entry["sources"]]
            shape_sources = [_cached_source(item) for item in entry["shape_sources"]]
            if any(s is None for s in [*sources, *shape_sources]):
                return None
            self = cls.__new__(cls)
            self._init_sources([s for s in sources if s], [s for s in shape_sources if s],
                               _strings(entry["ontology_iris"]))
            self._graph = self._shapes_graph = self._inferred = self._tbox = None
            self.unresolved_imports = _strings(entry["unresolved_imports"])
            if any(iri.startswith("file:") and Path(unquote(urlparse(iri).path)).is_file()
                   for iri in self.unresolved_imports):
                return None  # an import that found no file then would find one now
            self.problems = [_decode(Problem, p) for p in entry["problems"]]
            self.classes = {c.iri: c for c in (_decode(ClassInfo, d) for d in entry["classes"])}
            self.relations = {r.iri: r for r in (_decode(RelationInfo, d) for d in entry["relations"])}
            self.ambiguities = [_decode(Ambiguity, a) for a in entry["ambiguities"]]
            self._class_keys = _string_map(entry["class_keys"])
            self._relation_keys = _string_map(entry["relation_keys"])
            self._label_to_class = _string_map(entry["label_to_class"])
            self._type_to_relation = _string_map(entry["type_to_relation"])
        except (KeyError, TypeError, ValueError, AttributeError, OntologyError) as exc:
            cache.log.debug("ignoring a malformed ontology cache entry: %s", exc)
            return None
        self._link()
        return self

    def _link(self) -> None:
        """The reverse tables (descendants, sub-properties), derived from the compiled ones."""
        self._descendants: dict[str, set[str]] = defaultdict(set)
        for c in self.classes.values():
            for a in c.ancestors:
                self._descendants[a].add(c.iri)
        self._sub_properties: dict[str, set[str]] = defaultdict(set)
        for rel in self.relations.values():
            for parent in rel.super_properties:
                self._sub_properties[parent].add(rel.iri)

    def locate(self, iri: str, *, shapes: bool = False) -> tuple[Path | None, int | None]:
        """File and line where ``iri`` is first written (ontology files, or shapes files first)."""
        order = [*self.shape_sources, *self.sources] if shapes else [*self.sources, *self.shape_sources]
        for src in order:
            line = src.line_of(iri)
            if line is not None:
                return src.path, line
        return (order[0].path if order else None), None

    def _problem(self, severity: Literal["error", "warning"], code: str, message: str, iri: str) -> None:
        path, line = self.locate(iri)
        self.problems.append(Problem(severity, code, message, path, line))

    def _named(self, nodes: Iterable[Node]) -> set[str]:
        return {str(n) for n in nodes if isinstance(n, URIRef) and not is_builtin(str(n))}

    def _compile_classes(self) -> None:
        g, inf = self.graph, self.inferred
        names = self._named(g.subjects(RDF.type, OWL.Class)) | self._named(g.subjects(RDF.type, RDFS.Class))
        names |= self._named(g.subjects(RDFS.subClassOf)) | self._named(g.objects(None, RDFS.subClassOf))
        names -= self._named(s for m in _PROPERTY_MARKERS for s in g.subjects(RDF.type, m))
        self.classes: dict[str, ClassInfo] = {}
        for iri in sorted(names):
            node = URIRef(iri)
            label, more_labels = _pick_label(g, node)
            parents = sorted(self._named(g.objects(node, RDFS.subClassOf)) & names - {iri})
            ancestors = sorted(self._named(inf.objects(node, RDFS.subClassOf)) & names - {iri})
            self.classes[iri] = ClassInfo(
                iri=iri, name=local_name(iri.rstrip("/#")), label=label or local_name(iri.rstrip("/#")),
                alt_labels=tuple(dict.fromkeys([*more_labels, *_literals(g, node, SKOS.altLabel)])),
                definition=_definition(g, node), parents=tuple(parents), ancestors=tuple(ancestors),
                neo4j_label=neo4j_label(iri),
            )

    def _class_set(self, graph: Graph, node: URIRef, pred: URIRef) -> set[str]:
        """Named values of ``pred``, with ``owl:unionOf`` lists expanded."""
        out: set[str] = set()
        for o in graph.objects(node, pred):
            if isinstance(o, URIRef):
                out.add(str(o))
            elif isinstance(o, BNode):
                members = graph.value(o, OWL.unionOf)
                if members is not None:
                    out |= {str(m) for m in Collection(graph, members) if isinstance(m, URIRef)}
        return out

    def _most_specific(self, iris: set[str]) -> tuple[str, ...]:
        keep = {i for i in iris if i != str(OWL.Thing) and i != str(RDFS.Resource)}
        keep -= {a for i in keep if i in self.classes for a in self.classes[i].ancestors if a != i}
        return tuple(sorted(keep))

    def _compile_relations(self) -> None:
        g, inf = self.graph, self.inferred
        names = self._named(s for m in _PROPERTY_MARKERS for s in g.subjects(RDF.type, m))
        names |= self._named(g.subjects(RDFS.subPropertyOf)) | self._named(g.subjects(OWL.inverseOf))
        names |= self._named(g.objects(None, OWL.inverseOf))
        names -= self._named(g.subjects(RDF.type, OWL.AnnotationProperty))
        names -= set(self.classes)
        types = {iri: set(g.objects(URIRef(iri), RDF.type)) for iri in names}
        supers = {iri: sorted(self._named(inf.objects(URIRef(iri), RDFS.subPropertyOf)) & names - {iri})
                  for iri in names}
        inverse: dict[str, str] = {}
        for s, o in sorted(g.subject_objects(OWL.inverseOf)):
            if isinstance(s, URIRef) and isinstance(o, URIRef):
                inverse.setdefault(str(s), str(o))
                inverse.setdefault(str(o), str(s))

        def kind_of(iri: str, seen: frozenset[str] = frozenset()) -> Kind | None:
            t = types.get(iri, set())
            if any(m in t for m in _OBJECT_MARKERS):
                return "object"
            if OWL.DatatypeProperty in t:
                return "datatype"
            ranges = self._class_set(g, URIRef(iri), RDFS.range)
            if ranges and all(is_datatype_iri(r) for r in ranges):
                return "datatype"
            if (ranges and all(r in self.classes for r in ranges)) or iri in inverse:
                return "object"
            for sup in supers.get(iri, []):
                if sup not in seen and (k := kind_of(sup, seen | {iri})):
                    return k
            return None

        self.relations: dict[str, RelationInfo] = {}
        for iri in sorted(names):
            node = URIRef(iri)
            t = types[iri]
            if OWL.DatatypeProperty in t and any(m in t for m in _OBJECT_MARKERS):
                self._problem("error", "property-kind",
                              f"{self._short(iri)} is declared both an object and a datatype property", iri)
            kind = kind_of(iri)
            if kind is None:
                self._problem("warning", "property-kind", f"{self._short(iri)} is neither owl:ObjectProperty nor "
                              "owl:DatatypeProperty and its range does not tell; treated as an object property", iri)
                kind = "object"
            # Inverses carry super-properties across: p inverseOf q, q subPropertyOf r, r inverseOf s => p ⊑ s.
            sup = set(supers[iri])
            if iri in inverse:
                sup |= {inverse[r] for r in supers.get(inverse[iri], []) if r in inverse}
            sup.discard(iri)
            label, more_labels = _pick_label(g, node)
            domain = self._class_set(inf, node, RDFS.domain)
            rng = self._class_set(inf, node, RDFS.range)
            self.relations[iri] = RelationInfo(
                iri=iri, name=local_name(iri.rstrip("/#")), kind=kind, label=label or local_name(iri.rstrip("/#")),
                alt_labels=tuple(dict.fromkeys([*more_labels, *_literals(g, node, SKOS.altLabel)])),
                hidden_labels=tuple(_literals(g, node, SKOS.hiddenLabel)),
                definition=_definition(g, node),
                domain=self._most_specific({d for d in domain if not is_builtin(d)}),
                range=tuple(sorted(r for r in rng if is_datatype_iri(r))) if kind == "datatype"
                else self._most_specific({r for r in rng if not is_builtin(r)}),
                inverse=inverse.get(iri),
                symmetric=OWL.SymmetricProperty in t,
                transitive=OWL.TransitiveProperty in t,
                functional=OWL.FunctionalProperty in t,
                one_at_a_time=any(isinstance(o, RDFLiteral) and o.toPython() is True
                                  for o in g.objects(node, ONE_AT_A_TIME)),
                becomes=next((str(o) for o in g.objects(node, BECOMES) if isinstance(o, URIRef)), None),
                super_properties=tuple(sorted(sup)),
                neo4j_type=neo4j_type(iri) if kind == "object" else None,
            )
        for rel in self.relations.values():
            for c in (*rel.domain, *(rel.range if rel.kind == "object" else ())):
                if c not in self.classes:
                    self._problem("warning", "undeclared-class",
                                  f"{self._short(rel.iri)} names {self._short(c)} as domain or range, "
                                  "but it is not a class of the ontology", c)

    def _compile_names(self) -> None:
        self._label_to_class: dict[str, str] = {}
        for c in self.classes.values():
            self._check_name("class", c.iri, c.neo4j_label, "Neo4j label", RESERVED_LABELS, self._label_to_class)
        self._type_to_relation: dict[str, str] = {}
        for r in self.relations.values():
            if r.neo4j_type is not None:
                self._check_name("relation", r.iri, r.neo4j_type, "relationship type", RESERVED_TYPES,
                                 self._type_to_relation)

    def _check_name(self, what: str, iri: str, name: str, kind: str, reserved: frozenset[str],
                    table: dict[str, str]) -> None:
        if not is_safe(name):
            self._problem("error", "unsafe-name", f"{what} {self._short(iri)}: its local name "
                          f"{local_name(iri)!r} gives the {kind} {name!r}, which is not a safe identifier "
                          "(ASCII letter first, then letters, digits, underscores); rename it", iri)
        elif name in reserved:
            self._problem("error", "reserved-name", f"{what} {self._short(iri)} would use the {kind} {name}, "
                          "which graphmem uses for its own nodes; rename it", iri)
        elif name in table:
            self._problem("error", "name-collision", f"{what} {self._short(iri)} and {self._short(table[name])} "
                          f"both map to the {kind} {name}; rename one of them", iri)
        else:
            table[name] = iri

    def _compile_index(self) -> None:
        self.ambiguities = []
        self._class_keys = self._build_index("class", self.classes.values())
        self._relation_keys = self._build_index("relation", self.relations.values())

    def _build_index(self, kind: Literal["class", "relation"],
                     items: Iterable[ClassInfo | RelationInfo]) -> dict[str, str]:
        found: dict[str, dict[str, str]] = defaultdict(dict)  # key -> iri -> best "how"

        def add(surface: str | None, iri: str, how: str) -> None:
            key = normalize_surface(surface or "")
            if not key:
                return
            best = found[key].get(iri)
            if best is None or _HOW_PRIORITY[how] < _HOW_PRIORITY[best]:
                found[key][iri] = how

        for item in items:
            add(item.name, item.iri, "local name")
            neo = item.neo4j_label if isinstance(item, ClassInfo) else item.neo4j_type
            add(neo, item.iri, "neo4j name")
            add(item.label, item.iri, "label")
            for alt in item.alt_labels:
                add(alt, item.iri, "altLabel")
            for hidden in _literals(self.graph, URIRef(item.iri), SKOS.hiddenLabel):
                add(hidden, item.iri, "hiddenLabel")
        index: dict[str, str] = {}
        for key, cands in found.items():
            ranked = sorted(cands.items(), key=lambda kv: (_HOW_PRIORITY[kv[1]], kv[0]))
            index[key] = ranked[0][0]
            if len(ranked) > 1:
                amb = Ambiguity(kind, key, ranked[0][0], tuple(ranked))
                self.ambiguities.append(amb)
                loser = ranked[1][0]
                alts = ", ".join(f"{self._short(i)} ({how})" for i, how in ranked)
                self._problem("warning", "ambiguous-synonym",
                              f"{kind} surface form {key!r} names {alts}; it resolves to {self._short(ranked[0][0])}",
                              loser)
        return index

    # ------------------------------------------------------------------ reading

    def _short(self, iri: str) -> str:
        for p, ns in sorted(self.prefixes.items(), key=lambda x: -len(x[1])):
            if ns and iri.startswith(ns) and len(iri) > len(ns):
                return f"{p}:{iri[len(ns):]}"
        return f"<{iri}>"

    def short(self, iri: str) -> str:
        """``prefix:local`` with the files' own prefixes (``<iri>`` when none fits)."""
        return self._short(iri)

    def _expand(self, surface: str) -> str | None:
        m = _PREFIXED.match(surface)
        if m and (m.group(1) or "") in self.prefixes and not surface.startswith(("http:", "https:", "urn:")):
            return self.prefixes[m.group(1) or ""] + (m.group(2) or "")
        return None

    def _resolve(self, surface: str, table: Mapping[str, Any], index: Mapping[str, str]) -> str | None:
        text = surface.strip()
        if text.startswith("<") and text.endswith(">"):
            text = text[1:-1]
        if text in table:
            return text
        expanded = self._expand(text)
        if expanded is not None:
            return expanded if expanded in table else None
        return index.get(normalize_surface(text))

    def resolve_class(self, surface: str) -> str | None:
        """IRI of the class named by a full IRI, ``prefix:local``, local name, label or altLabel; else ``None``.

        Case, spaces, ``_`` and ``-`` do not matter; a name shared by several classes resolves to the
        best match (local name > label > altLabel, then the smallest IRI) and is listed in ``ambiguities``.
        """
        return self._resolve(surface, self.classes, self._class_keys)

    def resolve_relation(self, surface: str) -> str | None:
        """Like :meth:`resolve_class`, for properties: ``works for``, ``worksFor`` and ``WORKS_FOR`` all resolve."""
        return self._resolve(surface, self.relations, self._relation_keys)

    def class_info(self, surface: str) -> ClassInfo | None:
        iri = self.resolve_class(surface)
        return self.classes[iri] if iri else None

    def relation_info(self, surface: str) -> RelationInfo | None:
        iri = self.resolve_relation(surface)
        return self.relations[iri] if iri else None

    def is_subclass(self, sub: str, sup: str) -> bool:
        """``sub`` is ``sup`` or one of its descendants (either given as any surface form); everything is
        an ``owl:Thing``."""
        a, b = self.resolve_class(sub), self.resolve_class(sup)
        if a is None:
            return False
        if sup.strip("<>") in (str(OWL.Thing), str(RDFS.Resource)):
            return True
        return b is not None and (a == b or b in self.classes[a].ancestors)

    def subclasses(self, iri: str) -> tuple[str, ...]:
        """Every class below ``iri`` (not ``iri`` itself), for widening a search by class."""
        return tuple(sorted(self._descendants.get(iri, ())))

    def sub_properties(self, iri: str) -> tuple[str, ...]:
        """Every property below ``iri`` (not ``iri`` itself), for widening a search by relation."""
        return tuple(sorted(self._sub_properties.get(iri, ())))

    # ------------------------------------------------------------------ the naming function pair

    def neo4j_label(self, class_iri: str) -> str:
        """Class IRI -> Neo4j label (``KeyError`` for an IRI outside the ontology)."""
        return self.classes[class_iri].neo4j_label

    def class_for_label(self, label: str) -> str | None:
        """Neo4j label -> class IRI."""
        return self._label_to_class.get(label)

    def relationship_type(self, relation_iri: str) -> str:
        """Object property IRI -> Neo4j relationship type (``KeyError`` for others)."""
        rel = self.relations[relation_iri]
        if rel.neo4j_type is None:
            raise KeyError(f"{relation_iri} is a datatype property; it is stored as a node property")
        return rel.neo4j_type

    def relation_for_type(self, rel_type: str) -> str | None:
        """Neo4j relationship type -> object property IRI."""
        return self._type_to_relation.get(rel_type)

    def to_dict(self) -> dict[str, Any]:
        """Everything ``graphmem ontology show --json`` prints."""
        return {
            "fingerprint": self.fingerprint,
            "files": [str(s.path) for s in self.sources],
            "shapes_files": [str(s.path) for s in self.shape_sources],
            "classes": [c.to_dict() for c in self.classes.values()],
            "relations": [r.to_dict() for r in self.relations.values()],
            "ambiguities": [asdict(a) for a in self.ambiguities],
        }

    def __repr__(self) -> str:
        return (f"<Ontology {len(self.classes)} classes, {len(self.relations)} relations, "
                f"{len(self.shapes_graph)} shape triples, {self.fingerprint[:12]}>")
