"""The side table of an unfinished `reindex` in SQLite (memcli.store.reindex_rows)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcli.store.reindex_rows import SIDE_TABLE, from_bytes, to_bytes
from memcli.store.sqlite.base import StoreBase

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {SIDE_TABLE} (node INTEGER PRIMARY KEY,"
    " digest TEXT NOT NULL, vector BLOB NOT NULL)"
)


class Reindexing(StoreBase):
    """Vectors a reindex made, kept apart until it swaps them in."""

    def _has_side_table(self) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [SIDE_TABLE]
        ).fetchone()
        return row is not None

    def reindex_digests(self) -> dict[int, str]:
        """Node id -> digest of the text of each vector the side table holds."""
        if not self._has_side_table():
            return {}
        rows = self.conn.execute(f"SELECT node, digest FROM {SIDE_TABLE}")
        return {int(node): str(value) for node, value in rows}

    def put_reindex_vectors(self, rows: Sequence[tuple[int, str, Any]]) -> None:
        """Keep (node id, digest, vector) rows in the side table, replacing earlier ones of
        those nodes. Call inside a transaction."""
        self.conn.execute(_CREATE)
        self.conn.executemany(
            f"INSERT OR REPLACE INTO {SIDE_TABLE} (node, digest, vector) VALUES (?, ?, ?)",
            [(int(node), value, to_bytes(vector)) for node, value, vector in rows],
        )

    def reindex_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """The side table's vectors of these nodes (nodes without one are absent)."""
        if not self._has_side_table():
            return {}
        out: dict[int, Any] = {}
        ids = list(node_ids)
        for start in range(0, len(ids), _READ):
            rows = self.conn.execute(
                f"SELECT node, vector FROM {SIDE_TABLE} WHERE node IN"
                " (SELECT value FROM json_each(?))",
                [json.dumps(ids[start : start + _READ])],
            )
            out.update((int(node), from_bytes(blob)) for node, blob in rows)
        return out

    def drop_reindex_vectors(self) -> None:
        """Drop the side table. Call inside a transaction."""
        self.conn.execute(f"DROP TABLE IF EXISTS {SIDE_TABLE}")


_READ = 5000  # vectors read per statement
