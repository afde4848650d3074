"""Export, import and migration: a lossless JSON Lines dump of a store or of the scopes one scope
contains (:mod:`.format`), its import into any store (:mod:`.load`), an RDF view of the graph
(:mod:`.rdf`), and a resumable store-to-store copy (:mod:`.migrate`). Everything reads and writes
through the dump primitives of :class:`~graphmem.stores.base.Store`."""

from __future__ import annotations

from .export import export_dump
from .format import FORMAT_VERSION, Header
from .load import import_dump
from .migrate import BatchDone, migrate
from .rdf import export_rdf, fact_graph

__all__ = ["FORMAT_VERSION", "BatchDone", "Header", "export_dump", "export_rdf", "fact_graph", "import_dump",
           "migrate"]
