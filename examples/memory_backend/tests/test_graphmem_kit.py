"""graphmem's backend kit, run against this package's store (``graphmem_provider`` in pyproject.toml)."""

from graphmem.testing.kit import *  # noqa: F403 - the kit's tests and fixtures, collected here
