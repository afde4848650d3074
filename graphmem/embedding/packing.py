"""One model forward for many texts without padding: a sentence-transformers model's texts packed
end to end into rows, each text seeing only its own tokens.

A BERT-like encoder's cost on a CPU is its token count times its weights when a batch is small,
and ``encode`` pads every text of a batch to the longest one, so a memory and a three-token entity
name cost two full rows. Packed, the name adds three tokens. The result is the same computation:
attention is masked block-diagonally (no token attends outside its text), position ids restart at
each text, and each text's tokens are mean-pooled alone. :func:`packer` checks that equality on a
probe before it is used, so a model it does not reproduce keeps ``encode``.

With one or a few short texts the forward is bound by reading the weights, not by arithmetic, so on
a CPU that multiplies bfloat16 in hardware the packer can run under PyTorch's bfloat16 autocast
(matrix products in bfloat16, normalizations and pooling in float32); it does so only after the
probe's vectors keep a cosine of :data:`BFLOAT16_MIN_COSINE` to float32's. Elsewhere PyTorch emulates
bfloat16, slower than float32, so it is never chosen there. The model itself stays float32.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

ROW_TOKENS: Final = 256
"""Tokens per packed row (at least the model's own limit): attention over a row costs its length
squared, most of it masked out, so rows longer than one full text buy nothing."""
_PROBE: Final = ["  A probe sentence, about the weather in Paris last June.  ", "Probe", "b"]
_PROBE_TOLERANCE: Final = 1e-5
BFLOAT16_MIN_COSINE: Final = 0.9999


class Packer:
    """Packs texts into rows of the model's first module and pools them the way its encode does."""

    def __init__(self, model: Any, rows_per_forward: int) -> None:
        self._model = model
        self._transformer = model[0]
        self._rows = max(1, rows_per_forward)
        self._row_tokens = max(ROW_TOKENS, int(getattr(self._transformer, "max_seq_length", 0) or 0))
        self.bfloat16 = False

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import torch

        # the model's own preprocessing (named tokenize before sentence-transformers 6): the same
        # stripping, casing and truncation as its encode
        prep = getattr(self._model, "preprocess", None) or self._model.tokenize
        enc = prep(list(texts))
        keep = enc["attention_mask"].bool()
        ids = [row[k] for row, k in zip(enc["input_ids"], keep, strict=True)]
        types = ([row[k] for row, k in zip(enc["token_type_ids"], keep, strict=True)]
                 if "token_type_ids" in enc else None)
        # longest first, each text into the first row with room (texts are at most a row long)
        rows: list[list[int]] = []
        room: list[int] = []
        for i in sorted(range(len(ids)), key=lambda i: -len(ids[i])):
            n = len(ids[i])
            at = next((r for r, left in enumerate(room) if left >= n), None)
            if at is None:
                rows.append([])
                room.append(self._row_tokens)
                at = len(rows) - 1
            rows[at].append(i)
            room[at] -= n
        out = torch.empty((len(ids), self._dims()), dtype=torch.float32)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bfloat16):
            for start in range(0, len(rows), self._rows):
                self._forward(rows[start:start + self._rows], ids, types, out)
        result: npt.NDArray[np.float32] = out.numpy()
        return result

    def _dims(self) -> int:
        return int(self._transformer.auto_model.config.hidden_size)

    @property
    def precision(self) -> str:
        return "bfloat16" if self.bfloat16 else "float32"

    def _forward(self, rows: list[list[int]], ids: list[Any], types: list[Any] | None, out: Any) -> None:
        import torch

        width = max(sum(len(ids[i]) for i in row) for row in rows)
        n = len(rows)
        input_ids = torch.zeros((n, width), dtype=torch.long)
        type_ids = torch.zeros((n, width), dtype=torch.long)
        positions = torch.zeros((n, width), dtype=torch.long)
        segment = torch.full((n, width), -1, dtype=torch.long)  # -1: padding
        for r, row in enumerate(rows):
            at = 0
            for i in row:
                k = len(ids[i])
                input_ids[r, at:at + k] = ids[i]
                if types is not None:
                    type_ids[r, at:at + k] = types[i]
                positions[r, at:at + k] = torch.arange(k)
                segment[r, at:at + k] = i
                at += k
        same = (segment[:, :, None] == segment[:, None, :]) & (segment[:, None, :] >= 0)
        mask = torch.zeros((n, 1, width, width), dtype=torch.float32)
        mask.masked_fill_(~same[:, None], torch.finfo(torch.float32).min)
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": mask, "position_ids": positions}
        if types is not None:
            kwargs["token_type_ids"] = type_ids
        hidden = self._transformer.auto_model(**kwargs).last_hidden_state.float()  # (n, width, dims)
        flat_seg = segment.reshape(-1)
        real = flat_seg >= 0
        sums = torch.zeros_like(out)
        sums.index_add_(0, flat_seg[real], hidden.reshape(-1, hidden.shape[-1])[real])
        counts = torch.bincount(flat_seg[real], minlength=out.shape[0]).to(torch.float32)
        done = counts > 0
        out[done] = sums[done] / counts[done, None]


def packer(model: Any, rows_per_forward: int, *, bfloat16: bool = False) -> Packer | None:
    """A :class:`Packer` for ``model`` if its layout is a transformer, mean pooling and at most a
    normalization, and packing reproduces its ``encode`` on a probe; else ``None``. With
    ``bfloat16``, it computes under bfloat16 autocast when :func:`native_bfloat16` and the probe
    allow it."""
    try:
        names = [type(m).__name__ for m in model]
        pool = model[1]
        mean = (getattr(pool, "pooling_mode", None) == "mean"
                or (getattr(pool, "pooling_mode_mean_tokens", False)
                    and not any(getattr(pool, a, False) for a in (
                        "pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"))))
        if names[:2] != ["Transformer", "Pooling"] or set(names[2:]) - {"Normalize"} or not mean:
            return None
        if not hasattr(model[0], "auto_model") or not (hasattr(model, "preprocess") or hasattr(model, "tokenize")):
            return None
        candidate = Packer(model, rows_per_forward)
        got = _unit(candidate(_PROBE))
        want = _unit(np.asarray(model.encode(list(_PROBE), convert_to_numpy=True), dtype=np.float32))
        if got.shape != want.shape or float(np.abs(got - want).max()) > _PROBE_TOLERANCE:
            log.info("packed embedding differs from encode for this model: encode is used")
            return None
        if bfloat16 and native_bfloat16() and str(getattr(model, "device", "cpu")) == "cpu":
            candidate.bfloat16 = True
            cosine = float((_unit(candidate(_PROBE)) * want).sum(axis=1).min())
            if cosine < BFLOAT16_MIN_COSINE:
                candidate.bfloat16 = False
                log.info("bfloat16 vectors of this model are too far from float32's (cosine %.6f): float32 kept",
                         cosine)
        return candidate
    except Exception as exc:  # any model this does not understand keeps encode
        log.info("packed embedding not available for this model (%s): encode is used", exc)
        return None


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX tiles); PyTorch has no
    public test, so its CPU probes are read when they exist."""
    import torch

    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def _unit(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out
