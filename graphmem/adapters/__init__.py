"""Framework adapters, each an optional extra imported only by its own module, so ``import graphmem``
never imports a framework:

- :mod:`graphmem.adapters.langgraph` (``graphmem[langgraph]``): :class:`GraphmemStore`, a LangGraph
  ``BaseStore`` whose namespaces are graphmem scopes;
- :mod:`graphmem.adapters.langchain` (``graphmem[langchain]``): ``memory_tools``, LangChain tools to
  add and search memories of a scope fixed when they are made;
- :mod:`graphmem.adapters.openai_agents` (``graphmem[agents]``): the same tools for the OpenAI Agents SDK.
"""

from typing import TypedDict


class ScopeArgs(TypedDict):
    """A scope as the keyword arguments of every :class:`~graphmem.memory.Memory` call."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
