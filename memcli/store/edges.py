"""Typed, directed edges between nodes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcli.models import Edge
from memcli.store import sql
from memcli.store.base import StoreBase, chunked, now_iso


def _ids(node_ids: Sequence[int]) -> str:
    return json.dumps(list(dict.fromkeys(node_ids)))


def _edge(row: dict[str, Any]) -> Edge:
    props = json.loads(row["props"]) if row["props"] else {}
    return Edge(row["src"], row["dst"], row["type"], row["weight"], props)


class Edges(StoreBase):
    """The `edges` table."""

    def add_edges(self, space: str, edges: Iterable[Edge]) -> int:
        """Insert edges, skipping exact (src, dst, type) repeats; return how many were new."""
        fresh = self._new_edges(edges)
        stamp = now_iso()
        self.table("edges").insert_all(
            (
                {
                    "space": space,
                    "src": e.src,
                    "dst": e.dst,
                    "type": e.type,
                    "weight": e.weight,
                    "props": json.dumps(e.props or {}),
                    "created_at": stamp,
                }
                for e in fresh
            ),
            ignore=True,
            batch_size=100,
        )
        return len(fresh)

    def _new_edges(self, edges: Iterable[Edge]) -> list[Edge]:
        """The first of each (src, dst, type) among the edges that is not stored yet."""
        first: dict[tuple[int, int, str], Edge] = {}
        for e in edges:
            first.setdefault((e.src, e.dst, e.type), e)
        if first:
            keys = json.dumps(list(first))
            for src, dst, typ in self.conn.execute(sql.EDGES_PRESENT, (keys,)):
                first.pop((src, dst, typ), None)
        return list(first.values())

    def edges_of(self, node_ids: Sequence[int], types: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching any of the nodes (either direction), optionally of some types."""
        out: dict[tuple[int, int, str], Edge] = {}
        edges, type_sql = self.table("edges"), sql.in_params(" AND type", len(types or ()))
        for part in chunked(list(dict.fromkeys(node_ids)), 400):
            for column in ("src", "dst"):
                rows = edges.rows_where(
                    sql.in_json(column) + type_sql,
                    [json.dumps(list(part)), *(types or ())],
                    select="src, dst, type, weight, props",
                )
                for row in rows:
                    out[(row["src"], row["dst"], row["type"])] = _edge(row)
        return list(out.values())

    # -- graph reads for retrieval: lean rows, no props, any number of ids ---------------

    def edge_rows(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[tuple[int, int, str, float]]:
        """(src, dst, type, weight) of every edge touching any of the nodes."""
        ids = _ids(node_ids)
        args = (ids, *(types or ()), ids, *(types or ()))
        rows = self.conn.execute(sql.edge_rows(len(types or ())), args)
        return [(int(s), int(d), t, float(w)) for s, d, t, w in rows]

    def edges_within(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[tuple[int, int, str, float]]:
        """(src, dst, type, weight) of every edge with both ends among the nodes."""
        wanted = set(node_ids)
        args = (json.dumps(list(wanted)), *(types or ()))
        rows = self.conn.execute(sql.edges_from(len(types or ())), args)
        return [(int(s), int(d), t, float(w)) for s, d, t, w in rows if d in wanted]

    def degrees(self, node_ids: Sequence[int]) -> dict[int, int]:
        """How many edges (in and out, any type) each node has; nodes without edges give 0."""
        ids = list(dict.fromkeys(node_ids))
        out = dict.fromkeys(ids, 0)
        packed = json.dumps(ids)
        for node, n in self.conn.execute(sql.DEGREES, (packed, packed)):
            out[int(node)] += int(n)
        return out

    def iter_edges(self, space: str) -> Iterator[Edge]:
        """Every edge of a space, in insertion order."""
        rows = self.table("edges").rows_where(
            "space = ?", [space], order_by="id", select="src, dst, type, weight, props"
        )
        return (_edge(row) for row in rows)
