"""An in-process copy of the vector table for warm processes: exact search with numpy.

sqlite-vec answers a KNN query by scanning every vector of the space (about 60 ms at 90,000
vectors). A process that asks many questions (the MCP server, a batch of questions, the
benchmarks) loads the vectors once into numpy blocks, one per (space, kind), and scans those
instead: the same cosine over the same vectors, ranked the same way, several times faster.

The copy follows the file through two counters that every writer keeps in `meta` (see
Vectors.put_vectors): `vectors.max_id`, the highest node id with a vector, grows when
vectors of new nodes are appended; `vectors.epoch` changes on anything else (a vector
replaced or deleted, the table dropped or made). Before each search the copy reads both:
appended vectors are fetched and added; a new epoch means a full reload.

The full load reads sqlite-vec's own storage tables (the rowid map and the vector chunks)
rather than scanning the virtual table, which is five times faster; when their layout is
not the expected one (another sqlite-vec version), it falls back to the scan. Either way
the result is checked against point lookups before it is used.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memcli.store.sqlite import sql

EPOCH_KEY = "vectors.epoch"
MAX_ID_KEY = "vectors.max_id"
#: A delta of more than this share of the loaded vectors is read as a full reload instead.
DELTA_SHARE = 0.2
_SPOT_CHECKS = 4
#: Cosines this close to the last one kept are ranked by sqlite-vec too (numpy's rounding
#: differs from sqlite-vec's by about 1e-7; 1e-4 leaves room for 384+ dimensions).
MARGIN = 1e-4


@dataclass
class _Block:
    """The vectors of one (space, kind): rows 0..n of `matrix`, with spare capacity."""

    ids: Any  # int64 node ids
    matrix: Any  # float32 (capacity, dim)
    inv_norms: Any  # float32 1/|v| (0 for a zero vector)
    n: int

    def append(self, ids: Any, vectors: Any) -> None:
        import numpy as np

        need = self.n + len(ids)
        if need > len(self.ids):
            capacity = max(need, int(len(self.ids) * 1.25) + 1024)
            self.ids = _grown(self.ids, capacity)
            self.matrix = _grown(self.matrix, capacity)
            self.inv_norms = _grown(self.inv_norms, capacity)
        self.ids[self.n : need] = ids
        self.matrix[self.n : need] = vectors
        self.inv_norms[self.n : need] = _inverse_norms(np.asarray(vectors, dtype=np.float32))
        self.n = need


def _grown(array: Any, capacity: int) -> Any:
    import numpy as np

    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _inverse_norms(matrix: Any) -> Any:
    import numpy as np

    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    with np.errstate(divide="ignore"):
        return np.where(norms > 0, 1.0 / norms, 0.0).astype(np.float32)


def _block(ids: Any, matrix: Any) -> _Block:
    return _Block(ids, matrix, _inverse_norms(matrix), len(ids))


class VectorIndex:
    """The vectors of one database file, in numpy, shared by every connection of a process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blocks: dict[tuple[str, str], _Block] = {}
        self._state: tuple[str | None, int] | None = None  # (epoch, max_id) loaded
        self._where: dict[int, tuple[tuple[str, str], int]] | None = None

    @property
    def size(self) -> int:
        """How many vectors are loaded."""
        return sum(b.n for b in self._blocks.values())

    def refresh(self, conn: Any) -> None:
        """Bring the copy up to the file's committed state, read through `conn`."""
        epoch, max_id = _counters(conn)
        with self._lock:
            if self._state == (epoch, max_id):
                return
            if self._state is None or self._state[0] != epoch or max_id < self._state[1]:
                self._load(conn)
            else:
                self._append(conn, self._state[1])

    def count(self, space: str, kinds: Sequence[str] | None) -> int:
        """How many vectors a search of these kinds in this space would scan."""
        with self._lock:
            return sum(
                b.n
                for (sp, kind), b in self._blocks.items()
                if sp == space and (kinds is None or kind in kinds)
            )

    def candidates(
        self, space: str, vector: Any, limit: int, kinds: Sequence[str] | None
    ) -> list[tuple[int, Any]]:
        """(node id, vector) of every node that may be among the `limit` nearest: the
        nearest by numpy's cosine, and all within MARGIN of the last of them, since
        numpy's float32 sums round differently from sqlite-vec's (the caller ranks these
        by sqlite-vec's own distance)."""
        import numpy as np

        with self._lock:
            chosen = [
                (b.ids[: b.n], b.matrix[: b.n], b.inv_norms[: b.n])
                for (sp, kind), b in self._blocks.items()
                if sp == space and (kinds is None or kind in kinds) and b.n
            ]
        if not chosen or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        scores = np.concatenate([(m @ query) * inv for _, m, inv in chosen])
        qnorm = float(np.linalg.norm(query))
        scores *= 1.0 / qnorm if qnorm > 0 else 0.0
        if limit < len(scores):
            kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            keep = np.nonzero(scores >= kth - MARGIN)[0]
        else:
            keep = np.arange(len(scores))
        starts = np.cumsum([0] + [len(c[0]) for c in chosen])
        out = []
        for row in keep:
            part = int(np.searchsorted(starts, row, side="right")) - 1
            ids, matrix, _ = chosen[part]
            out.append((int(ids[row - starts[part]]), matrix[row - starts[part]]))
        return out

    def vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """The loaded vectors of these nodes (those without one are absent)."""
        with self._lock:
            if self._where is None:
                self._where = {
                    int(i): (key, row)
                    for key, b in self._blocks.items()
                    for row, i in enumerate(b.ids[: b.n])
                }
            found = {}
            for node_id in node_ids:
                place = self._where.get(int(node_id))
                if place is not None:
                    found[int(node_id)] = self._blocks[place[0]].matrix[place[1]].copy()
        return found

    # -- loading ----------------------------------------------------------------

    def _load(self, conn: Any) -> None:
        with _snapshot(conn):
            self._fill(conn, _counters(conn))

    def _fill(self, conn: Any, state: tuple[str | None, int]) -> None:
        """Read every vector (inside the caller's snapshot)."""
        self._state, self._where = state, None
        if conn.execute(sql.VECTOR_TABLE).fetchone() is None:
            self._blocks = {}
            return
        rows = _read_fast(conn)
        if rows is None or not _agrees(conn, rows):
            rows = _read_scan(conn)
        self._blocks = _grouped(conn, *rows)

    def _append(self, conn: Any, after: int) -> None:
        """Add the vectors of nodes made since the last look (ids above `after`)."""
        import numpy as np

        with _snapshot(conn):
            state = _counters(conn)
            labels = conn.execute(sql.NODES_AFTER, (after, state[1])).fetchall()
            if len(labels) > DELTA_SHARE * max(self.size, 1):
                self._fill(conn, state)
                return
            for node_id, space, kind in labels:
                row = conn.execute(sql.VECTOR_GET, (node_id,)).fetchone()
                if row is None:
                    continue
                vector = np.frombuffer(row[0], dtype=np.float32)
                block = self._blocks.get((space, kind))
                if block is None:
                    empty = np.zeros((0, len(vector)), np.float32)
                    block = self._blocks[(space, kind)] = _block(np.zeros(0, np.int64), empty)
                block.append(np.array([node_id]), vector[None, :])
            self._state = state
            self._where = None


