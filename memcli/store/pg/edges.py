"""Typed, directed edges between nodes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcli.models import Edge
from memcli.store.base import now_iso
from memcli.store.edges import EdgeRow, edge_row
from memcli.store.pg.base import PgBase

# One statement for a batch; a repeated (src, dst, type) keeps the first edge's weight.
_INSERT = (
    "INSERT INTO edges (space, src, dst, type, weight, props, created_at)"
    " SELECT %s, s, d, t, w, p, c FROM unnest(%s::bigint[], %s::bigint[], %s::text[],"
    " %s::float8[], %s::text[], %s::text[]) WITH ORDINALITY AS r(s, d, t, w, p, c, o)"
    " ORDER BY o ON CONFLICT (src, dst, type) DO NOTHING"
)


def _ids(node_ids: Iterable[int]) -> list[int]:
    return [int(i) for i in dict.fromkeys(node_ids)]


def _types(types: Sequence[str] | None) -> tuple[str, list[str]]:
    """A type filter on edges `e` and its argument."""
    return (" AND e.type = ANY(%(types)s::text[])" if types else ""), list(types or ())


class Edges(PgBase):
    """The `edges` table."""

    def add_edges(self, space: str, edges: Iterable[Edge]) -> int:
        """Insert edges, ignoring exact (src, dst, type) repeats; how many were new."""
        rows = list(edges)
        if not rows:
            return 0
        # Repeats within the batch first: ON CONFLICT cannot see a row of its own statement.
        seen: dict[tuple[int, int, str], Edge] = {}
        for e in rows:
            seen.setdefault((e.src, e.dst, e.type), e)
        firsts = list(seen.values())
        stamp = now_iso()
        columns = (
            [e.src for e in firsts], [e.dst for e in firsts], [e.type for e in firsts],
            [float(e.weight) for e in firsts], [json.dumps(e.props or {}) for e in firsts],
            [stamp] * len(firsts),
        )  # fmt: skip
        return int(self.run(_INSERT, (space, *columns)).rowcount)

    def put_edge_rows(self, space: str, rows: Iterable[dict[str, Any]]) -> int:
        """Insert edges with their creation times, ignoring ones already there; how many
        were new."""
        rows = list(rows)
        if not rows:
            return 0

        def props(row: dict[str, Any]) -> str:
            value = row.get("props")
            return value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)

        columns = (
            [r["src"] for r in rows], [r["dst"] for r in rows], [r["type"] for r in rows],
            [float(r.get("weight", 1.0)) for r in rows], [props(r) for r in rows],
            [r["created_at"] for r in rows],
        )  # fmt: skip
        return int(self.run(_INSERT, (space, *columns)).rowcount)

    def set_edge_props(self, edge: Edge) -> None:
        """Replace the properties of a stored edge (same src, dst and type)."""
        self.run(
            "UPDATE edges SET props = %s WHERE src = %s AND dst = %s AND type = %s",
            (json.dumps(edge.props or {}, ensure_ascii=False), edge.src, edge.dst, edge.type),
        )

    def edges_of(self, node_ids: Sequence[int], types: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching any of the nodes (either direction), optionally of some types."""
        where, kinds = _types(types)
        rows = self.run(
            "SELECT e.src, e.dst, e.type, e.weight, e.props FROM edges e"
            f" WHERE (e.src = ANY(%(ids)s::bigint[]) OR e.dst = ANY(%(ids)s::bigint[])){where}"
            " ORDER BY e.id",
            {"ids": _ids(node_ids), "types": kinds},
        )
        return [Edge(s, d, t, w, json.loads(p)) for s, d, t, w, p in rows]

    def _edge_rows(self, where: str, ids: list[int], types: Sequence[str] | None) -> list[EdgeRow]:
        kinds_where, kinds = _types(types)
        rows = self.run(
            f"SELECT e.src, e.dst, e.type, e.weight FROM edges e WHERE {where}{kinds_where}"
            " ORDER BY 1, 2, 3, 4",
            {"ids": ids, "types": kinds},
        )
        return [edge_row(r) for r in rows]

    def edge_rows(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge touching any of the nodes, sorted."""
        where = "(e.src = ANY(%(ids)s::bigint[]) OR e.dst = ANY(%(ids)s::bigint[]))"
        return self._edge_rows(where, _ids(node_ids), types)

    def edges_within(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge with both ends among the nodes, sorted."""
        where = "e.src = ANY(%(ids)s::bigint[]) AND e.dst = ANY(%(ids)s::bigint[])"
        return self._edge_rows(where, _ids(node_ids), types)

    def degrees(self, node_ids: Sequence[int]) -> dict[int, int]:
        """How many edges (in and out, any type) each node has; nodes without edges give 0."""
        ids = _ids(node_ids)
        out = dict.fromkeys(ids, 0)
        rows = self.run(
            "SELECT n, count(*) FROM (SELECT src AS n FROM edges WHERE src = ANY(%(ids)s::bigint[])"
            " UNION ALL SELECT dst FROM edges WHERE dst = ANY(%(ids)s::bigint[])) AS x GROUP BY n",
            {"ids": ids},
        )
        for node, n in rows:
            out[int(node)] += int(n)
        return out

    def iter_edges(self, space: str) -> Iterator[Edge]:
        """Every edge of a space, in insertion order."""
        rows = self.run(
            "SELECT src, dst, type, weight, props FROM edges WHERE space = %s ORDER BY id",
            (space,),
        ).fetchall()
        return (Edge(s, d, t, w, json.loads(p) if p else {}) for s, d, t, w, p in rows)
