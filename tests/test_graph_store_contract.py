"""The knowledge-graph half of the storage contract on both built-in backends: the backend kit's
tests (:mod:`graphmem.testing.graph_contract`), collected here and run on SQLite and Neo4j through the
``graphmem_*`` fixtures of conftest.py."""

from graphmem.testing.graph_contract import *  # noqa: F403 - the kit's tests, collected here
