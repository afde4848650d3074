"""The embedder interface shared by every provider."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class Embedder(ABC):
    """Turns texts into unit vectors. ``name`` is recorded in the store to catch model changes.

    ``provider`` and ``model`` let a store's recorded name be turned back into an embedder (see
    :mod:`.pin`); an embedder of your own keeps ``provider = "custom"`` and is passed explicitly."""

    name: str
    dims: int
    provider: str = "custom"
    model: str | None = None
    semantic: bool = True
    """Whether nearness of vectors means nearness of meaning (not for the hashing embedder, whose vectors
    match shared words): what the rule extractor's mapping by meaning needs."""

    @abstractmethod
    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch in one call (one request for remote models); rows are unit length."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return normalize(self._embed(texts))

    async def aembed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """:meth:`embed`, awaitable: in a worker thread (local models are CPU-bound) unless the
        provider has an async client (:meth:`_aembed`)."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return normalize(await self._aembed(texts))

    async def _aembed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return await asyncio.to_thread(self._embed, texts)

    async def aclose(self) -> None:  # noqa: B027 - optional: only remote providers hold an async client
        """Close the async client, if any."""

    def embed_one(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row


def normalize(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (m / norms).astype(np.float32, copy=False)
    return out
