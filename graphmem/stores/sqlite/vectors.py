"""An SQLite store's memory vectors, held in memory per tenant, with a snapshot file for cold start.

Why a block per tenant (``user_id``): a search reads one tenant, so its vectors are kept in one
contiguous float32 matrix and scored with one matrix-vector product over exactly its rows, with no
gather of scattered slots and no rows of other tenants. A delete moves the block's last row into the
hole, so a block never has gaps. (float16 and int8 copies were measured slower: NumPy has no BLAS
kernel for them.)

Why a snapshot: loading every vector through SQL reads every row of ``memories``, text included,
and builds Python objects per row. The snapshot (``<store>-vectors``) holds the blocks as raw bytes
read straight into the arrays; the changes ``vec_changes`` logged after it are then replayed. It is
a cache, never the data: written to a temporary file, synced, then renamed over the old one (never
seen partly written), and used only when its token matches the one the store's ``meta`` table holds
and the change log still reaches back to it; otherwise the vectors are loaded through SQL.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sqlite3
import struct
import threading
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numkong
import numpy as np
import numpy.typing as npt

from ...models import Scope
from ...private_files import PRIVATE_FILE

Vector = npt.NDArray[np.float32]

_MAGIC = b"graphmem-vectors-2\n"
TOKEN_KEY = "vectors_snapshot"
"""The ``meta`` key naming the snapshot file that may be used."""
_SEP = "\x00"
_RESAVE_AFTER = 2_000
"""Changes replayed on top of the snapshot before :meth:`VectorCache.save` writes a new one (each
replayed change is one row read by id at the next cold start)."""
_SNAPSHOT_FROM = 5_000
"""Rows from which closing a store writes a snapshot of its own accord (``optimize`` always does):
below, loading through SQL costs a few milliseconds, less than writing and syncing the file."""


_COARSE_FROM = 8_192
"""Rows of a block from which an unfiltered search ranks the int8 copy first (below, the exact
float32 product is about as fast as the int8 one plus the re-scoring)."""
_RESCORED = 4
"""Rows re-scored exactly per wanted hit, at least :data:`_RESCORED_MIN`: the int8 ranking errs by
about a thousandth of a cosine, so the exact top ``k`` lie far inside the ``4k`` best int8 scores."""
_RESCORED_MIN = 256


def _aligned(offset: int) -> int:
    return -(-offset // 64) * 64


def quantize(rows: Vector) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 (its largest magnitude mapped to 127) and the factor back (0 for a zero row)."""
    peak = np.abs(rows).max(axis=1) if len(rows) else np.empty(0, dtype=np.float32)
    factor = np.divide(127.0, peak, out=np.zeros_like(peak), where=peak > 0)
    codes = np.rint(rows * factor[:, None]).astype(np.int8)
    back = np.divide(1.0, factor, out=np.zeros_like(factor), where=factor > 0).astype(np.float32)
    return codes, back


