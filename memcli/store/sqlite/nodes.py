"""Node and source rows; a node's full-text row and vector follow it in and out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from memcli.errors import NodeNotFound
from memcli.models import Node, parse_node_id, typed_node_id
from memcli.store.base import chunked, now_iso
from memcli.store.nodes import NODE_FIELDS, OneNode, row_to_node
from memcli.store.sqlite import provenance, sql
from memcli.store.sqlite.fts import FullText
from memcli.store.sqlite.vectors import Vectors
from memcli.store.sqlite.words import Words

_INSERT = sql.insert("nodes", ("id", "space", "kind", "text", *NODE_FIELDS, "props", "created_at"))
_BY_ID = sql.in_json("id")
_LINK = sql.insert("node_sources", ("node", "source"), "IGNORE")


def _ids(values: Iterable[int | str]) -> str:
    return json.dumps(list(dict.fromkeys(values)))


class Nodes(FullText, Vectors, Words, OneNode):
    """The `nodes`, `sources` and `node_sources` tables."""

    def insert_nodes(self, space: str, kind: str, rows: Sequence[Mapping[str, Any]]) -> list[int]:
        """Insert nodes of one space and kind, each a mapping with `text` and any of
        NODE_FIELDS and `props`, with their full-text rows; return their row ids, in order.
        Call inside a transaction (the ids are allocated under its write lock)."""
        if not rows:
            return []
        first = int(self.conn.execute(sql.NEXT_NODE_ID).fetchone()[0])
        ids = list(range(first, first + len(rows)))
        stamp = now_iso()
        self.conn.executemany(
            _INSERT,
            [
                (
                    node_id,
                    space,
                    kind,
                    row["text"],
                    *(row.get(name) for name in NODE_FIELDS),
                    json.dumps(row.get("props") or {}, ensure_ascii=False),
                    stamp,
                )
                for node_id, row in zip(ids, rows, strict=True)
            ],
        )
        self.index_texts(
            space,
            ((i, kind, row["text"], row.get("speaker")) for i, row in zip(ids, rows, strict=True)),
        )
        return ids

    def update_node(self, node_id: int, **fields: Any) -> None:
        """Change columns of a node (text changes are mirrored into the full-text index)."""
        if not fields:
            return
        if "props" in fields:
            fields["props"] = json.dumps(fields["props"], ensure_ascii=False)
        nodes = self.table("nodes")
        nodes.update(node_id, fields)
        if "text" in fields or "speaker" in fields:
            row = nodes.get(node_id)
            self.index_text(row["space"], node_id, row["kind"], row["text"], row["speaker"])

    def _nodes_where(
        self, where: str, args: Sequence[Any], order_by: str | None = None
    ) -> Iterator[Node]:
        rows = self.conn.execute(sql.nodes_where(where, order_by), args)
        return (row_to_node(row) for row in rows)

    def get_node(self, node_id: int) -> Node | None:
        return next(self._nodes_where("id = ?", [node_id]), None)

    def node_by_public_id(self, public_id: str, space: str) -> Node:
        """Look up `ep12`-style ids within a space; raise NodeNotFound otherwise."""
        parsed = parse_node_id(typed_node_id(public_id))
        if parsed is None:
            raise NodeNotFound(public_id, space)
        node = self.get_node(parsed[1])
        if node is None or node.kind != parsed[0] or node.space != space:
            raise NodeNotFound(public_id, space)
        return node

    def nodes_by_ids(self, ids: Iterable[int]) -> dict[int, Node]:
        """Fetch many nodes at once, keyed by row id (missing ids are simply absent), in
        id order within each chunk of 500 ids."""
        found: dict[int, Node] = {}
        memo = self._read_memo()
        for part in chunked(list(dict.fromkeys(ids))):
            if memo is None:
                found.update((n.id, n) for n in self._nodes_where(_BY_ID, [_ids(part)], "id"))
                continue
            rows = memo.fill(memo.rows, part, self._node_rows)
            found.update((i, row_to_node(rows[i])) for i in sorted(part) if rows[i] is not None)
        return found

    def _node_rows(self, ids: list[int]) -> Iterator[tuple[int, Sequence[Any]]]:
        return ((row[0], row) for row in self.conn.execute(sql.nodes_where(_BY_ID), [_ids(ids)]))

    def iter_nodes(self, space: str, kind: str | None = None, order: str = "id") -> Iterator[Node]:
        """Every node of a space (optionally one kind), ordered by `id` or `time`."""
        sort = "session, seq, id" if order == "time" else "id"
        if kind:
            return self._nodes_where("space = ? AND kind = ?", [space, kind], sort)
        return self._nodes_where("space = ?", [space], sort)

    def _keyed(self, space: str, kind: str, keys: Sequence[str], column: str) -> list[Any]:
        where = f"space = ? AND kind = ? AND {sql.in_json('key')}"
        rows = self.table("nodes").rows_where(where, [space, kind, _ids(keys)], select=column)
        return [row[column] for row in rows]

    def existing_keys(self, space: str, kind: str, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are already stored for this space and kind."""
        return set(self._keyed(space, kind, keys, "key"))

    def ids_for_keys(self, space: str, kind: str, keys: Sequence[str]) -> list[int]:
        """Row ids of the nodes stored under these content keys."""
        return self._keyed(space, kind, keys, "id")

    def session_tail(self, space: str, session: str) -> tuple[int, int] | None:
        """(row id, seq) of the last episode of a session, or None for a new session."""
        rows = self.table("nodes").rows_where(
            "space = ? AND kind = 'episode' AND session = ?",
            [space, session],
            order_by="seq DESC",
            select="id, seq",
            limit=1,
        )
        return next(((row["id"], row["seq"]) for row in rows), None)

    def kinds_of(self, node_ids: Sequence[int]) -> dict[int, str]:
        """The kind of each of the given nodes (missing ids are absent)."""
        memo = self._read_memo()
        if memo is None:
            rows = self.conn.execute(sql.KINDS_OF, (json.dumps(list(node_ids)),))
            return {int(i): kind for i, kind in rows}
        kinds = memo.fill(memo.kind, node_ids, self._kinds)
        return {i: kinds[i] for i in sorted(kinds) if kinds[i] is not None}

    def _kinds(self, ids: list[int]) -> Any:
        return self.conn.execute(sql.KINDS_OF, (json.dumps(ids),))

    def kinds_present(self, space: str, kinds: Sequence[str]) -> set[str]:
        """Which of `kinds` have at least one node in the space (an index probe per kind)."""
        return {
            kind for kind in kinds if self.conn.execute(sql.KIND_PRESENT, (space, kind)).fetchone()
        }

    def sources_of(self, node_ids: Iterable[int]) -> dict[int, list[str]]:
        """Refs of the episodes each derived node came from, in conversation order."""
        return provenance.source_episode_refs(self.conn, list(node_ids))

    def source_episodes(self, node_id: int) -> list[tuple[str, str | None]]:
        """(episode id, ref) of the episodes a derived node came from, in conversation order."""
        return provenance.source_episodes(self.conn, [node_id])[node_id]

    def segments_of(self, node_ids: Iterable[int]) -> dict[int, list[int]]:
        """The topic segments each memory rests on (its own, or its source turns')."""
        ids = list(dict.fromkeys(node_ids))
        memo = self._read_memo()
        if memo is None:
            return provenance.topic_segments(self.conn, ids)
        found = memo.fill(memo.segments, ids, self._segment_rows)
        return {i: list(segments) for i, segments in found.items() if segments is not None}

    def _segment_rows(self, ids: list[int]) -> Iterable[tuple[int, list[int]]]:
        return provenance.topic_segments(self.conn, ids).items()

    def delete_nodes(self, node_ids: Sequence[int]) -> int:
        """Remove nodes with their edges, vectors and full-text rows. Call inside a transaction."""
        nodes = self.table("nodes")
        for part in chunked(list(node_ids)):
            where, args = sql.in_json("id"), [json.dumps(list(part))]
            self.index_context(part, removed=True)  # what follows a forgotten turn forgets it
            self.unindex_text((r["id"], r["space"]) for r in nodes.rows_where(where, args))
            self.delete_vectors(part)
            nodes.delete_where(where, args)
        return len(node_ids)

    # -- sources ---------------------------------------------------------------

    def source_by_sha(self, space: str, sha256: str) -> tuple[int, int] | None:
        """(id, episode count) of an already-ingested file with this content hash."""
        rows = self.table("sources").rows_where(
            "space = ? AND sha256 = ?", [space, sha256], select="id, episodes"
        )
        return next(((row["id"], row["episodes"]) for row in rows), None)

    def insert_source(self, space: str, path: str, sha256: str, fmt: str, episodes: int) -> int:
        sources = self.table("sources")
        sources.insert(
            {
                "space": space,
                "path": path,
                "sha256": sha256,
                "format": fmt,
                "episodes": episodes,
                "ingested_at": now_iso(),
            }
        )
        return int(sources.last_rowid or 0)

    def source_paths(self, node_id: int) -> list[str]:
        """Paths of the files an episode was ingested from."""
        return [r[0] for r in self.conn.execute(sql.SOURCE_PATHS, (node_id,))]

    def link_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record which source file(s) each episode came from."""
        self.conn.executemany(_LINK, list(pairs))
