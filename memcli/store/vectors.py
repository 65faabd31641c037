"""The sqlite-vec table: one vector per node, cosine distance, partitioned by space."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memcli.errors import DatabaseError
from memcli.store import search_tables, sql
from memcli.store.base import StoreBase


def to_blob(vector: Any) -> bytes:
    """float32 bytes as sqlite-vec stores them."""
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


# sqlite-vec answers at most this many nearest neighbours per query.
KNN_MAX = 4096


class Vectors(StoreBase):
    """Node vectors in sqlite-vec's vec0 table (made by `search_tables` once the embedder's
    dimension is known), rowid = node id."""

    def has_vectors(self) -> bool:
        return search_tables.has_vector_table(self.db)

    def vector_dim(self) -> int | None:
        value = self.get_meta("embedding.dim")
        return int(value) if value else None

    def ensure_vectors(self, dim: int) -> None:
        """Create the vector table for `dim`-sized vectors unless it exists with that size."""
        if not self.has_vectors():
            search_tables.create_vector_table(self.db, dim)
            return
        current = self.vector_dim()
        if current != dim:
            raise DatabaseError(
                f"the store holds {current}-dimensional vectors, the embedder gives {dim}",
                fix="run `memcli reindex` to re-embed the store",
            )

    def drop_vectors(self) -> None:
        search_tables.drop_vector_table(self.db)

    def put_vectors(self, rows: Iterable[tuple[int, str, str, Any]]) -> None:
        """Store (node id, space, kind, vector) rows, replacing earlier vectors of those nodes."""
        rows = list(rows)
        if not rows:
            return
        # vec0 has no INSERT OR REPLACE, and deletes by `rowid = ?` from its rowid index.
        self.conn.executemany(sql.VECTOR_DELETE, [(r[0],) for r in rows])
        self.conn.executemany(sql.VECTOR_INSERT, [(r[0], r[1], r[2], to_blob(r[3])) for r in rows])

    def vector_search(
        self, space: str, vector: Any, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the nearest nodes in a space, best first (at most
        KNN_MAX of them, whatever `limit` asks)."""
        if not self.has_vectors() or limit <= 0:
            return []
        statement = sql.vector_search(len(kinds or ()))
        args = [to_blob(vector), min(int(limit), KNN_MAX), space, *(kinds or ())]
        rows = self.conn.execute(statement, args).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def get_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """Stored vectors of the given nodes as numpy arrays (nodes without one are absent)."""
        import numpy as np

        out: dict[int, Any] = {}
        if not self.has_vectors():
            return out
        for node_id in dict.fromkeys(node_ids):
            row = self.conn.execute(sql.VECTOR_GET, (node_id,)).fetchone()
            if row is not None:
                out[int(node_id)] = np.frombuffer(row[0], dtype=np.float32)
        return out

    def delete_vectors(self, node_ids: Sequence[int]) -> None:
        """Remove the vectors of these nodes, if there are any. Call inside a transaction."""
        if self.has_vectors():
            self.conn.executemany(sql.VECTOR_DELETE, [(n,) for n in node_ids])
