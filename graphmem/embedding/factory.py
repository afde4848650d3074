"""Choosing an embedder from config, with ``auto`` picking the best one available."""

from __future__ import annotations

import logging
import os

from ..config import EmbedderConfig
from . import local
from .base import Embedder
from .hashing import HashingEmbedder

log = logging.getLogger("graphmem")


def create_embedder(config: EmbedderConfig) -> Embedder:
    provider = config.provider
    reason = "configured"
    if provider == "auto":
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
    return embedder
