"""The backend kit: every test of the storage contract, for a store backend's own test suite.

A backend package runs graphmem's contract against its store by importing these tests into a test
module of its own and naming its provider (docs/extending.md, "A store backend")::

    # tests/test_graphmem_kit.py
    from graphmem.testing.kit import *  # noqa: F403 - the kit's tests and fixtures, collected here

    $ pytest --graphmem-provider mine

The options and the configuration fixtures come from :mod:`graphmem.testing.plugin`, which pytest
loads by itself. The tests: :mod:`.store_contract` (memories, scope, filters, transactions, search
candidates), :mod:`.graph_contract` (the knowledge graph's writes and reads) and :mod:`.walk_parity`
(the graph walk and ranking against the reference store). graphmem's own suite runs the same tests on
SQLite and Neo4j.
"""

from __future__ import annotations

from .graph_contract import *  # noqa: F403
from .graph_contract import __all__ as _graph
from .store_contract import *  # noqa: F403
from .store_contract import __all__ as _store
from .walk_parity import *  # noqa: F403
from .walk_parity import __all__ as _walk

__all__ = sorted({*_store, *_graph, *_walk})
