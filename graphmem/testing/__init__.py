"""Test support that users can reuse: an OpenAI-compatible stand-in server for offline tests, and the
backend kit, the storage contract's tests for a store backend of one's own (:mod:`.kit`, with its
pytest plugin :mod:`.plugin`; neither is imported here, so this package does not need pytest)."""

from .fake_llm import fact_responder
from .standin import Reply, StandinServer, last_user_message

__all__ = ["Reply", "StandinServer", "fact_responder", "last_user_message"]
