"""Node vectors in pgvector: cosine distance, exact search unless the store is large.

A search scans every vector of the space (and kinds) on the server, exactly as the SQLite
store's sqlite-vec does, and breaks ties by node id. Once a store holds more than
HNSW_ABOVE vectors, the write past it builds an HNSW index after it commits, and searches go
through it from then on (approximate, with pgvector's iterative scan so that a space or kind
filter still fills the result); docs/postgres.md gives the measurements behind the threshold.

Vectors travel in pgvector's binary format (a dimension, then big-endian float32s), so
what is stored is bit for bit what the embedder gave, as in SQLite.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memcli.errors import DatabaseError
from memcli.store.pg import schema
from memcli.store.pg.base import PgBase
from memcli.store.pg.connect import driver, here, lock_key
from memcli.store.search import KNN_MAX, VectorSize, nearest_first

# Past this many vectors an exact scan costs more than pgvector's HNSW search by enough to
# accept its approximation (docs/postgres.md, "Measured": at 50,000 MiniLM vectors 88 ms
# against 3 ms, recall@10 1.0; at 10,000 the index was no faster).
HNSW_ABOVE = 50_000
_EF_SEARCH_MAX = 1000  # pgvector's largest hnsw.ef_search
# Memory for building the index (a session setting, for the build alone).
BUILD_MEMORY = "512MB"


# Whether the HNSW index exists and is valid (an interrupted CONCURRENTLY build is not).
_INDEX_VALID = (
    f"SELECT COALESCE((SELECT indisvalid FROM pg_index WHERE indexrelid ="
    f" {here('node_vectors_hnsw')}), false)"
)


class Vector:
    """A vector on its way to pgvector (adapted by `register_vector`)."""

    __slots__ = ("values",)

    def __init__(self, values: Any) -> None:
        self.values = np.asarray(values, dtype=">f4")


def register_vector(conn: Any) -> None:
    """Teach the connection pgvector's binary format: `Vector`s go out in it, and vectors
    read by a binary cursor come back as float32 numpy arrays."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:  # before the first migration: nothing sends vectors yet
        return

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: Vector) -> bytes:
            return struct.pack(">HH", len(obj.values), 0) + obj.values.tobytes()

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> Any:
            (dim,) = struct.unpack_from(">H", data)
            return np.frombuffer(bytes(data[4 : 4 + 4 * dim]), dtype=">f4").astype(np.float32)

    conn.adapters.register_dumper(Vector, VectorDumper)
    conn.adapters.register_loader(info.oid, VectorLoader)


