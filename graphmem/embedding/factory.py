"""Choosing an embedder from config: ``auto`` is the one the store is pinned to, else OpenAI with a
key, else all-MiniLM-L6-v2 through ONNX Runtime; never a silent fallback to hashing."""

from __future__ import annotations

import logging
import os
import threading
import warnings

from ..config import EmbedderConfig
from . import files
from .base import Embedder
from .bert import OnnxEmbedder
from .hashing import HashingEmbedder
from .pin import EmbedderPin

log = logging.getLogger("graphmem")


class HashingFallbackWarning(UserWarning):
    """``embedder.provider: auto`` opened a store created with the hashing embedder, whose vectors
    match shared words only (``graphmem reembed --embedder onnx`` moves it to a real model). Filter it
    (``warnings.simplefilter("ignore", HashingFallbackWarning)``) where that is intended, e.g. tests."""


_warned: set[str] = set()
_warned_lock = threading.Lock()


def create_embedder(config: EmbedderConfig, *, pinned: EmbedderPin | None = None, where: str = "") -> Embedder:
    """The configured embedder. With ``auto`` and a store that recorded its embedder (``pinned``),
    that one; else OpenAI with a key, else all-MiniLM-L6-v2 through ONNX Runtime. The hashing
    embedder only when named, or pinned (then it warns once per process and store, ``where``)."""
    provider = config.provider
    auto = provider == "auto"
    reason = "configured"
    if auto and pinned is not None:
        config = pinned.config(config)
        provider, reason = config.provider, f"the store was created with {pinned.name}"
        if provider == "sentence-transformers" and files.is_default(config.model or files.DEFAULT_MODEL):
            provider = "onnx"  # the same vectors, without PyTorch
    elif auto:
        if (config.api_key and config.api_key.get_secret_value()) or os.environ.get("OPENAI_API_KEY"):
            provider, reason = "openai", "an OpenAI API key is set"
        else:
            provider, reason = "onnx", "the default"
    embedder: Embedder
    if provider == "openai":
        from .openai import OpenAIEmbedder

        embedder = OpenAIEmbedder(config)
    elif provider == "onnx":
        embedder = OnnxEmbedder(config)
    elif provider == "sentence-transformers":
        from .local import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(config)
    else:
        embedder = HashingEmbedder(config.dims or 384)
    log.info("graphmem embedder: %s via %s (%s)", embedder.name, embedder.provider, reason)
    if auto and provider == "hashing":
        _warn_pinned_hashing(where)
    return embedder


def _warn_pinned_hashing(where: str) -> None:
    with _warned_lock:
        if where in _warned:
            return
        _warned.add(where)
    store = f" for the store at {where}" if where else ""
    message = (f"graphmem is using the hashing embedder{store} because the store was created with it "
               "(embedder.provider: auto keeps a store's embedder); its vectors match shared words, not "
               "meaning. Move the store to a real model with `graphmem reembed --embedder onnx` "
               "(all-MiniLM-L6-v2, offline) or `--embedder openai`")
    warnings.warn(message, HashingFallbackWarning, stacklevel=4)
    log.warning(message)  # after the warning: the command line shows the typed line and drops this same text
