"""A BERT sentence-transformers model (all-MiniLM-L6-v2 by default) run with ONNX Runtime: the default
embedder, with no PyTorch.

The model's ``model.safetensors`` is turned into an ONNX graph of standard operators, written once
to graphmem's cache folder (about the size of the weights) so a new process only opens it; the
graph computes what sentence-transformers' ``encode`` does: BERT (exact GELU), mean pooling over the
text's tokens, then :meth:`Embedder.embed` normalises. Texts are tokenised by the model's own
``tokenizer.json`` (``tokenizers``), stripped and cut at the model's ``max_seq_length`` like
``encode``. Batches are sorted by length so padding stays small.

Why ONNX Runtime and not NumPy: a NumPy forward pass measured several times slower (its GELU alone
cost as much as the matrix products), and ONNX Runtime's fused kernels beat PyTorch's ``encode``
(the docs' Benchmarks, ``bench/embedding.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from .. import cachedir
from ..config import EmbedderConfig
from ..errors import EmbeddingError
from . import files
from .base import Embedder

log = logging.getLogger("graphmem")

GRAPH_FORMAT: Final = 1
"""Bump when the graph this module builds changes, so cached graphs are rebuilt."""
KEEP_GRAPHS: Final = 3
"""Cached graphs kept, the most recently used: the default model's and a couple of the user's own."""
BATCH_TOKENS: Final = 8192
"""Padded tokens per forward at most: bounds the attention scores' memory (batch × heads × length²)."""
MIN_FILL: Final = 0.9
"""A forward's shortest text is at least this share of its longest (``bench/embedding.py``)."""


@dataclass(frozen=True)
class BertSpec:
    """What the graph needs from a model folder's ``config.json`` and sentence-transformers files."""

    hidden: int
    heads: int
    layers: int
    eps: float
    max_tokens: int
    prefix: str

    @classmethod
    def read(cls, folder: Path, weight_names: Sequence[str]) -> BertSpec:
        config = _json(folder / "config.json")
        if config.get("model_type") not in ("bert", None) or config.get("hidden_act", "gelu") != "gelu":
            raise EmbeddingError(f"{folder} is not a BERT model with GELU (model_type "
                                 f"{config.get('model_type')!r}); use embedder.provider sentence-transformers")
        pooling = _json(folder / "1_Pooling" / "config.json", missing_ok=True)
        if pooling and not pooling.get("pooling_mode_mean_tokens"):
            raise EmbeddingError(f"{folder} pools by other than the mean of its tokens, which the onnx embedder "
                                 "does not compute; use embedder.provider sentence-transformers")
        st = _json(folder / "sentence_bert_config.json", missing_ok=True)
        positions = int(config["max_position_embeddings"])
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weight_names else ""
        return cls(hidden=int(config["hidden_size"]), heads=int(config["num_attention_heads"]),
                   layers=int(config["num_hidden_layers"]), eps=float(config.get("layer_norm_eps", 1e-12)),
                   max_tokens=min(int(st.get("max_seq_length", positions)), positions), prefix=prefix)


