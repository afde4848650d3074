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
import os
import sqlite3
import struct
import threading
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..models import Scope
from .files import PRIVATE_FILE

Vector = npt.NDArray[np.float32]

_MAGIC = b"graphmem-vectors-1\n"
TOKEN_KEY = "vectors_snapshot"
"""The ``meta`` key naming the snapshot file that may be used."""
_SEP = "\x00"
_RESAVE_AFTER = 2_000
"""Changes replayed on top of the snapshot before :meth:`VectorCache.save` writes a new one (each
replayed change is one row read by id at the next cold start)."""


class _Block:
    """One tenant's vectors: rows ``[0, n)`` of ``matrix`` are live, in no particular order."""

    __slots__ = ("codes", "ids", "matrix", "n", "rowids")

    def __init__(self, dims: int, cap: int = 16) -> None:
        self.matrix: Vector = np.empty((cap, dims), dtype=np.float32)
        self.codes = np.empty((cap, 2), dtype=np.int32)  # agent_id, run_id codes (-1: None)
        self.n = 0
        self.ids: list[str] = []
        self.rowids: list[int] = []

    def reserve(self, need: int) -> None:
        cap = len(self.matrix)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        matrix = np.empty((new_cap, self.matrix.shape[1]), dtype=np.float32)
        matrix[: self.n] = self.matrix[: self.n]
        codes = np.empty((new_cap, 2), dtype=np.int32)
        codes[: self.n] = self.codes[: self.n]
        self.matrix, self.codes = matrix, codes


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
        self.where: dict[int, tuple[_Block, int]] = {}  # rowid -> (block, row)
        self.rowid_of: dict[str, int] = {}  # memory id -> rowid
        self.codes: list[dict[str, int]] = [{}, {}]
        self.users: dict[int, str | None] = {}  # id(block) -> its user_id

    def __len__(self) -> int:
        return len(self.where)

    # -- keeping in step ---------------------------------------------------------------------------
    def _code(self, field: int, value: str | None) -> int:
        if value is None:
            return -1
        return self.codes[field].setdefault(value, len(self.codes[field]))

    def _block(self, user: str | None) -> _Block:
        block = self.blocks.get(user)
        if block is None:
            block = self.blocks[user] = _Block(self.dims)
            self.users[id(block)] = user
        return block

    def _remove(self, rowid: int) -> None:
        loc = self.where.pop(rowid, None)
        if loc is None:
            return
        block, i = loc
        last = block.n - 1
        self.rowid_of.pop(block.ids[i], None)
        if i != last:  # the last row fills the hole: the block stays contiguous
            block.matrix[i] = block.matrix[last]
            block.codes[i] = block.codes[last]
            block.ids[i], block.rowids[i] = block.ids[last], block.rowids[last]
            self.where[block.rowids[i]] = (block, i)
        block.ids.pop()
        block.rowids.pop()
        block.n = last

    def _put(self, rowid: int, mid: str, user: str | None, agent: str | None, run: str | None, blob: bytes) -> None:
        loc = self.where.get(rowid)
        if loc is not None and self.users[id(loc[0])] != user:
            self._remove(rowid)
            loc = None
        if loc is None:
            block = self._block(user)
            block.reserve(block.n + 1)
            i = block.n
            block.n += 1
            block.ids.append(mid)
            block.rowids.append(rowid)
            self.where[rowid] = (block, i)
        else:
            block, i = loc
            self.rowid_of.pop(block.ids[i], None)
            block.ids[i] = mid
        block.matrix[i] = np.frombuffer(blob, dtype=np.float32)
        block.codes[i] = (self._code(0, agent), self._code(1, run))
        self.rowid_of[mid] = rowid

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
            if len(changed) > max(_RESAVE_AFTER, len(self.where) // 2):  # one scan is cheaper than lookups
                self._load_all(conn)
            else:
                self._replay(conn, changed)
        self.seq = int(top)

    def _replay(self, conn: sqlite3.Connection, changed: Sequence[int]) -> None:
        cur = conn.cursor()
        cur.row_factory = None
        for i in range(0, len(changed), 500):
            part = changed[i : i + 500]
            found = set()
            marks = ",".join("?" * len(part))
            for rowid, mid, user, agent, run, blob in cur.execute(
                f"SELECT rowid, id, user_id, agent_id, run_id, embedding FROM memories WHERE rowid IN ({marks})", part
            ):
                self._put(rowid, mid, user, agent, run, blob)
                found.add(rowid)
            for rowid in set(part) - found:
                self._remove(rowid)

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
            block.reserve(len(rows))
            n = len(rows)
            block.matrix[:n] = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(n, self.dims)
            block.codes[:n] = [(self._code(0, r[3]), self._code(1, r[4])) for r in rows]
            block.ids = [r[2] for r in rows]
            block.rowids = [r[1] for r in rows]
            block.n = n
            self.where.update((r[1], (block, i)) for i, r in enumerate(rows))
            self.rowid_of.update((r[2], r[1]) for r in rows)

    # -- the snapshot file ---------------------------------------------------------------------------
    def _load_snapshot(self, conn: sqlite3.Connection, top: int, low: int) -> bool:
        """Load the snapshot when it is this store's latest and the log reaches back to it (the
        caller replays what changed after it); False, nothing loaded, otherwise."""
        if self.snapshot is None:
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (TOKEN_KEY,)).fetchone()
        if row is None:
            return False
        try:
            with open(self.snapshot, "rb") as f:
                if f.read(len(_MAGIC)) != _MAGIC:
                    return False
                (size,) = struct.unpack("<Q", f.read(8))
                head = json.loads(f.read(size))
                seq = int(head["seq"])
                if head["token"] != row[0] or head["dims"] != self.dims or not low - 1 <= seq <= top:
                    return False
                self._clear()
                self.codes = [{v: i for i, v in enumerate(values)} for values in head["codes"]]
                for spec in head["blocks"]:
                    self._read_block(f, spec)
                if f.read(1):
                    raise ValueError("trailing bytes")
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            self._clear()
            return False
        self.seq = self.saved_seq = seq
        return True

    def _read_block(self, f: Any, spec: dict[str, Any]) -> None:
        n = int(spec["n"])
        block = self._block(spec["user_id"])
        block.reserve(n)
        ids = f.read(int(spec["ids_bytes"])).decode("utf-8").split(_SEP) if n else []
        rowids = np.empty(n, dtype=np.int64)
        for arr in (rowids, block.codes[:n], block.matrix[:n]):
            view = arr.data.cast("B")
            if f.readinto(view) != len(view):
                raise ValueError("truncated snapshot")
        if len(ids) != n:
            raise ValueError("snapshot ids do not match its rows")
        block.ids, block.rowids, block.n = ids, rowids.tolist(), n
        self.where.update((r, (block, i)) for i, r in enumerate(block.rowids))
        self.rowid_of.update(zip(ids, block.rowids, strict=True))

    def stale(self) -> bool:
        """Whether :meth:`save` would write: loaded, and the snapshot missing or far behind."""
        return self.seq > 0 and (self.saved_seq < 0 or self.seq - self.saved_seq > _RESAVE_AFTER)

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
                f.write(_MAGIC + struct.pack("<Q", len(head)) + head)
                for (_, b), ib in zip(blocks, id_bytes, strict=True):
                    f.write(ib)
                    f.write(np.asarray(b.rowids, dtype=np.int64).tobytes())
                    f.write(b.codes[: b.n].data)
                    f.write(b.matrix[: b.n].data)
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

    def similarity(self, ids: Sequence[str], query: Vector) -> dict[str, float]:
        """Cosine of the given memories (those still cached) with ``query``."""
        out: dict[str, float] = {}
        for mid in ids:
            rowid = self.rowid_of.get(mid)
            if rowid is not None:
                block, i = self.where[rowid]
                out[mid] = float(block.matrix[i] @ query)
        return out

    def search(self, scope: Scope, query: Vector, k: int, rowids: set[int] | None) -> list[tuple[str, float]]:
        """Exact cosine top-k within ``scope`` (and among ``rowids`` when a filter chose them)."""
        hits: list[tuple[str, float]] = []
        if rowids is not None:
            by_block: dict[int, tuple[_Block, list[int]]] = {}
            for r in rowids:
                loc = self.where.get(r)
                if loc is not None:
                    by_block.setdefault(id(loc[0]), (loc[0], []))[1].append(loc[1])
            parts: Iterable[tuple[_Block, Any]] = [(b, np.asarray(rows, dtype=np.int64)) for b, rows in
                                                   by_block.values()]
        else:
            parts = self._scoped(scope)
        for block, rows in parts:
            scores = block.matrix[: block.n] @ query if rows is None else block.matrix[rows] @ query
            take = min(k, len(scores))
            top = np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.arange(len(scores))
            ids = block.ids
            hits += [(ids[int(i if rows is None else rows[i])], float(scores[i])) for i in top]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]
