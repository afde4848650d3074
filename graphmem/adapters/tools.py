"""What agent tools do, framework aside: add and search memories of one scope, answering in text a
model reads. The scope is fixed when the tools are made, never an argument the model fills in, so a
prompt cannot steer a tool to another tenant's memories.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..memory import Memory
from ..models import Scope
from . import ScopeArgs

ADD_NAME = "add_memory"
ADD_DESCRIPTION = ("Remember something for later conversations: a fact, preference or event about the user "
                   "or the task, as one or a few plain sentences.")
SEARCH_NAME = "search_memory"
SEARCH_DESCRIPTION = ("Search what is remembered from earlier conversations. Ask in plain words, e.g. "
                      "'what is the user allergic to?'. Returns the best matching memories with scores.")
MAX_LIMIT = 50
"""The most memories one search tool call may ask for, so a model cannot flood its own context."""


class ToolInputError(InvalidInputError):
    """A tool call the model got wrong (empty text, a bad limit): its message goes back to the model."""


@dataclass(frozen=True)
class ScopedMemory:
    """A Memory bound to one scope: the tools' only way to reach it."""

    memory: Memory
    scope: Scope
    infer: bool = True
    """``add`` extracts memories and graph facts (graphmem's default) or stores the text verbatim."""
    top_k: int = 5

    @classmethod
    def bind(cls, memory: Memory, *, user_id: str | None, agent_id: str | None, run_id: str | None,
             infer: bool = True, top_k: int = 5) -> ScopedMemory:
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"memory tools need a graphmem Memory, got {type(memory).__name__}")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 0 < top_k <= MAX_LIMIT:
            raise InvalidInputError(f"top_k is an integer from 1 to {MAX_LIMIT}, got {top_k!r}")
        return cls(memory, Scope.of(user_id, agent_id, run_id), bool(infer), top_k)

    def kwargs(self) -> ScopeArgs:
        return {"user_id": self.scope.user_id, "agent_id": self.scope.agent_id, "run_id": self.scope.run_id}

    def add(self, text: str) -> str:
        try:
            out = self.memory.add(text, infer=self.infer, **self.kwargs())
        except InvalidInputError as exc:
            raise ToolInputError(f"nothing was stored: {exc}") from None
        stored = [{"id": r["id"], "memory": r["memory"], "event": r["event"]} for r in out["results"]]
        return json.dumps({"stored": stored}, ensure_ascii=False)

    def search(self, query: str, limit: int | None = None) -> str:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or not 0 < limit <= MAX_LIMIT):
            raise ToolInputError(f"limit is an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        try:
            out = self.memory.search(query, top_k=limit or self.top_k, **self.kwargs())
        except InvalidInputError as exc:
            raise ToolInputError(f"the search failed: {exc}") from None
        found = [{"id": r["id"], "memory": r["memory"], "score": round(float(r["score"]), 4)}
                 for r in out["results"]]
        return json.dumps({"memories": found}, ensure_ascii=False)