def _json(path: Path, *, missing_ok: bool = False) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise EmbeddingError(f"the model folder lacks {path.name}") from None
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbeddingError(f"{path} is not a JSON object")
    return data


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 (or a BERT model folder) through ONNX Runtime. Its vectors are
    sentence-transformers' for the same model, so its name is theirs and a store made with either
    opens with the other."""

    provider = "onnx"

    def __init__(self, config: EmbedderConfig) -> None:
        try:
            import onnxruntime
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"the onnx embedder needs onnxruntime, safetensors and tokenizers ({exc}); "
                                 "reinstall graphmem") from exc
        self.model = config.model or files.DEFAULT_MODEL
        folder = files.locate(self.model)
        with safe_open(str(folder / "model.safetensors"), framework="numpy") as weights:
            spec = BertSpec.read(folder, list(weights.keys()))
        self.dims = spec.hidden
        self.name = f"st:{self.model}:{self.dims}"
        self._batch = config.batch_size
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(spec.max_tokens)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: the optimizer's notes are not the user's concern
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self._session = onnxruntime.InferenceSession(
                _graph(folder, spec), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types for a bad graph or file
            raise EmbeddingError(f"cannot load the ONNX graph of {self.model!r}: {exc}") from exc

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch([t.strip() for t in texts])
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for rows in _batches(lengths, self._batch):
            width = lengths[rows[0]]
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, :lengths[i]] = encodings[i].ids
                mask[r, :lengths[i]] = 1
            out[rows] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out


def _batches(lengths: Sequence[int], most: int) -> Iterator[list[int]]:
    """Indexes longest first, in runs of at most ``most`` texts and :data:`BATCH_TOKENS` padded tokens,
    a run ending where the next text is shorter than :data:`MIN_FILL` of the run's width: a padded
    token costs what a real one does, a forward a little more than a short text."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    start = 0
    while start < len(order):
        width = max(lengths[order[start]], 1)
        end = start + 1
        limit = min(len(order), start + max(1, min(most, BATCH_TOKENS // width)))
        while end < limit and lengths[order[end]] >= width * MIN_FILL:
            end += 1
        yield order[start:end]
        start = end


def _graph(folder: Path, spec: BertSpec) -> str | bytes:
    """The ONNX graph's file in the cache (built when missing), or its bytes when there is no cache."""
    weights = folder / "model.safetensors"
    stat = weights.stat()
    # the published model is known by its checked digest, so a fresh pull or a copy elsewhere reuses the
    # graph; any other folder by where its weights are and when they changed
    identity = files.published_sha256(folder) or f"{weights.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    key = hashlib.sha256(f"{GRAPH_FORMAT}\0{identity}\0{spec}".encode()).hexdigest()[:24]
    base = files.models_dir()
    path = base / "onnx" / f"{key}.onnx" if base is not None else None
    if path is not None and path.is_file():
        with contextlib.suppress(OSError):
            os.utime(path)  # last used: what pruning keeps
        return str(path)
    log.info("graphmem: building the ONNX graph of %s (once)", folder)
    data = build_graph(weights, spec)
    if path is None or not cachedir.write(path, data):
        return data  # no cache: a build per process
    _prune(path.parent, keep=path)
    return str(path)


def _prune(folder: Path, keep: Path) -> None:
    """Drop all but the ``KEEP_GRAPHS`` most recently used graphs: each is the size of its model."""
    graphs = sorted(folder.glob("*.onnx"), key=lambda p: p.stat().st_mtime if p.exists() else 0.0, reverse=True)
    for old in [g for g in graphs if g != keep][KEEP_GRAPHS - 1:]:
        with contextlib.suppress(OSError):
            old.unlink()


def build_graph(weights: Path, spec: BertSpec) -> bytes:
    """The serialized ONNX model: inputs ``input_ids`` and ``attention_mask`` (int64, batch × length),
    output ``embedding`` (float32, batch × hidden), the mean of the last layer over unmasked tokens."""
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    w = load_file(str(weights))
    p = spec.prefix
    nodes: list[Any] = []
    initializers: list[Any] = []
    counter = iter(range(1 << 30))

    def const(name: str, value: npt.ArrayLike, dtype: Any = np.float32) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(np.asarray(value, dtype=dtype)), name))
        return name

    def op(kind: str, *inputs: str, **attrs: Any) -> str:
        out = f"{kind.lower()}_{next(counter)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(x: str, name: str) -> str:
        return op("Add", op("MatMul", x, const(f"{name}.wT", w[f"{p}{name}.weight"].T)),
                  const(f"{name}.b", w[f"{p}{name}.bias"]))

    def norm(x: str, name: str) -> str:
        return op("LayerNormalization", x, const(f"{name}.g", w[f"{p}{name}.weight"]),
                  const(f"{name}.beta", w[f"{p}{name}.bias"]), axis=-1, epsilon=spec.eps)

    head = spec.hidden // spec.heads
    length = op("Shape", "input_ids", start=1, end=2)
    positions = op("Slice", const("positions", w[f"{p}embeddings.position_embeddings.weight"]),
                   const("zero", [0], np.int64), length, const("axis0", [0], np.int64))
    x = op("Add", op("Gather", const("words", w[f"{p}embeddings.word_embeddings.weight"]), "input_ids"), positions)
    x = norm(op("Add", x, const("type0", w[f"{p}embeddings.token_type_embeddings.weight"][0])),
             "embeddings.LayerNorm")
    mask = op("Cast", "attention_mask", to=TensorProto.FLOAT)
    # 0 where a token may be attended to, -10000 where it is padding (as BERT's own extended mask)
    bias = op("Mul", op("Sub", const("one", 1.0), op("Unsqueeze", mask, const("axes12", [1, 2], np.int64))),
              const("masked", -10000.0))
    heads_shape = const("heads_shape", [0, 0, spec.heads, head], np.int64)
    hidden_shape = const("hidden_shape", [0, 0, spec.hidden], np.int64)
    scale = const("scale", np.sqrt(head))
    root2, one, half = const("root2", np.sqrt(2.0)), const("one_", 1.0), const("half", 0.5)
    for i in range(spec.layers):
        layer = f"encoder.layer.{i}."

        def split(name: str, perm: list[int], layer: str = layer, x: str = x) -> str:
            return op("Transpose", op("Reshape", linear(x, layer + name), heads_shape), perm=perm)

        q = split("attention.self.query", [0, 2, 1, 3])
        k = split("attention.self.key", [0, 2, 3, 1])
        v = split("attention.self.value", [0, 2, 1, 3])
        scores = op("Add", op("Div", op("MatMul", q, k), scale), bias)
        context = op("MatMul", op("Softmax", scores, axis=-1), v)
        context = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), hidden_shape)
        x = norm(op("Add", linear(context, layer + "attention.output.dense"), x), layer + "attention.output.LayerNorm")
        h = linear(x, layer + "intermediate.dense")
        h = op("Mul", op("Mul", h, op("Add", op("Erf", op("Div", h, root2)), one)), half)  # exact GELU
        x = norm(op("Add", linear(h, layer + "output.dense"), x), layer + "output.LayerNorm")
    summed = op("ReduceSum", op("Mul", x, op("Unsqueeze", mask, const("axis2", [2], np.int64))),
                const("axis1", [1], np.int64), keepdims=0)
    count = op("ReduceSum", mask, const("axis1_", [1], np.int64), keepdims=1)
    nodes.append(helper.make_node("Div", [summed, count], ["embedding"]))
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "length"])
              for name in ("input_ids", "attention_mask")]
    output = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", spec.hidden])
    graph = helper.make_graph(nodes, "graphmem-bert", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="graphmem")
    data: bytes = model.SerializeToString()
    return data
