"""Test support that users can reuse: an OpenAI-compatible stand-in server for offline tests."""

from .fake_llm import fact_responder
from .standin import Reply, StandinServer, last_user_message

__all__ = ["Reply", "StandinServer", "fact_responder", "last_user_message"]
