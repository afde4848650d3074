"""Text embedders. All return L2-normalized float32 rows, so a dot product is a cosine."""

from .base import Embedder
from .factory import create_embedder
from .hashing import HashingEmbedder

__all__ = ["Embedder", "HashingEmbedder", "create_embedder"]
