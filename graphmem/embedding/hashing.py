"""A deterministic, dependency-free embedder: feature hashing of words and character trigrams.

It has no semantics beyond shared surface forms, but it is instant, identical on every machine, and
good enough to exercise every code path; tests and the offline demo use it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(Embedder):
    provider = "hashing"
    semantic = False

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims
        self.name = f"hashing-v1-{dims}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.casefold())
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        for w in words:
            padded = f"#{w}#"
            feats.extend(("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2))
        return feats

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dims
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, bucket] += sign * weight
        return out
