"""Counts and listings for `inspect` and reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memcli.store.sqlite import sql
from memcli.store.sqlite.base import StoreBase


class Stats(StoreBase):
    """Read-only summaries over the tables."""

    def all_nodes_for_embedding(self) -> list[tuple[int, str, str, str, str | None]]:
        """(id, space, kind, text, speaker) of every node in every space."""
        columns = "id, space, kind, text, speaker"
        rows = self.table("nodes").rows_where(order_by="id", select=columns)
        return [(r["id"], r["space"], r["kind"], r["text"], r["speaker"]) for r in rows]

    def spaces(self) -> list[str]:
        return [r[0] for r in self.conn.execute(sql.SPACES)]

    def count_nodes(self, space: str) -> dict[str, int]:
        return {kind: n for kind, n in self.conn.execute(sql.COUNT_KINDS, (space,))}

    def count_edges(self, space: str) -> dict[str, int]:
        return {typ: n for typ, n in self.conn.execute(sql.COUNT_EDGE_TYPES, (space,))}

    def count_sessions(self, space: str) -> int:
        return int(self.conn.execute(sql.COUNT_SESSIONS, (space,)).fetchone()[0])

    def file_bytes(self) -> int:
        """Size of the database file plus its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def sources(self, space: str) -> list[dict[str, Any]]:
        return list(
            self.table("sources").rows_where(
                "space = ?",
                [space],
                order_by="id",
                select="id, path, sha256, format, episodes, ingested_at",
            )
        )
