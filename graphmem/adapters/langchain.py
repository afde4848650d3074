"""LangChain tools over graphmem (``pip install 'graphmem[langchain]'``): ``memory_tools(memory,
user_id=...)`` gives ``add_memory`` and ``search_memory``, bound to that scope when made.

The model sees only ``text`` (add) and ``query``/``limit`` (search); the tools' schemas forbid other
arguments, so a model that writes ``user_id`` into a call gets an error back, not another tenant.
A call the model got wrong (empty text, a bad limit, a stray argument) comes back to it as the tool's
answer (status ``error``); a failing store raises as usual.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, ConfigDict, Field, ValidationError

try:
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
except ImportError as exc:
    raise ImportError("graphmem.adapters.langchain needs LangChain: pip install 'graphmem[langchain]'") from exc

from ..memory import Memory
from .tools import ADD_DESCRIPTION, ADD_NAME, MAX_LIMIT, SEARCH_DESCRIPTION, SEARCH_NAME, ScopedMemory, ToolInputError

__all__ = ["memory_tools"]


class AddArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(description="What to remember, in plain sentences.")


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="What to look for, in plain words.")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="How many memories at most.")


def memory_tools(memory: Memory, *, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, infer: bool = True, top_k: int = 5) -> list[BaseTool]:
    """``[add_memory, search_memory]`` for the scope given here (``ScopeError`` without one).
    ``infer``: ``add_memory`` extracts memories and graph facts (default) or stores the text verbatim;
    ``top_k``: how many memories a search returns when the model gives no ``limit``."""
    bound = ScopedMemory.bind(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, infer=infer, top_k=top_k)

    def add(text: str) -> str:
        try:
            return bound.add(text)
        except ToolInputError as exc:
            raise ToolException(str(exc)) from None

    def search(query: str, limit: int | None = None) -> str:
        try:
            return bound.search(query, limit)
        except ToolInputError as exc:
            raise ToolException(str(exc)) from None

    async def aadd(text: str) -> str:
        return await asyncio.to_thread(add, text)

    async def asearch(query: str, limit: int | None = None) -> str:
        return await asyncio.to_thread(search, query, limit)

    return [
        StructuredTool.from_function(add, aadd, name=ADD_NAME, description=ADD_DESCRIPTION, args_schema=AddArgs,
                                     handle_tool_error=True, handle_validation_error=_validation_message),
        StructuredTool.from_function(search, asearch, name=SEARCH_NAME, description=SEARCH_DESCRIPTION,
                                     args_schema=SearchArgs, handle_tool_error=True,
                                     handle_validation_error=_validation_message),
    ]


def _validation_message(error: ValidationError) -> str:
    """The arguments the model got wrong, so it can correct the call."""
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())
    return f"invalid arguments: {problems}"
