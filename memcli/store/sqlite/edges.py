"""Typed, directed edges between nodes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcli.models import Edge
from memcli.store.base import chunked, now_iso
from memcli.store.edges import EdgeRow, edge_row
from memcli.store.sqlite import sql
from memcli.store.sqlite.base import StoreBase

_INSERT = sql.insert(
    "edges", ("space", "src", "dst", "type", "weight", "props", "created_at"), "IGNORE"
)


def _ids(node_ids: Sequence[int]) -> str:
    return json.dumps(list(dict.fromkeys(node_ids)))


def _edge(row: dict[str, Any]) -> Edge:
    props = json.loads(row["props"]) if row["props"] else {}
    return Edge(row["src"], row["dst"], row["type"], row["weight"], props)


class Edges(StoreBase):
    """The `edges` table."""

    def add_edges(self, space: str, edges: Iterable[Edge]) -> int:
        """Insert edges, ignoring exact (src, dst, type) repeats; return how many were new.

        (A plain executemany, so total_changes counts only these rows: no sqlite-utils
        savepoint in between, at which FTS5 would flush pending full-text rows.)"""
        before = self.conn.total_changes
        stamp = now_iso()
        self.conn.executemany(
            _INSERT,
            [
                (space, e.src, e.dst, e.type, e.weight, json.dumps(e.props or {}), stamp)
                for e in edges
            ],
        )
        return self.conn.total_changes - before

    def set_edge_props(self, edge: Edge) -> None:
        """Replace the properties of a stored edge (same src, dst and type)."""
        props = json.dumps(edge.props or {}, ensure_ascii=False)
        self.conn.execute(sql.EDGE_SET_PROPS, (props, edge.src, edge.dst, edge.type))

    def edges_of(self, node_ids: Sequence[int], types: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching any of the nodes (either direction), optionally of some types."""
        out: dict[tuple[int, int, str], Edge] = {}
        for part in chunked(list(dict.fromkeys(node_ids)), 400):
            for column in ("src", "dst"):
                statement = sql.edges_touching(column, len(types or ()))
                rows = self.conn.execute(statement, (json.dumps(list(part)), *(types or ())))
                for src, dst, typ, weight, props in rows:
                    out[(src, dst, typ)] = Edge(src, dst, typ, weight, json.loads(props))
        return list(out.values())

    # -- graph reads for retrieval: lean rows, no props, any number of ids ---------------

    def edge_rows(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge touching any of the nodes, sorted."""
        memo = self._read_memo()
        if memo is not None:
            ids = list(dict.fromkeys(node_ids))
            found = {r for rows in memo.edges_out(self.conn, ids).values() for r in rows}
            found.update(r for rows in memo.edges_into(self.conn, ids).values() for r in rows)
            return sorted(r for r in found if not types or r[2] in types)
        listed = _ids(node_ids)
        args = (listed, *(types or ()), listed, *(types or ()))
        return [edge_row(r) for r in self.conn.execute(sql.edge_rows(len(types or ())), args)]

    def edges_within(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge with both ends among the nodes, sorted."""
        wanted = set(node_ids)
        memo = self._read_memo()
        if memo is not None:
            out = memo.edges_out(self.conn, sorted(wanted))
            return [
                r for rows in out.values() for r in rows
                if r[1] in wanted and (not types or r[2] in types)
            ]  # fmt: skip
        args = (json.dumps(list(wanted)), *(types or ()))
        rows = self.conn.execute(sql.edges_from(len(types or ())), args)
        return [edge_row(r) for r in rows if r[1] in wanted]

    def degrees(self, node_ids: Sequence[int]) -> dict[int, int]:
        """How many edges (in and out, any type) each node has; nodes without edges give 0."""
        ids = list(dict.fromkeys(node_ids))
        memo = self._read_memo()
        if memo is not None:
            return memo.fill(memo.degree, ids, lambda missing: self._degrees(missing).items())
        return self._degrees(ids)

    def _degrees(self, ids: list[int]) -> dict[int, int]:
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
