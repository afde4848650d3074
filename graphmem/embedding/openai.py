"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, LM Studio)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import openai

from ..config import EmbedderConfig, display_uri
from ..errors import EmbeddingError
from .base import Embedder


class OpenAIEmbedder(Embedder):
    provider = "openai"

    def __init__(self, config: EmbedderConfig) -> None:
        self.model = config.model or "text-embedding-3-small"
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        self._client = openai.OpenAI(  # no key: the client reads OPENAI_API_KEY
            api_key=key or None, base_url=config.base_url,
            timeout=config.timeout_s, max_retries=config.max_retries,
        )
        self._aclient: openai.AsyncOpenAI | None = None
        self._batch = config.batch_size
        self._dims_param = config.dims
        self.dims = config.dims or self._probe()
        self.name = f"openai:{self.model}:{self.dims}"

    def _where(self) -> str:
        return display_uri(str(self._client.base_url))

    def _probe(self) -> int:
        return int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._failures():
            response = self._client.embeddings.create(**self._params(texts))
        return self._matrix(response, texts)

    async def _arequest(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._failures():
            response = await self._async_client().embeddings.create(**self._params(texts))
        return self._matrix(response, texts)

    def _params(self, texts: Sequence[str]) -> dict[str, Any]:
        dims = self._dims_param if self._dims_param is not None else openai.omit
        return {"model": self.model, "input": list(texts), "dimensions": dims}

    @contextmanager
    def _failures(self) -> Iterator[None]:
        try:
            yield
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding model {self.model!r} at {self._where()} failed: {exc}") from exc
        except (ValueError, TypeError, AttributeError) as exc:  # a body that is not an embeddings response
            raise EmbeddingError(f"{self._where()} sent a malformed embeddings response: {exc}") from exc

    def _matrix(self, response: Any, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        try:
            rows = sorted(response.data, key=lambda d: d.index)
            matrix = np.asarray([r.embedding for r in rows], dtype=np.float32)
        except (ValueError, TypeError, AttributeError) as exc:  # a body that is not an embeddings response
            raise EmbeddingError(f"{self._where()} sent a malformed embeddings response: {exc}") from exc
        if matrix.ndim != 2 or len(matrix) != len(texts):
            raise EmbeddingError(f"embedding endpoint returned {len(rows)} vectors for {len(texts)} texts")
        return matrix

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        parts = [self._request(texts[i : i + self._batch]) for i in range(0, len(texts), self._batch)]
        return np.vstack(parts)

    async def _aembed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        parts = [await self._arequest(texts[i : i + self._batch]) for i in range(0, len(texts), self._batch)]
        return np.vstack(parts)

    def _async_client(self) -> openai.AsyncOpenAI:
        """The sync client's twin (same key, endpoint, timeout and retries), made on first async use."""
        if self._aclient is None:
            c = self._client
            self._aclient = openai.AsyncOpenAI(api_key=c.api_key, base_url=c.base_url, timeout=c.timeout,
                                               max_retries=c.max_retries)
        return self._aclient

    async def aclose(self) -> None:
        if self._aclient is not None:
            client, self._aclient = self._aclient, None
            await client.close()
