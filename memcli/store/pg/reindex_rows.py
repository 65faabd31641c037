"""The side table of an unfinished `reindex` in Postgres (memcli.store.reindex_rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcli.store.pg.base import PgBase
from memcli.store.pg.connect import here
from memcli.store.reindex_rows import SIDE_TABLE, from_bytes, to_bytes

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {SIDE_TABLE} (node bigint PRIMARY KEY,"
    " digest text NOT NULL, vector bytea NOT NULL)"
)


class Reindexing(PgBase):
    """Vectors a reindex made, kept apart until it swaps them in."""

    def _has_side_table(self) -> bool:
        return self.run(f"SELECT {here(SIDE_TABLE)}").fetchone()[0] is not None

    def reindex_digests(self) -> dict[int, str]:
        """Node id -> digest of the text of each vector the side table holds."""
        if not self._has_side_table():
            return {}
        rows = self.run(f"SELECT node, digest FROM {SIDE_TABLE}")
        return {int(node): str(value) for node, value in rows}

    def put_reindex_vectors(self, rows: Sequence[tuple[int, str, Any]]) -> None:
        """Keep (node id, digest, vector) rows in the side table, replacing earlier ones of
        those nodes. Call inside a transaction."""
        self.run(_CREATE)
        self.run_many(
            f"INSERT INTO {SIDE_TABLE} (node, digest, vector) VALUES (%s, %s, %s)"
            " ON CONFLICT (node) DO UPDATE SET digest = excluded.digest,"
            " vector = excluded.vector",
            [(int(node), value, to_bytes(vector)) for node, value, vector in rows],
        )

    def reindex_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """The side table's vectors of these nodes (nodes without one are absent)."""
        if not self._has_side_table():
            return {}
        out: dict[int, Any] = {}
        ids = list(node_ids)
        for start in range(0, len(ids), _READ):
            rows = self.run(
                f"SELECT node, vector FROM {SIDE_TABLE} WHERE node = ANY(%s::bigint[])",
                (ids[start : start + _READ],),
            )
            out.update((int(node), from_bytes(blob)) for node, blob in rows)
        return out

    def drop_reindex_vectors(self) -> None:
        """Drop the side table. Call inside a transaction."""
        self.run(f"DROP TABLE IF EXISTS {SIDE_TABLE}")


_READ = 5000  # vectors read per statement
