"""Typed, directed edges between nodes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.models import Edge
from memcli.store.nodes import chunked, now_iso


class EdgesMixin:
    conn: Any

    def add_edges(self, space: str, edges: Iterable[Edge]) -> int:
        """Insert edges, ignoring exact (src, dst, type) repeats; return how many were new."""
        before = self.conn.total_changes
        stamp = now_iso()
        self.conn.executemany(
            "INSERT OR IGNORE INTO edges (space, src, dst, type, weight, props, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (space, e.src, e.dst, e.type, e.weight, json.dumps(e.props or {}), stamp)
                for e in edges
            ],
        )
        return self.conn.total_changes - before

    def edges_of(self, node_ids: Sequence[int], types: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching any of the nodes (either direction), optionally of some types."""
        out: dict[tuple[int, int, str], Edge] = {}
        type_sql = f" AND type IN ({','.join('?' * len(types))})" if types else ""
        for part in chunked(list(dict.fromkeys(node_ids)), 400):
            marks = ",".join("?" * len(part))
            for col in ("src", "dst"):
                sql = (
                    f"SELECT src, dst, type, weight, props FROM edges"
                    f" WHERE {col} IN ({marks}){type_sql}"
                )
                for src, dst, typ, weight, props in self.conn.execute(sql, (*part, *(types or ()))):
                    out[(src, dst, typ)] = Edge(src, dst, typ, weight, json.loads(props))
        return list(out.values())