class _Block:
    """One tenant's vectors: rows ``[0, n)`` of each array are live, in no particular order. Arrays
    loaded from the snapshot are copy-on-write maps of the file; growing one copies it."""

    __slots__ = ("_index", "back", "coarse", "codes", "ids", "matrix", "n", "rowids")

    def __init__(self, dims: int, cap: int = 16) -> None:
        self.matrix: Vector = np.empty((cap, dims), dtype=np.float32)
        self.coarse: npt.NDArray[np.int8] = np.empty((cap, dims), dtype=np.int8)  # see quantize()
        self.back: npt.NDArray[np.float32] = np.empty(cap, dtype=np.float32)
        self.codes: npt.NDArray[np.int32] = np.empty((cap, 2), dtype=np.int32)  # agent_id, run_id (-1: None)
        self.rowids: npt.NDArray[np.int64] = np.empty(cap, dtype=np.int64)
        self.n = 0
        self.ids: list[str] = []
        self._index: dict[str, int] | None = None  # memory id -> row, built when first asked for

    def reserve(self, need: int) -> None:
        cap = len(self.matrix)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        n = self.n
        for name in ("matrix", "coarse", "back", "codes", "rowids"):
            old = getattr(self, name)
            grown = np.empty((new_cap, *old.shape[1:]), dtype=old.dtype)
            grown[:n] = old[:n]
            setattr(self, name, grown)

    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = dict(zip(self.ids, range(self.n), strict=True))
        return self._index

    def positions(self, rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """Rows holding any of ``rowids``, ascending."""
        return np.flatnonzero(np.isin(self.rowids[: self.n], rowids))

    def remove(self, rows: npt.NDArray[np.intp]) -> None:
        """Drop ``rows`` (ascending); the last rows fill the holes, so the block stays contiguous."""
        for i in rows[::-1].tolist():  # from the end: a row moved into a hole is never one still to drop
            last = self.n - 1
            if self._index is not None:
                del self._index[self.ids[i]]
            if i != last:
                for a in (self.matrix, self.coarse, self.back, self.codes, self.rowids):
                    a[i] = a[last]
                self.ids[i] = self.ids[last]
                if self._index is not None:
                    self._index[self.ids[i]] = i
            self.ids.pop()
            self.n = last

    def append(self, rowid: int, mid: str, codes: tuple[int, int], vector: Vector) -> None:
        self.reserve(self.n + 1)
        i = self.n
        self.matrix[i] = vector
        coarse, back = quantize(vector.reshape(1, -1))
        self.coarse[i], self.back[i] = coarse[0], back[0]
        self.codes[i] = codes
        self.rowids[i] = rowid
        self.ids.append(mid)
        if self._index is not None:
            self._index[mid] = i
        self.n = i + 1


class VectorCache:
    """This process's copy of the memory vectors, kept in step with the file through ``vec_changes``."""

    def __init__(self, dims: int, snapshot: Path | None = None) -> None:
        self.dims = dims
        self.snapshot = snapshot
        self.lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.seq = 0
        self.saved_seq = -1  # seq of the snapshot file this state came from or went to (-1: none)
        self.blocks: dict[str | None, _Block] = {}
        self.codes: list[dict[str, int]] = [{}, {}]

    def __len__(self) -> int:
        return sum(b.n for b in self.blocks.values())

    # -- keeping in step ---------------------------------------------------------------------------
    def _code(self, field: int, value: str | None) -> int:
        if value is None:
            return -1
        return self.codes[field].setdefault(value, len(self.codes[field]))

    def _block(self, user: str | None) -> _Block:
        block = self.blocks.get(user)
        if block is None:
            block = self.blocks[user] = _Block(self.dims)
        return block

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Replay changes since the last refresh (call inside a read transaction)."""
        top, low = conn.execute(  # two subqueries: each is an O(1) b-tree edge lookup
            "SELECT (SELECT max(seq) FROM vec_changes), (SELECT min(seq) FROM vec_changes)").fetchone()
        if top is None or top <= self.seq:
            return
        if self.seq == 0:
            self._load_snapshot(conn, int(top), int(low))  # sets seq to the snapshot's when it is usable
        if self.seq == 0 or low > self.seq + 1:  # nothing loaded, or behind the pruned log: read them all
            self._load_all(conn)
        elif self.seq < top:
            changed = [r[0] for r in conn.execute(
                "SELECT DISTINCT mem_rowid FROM vec_changes WHERE seq > ?", (self.seq,))]
            if len(changed) > max(_RESAVE_AFTER, len(self) // 2):  # one scan is cheaper than lookups
                self._load_all(conn)
            else:
                self._replay(conn, changed)
        self.seq = int(top)

    def _replay(self, conn: sqlite3.Connection, changed: Sequence[int]) -> None:
        """Drop every changed row, then add back those still in the file, as they are now."""
        cur = conn.cursor()
        cur.row_factory = None
        for i in range(0, len(changed), 500):
            part = changed[i : i + 500]
            gone = np.asarray(part, dtype=np.int64)
            for block in self.blocks.values():
                block.remove(block.positions(gone))
            marks = ",".join("?" * len(part))
            for rowid, mid, user, agent, run, blob in cur.execute(
                f"SELECT rowid, id, user_id, agent_id, run_id, embedding FROM memories WHERE rowid IN ({marks})", part
            ):
                self._block(user).append(rowid, mid, (self._code(0, agent), self._code(1, run)),
                                         np.frombuffer(blob, dtype=np.float32))

    def _load_all(self, conn: sqlite3.Connection) -> None:
        """Every vector through SQL: one scan, each tenant's rows joined into its block at once."""
        self._clear()
        cur = conn.cursor()
        cur.row_factory = None
        groups: dict[str | None, list[tuple[Any, ...]]] = {}
        for row in cur.execute("SELECT user_id, rowid, id, agent_id, run_id, embedding FROM memories"):
            groups.setdefault(row[0], []).append(row)
        for user, rows in groups.items():
            block = self._block(user)
            n = len(rows)
            block.reserve(n)
            block.matrix[:n] = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(n, self.dims)
            block.coarse[:n], block.back[:n] = quantize(block.matrix[:n])
            block.codes[:n] = [(self._code(0, r[3]), self._code(1, r[4])) for r in rows]
            block.rowids[:n] = [r[1] for r in rows]
            block.ids = [r[2] for r in rows]
            block.n = n

    # -- the snapshot file ---------------------------------------------------------------------------
    def _load_snapshot(self, conn: sqlite3.Connection, top: int, low: int) -> bool:
        """Map the snapshot when it is this store's latest and the log reaches back to it (the caller
        replays what changed after it); False, nothing loaded, otherwise. The blocks are private
        (copy-on-write) maps of the file: nothing is copied until a block changes or grows, and the
        first scan reads the vectors once, from the page cache."""
        if self.snapshot is None:
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (TOKEN_KEY,)).fetchone()
        if row is None:
            return False
        try:
            with open(self.snapshot, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
            if mm[: len(_MAGIC)] != _MAGIC:
                return False
            (size,) = struct.unpack_from("<Q", mm, len(_MAGIC))
            at = len(_MAGIC) + 8
            head = json.loads(mm[at : at + size])
            seq = int(head["seq"])
            if head["token"] != row[0] or head["dims"] != self.dims or not low - 1 <= seq <= top:
                return False
            self._clear()
            self.codes = [{v: i for i, v in enumerate(values)} for values in head["codes"]]
            at = _aligned(at + size)
            for spec in head["blocks"]:
                at = self._map_block(mm, at, spec)
            if at != len(mm):
                raise ValueError("the snapshot's size does not match its header")
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            self._clear()
            return False
        self.seq = self.saved_seq = seq
        return True

    def _map_block(self, mm: mmap.mmap, at: int, spec: dict[str, Any]) -> int:
        n, d = int(spec["n"]), self.dims
        block = self._block(spec["user_id"])
        block.rowids = np.frombuffer(mm, dtype=np.int64, count=n, offset=at)
        at = _aligned(at + 8 * n)
        block.codes = np.frombuffer(mm, dtype=np.int32, count=2 * n, offset=at).reshape(n, 2)
        at = _aligned(at + 8 * n)
        block.matrix = np.frombuffer(mm, dtype=np.float32, count=n * d, offset=at).reshape(n, d)
        at = _aligned(at + 4 * n * d)
        block.coarse = np.frombuffer(mm, dtype=np.int8, count=n * d, offset=at).reshape(n, d)
        at = _aligned(at + n * d)
        block.back = np.frombuffer(mm, dtype=np.float32, count=n, offset=at)
        at = _aligned(at + 4 * n)
        end = at + int(spec["ids_bytes"])
        if end > len(mm):
            raise ValueError("truncated snapshot")
        block.ids = mm[at:end].decode("utf-8").split(_SEP)
        if len(block.ids) != n:
            raise ValueError("the snapshot's ids do not match its rows")
        block.n = n
        return _aligned(end)

    def stale(self) -> bool:
        """Whether :meth:`save` would write: loaded, and the snapshot missing or far behind."""
        if self.seq == 0 or len(self) < _SNAPSHOT_FROM:
            return False
        return self.saved_seq < 0 or self.seq - self.saved_seq > _RESAVE_AFTER

    def save(self) -> str | None:
        """Write the snapshot of the loaded state and return its token, which the caller records in
        ``meta`` in a write transaction of its own (the file is written outside any transaction, so
        writers are not held up); a snapshot whose token is not ``meta``'s is never used. None when
        nothing was written."""
        if self.snapshot is None or self.seq == 0:
            return None
        if any(_SEP in mid for b in self.blocks.values() for mid in b.ids):
            return None  # an id the file format cannot hold
        token = uuid.uuid4().hex
        blocks = [(user, b) for user, b in self.blocks.items() if b.n]
        id_bytes = [_SEP.join(b.ids).encode("utf-8") for _, b in blocks]
        specs = [{"user_id": user, "n": b.n, "ids_bytes": len(ib)} for (user, b), ib in zip(blocks, id_bytes,
                                                                                        strict=True)]
        head = json.dumps({"token": token, "dims": self.dims, "seq": self.seq,
                           "codes": [list(c) for c in self.codes], "blocks": specs}).encode("utf-8")
        tmp = self.snapshot.with_name(f"{self.snapshot.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            with os.fdopen(fd, "wb") as f:

                def put(data: bytes | memoryview) -> None:  # each part starts 64-byte aligned (mapped as is)
                    f.write(data)
                    f.write(b"\0" * (_aligned(f.tell()) - f.tell()))

                f.write(_MAGIC + struct.pack("<Q", len(head)))
                put(head)
                for (_, b), ib in zip(blocks, id_bytes, strict=True):
                    for part in (b.rowids[: b.n], b.codes[: b.n], b.matrix[: b.n], b.coarse[: b.n], b.back[: b.n]):
                        put(np.ascontiguousarray(part).data)
                    put(ib)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.snapshot)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return None
        self.saved_seq = self.seq
        return token

    # -- reading ---------------------------------------------------------------------------------
    def _scoped(self, scope: Scope) -> Iterable[tuple[_Block, Any]]:
        """The blocks holding rows of ``scope``, each with the rows to keep (None: all ``n``)."""
        if scope.user_id is not None:
            one = self.blocks.get(scope.user_id)
            blocks = [one] if one is not None else []
        else:
            blocks = list(self.blocks.values())
        wanted = []
        for field, value in enumerate((scope.agent_id, scope.run_id)):
            if value is not None:
                code = self.codes[field].get(value)
                if code is None:
                    return
                wanted.append((field, code))
        for block in blocks:
            if block.n == 0:
                continue
            if not wanted:
                yield block, None
                continue
            mask = np.ones(block.n, dtype=bool)
            for field, code in wanted:
                mask &= block.codes[: block.n, field] == code
            rows = np.flatnonzero(mask)
            if len(rows):
                yield block, rows

    def nearest(self, scope: Scope, queries: Vector) -> list[tuple[str, float] | None]:
        """The best row in ``scope`` for each query row, with one matrix product per block."""
        best: list[tuple[str, float] | None] = [None] * len(queries)
        for block, rows in self._scoped(scope):
            part = block.matrix[: block.n] if rows is None else block.matrix[rows]
            scores = part @ queries.T  # (rows, queries)
            top = scores.argmax(axis=0)
            for q, b in enumerate(top):
                score = float(scores[b, q])
                current = best[q]
                if current is None or score > current[1]:
                    best[q] = (block.ids[int(b if rows is None else rows[b])], score)
        return best

    def similarity(self, scope: Scope, ids: Sequence[str], query: Vector) -> dict[str, float]:
        """Cosine with ``query`` of the given memories that are cached and in ``scope``."""
        out: dict[str, float] = {}
        for block, rows in self._scoped(scope):
            index = block.index()
            allowed = None if rows is None else set(rows.tolist())
            found = [(mid, index[mid]) for mid in ids if mid in index]
            found = [(mid, i) for mid, i in found if allowed is None or i in allowed]
            if found:
                scores = block.matrix[[i for _, i in found]] @ query
                out.update(zip((mid for mid, _ in found), scores.tolist(), strict=True))
        return out

    def search(self, scope: Scope, query: Vector, k: int, rowids: set[int] | None) -> list[tuple[str, float]]:
        """Top-k by exact cosine within ``scope`` (and among ``rowids`` when a filter chose them); a
        big block's whole-block pass ranks its int8 copy first and re-scores the best rows exactly."""
        hits: list[tuple[str, float]] = []
        wanted = None if rowids is None else np.fromiter(rowids, dtype=np.int64, count=len(rowids))
        coarse_query = None
        for block, rows in self._scoped(scope):
            if wanted is not None:
                chosen = block.positions(wanted)
                rows = chosen if rows is None else np.intersect1d(rows, chosen, assume_unique=True)
                if len(rows) == 0:
                    continue
            pool = max(_RESCORED * k, _RESCORED_MIN)
            if rows is None and block.n >= max(_COARSE_FROM, 2 * pool) and query.any():
                if coarse_query is None:
                    coarse_query = quantize(query.reshape(1, -1))[0]
                rough = np.asarray(numkong.cdist(coarse_query, block.coarse[: block.n], metric="dot",
                                                 out_dtype="float32")).reshape(-1)
                rough *= block.back[: block.n]
                rows = np.argpartition(rough, block.n - pool)[block.n - pool :]
            scores = block.matrix[: block.n] @ query if rows is None else block.matrix[rows] @ query
            take = min(k, len(scores))
            top = np.argpartition(scores, len(scores) - take)[len(scores) - take :]
            ids = block.ids
            picked = top if rows is None else rows[top]
            hits += zip((ids[i] for i in picked.tolist()), scores[top].tolist(), strict=True)
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]
