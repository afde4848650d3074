"""The embedded store: one SQLite file, no server (the default backend).

``store`` (the class), ``graph`` (entities and facts), ``vectors`` (per-tenant vector blocks and
their snapshot), ``sql`` (scope and filter SQL), ``dump`` (export primitives), ``reembed``.
"""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
