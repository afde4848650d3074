"""The dump format: JSON Lines, one header line, then one line per row.

Header: ``{"graphmem_dump": FORMAT_VERSION, "embedder": {"name", "dims"}, "ontology":
{"fingerprint", "iris"}, "scopes": [...], "counts": {kind: n}, "created_at", "graphmem"}``. Rows:
``{"kind": "memory" | "event" | "entity" | "fact" | "quarantine", "row": {...}}``, a memory with
``"vector"`` and an entity with ``"vector"`` (``null``: stored without one) and ``"mentions"``
(the memories naming it). Vectors are base64 of little-endian float32, so they come back bit for
bit. Rows are grouped by exact scope, and within a scope in :data:`~..stores.base.DUMP_KINDS`
order, so each line depends only on earlier ones.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from pydantic import BaseModel, ValidationError

from ..errors import DumpFormatError
from ..models import Entity, HistoryEvent, MemoryRecord, QuarantineEntry, Relation, Scope
from ..stores.base import DUMP_KINDS, Vector

FORMAT_VERSION: Final = 1
MODELS: Final[dict[str, type[BaseModel]]] = {
    "memory": MemoryRecord, "event": HistoryEvent, "entity": Entity, "fact": Relation,
    "quarantine": QuarantineEntry}


@dataclass
class Header:
    embedder: str
    dims: int
    counts: dict[str, int]
    scopes: list[Scope]
    ontology: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    graphmem: str = ""

    def to_json(self) -> str:
        return json.dumps({
            "graphmem_dump": FORMAT_VERSION, "embedder": {"name": self.embedder, "dims": self.dims},
            "ontology": self.ontology, "scopes": [dict(s.items()) for s in self.scopes], "counts": self.counts,
            "created_at": self.created_at, "graphmem": self.graphmem,
        }, ensure_ascii=False)

    @classmethod
    def parse(cls, text: str) -> Header:
        data = _json(text, 1)
        if not isinstance(data, dict) or "graphmem_dump" not in data:
            raise DumpFormatError("not a graphmem dump (no graphmem_dump header); write one with graphmem export", 1)
        version = data["graphmem_dump"]
        if version != FORMAT_VERSION:
            raise DumpFormatError(f"dump format version {version!r}; this graphmem reads version {FORMAT_VERSION}",
                                  1)
        try:
            emb = data["embedder"]
            counts = {k: int(data["counts"].get(k, 0)) for k in DUMP_KINDS}
            scopes = [Scope(**s) for s in data["scopes"]]
            return cls(embedder=str(emb["name"]), dims=int(emb["dims"]), counts=counts, scopes=scopes,
                       ontology=dict(data.get("ontology") or {}), created_at=str(data.get("created_at", "")),
                       graphmem=str(data.get("graphmem", "")))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DumpFormatError(f"malformed header: {exc}", 1) from None


def encode_vector(vector: Vector | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: Any, dims: int, line: int) -> Vector:
    if not isinstance(text, str):
        raise DumpFormatError("a vector is a base64 string", line)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise DumpFormatError("a vector is not valid base64", line) from None
    if len(raw) != 4 * dims:
        raise DumpFormatError(f"a vector has {len(raw) // 4} dimensions, the header says {dims}", line)
    vec = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vec).all():
        raise DumpFormatError("a vector holds NaN or infinity", line)
    return vec


def row_line(kind: str, row: Any, **extra: Any) -> str:
    return json.dumps({"kind": kind, "row": row.model_dump(mode="json"), **extra}, ensure_ascii=False)


@dataclass
class Line:
    """One parsed row line."""

    kind: str
    row: Any
    scope: Scope
    vector: Vector | None = None
    mentions: list[str] = field(default_factory=list)


def _json(text: str, line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpFormatError(f"not JSON ({exc.msg} at column {exc.colno})", line) from None


def parse_line(text: str, number: int, dims: int) -> Line:
    """One row line, validated as the API validates what it stores (:mod:`graphmem.models`)."""
    data = _json(text, number)
    if not isinstance(data, dict) or data.get("kind") not in MODELS or not isinstance(data.get("row"), dict):
        raise DumpFormatError(f"a row line is {{\"kind\": one of {', '.join(DUMP_KINDS)}, \"row\": {{...}}}}", number)
    kind = data["kind"]
    try:
        row: Any = MODELS[kind].model_validate(data["row"])
        scope = Scope(user_id=row.user_id, agent_id=row.agent_id, run_id=row.run_id)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or kind
        raise DumpFormatError(f"{kind} row: {where}: {first['msg']}", number) from None
    out = Line(kind, row, scope)
    if kind == "memory":
        out.vector = decode_vector(data.get("vector"), dims, number)
    elif kind == "entity":
        vec = data.get("vector")
        out.vector = None if vec is None else decode_vector(vec, dims, number)
        mentions = data.get("mentions", [])
        if not isinstance(mentions, list) or not all(isinstance(m, str) for m in mentions):
            raise DumpFormatError("an entity's mentions are a list of memory ids", number)
        out.mentions = mentions
    return out
