"""The embedder a store is pinned to, read back from the name the store recorded at creation.

Why: vectors of two models are not comparable, so a store keeps the embedder it was created with.
The recorded name (``hashing-v1-384``, ``st:<model>:<dims>``, ``openai:<model>:<dims>``) carries
provider, model and size, so ``embedder.provider: auto`` can rebuild that same embedder instead of
picking whatever the environment offers today (a later ``OPENAI_API_KEY`` must not switch it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config import EmbedderConfig
from ..errors import ConfigError
from .base import Embedder

_HASHING = re.compile(r"hashing-v1-(\d+)")
_PREFIXES = {"st": "sentence-transformers", "openai": "openai"}


@dataclass(frozen=True)
class EmbedderPin:
    """A store's embedder: ``provider`` is ``custom`` for a name graphmem did not make."""

    name: str
    dims: int
    provider: str
    model: str | None

    @classmethod
    def parse(cls, name: str, dims: int) -> EmbedderPin:
        if (m := _HASHING.fullmatch(name)) is not None and int(m.group(1)) == dims:
            return cls(name, dims, "hashing", None)
        prefix, _, rest = name.partition(":")
        model, _, size = rest.rpartition(":")
        if prefix in _PREFIXES and model and size == str(dims):
            return cls(name, dims, _PREFIXES[prefix], model)
        return cls(name, dims, "custom", None)

    def describe(self) -> str:
        """How a person names it: the provider, model and size."""
        model = f" model {self.model!r}" if self.model else ""
        return f"{self.provider}{model} ({self.dims} dimensions, recorded as {self.name!r})"

    def config(self, base: EmbedderConfig) -> EmbedderConfig:
        """``base`` (its key, endpoint, batch size, timeouts) set to build this pinned embedder."""
        if self.provider == "custom":
            raise ConfigError(
                f"the store was created with an embedder of your own, {self.name!r} ({self.dims} "
                "dimensions): pass it as Memory(embedder=...), or move the store to a built-in one "
                "with `graphmem reembed --embedder onnx|openai|sentence-transformers|hashing`")
        # only hashing takes its size from config; a model reports its own (and some OpenAI-compatible
        # servers refuse a `dimensions` parameter), so the store's check at open compares it
        dims = self.dims if self.provider == "hashing" else base.dims
        return base.model_copy(update={"provider": self.provider, "model": self.model, "dims": dims})


def reembed_args(embedder: Embedder) -> str:
    """The ``graphmem reembed`` options that select ``embedder``, for messages."""
    args = f"--embedder {embedder.provider}" + (f" --model {embedder.model}" if embedder.model else "")
    return args + (f" --dims {embedder.dims}" if embedder.provider == "hashing" else "")