class _snapshot:
    """One read transaction (unless the connection is already in one)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.began = False

    def __enter__(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute(sql.BEGIN_READ)
            self.began = True

    def __exit__(self, *exc: object) -> None:
        if self.began:
            self.conn.execute(sql.COMMIT)


def _counters(conn: Any) -> tuple[str | None, int]:
    """(epoch, max_id) as the writers left them in `meta`."""
    values = dict(conn.execute(sql.VECTOR_COUNTERS, (EPOCH_KEY, MAX_ID_KEY)).fetchall())
    return values.get(EPOCH_KEY), int(values.get(MAX_ID_KEY) or 0)


def _read_fast(conn: Any) -> tuple[Any, Any] | None:
    """(ids, matrix) from sqlite-vec's rowid map and vector chunks; None if their layout
    is not the one this code knows."""
    import numpy as np

    try:
        places = conn.execute(sql.VECTOR_PLACES).fetchall()
        chunks = conn.execute(sql.VECTOR_CHUNKS).fetchall()
    except Exception:  # another sqlite-vec version: other tables, other columns
        return None
    dim = _vector_dim(conn)
    if not places or not dim:
        return np.zeros(0, np.int64), np.zeros((0, dim or 0), np.float32)
    table = np.array(places, dtype=np.int64)
    ids, chunk_of, offset = table[:, 0], table[:, 1], table[:, 2]
    matrix = np.empty((len(ids), dim), dtype=np.float32)
    order = np.argsort(chunk_of, kind="stable")
    bounds = np.searchsorted(chunk_of[order], [c for c, _ in chunks] + [chunk_of.max() + 1])
    done = 0
    for (_, blob), start, end in zip(chunks, bounds[:-1], bounds[1:], strict=True):
        stored = np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
        rows = order[start:end]
        if len(rows) and offset[rows].max() >= len(stored):
            return None
        matrix[rows] = stored[offset[rows]]
        done += len(rows)
    return (ids.copy(), matrix) if done == len(ids) else None


def _vector_dim(conn: Any) -> int | None:
    row = conn.execute(sql.META_GET, ("embedding.dim",)).fetchone()
    return int(row[0]) if row and row[0] else None


def _agrees(conn: Any, rows: tuple[Any, Any]) -> bool:
    """The fast read holds every vector, and a few of them equal sqlite-vec's own answer."""
    import numpy as np

    ids, matrix = rows
    if conn.execute(sql.VECTOR_COUNT).fetchone()[0] != len(ids):
        return False
    picks = np.linspace(0, len(ids) - 1, num=min(_SPOT_CHECKS, len(ids)), dtype=np.int64)
    for i in picks:
        row = conn.execute(sql.VECTOR_GET, (int(ids[i]),)).fetchone()
        if row is None or not np.array_equal(np.frombuffer(row[0], np.float32), matrix[i]):
            return False
    return True


