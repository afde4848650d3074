"""OpenAI Agents SDK tools over graphmem (``pip install 'graphmem[agents]'``): ``memory_tools(memory,
user_id=...)`` gives the ``add_memory`` and ``search_memory`` function tools, bound to that scope
when made; their strict schemas hold only ``text`` and ``query``/``limit``, never a scope.

A call the model got wrong (empty text, a bad limit) answers the model with the reason, so it can
correct itself; any other failure (the store is down) raises out of the run.
"""

from __future__ import annotations

import asyncio

try:
    from agents import FunctionTool, function_tool
except ImportError as exc:
    raise ImportError("graphmem.adapters.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'graphmem[agents]'") from exc

from ..memory import Memory
from .tools import ADD_DESCRIPTION, ADD_NAME, SEARCH_DESCRIPTION, SEARCH_NAME, ScopedMemory, ToolInputError

__all__ = ["memory_tools"]


def memory_tools(memory: Memory, *, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, infer: bool = True, top_k: int = 5) -> list[FunctionTool]:
    """``[add_memory, search_memory]`` for the scope given here (``ScopeError`` without one); ``infer``
    and ``top_k`` as in :func:`graphmem.adapters.langchain.memory_tools`."""
    bound = ScopedMemory.bind(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, infer=infer, top_k=top_k)

    async def add_memory(text: str) -> str:
        """Remember something.

        Args:
            text: What to remember, in plain sentences.
        """
        try:
            return await asyncio.to_thread(bound.add, text)
        except ToolInputError as exc:
            return f"error: {exc}"

    async def search_memory(query: str, limit: int | None = None) -> str:
        """Search memories.

        Args:
            query: What to look for, in plain words.
            limit: How many memories at most (default: the tools' top_k).
        """
        try:
            return await asyncio.to_thread(bound.search, query, limit)
        except ToolInputError as exc:
            return f"error: {exc}"

    return [
        function_tool(add_memory, name_override=ADD_NAME, description_override=ADD_DESCRIPTION,
                      failure_error_function=None),
        function_tool(search_memory, name_override=SEARCH_NAME, description_override=SEARCH_DESCRIPTION,
                      failure_error_function=None),
    ]
