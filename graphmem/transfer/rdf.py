"""Entities and facts as RDF (Turtle or JSON-LD), in the ontology's own IRIs, for pySHACL or a
triple store.

What the graph holds:

* each entity as ``<urn:graphmem:node:{id}>`` with ``rdf:type`` its class IRIs, ``rdfs:label`` its
  name and ``skos:altLabel`` its aliases;
* each *open* fact as the plain triple (subject, property IRI, object entity or typed literal): the
  graph states what is true now, so it validates against the store's shapes as the guard did;
* provenance and validity by **standard RDF reification** (RDF-star is not used: rdflib does not
  read it): every fact, open or closed, is an ``rdf:Statement`` ``<urn:graphmem:fact:{id}>`` with
  ``rdf:subject``/``rdf:predicate``/``rdf:object``, ``gmx:validFrom``/``gmx:validTo``
  (``xsd:dateTime``), ``gmx:open`` (a boolean) and ``prov:wasDerivedFrom`` the memories that
  support it (``<urn:graphmem:memory:{id}>``). A closed (superseded) fact is only reified, never
  asserted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, Any, Literal

from rdflib import RDF, RDFS, XSD, BNode, Graph, URIRef
from rdflib import Literal as RDFLiteral
from rdflib.namespace import PROV, SKOS, Namespace

from ..errors import InvalidInputError, short
from ..models import Relation, Scope, iso
from ..stores.base import Store
from .export import output

GMX = Namespace("https://graphmem.dev/export#")
"""The few terms of the export itself: a fact's validity and whether it is open."""
NODE, FACT, MEMORY = "urn:graphmem:node:", "urn:graphmem:fact:", "urn:graphmem:memory:"
RdfFormat = Literal["turtle", "json-ld"]
FORMATS: tuple[str, ...] = ("turtle", "json-ld")


def node(entity_id: str) -> URIRef:
    return URIRef(NODE + entity_id)


def fact_graph(store: Store, scopes: Sequence[Scope], *, prefixes: dict[str, str] | None = None,
               batch: int = 1000) -> tuple[Graph, dict[str, int]]:
    """The RDF of every entity and fact in the exact ``scopes``, and how many of each."""
    g = Graph()
    g.bind("gmx", GMX)
    g.bind("prov", PROV)
    g.bind("skos", SKOS)
    for prefix, ns in (prefixes or {}).items():
        g.bind(prefix, ns, override=False)
    counts = {"entities": 0, "facts": 0, "open_facts": 0}
    for scope in scopes:
        after: str | None = None
        while True:
            page = store.dump_entities(scope, after, batch)
            if not page:
                break
            after = page[-1][0].id
            for ent, _, _ in page:
                n = node(ent.id)
                g.add((n, RDFS.label, RDFLiteral(ent.name)))
                for c in ent.classes:
                    g.add((n, RDF.type, URIRef(c)))
                for a in ent.aliases:
                    g.add((n, SKOS.altLabel, RDFLiteral(a)))
            counts["entities"] += len(page)
            for f in store.dump_facts(scope, [e.id for e, _, _ in page]):
                _fact(g, f)
                counts["facts"] += 1
                counts["open_facts"] += f.valid_to is None
    return g, counts


def _fact(g: Graph, f: Relation) -> None:
    s, p = node(f.source_id), URIRef(f.relation)
    o: URIRef | RDFLiteral | BNode = (
        node(f.target_id) if f.target_id is not None
        else RDFLiteral(f.value, datatype=URIRef(f.datatype) if f.datatype else None))
    if f.valid_to is None:
        g.add((s, p, o))
    st = URIRef(FACT + f.id)
    g.add((st, RDF.type, RDF.Statement))
    g.add((st, RDF.subject, s))
    g.add((st, RDF.predicate, p))
    g.add((st, RDF.object, o))
    g.add((st, GMX.open, RDFLiteral(f.valid_to is None)))
    if f.valid_from is not None:
        g.add((st, GMX.validFrom, RDFLiteral(iso(f.valid_from), datatype=XSD.dateTime)))
    if f.valid_to is not None:
        g.add((st, GMX.validTo, RDFLiteral(iso(f.valid_to), datatype=XSD.dateTime)))
    for m in f.memory_ids:
        g.add((st, PROV.wasDerivedFrom, URIRef(MEMORY + m)))


def export_rdf(store: Store, target: str | os.PathLike[str] | IO[str], *, scope: Scope | None,
               rdf_format: str = "turtle", prefixes: dict[str, str] | None = None) -> dict[str, Any]:
    """Write the RDF of the exact scopes ``scope`` contains (``None``: all) to ``target``."""
    if rdf_format not in FORMATS:
        raise InvalidInputError(f"RDF format {short(rdf_format)}; use one of {', '.join(FORMATS)}")
    scopes = [s for s in store.dump_scopes() if scope is None or scope.contains(s.user_id, s.agent_id, s.run_id)]
    g, counts = fact_graph(store, scopes, prefixes=prefixes)
    text = g.serialize(format=rdf_format)
    with output(target) as out:
        out.write(text)
    return {**counts, "triples": len(g), "format": rdf_format}
