"""graphmem's version, on the ground floor: the compiled ontology's cache key and a dump's header carry
it, and a module that needs it must not import the package root, which reaches the whole API."""

__version__ = "0.1.0"
