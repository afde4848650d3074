"""Text embedders. All return L2-normalized float32 rows, so a dot product is a cosine."""

from .base import Embedder
from .factory import HashingFallbackWarning, create_embedder
from .hashing import HashingEmbedder
from .pin import EmbedderPin

__all__ = ["Embedder", "EmbedderPin", "HashingEmbedder", "HashingFallbackWarning", "create_embedder"]
