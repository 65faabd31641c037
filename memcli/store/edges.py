"""Typed, directed edges between nodes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
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

    # -- graph reads for retrieval: lean rows, no props, any number of ids ---------------

    def edge_rows(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[tuple[int, int, str, float]]:
        """(src, dst, type, weight) of every edge touching any of the nodes."""
        ids = json.dumps(list(dict.fromkeys(node_ids)))
        type_sql = f" AND type IN ({','.join('?' * len(types))})" if types else ""
        sql = (
            "SELECT src, dst, type, weight FROM edges"
            f" WHERE src IN (SELECT value FROM json_each(?)){type_sql}"
            " UNION SELECT src, dst, type, weight FROM edges"
            f" WHERE dst IN (SELECT value FROM json_each(?)){type_sql}"
        )
        args = (ids, *(types or ()), ids, *(types or ()))
        return [(int(s), int(d), t, float(w)) for s, d, t, w in self.conn.execute(sql, args)]

    def edges_within(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[tuple[int, int, str, float]]:
        """(src, dst, type, weight) of every edge with both ends among the nodes."""
        wanted = set(node_ids)
        type_sql = f" AND type IN ({','.join('?' * len(types))})" if types else ""
        # Driven by src alone: a (src IN list AND dst IN list) plan probes every pair.
        sql = (
            "SELECT src, dst, type, weight FROM edges"
            f" WHERE src IN (SELECT value FROM json_each(?)){type_sql}"
        )
        rows = self.conn.execute(sql, (json.dumps(list(wanted)), *(types or ())))
        return [(int(s), int(d), t, float(w)) for s, d, t, w in rows if d in wanted]

    def degrees(self, node_ids: Sequence[int]) -> dict[int, int]:
        """How many edges (in and out, any type) each node has; nodes without edges give 0."""
        ids = list(dict.fromkeys(node_ids))
        out = dict.fromkeys(ids, 0)
        packed = json.dumps(ids)
        sql = (
            "SELECT src, COUNT(*) FROM edges WHERE src IN (SELECT value FROM json_each(?))"
            " GROUP BY src UNION ALL"
            " SELECT dst, COUNT(*) FROM edges WHERE dst IN (SELECT value FROM json_each(?))"
            " GROUP BY dst"
        )
        for node, n in self.conn.execute(sql, (packed, packed)):
            out[int(node)] += int(n)
        return out

    def iter_edges(self, space: str) -> Iterator[Edge]:
        """Every edge of a space, in insertion order."""
        for src, dst, typ, weight, props in self.conn.execute(
            "SELECT src, dst, type, weight, props FROM edges WHERE space = ? ORDER BY id",
            (space,),
        ):
            yield Edge(src, dst, typ, weight, json.loads(props) if props else {})
