"""Node and source rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from memcli.errors import NodeNotFound
from memcli.models import Node, parse_node_id

NODE_COLUMNS = (
    "id, kind, space, text, speaker, session, seq, timestamp, ref, belief, status, props,"
    " created_at"
)


def now_iso() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def row_to_node(row: Sequence[Any]) -> Node:
    """Build a Node from a row selected with NODE_COLUMNS."""
    return Node(
        id=row[0],
        kind=row[1],
        space=row[2],
        text=row[3],
        speaker=row[4],
        session=row[5],
        seq=row[6],
        timestamp=row[7],
        ref=row[8],
        belief=row[9],
        status=row[10],
        props=json.loads(row[11]) if row[11] else {},
        created_at=row[12],
    )


def chunked(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """Slices of at most `size` items (SQLite limits the number of bound parameters)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class NodesMixin:
    conn: Any

    def insert_node(
        self,
        space: str,
        kind: str,
        text: str,
        *,
        speaker: str | None = None,
        session: str | None = None,
        seq: int | None = None,
        timestamp: str | None = None,
        ref: str | None = None,
        belief: float | None = None,
        status: str | None = None,
        key: str | None = None,
        props: dict[str, Any] | None = None,
    ) -> int:
        """Insert one node and its full-text row; return its row id. Call inside a transaction."""
        cur = self.conn.execute(
            "INSERT INTO nodes (space, kind, text, speaker, session, seq, timestamp, ref,"
            " belief, status, key, props, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                space,
                kind,
                text,
                speaker,
                session,
                seq,
                timestamp,
                ref,
                belief,
                status,
                key,
                json.dumps(props or {}, ensure_ascii=False),
                now_iso(),
            ),
        )
        rowid = int(cur.lastrowid)
        self.index_text(space, rowid, kind, text, speaker)  # type: ignore[attr-defined]
        return rowid

    def update_node(self, node_id: int, **fields: Any) -> None:
        """Change columns of a node (text changes are mirrored into the full-text index)."""
        if not fields:
            return
        if "props" in fields:
            fields["props"] = json.dumps(fields["props"], ensure_ascii=False)
        cols = ", ".join(f"{name} = ?" for name in fields)
        self.conn.execute(f"UPDATE nodes SET {cols} WHERE id = ?", (*fields.values(), node_id))
        if "text" in fields or "speaker" in fields:
            text, speaker, space, kind = self.conn.execute(
                "SELECT text, speaker, space, kind FROM nodes WHERE id = ?", (node_id,)
            ).fetchone()
            self.index_text(space, node_id, kind, text, speaker)  # type: ignore[attr-defined]

    def get_node(self, node_id: int) -> Node | None:
        row = self.conn.execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,)
        ).fetchone()
        return row_to_node(row) if row else None

    def node_by_public_id(self, public_id: str, space: str) -> Node:
        """Look up `ep12`-style ids within a space; raise NodeNotFound otherwise."""
        parsed = parse_node_id(public_id)
        node = self.get_node(parsed[1]) if parsed else None
        if node is None or node.kind != parsed[0] or node.space != space:
            raise NodeNotFound(public_id)
        return node

    def nodes_by_ids(self, ids: Iterable[int]) -> dict[int, Node]:
        """Fetch many nodes at once, keyed by row id (missing ids are simply absent)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[int, Node] = {}
        for part in chunked(wanted):
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT {NODE_COLUMNS} FROM nodes WHERE id IN ({marks})", tuple(part)
            ):
                node = row_to_node(row)
                found[node.id] = node
        return found

    def iter_nodes(self, space: str, kind: str | None = None, order: str = "id") -> Iterator[Node]:
        """Every node of a space (optionally one kind), ordered by `id` or `time`."""
        sort = "session, seq, id" if order == "time" else "id"
        sql = f"SELECT {NODE_COLUMNS} FROM nodes WHERE space = ?"
        args: tuple[Any, ...] = (space,)
        if kind:
            sql += " AND kind = ?"
            args += (kind,)
        for row in self.conn.execute(f"{sql} ORDER BY {sort}", args):
            yield row_to_node(row)

    def existing_keys(self, space: str, kind: str, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are already stored for this space and kind."""
        found: set[str] = set()
        for part in chunked(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT key FROM nodes WHERE space = ? AND kind = ? AND key IN ({marks})",
                    (space, kind, *part),
                )
            )
        return found

    def ids_for_keys(self, space: str, kind: str, keys: Sequence[str]) -> list[int]:
        """Row ids of the nodes stored under these content keys."""
        ids: list[int] = []
        for part in chunked(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            ids.extend(
                r[0]
                for r in self.conn.execute(
                    f"SELECT id FROM nodes WHERE space = ? AND kind = ? AND key IN ({marks})",
                    (space, kind, *part),
                )
            )
        return ids

    def session_tail(self, space: str, session: str) -> tuple[int, int] | None:
        """(row id, seq) of the last episode of a session, or None for a new session."""
        row = self.conn.execute(
            "SELECT id, seq FROM nodes WHERE space = ? AND kind = 'episode' AND session = ?"
            " ORDER BY seq DESC LIMIT 1",
            (space, session),
        ).fetchone()
        return (row[0], row[1]) if row else None

    def kinds_of(self, node_ids: Sequence[int]) -> dict[int, str]:
        """The kind of each of the given nodes (missing ids are absent)."""
        rows = self.conn.execute(
            "SELECT id, kind FROM nodes WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(node_ids)),),
        )
        return {int(i): kind for i, kind in rows}

    def kinds_present(self, space: str, kinds: Sequence[str]) -> set[str]:
        """Which of `kinds` have at least one node in the space (an index probe per kind)."""
        return {
            kind
            for kind in kinds
            if self.conn.execute(
                "SELECT 1 FROM nodes WHERE space = ? AND kind = ? LIMIT 1", (space, kind)
            ).fetchone()
        }

    def sources_of(self, node_ids: Iterable[int]) -> dict[int, list[str]]:
        """Refs of the episodes each derived node came from, in conversation order."""
        from memcli.store.provenance import source_episode_refs

        return source_episode_refs(self.conn, list(node_ids))

    def segments_of(self, node_ids: Iterable[int]) -> dict[int, list[int]]:
        """The topic segments each memory rests on (its own, or its source turns')."""
        from memcli.store.provenance import topic_segments

        return topic_segments(self.conn, list(dict.fromkeys(node_ids)))

    def delete_nodes(self, node_ids: Sequence[int]) -> int:
        """Remove nodes with their edges, vectors and full-text rows. Call inside a transaction."""
        has_vec = self.has_vectors()  # type: ignore[attr-defined]
        for part in chunked(list(node_ids)):
            marks = ",".join("?" * len(part))
            spaces = self.conn.execute(f"SELECT id, space FROM nodes WHERE id IN ({marks})", part)
            self.unindex_text(spaces.fetchall())  # type: ignore[attr-defined]
            if has_vec:
                self.conn.execute(f"DELETE FROM vec_nodes WHERE rowid IN ({marks})", tuple(part))
            self.conn.execute(f"DELETE FROM nodes WHERE id IN ({marks})", tuple(part))
        return len(node_ids)

    # -- sources ---------------------------------------------------------------

    def source_by_sha(self, space: str, sha256: str) -> tuple[int, int] | None:
        """(id, episode count) of an already-ingested file with this content hash."""
        row = self.conn.execute(
            "SELECT id, episodes FROM sources WHERE space = ? AND sha256 = ?", (space, sha256)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def insert_source(self, space: str, path: str, sha256: str, fmt: str, episodes: int) -> int:
        cur = self.conn.execute(
            "INSERT INTO sources (space, path, sha256, format, episodes, ingested_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (space, path, sha256, fmt, episodes, now_iso()),
        )
        return int(cur.lastrowid)

    def source_paths(self, node_id: int) -> list[str]:
        """Paths of the files an episode was ingested from."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT s.path FROM node_sources ns JOIN sources s ON s.id = ns.source"
                " WHERE ns.node = ? ORDER BY s.id",
                (node_id,),
            )
        ]

    def link_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record which source file(s) each episode came from."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO node_sources (node, source) VALUES (?, ?)", list(pairs)
        )
