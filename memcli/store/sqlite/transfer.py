"""Whole-space reads and id-preserving writes for `memcli export` / `memcli import`.

An export reads every row of a space in one snapshot; an import writes rows exactly as the
dump gives them (their ids, creation times and content keys), so that a store rebuilt from
its dump answers every question the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcli.store.base import chunked
from memcli.store.sqlite import sql
from memcli.store.sqlite.edges import Edges
from memcli.store.sqlite.nodes import Nodes
from memcli.store.transfer import NOT_EXPORTED, stored_value


class Transfer(Nodes, Edges):
    """Rows of one space as they are stored, out and in. Every column of the nodes and edges
    tables travels, whatever migrations have added, so new node or edge attributes round-trip
    without this module knowing them."""

    def exported_columns(self, table: str) -> list[str]:
        """The columns of `nodes` or `edges` that a dump carries, in table order."""
        skip = NOT_EXPORTED[table]
        return [name for name in self.table(table).columns_dict if name not in skip]

    # -- reading a space ---------------------------------------------------------------

    def space_sources(self, space: str) -> list[dict[str, Any]]:
        """Every source row of a space, oldest first."""
        return list(self.table("sources").rows_where("space = ?", [space], order_by="id"))

    def space_node_rows(self, space: str) -> Iterator[dict[str, Any]]:
        """Every node row of a space (content key and creation time included), by id."""
        select = ", ".join(self.exported_columns("nodes"))
        return self.table("nodes").rows_where("space = ?", [space], order_by="id", select=select)

    def space_edge_rows(self, space: str) -> Iterator[dict[str, Any]]:
        """Every edge row of a space, in insertion order."""
        select = ", ".join(self.exported_columns("edges"))
        return self.table("edges").rows_where("space = ?", [space], order_by="id", select=select)

    def space_source_links(self, space: str) -> dict[int, list[int]]:
        """Node id -> ids of the sources it was ingested from."""
        out: dict[int, list[int]] = {}
        where = "source IN (SELECT id FROM sources WHERE space = ?)"
        for row in self.table("node_sources").rows_where(where, [space], order_by="node, source"):
            out.setdefault(row["node"], []).append(row["source"])
        return out

    def space_marks(self, space: str) -> dict[int, list[str]]:
        """Node id -> the consolidation stages that have consumed it."""
        out: dict[int, list[str]] = {}
        for row in self.table("processed").rows_where("space = ?", [space], order_by="stage"):
            out.setdefault(row["node"], []).append(row["stage"])
        return out

    def max_node_id(self) -> int:
        """The highest node id this file has ever given out (0 for a new file)."""
        return int(self.conn.execute(sql.NEXT_NODE_ID).fetchone()[0]) - 1

    def ids_by_key(self, space: str, kind: str, keys: Sequence[str]) -> dict[str, int]:
        """Content key -> row id of the space's nodes of one kind stored under those keys."""
        out: dict[str, int] = {}
        for part in chunked(list(dict.fromkeys(keys))):
            where = f"space = ? AND kind = ? AND {sql.in_json('key')}"
            rows = self.table("nodes").rows_where(
                where, [space, kind, json.dumps(list(part))], select="key, id"
            )
            out.update((row["key"], row["id"]) for row in rows)
        return out

    def count_space_nodes(self, space: str) -> int:
        return self.table("nodes").count_where("space = ?", [space])

    # -- writing rows as given (call inside a transaction) ------------------------------

    def put_node_rows(self, space: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert nodes with their own ids, keys and creation times (every column the dump
        gives), and their full-text rows."""
        self._put_rows("nodes", space, rows)
        self.index_texts(space, ((r["id"], r["kind"], r["text"], r.get("speaker")) for r in rows))

    def put_edge_rows(self, space: str, rows: Iterable[dict[str, Any]]) -> int:
        """Insert edges with their creation times, ignoring ones already there; return how
        many were new."""
        before = self.conn.total_changes
        self._put_rows("edges", space, list(rows), "IGNORE")
        return self.conn.total_changes - before

    def _put_rows(
        self, table: str, space: str, rows: Sequence[dict[str, Any]], conflict: str = ""
    ) -> None:
        """Insert rows into every exported column of `table` (props as JSON text)."""
        columns = self.exported_columns(table)
        self.conn.executemany(
            sql.insert(table, ["space", *columns], conflict),
            [[space, *(stored_value(name, row.get(name)) for name in columns)] for row in rows],
        )

    def put_source_row(self, space: str, row: dict[str, Any]) -> int:
        """Insert a source row as given (its time of ingest kept); return its new id."""
        sources = self.table("sources")
        fields = ("path", "sha256", "format", "episodes", "ingested_at")
        sources.insert({"space": space, **{k: row[k] for k in fields}})
        return int(sources.last_rowid or 0)
