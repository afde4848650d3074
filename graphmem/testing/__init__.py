"""Test support that users can reuse: an OpenAI-compatible stand-in server for offline tests."""

from .standin import Reply, StandinServer

__all__ = ["Reply", "StandinServer"]