def _read_scan(conn: Any) -> tuple[Any, Any]:
    """(ids, matrix) by scanning the virtual table: slower, but any layout."""
    import numpy as np

    found = conn.execute(sql.VECTOR_ALL).fetchall()
    ids = np.array([r[0] for r in found], dtype=np.int64)
    if not found:
        return ids, np.zeros((0, 0), np.float32)
    matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32)
    return ids, matrix.reshape(len(found), -1).copy()


def _grouped(conn: Any, ids: Any, matrix: Any) -> dict[tuple[str, str], _Block]:
    """Blocks by (space, kind) of the nodes the vectors belong to."""
    import numpy as np

    if not len(ids):
        return {}
    codes: dict[tuple[str, str], int] = {}
    labels = conn.execute(sql.NODE_LABELS).fetchall()  # ordered by id
    node_ids = np.array([r[0] for r in labels], dtype=np.int64)
    node_codes = np.array([codes.setdefault((r[1], r[2]), len(codes)) for r in labels])
    at = np.minimum(np.searchsorted(node_ids, ids), max(len(node_ids) - 1, 0))
    known = node_ids[at] == ids if len(node_ids) else np.zeros(len(ids), bool)
    vector_codes = np.where(known, node_codes[at] if len(node_ids) else -1, -1)
    out = {}
    for key, code in codes.items():
        picked = np.nonzero(vector_codes == code)[0]
        if len(picked):
            out[key] = _block(ids[picked], matrix[picked])
    return out


_INDEXES: dict[str, VectorIndex] = {}
_INDEXES_LOCK = threading.Lock()


def shared_index(path: str) -> VectorIndex:
    """The process's index of the database file at `path` (made empty on first use)."""
    with _INDEXES_LOCK:
        return _INDEXES.setdefault(path, VectorIndex())
