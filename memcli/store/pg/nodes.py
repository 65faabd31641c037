"""Node and source rows; a node's full-text row and vector follow it in and out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from memcli.errors import NodeNotFound
from memcli.models import Node, node_public_id, parse_node_id, typed_node_id
from memcli.store.base import now_iso
from memcli.store.edges import FROM_ORIGIN, TOWARDS_ORIGIN
from memcli.store.nodes import NODE_COLUMNS, NODE_FIELDS, OneNode, row_to_node
from memcli.store.pg.text import FullText
from memcli.store.pg.vectors import Vectors

# Each row in one statement, from one array per column; a keyed row already stored (by
# another writer, or twice in one batch) is skipped by the unique index, not by a lookup.
_INSERT = (
    "INSERT INTO nodes (id, space, kind, text, speaker, session, seq, timestamp, ref, belief,"
    " status, key, props, created_at)"
    " SELECT i, %s, %s, t, sp, se, sq, ts, rf, bl, st, k, p, %s FROM unnest("
    "%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::text[],"
    " %s::float8[], %s::text[], %s::text[], %s::text[]) AS r(i, t, sp, se, sq, ts, rf, bl, st,"
    " k, p) ON CONFLICT (space, kind, key) WHERE key IS NOT NULL DO NOTHING RETURNING id"
)
_UPDATABLE = {"text", "kind", "props", *NODE_FIELDS}


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(repr(v) for v in values) + ")"


def _walk(towards_origin: Sequence[str], from_origin: Sequence[str] = ()) -> str:
    """A recursive `walk(start, node)` from each id of an array along edges towards what it
    came from (`towards_origin` forwards, `from_origin` backwards)."""
    steps = [
        f"SELECT e.dst FROM edges e WHERE e.src = walk.node AND e.type IN {_in(towards_origin)}"
    ]
    if from_origin:
        steps.append(
            f"SELECT e.src FROM edges e WHERE e.dst = walk.node AND e.type IN {_in(from_origin)}"
        )
    return (
        "WITH RECURSIVE walk(start, node) AS (SELECT v, v FROM unnest(%s::bigint[]) AS v"
        " UNION SELECT walk.start, step.node FROM walk CROSS JOIN LATERAL"
        f" ({' UNION ALL '.join(steps)}) AS step(node))"
    )


_PROVENANCE = (
    f"{_walk(TOWARDS_ORIGIN, FROM_ORIGIN)} SELECT walk.start, n.id, n.ref FROM walk"
    " JOIN nodes n ON n.id = walk.node WHERE n.kind = 'episode' AND walk.start <> walk.node"
    " ORDER BY walk.start, n.id"
)
_TOPICS = (
    f"{_walk(TOWARDS_ORIGIN)} SELECT DISTINCT walk.start, e.dst FROM walk"
    " JOIN edges e ON e.src = walk.node WHERE e.type = 'PART_OF' ORDER BY 1, 2"
)


class Nodes(FullText, Vectors, OneNode):
    """The `nodes`, `sources` and `node_sources` tables."""

    def insert_nodes(self, space: str, kind: str, rows: Sequence[Mapping[str, Any]]) -> list[int]:
        """Insert nodes of one space and kind with their full-text rows; their ids, in
        order (a keyed row already stored gives the stored node's id). Call inside a
        transaction."""
        if not rows:
            return []
        ids = [
            int(r[0])
            for r in self.run(
                "SELECT nextval('nodes_id_seq') FROM generate_series(1, %s)", (len(rows),)
            )
        ]
        columns = [ids, [row["text"] for row in rows]]
        columns += [[row.get(name) for row in rows] for name in NODE_FIELDS]
        columns.append([json.dumps(row.get("props") or {}, ensure_ascii=False) for row in rows])
        made = {int(r[0]) for r in self.run(_INSERT, (space, kind, now_iso(), *columns))}
        if len(made) < len(rows):
            keys = [str(row["key"]) for i, row in zip(ids, rows, strict=True) if i not in made]
            stored = self.ids_by_key(space, kind, keys)
            ids = [
                i if i in made else stored[str(row["key"])]
                for i, row in zip(ids, rows, strict=True)
            ]
        self.index_texts(
            space,
            (
                (i, kind, row["text"], row.get("speaker"))
                for i, row in zip(ids, rows, strict=True)
                if i in made
            ),
        )
        return ids

    def update_node(self, node_id: int, **fields: Any) -> None:
        """Change columns of a node (text changes are mirrored into the full-text index)."""
        if not fields:
            return
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"nodes have no column {sorted(unknown)[0]!r}")
        if "props" in fields:
            fields["props"] = json.dumps(fields["props"], ensure_ascii=False)
        names = sorted(fields)
        assignments = ", ".join(f'"{name}" = %s' for name in names)
        self.run(
            f"UPDATE nodes SET {assignments} WHERE id = %s",
            [*(fields[n] for n in names), node_id],
        )
        if "text" in fields or "speaker" in fields:
            node = self.get_node(node_id)
            if node is not None:
                self.index_text(node.space, node_id, node.kind, node.text, node.speaker)

    def _nodes_where(self, where: str, args: Sequence[Any], order: str = "id") -> Iterator[Node]:
        rows = self.run(f"SELECT {NODE_COLUMNS} FROM nodes WHERE {where} ORDER BY {order}", args)
        return (row_to_node(row) for row in rows.fetchall())

    def get_node(self, node_id: int) -> Node | None:
        return next(self._nodes_where("id = %s", [node_id]), None)

    def node_by_public_id(self, public_id: str, space: str) -> Node:
        """Look up `ep12`-style ids within a space; raise NodeNotFound otherwise."""
        parsed = parse_node_id(typed_node_id(public_id))
        node = self.get_node(parsed[1]) if parsed else None
        if node is None or parsed is None or node.kind != parsed[0] or node.space != space:
            raise NodeNotFound(public_id, space)
        return node

    def nodes_by_ids(self, ids: Iterable[int]) -> dict[int, Node]:
        """Many nodes at once, keyed by id (missing ids are absent), in id order."""
        wanted = [int(i) for i in dict.fromkeys(ids)]
        if not wanted:
            return {}
        return {n.id: n for n in self._nodes_where("id = ANY(%s::bigint[])", [wanted])}

    def iter_nodes(self, space: str, kind: str | None = None, order: str = "id") -> Iterator[Node]:
        """Every node of a space (optionally one kind), ordered by `id` or `time`."""
        sort = 'session COLLATE "C" NULLS FIRST, seq NULLS FIRST, id' if order == "time" else "id"
        if kind:
            return self._nodes_where("space = %s AND kind = %s", [space, kind], sort)
        return self._nodes_where("space = %s", [space], sort)

    def ids_by_key(self, space: str, kind: str, keys: Sequence[str]) -> dict[str, int]:
        """Content key -> id of the space's nodes of one kind stored under those keys."""
        rows = self.run(
            "SELECT key, id FROM nodes WHERE space = %s AND kind = %s AND key = ANY(%s::text[])"
            " ORDER BY id",
            (space, kind, list(keys)),
        )
        return {str(key): int(i) for key, i in rows}

    def existing_keys(self, space: str, kind: str, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are already stored for this space and kind."""
        return set(self.ids_by_key(space, kind, keys))

    def ids_for_keys(self, space: str, kind: str, keys: Sequence[str]) -> list[int]:
        """Ids of the nodes stored under these content keys."""
        return sorted(self.ids_by_key(space, kind, keys).values())

    def session_tail(self, space: str, session: str) -> tuple[int, int] | None:
        """(id, seq) of the last episode of a session, or None for a new session."""
        row = self.run(
            "SELECT id, seq FROM nodes WHERE space = %s AND kind = 'episode' AND session = %s"
            " ORDER BY seq DESC NULLS LAST LIMIT 1",
            (space, session),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def kinds_of(self, node_ids: Sequence[int]) -> dict[int, str]:
        """The kind of each of the given nodes (missing ids are absent)."""
        rows = self.run(
            "SELECT id, kind FROM nodes WHERE id = ANY(%s::bigint[]) ORDER BY id",
            ([int(i) for i in node_ids],),
        )
        return {int(i): kind for i, kind in rows}

    def kinds_present(self, space: str, kinds: Sequence[str]) -> set[str]:
        """Which of `kinds` have at least one node in the space."""
        rows = self.run(
            "SELECT k FROM unnest(%s::text[]) AS k WHERE EXISTS"
            " (SELECT 1 FROM nodes WHERE space = %s AND kind = k)",
            (list(kinds), space),
        )
        return {str(r[0]) for r in rows}

    def source_episodes(self, node_id: int) -> list[tuple[str, str | None]]:
        """(episode id, ref) of the episodes a derived node came from, in order."""
        return self._walked([node_id])[node_id]

    def _walked(self, node_ids: list[int]) -> dict[int, list[tuple[str, str | None]]]:
        out: dict[int, list[tuple[str, str | None]]] = {nid: [] for nid in node_ids}
        if node_ids:
            for start, episode, ref in self.run(_PROVENANCE, (node_ids,)):
                out[int(start)].append((node_public_id("episode", int(episode)), ref))
        return out

    def sources_of(self, node_ids: Iterable[int]) -> dict[int, list[str]]:
        """Refs of the episodes each derived node came from, in conversation order."""
        found = self._walked([int(i) for i in node_ids])
        return {nid: [ref or public for public, ref in pairs] for nid, pairs in found.items()}

    def segments_of(self, node_ids: Iterable[int]) -> dict[int, list[int]]:
        """The topic segments each memory rests on (its own, or its source turns')."""
        ids = [int(i) for i in dict.fromkeys(node_ids)]
        out: dict[int, list[int]] = {}
        if ids:
            for start, segment in self.run(_TOPICS, (ids,)):
                out.setdefault(int(start), []).append(int(segment))
        return out

    def delete_nodes(self, node_ids: Sequence[int]) -> int:
        """Remove nodes with their edges, vectors and full-text rows. Call inside a transaction."""
        ids = [int(i) for i in node_ids]
        self.index_context(ids, removed=True)  # what follows a forgotten turn forgets it
        rows = self.run("SELECT id, space FROM nodes WHERE id = ANY(%s::bigint[])", (ids,))
        self.unindex_text((int(i), str(space)) for i, space in rows.fetchall())
        self.delete_vectors(ids)
        self.run("DELETE FROM nodes WHERE id = ANY(%s::bigint[])", (ids,))
        return len(node_ids)

    # -- sources ---------------------------------------------------------------

    def source_by_sha(self, space: str, sha256: str) -> tuple[int, int] | None:
        """(id, episode count) of an already-ingested file with this content hash."""
        row = self.run(
            "SELECT id, episodes FROM sources WHERE space = %s AND sha256 = %s", (space, sha256)
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def insert_source(self, space: str, path: str, sha256: str, fmt: str, episodes: int) -> int:
        """Record an ingested file; its id (the stored one's if another writer was first)."""
        return self.put_source_row(
            space,
            {"path": path, "sha256": sha256, "format": fmt, "episodes": episodes,
             "ingested_at": now_iso()},
        )  # fmt: skip

    def put_source_row(self, space: str, row: dict[str, Any]) -> int:
        """Insert a source row as given (its time of ingest kept); its id."""
        made = self.run(
            "INSERT INTO sources (space, path, sha256, format, episodes, ingested_at)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (space, sha256) DO NOTHING RETURNING id",
            (space, row["path"], row["sha256"], row["format"], row["episodes"],
             row["ingested_at"]),
        ).fetchone()  # fmt: skip
        if made is not None:
            return int(made[0])
        found = self.source_by_sha(space, row["sha256"])
        assert found is not None  # the conflict was with this very row
        return found[0]

    def source_paths(self, node_id: int) -> list[str]:
        """Paths of the files an episode was ingested from."""
        rows = self.run(
            "SELECT s.path FROM node_sources ns JOIN sources s ON s.id = ns.source"
            " WHERE ns.node = %s ORDER BY s.id",
            (node_id,),
        )
        return [str(r[0]) for r in rows]

    def link_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record which source file(s) each episode came from."""
        self.run_many(
            "INSERT INTO node_sources (node, source) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [(int(n), int(s)) for n, s in pairs],
        )

    def sources(self, space: str) -> list[dict[str, Any]]:
        """The source rows of a space, oldest first."""
        cur = self.run(
            "SELECT id, path, sha256, format, episodes, ingested_at FROM sources"
            " WHERE space = %s ORDER BY id",
            (space,),
        )
        names = [d.name for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