class Vectors(PgBase, VectorSize):
    """The `node_vectors` table (made by `ensure_vectors` once the dimension is known)."""

    _vectors_seen = False  # the vector table was there: searches need not ask again

    def has_vectors(self) -> bool:
        """Whether the vector table exists. Once seen it is taken to stay (a question asks
        several times); a search that finds it dropped since (`reindex` in another
        process) forgets that and finds nothing."""
        if self._vectors_seen:
            return True
        found = self.run(f"SELECT {here('node_vectors')}").fetchone()[0] is not None
        self._vectors_seen = found
        return found

    def _vector_rows(self, statement: str, args: Any, binary: bool = False) -> list[Any]:
        """Rows of a read of the vector table (`binary`: vectors as numpy arrays, read in
        pgvector's binary format); none when another process dropped the table."""
        if not self.has_vectors():
            return []
        psycopg = driver()
        try:
            if not binary:
                return self.run(statement, args).fetchall()
            with self.conn.cursor(binary=True) as cur:
                return cur.execute(statement, args).fetchall()
        except self._lost as exc:
            raise self._connection_lost(exc) from None
        except psycopg.errors.UndefinedTable:
            self._vectors_seen = False
            if self.in_transaction():  # the error ended the transaction: say so
                raise
            return []

    def _table_dim(self) -> int:
        row = self.run(
            f"SELECT atttypmod FROM pg_attribute WHERE attrelid = {here('node_vectors')}"
            " AND attname = 'embedding'"
        ).fetchone()
        return int(row[0])

    def ensure_vectors(self, dim: int) -> None:
        """Create the vector table for `dim`-sized vectors unless it exists with that size."""
        if not self.has_vectors():
            for statement in schema.vector_table(dim):
                self.run(statement)
            register_vector(self.conn)
            return
        current = self._table_dim()
        if current != dim:
            raise DatabaseError(
                f"the store holds {current}-dimensional vectors, the embedder gives {dim}",
                fix="run `memcli reindex` to re-embed the store",
            )

    def drop_vectors(self) -> None:
        self.run("DROP TABLE IF EXISTS node_vectors")
        self._vectors_seen, self._index_seen = False, None

    def put_vectors(self, rows: Iterable[tuple[int, str, str, Any]]) -> None:
        """Store (node id, space, kind, vector) rows, replacing earlier vectors of those nodes."""
        rows = list(rows)
        if not rows:
            return
        self.run_many(
            "INSERT INTO node_vectors (node, space, kind, embedding) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (node) DO UPDATE SET space = excluded.space, kind = excluded.kind,"
            " embedding = excluded.embedding",
            [(int(r[0]), r[1], r[2], Vector(r[3])) for r in rows],
        )
        if not self._indexed() and self._more_than(HNSW_ABOVE):
            self._index_wanted = True  # built once the transaction commits

    _index_seen: bool | None = None  # looked up once per store: until then, exact search
    _index_wanted = False

    def _indexed(self) -> bool:
        """Whether a usable HNSW index exists (as it was when this store first asked: an
        index another process builds meanwhile only makes searches exact, never wrong)."""
        if self._index_seen is None:
            self._index_seen = bool(self.run(_INDEX_VALID).fetchone()[0])
        return self._index_seen

    def after_commit(self) -> None:
        """Build the HNSW index a write asked for, outside any transaction and without
        blocking other writers (CONCURRENTLY): over 100,000 vectors it took half a minute
        here, longer on a busy or small server. One process builds it; an interrupted build
        leaves an invalid index, which the next one replaces."""
        super().after_commit()
        if self._index_wanted and not self.in_transaction():
            self._index_wanted = False
            self.build_vector_index()

    def build_vector_index(self) -> None:
        """Build the HNSW index now, unless another process is building it. Call outside
        a transaction."""
        key = lock_key(self.schema, "hnsw")
        if not self.run("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            return  # another process is building it
        try:
            if not self.run(_INDEX_VALID).fetchone()[0]:
                self.run("DROP INDEX CONCURRENTLY IF EXISTS node_vectors_hnsw")
                # Room for the whole graph while it is built: pgvector says when it no
                # longer fits (the default is 64 MB) and builds far more slowly from then on.
                self.run(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
                try:
                    self.run(schema.HNSW_INDEX)
                finally:
                    self.run("RESET maintenance_work_mem")
            self._index_seen = True
        finally:
            self.run("SELECT pg_advisory_unlock(%s)", (key,))

    def _more_than(self, count: int) -> bool:
        row = self.run("SELECT 1 FROM node_vectors OFFSET %s LIMIT 1", (count,)).fetchone()
        return row is not None

    def vector_search(
        self, space: str, vector: Any, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the nearest nodes in a space, best first, equal
        distances by node id (at most KNN_MAX of them, as with SQLite)."""
        if limit <= 0:
            return []
        limit = min(int(limit), KNN_MAX)
        where = " AND kind = ANY(%(kinds)s::text[])" if kinds else ""
        args = {"q": Vector(vector), "space": space, "kinds": list(kinds or ()), "limit": limit}
        head = "SELECT node, embedding <=> %(q)s FROM node_vectors WHERE space = %(space)s"
        if not self._indexed():
            rows = self._vector_rows(f"{head}{where} ORDER BY 2, node LIMIT %(limit)s", args)
        else:
            rows = self._approximate(f"{head}{where} ORDER BY embedding <=> %(q)s", args)
        return nearest_first(((float(d), int(node)) for node, d in rows), limit)

    def _approximate(self, statement: str, args: dict[str, Any]) -> list[tuple[int, float]]:
        """The index's nearest as (node, distance) rows: pgvector's iterative scan keeps
        looking until the filter lets `limit` through (a space or kind among many)."""
        ef = max(40, min(_EF_SEARCH_MAX, 2 * int(args["limit"])))
        with self.conn.transaction():
            self.run("SET LOCAL hnsw.iterative_scan = relaxed_order")
            self.run(f"SET LOCAL hnsw.ef_search = {ef}")
            rows = self.run(f"{statement} LIMIT %(limit)s", args).fetchall()
        return list(rows)

    def get_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """Stored vectors of the given nodes as numpy arrays (nodes without one are absent)."""
        ids = [int(i) for i in dict.fromkeys(node_ids)]
        rows = self._vector_rows(
            "SELECT node, embedding FROM node_vectors WHERE node = ANY(%s::bigint[])",
            (ids,),
            binary=True,
        )
        return {int(node): vector for node, vector in rows}

    def delete_vectors(self, node_ids: Sequence[int]) -> None:
        """Remove the vectors of these nodes, if there are any. Call inside a transaction."""
        if self.has_vectors():
            self.run(
                "DELETE FROM node_vectors WHERE node = ANY(%s::bigint[])",
                ([int(i) for i in node_ids],),
            )
