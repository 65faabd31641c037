"""The sqlite-vec table: one vector per node, cosine distance, partitioned by space.

Searches scan the table with sqlite-vec; a warm process (`use_vector_index`) scans an
in-process numpy copy instead (memcli.store.sqlite.vector_index), kept in step with the file by
two counters in `meta` that every write here maintains.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.errors import DatabaseError
from memcli.store.search import KNN_MAX, VectorSize, nearest_first
from memcli.store.sqlite import search_tables, sql
from memcli.store.sqlite.base import StoreBase
from memcli.store.sqlite.vector_index import EPOCH_KEY, MAX_ID_KEY, VectorIndex, shared_index


def to_blob(vector: Any) -> bytes:
    """float32 bytes as sqlite-vec stores them."""
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


# Below this many vectors sqlite-vec's scan is as fast as the in-process index (about 2 ms).
SCAN_BELOW = 5000


class Vectors(StoreBase, VectorSize):
    """Node vectors in sqlite-vec's vec0 table (made by `search_tables` once the embedder's
    dimension is known), rowid = node id."""

    _index: VectorIndex | None = None  # set by use_vector_index

    def use_vector_index(self) -> None:
        """Search an in-process copy of the vectors from now on, loading it now: the same
        results as sqlite-vec's scan, much faster once loaded (for long-lived processes)."""
        self._index = shared_index(str(self.path.resolve()))
        self._index.refresh(self.conn)

    def _warm_index(self) -> VectorIndex | None:
        """The in-process copy, brought up to date, when it is on and can see what this
        connection sees (inside a write transaction it cannot: uncommitted vectors)."""
        if self._index is None or self.conn.in_transaction:
            return None
        self._index.refresh(self.conn)
        return self._index

    def _vectors_changed(self, node_ids: Sequence[int], rewrote: bool) -> None:
        """Keep the counters warm processes follow: appended ids raise `max_id`, anything
        else (a rewrite, a delete, a new or dropped table) starts a new epoch."""
        top = int(self.get_meta(MAX_ID_KEY) or 0)
        if rewrote or (node_ids and min(node_ids) <= top):
            self.set_meta(EPOCH_KEY, os.urandom(8).hex())
        if node_ids and max(node_ids) > top:
            self.set_meta(MAX_ID_KEY, str(max(node_ids)))

    def has_vectors(self) -> bool:
        return search_tables.has_vector_table(self.db)

    def ensure_vectors(self, dim: int) -> None:
        """Create the vector table for `dim`-sized vectors unless it exists with that size."""
        if not self.has_vectors():
            search_tables.create_vector_table(self.db, dim)
            self._vectors_changed([], rewrote=True)
            return
        current = self.vector_dim()
        if current != dim:
            raise DatabaseError(
                f"the store holds {current}-dimensional vectors, the embedder gives {dim}",
                fix="run `memcli reindex` to re-embed the store",
            )

    def drop_vectors(self) -> None:
        search_tables.drop_vector_table(self.db)
        self.delete_meta(MAX_ID_KEY)
        self._vectors_changed([], rewrote=True)

    def put_vectors(self, rows: Iterable[tuple[int, str, str, Any]]) -> None:
        """Store (node id, space, kind, vector) rows, replacing earlier vectors of those nodes."""
        rows = list(rows)
        if not rows:
            return
        # vec0 has no INSERT OR REPLACE, and deletes by `rowid = ?` from its rowid index.
        before = self.conn.total_changes
        self.conn.executemany(sql.VECTOR_DELETE, [(r[0],) for r in rows])
        replaced = self.conn.total_changes != before
        self.conn.executemany(sql.VECTOR_INSERT, [(r[0], r[1], r[2], to_blob(r[3])) for r in rows])
        self._vectors_changed([int(r[0]) for r in rows], rewrote=replaced)

    def vector_search(
        self, space: str, vector: Any, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the nearest nodes in a space, best first, equal
        distances by node id (at most KNN_MAX of them, whatever `limit` asks)."""
        if not self.has_vectors() or limit <= 0:
            return []
        limit = min(int(limit), KNN_MAX)
        query = to_blob(vector)
        index = self._warm_index()
        if index is not None and index.count(space, kinds) >= SCAN_BELOW:
            found = [
                (self._distance(to_blob(v), query), node_id)
                for node_id, v in index.candidates(space, vector, limit, kinds)
            ]
        else:
            found = self._nearest(space, query, limit, kinds)
        return nearest_first(found, limit)

    def _nearest(
        self, space: str, query: bytes, limit: int, kinds: Sequence[str] | None
    ) -> list[tuple[float, int]]:
        """(distance, node id) from sqlite-vec's scan: at least the `limit` nearest, and
        every node as near as the last of them (sqlite-vec cuts a tie arbitrarily)."""
        statement = sql.vector_search(len(kinds or ()))
        wanted = limit
        while True:
            ask = min(wanted + 1, KNN_MAX)
            rows = self.conn.execute(statement, [query, ask, space, *(kinds or ())]).fetchall()
            tied = len(rows) > limit and rows[limit - 1][1] == rows[-1][1]
            if not tied or len(rows) < ask or ask == KNN_MAX:
                return [(float(r[1]), int(r[0])) for r in rows]
            wanted *= 2

    def _distance(self, stored: bytes, query: bytes) -> float:
        """sqlite-vec's cosine distance between two vectors (the scan's exact arithmetic)."""
        return float(self.conn.execute(sql.VECTOR_DISTANCE, (stored, query)).fetchone()[0])

    def get_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """Stored vectors of the given nodes as numpy arrays (nodes without one are absent)."""
        import numpy as np

        out: dict[int, Any] = {}
        if not self.has_vectors():
            return out
        index = self._warm_index()
        if index is not None:
            return index.vectors(node_ids)
        for node_id in dict.fromkeys(node_ids):
            row = self.conn.execute(sql.VECTOR_GET, (node_id,)).fetchone()
            if row is not None:
                out[int(node_id)] = np.frombuffer(row[0], dtype=np.float32)
        return out

    def delete_vectors(self, node_ids: Sequence[int]) -> None:
        """Remove the vectors of these nodes, if there are any. Call inside a transaction."""
        if self.has_vectors():
            before = self.conn.total_changes
            self.conn.executemany(sql.VECTOR_DELETE, [(n,) for n in node_ids])
            if self.conn.total_changes != before:
                self._vectors_changed([], rewrote=True)
