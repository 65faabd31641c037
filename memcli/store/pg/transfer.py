"""Whole-space reads and id-keeping writes (export/import), browsing (`memcli list`) and
counts, in Postgres."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from memcli.models import Node
from memcli.store.listing import ORGANISER_KINDS, NodeFilter
from memcli.store.nodes import NODE_COLUMNS, row_to_node
from memcli.store.pg.edges import Edges
from memcli.store.pg.prune import Pruning, session_test
from memcli.store.transfer import NOT_EXPORTED, stored_value

# A memory's date: its own time, else when it was stored; text that is no date gives NULL.
_WHEN = "memcli_when(COALESCE(timestamp, created_at))"
# Sessions by when they began, compared as text as SQLite compares it (code point order).
_SESSIONS_PAGE = (
    'SELECT session, min(COALESCE(timestamp, created_at) COLLATE "C") AS first,'
    ' max(COALESCE(timestamp, created_at) COLLATE "C") AS last, count(*) AS turns'
    " FROM nodes WHERE space = %s AND kind = 'episode' AND session IS NOT NULL"
    ' GROUP BY session ORDER BY first, session COLLATE "C" LIMIT %s OFFSET %s'
)
_ORDER = f"kind IN {ORGANISER_KINDS!r} ASC, {_WHEN} DESC NULLS LAST, id DESC"


def _filter(space: str, f: NodeFilter) -> tuple[str, list[Any]]:
    """The condition a NodeFilter sets, and its arguments."""
    parts, args = ["space = %s"], list[Any]([space])
    if f.kinds:
        parts.append("kind = ANY(%s::text[])")
        args.append(list(f.kinds))
    if f.sessions:
        test, more = session_test(f.sessions)
        parts.append(test)
        args += more
    if f.source_ids is not None:
        parts.append("id IN (SELECT node FROM node_sources WHERE source = ANY(%s::bigint[]))")
        args.append(list(f.source_ids))
    for value, op in ((f.since, ">="), (f.until, "<")):
        if value is not None:
            parts.append(f"{_WHEN} {op} memcli_when(%s)")
            args.append(value)
    if f.grep:
        parts.append("strpos(lower(text), %s) > 0")
        args.append(f.grep.casefold())
    return " AND ".join(parts), args


def _dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


class Transfer(Pruning, Edges):
    """Rows of one space as stored, out and in; pages of nodes; counts."""

    def exported_columns(self, table: str) -> list[str]:
        """The columns of `nodes` or `edges` that a dump carries, in table order."""
        rows = self.run(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        )
        return [str(r[0]) for r in rows if r[0] not in NOT_EXPORTED[table]]

    def space_sources(self, space: str) -> list[dict[str, Any]]:
        """Every source row of a space, oldest first."""
        return _dicts(self.run("SELECT * FROM sources WHERE space = %s ORDER BY id", (space,)))

    def _space_rows(self, table: str, space: str) -> Iterator[dict[str, Any]]:
        columns = ", ".join(f'"{c}"' for c in self.exported_columns(table))
        cur = self.run(f"SELECT {columns} FROM {table} WHERE space = %s ORDER BY id", (space,))
        return iter(_dicts(cur))

    def space_node_rows(self, space: str) -> Iterator[dict[str, Any]]:
        """Every node row of a space (content key and creation time included), by id."""
        return self._space_rows("nodes", space)

    def space_edge_rows(self, space: str) -> Iterator[dict[str, Any]]:
        """Every edge row of a space, in insertion order."""
        return self._space_rows("edges", space)

    def space_source_links(self, space: str) -> dict[int, list[int]]:
        """Node id -> ids of the sources it was ingested from."""
        out: dict[int, list[int]] = {}
        rows = self.run(
            "SELECT node, source FROM node_sources WHERE source IN"
            " (SELECT id FROM sources WHERE space = %s) ORDER BY node, source",
            (space,),
        )
        for node, source in rows:
            out.setdefault(int(node), []).append(int(source))
        return out

    def space_marks(self, space: str) -> dict[int, list[str]]:
        """Node id -> the consolidation stages that have consumed it."""
        out: dict[int, list[str]] = {}
        rows = self.run(
            'SELECT node, stage FROM processed WHERE space = %s ORDER BY stage COLLATE "C", node',
            (space,),
        )
        for node, stage in rows:
            out.setdefault(int(node), []).append(str(stage))
        return out

    def max_node_id(self) -> int:
        """The highest node id the store has ever given out (0 for a new store)."""
        row = self.run(
            "SELECT GREATEST((SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
            " FROM nodes_id_seq), (SELECT COALESCE(max(id), 0) FROM nodes))"
        ).fetchone()
        return int(row[0])

    def put_node_rows(self, space: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert nodes with their own ids, keys and creation times (every column the dump
        gives), and their full-text rows. Call inside a transaction."""
        if not rows:
            return
        columns = self.exported_columns("nodes")
        names = ", ".join(f'"{c}"' for c in ["space", *columns])
        marks = ", ".join(["%s"] * (len(columns) + 1))
        self.run_many(
            f"INSERT INTO nodes ({names}) VALUES ({marks})",
            [[space, *(stored_value(name, row.get(name)) for name in columns)] for row in rows],
        )
        # The sequence never gives out an id a dump brought in.
        self.run("SELECT setval('nodes_id_seq', %s)", (self.max_node_id(),))
        self.index_texts(space, ((r["id"], r["kind"], r["text"], r.get("speaker")) for r in rows))

    # -- browsing --------------------------------------------------------------------

    def list_nodes(
        self, space: str, where: NodeFilter, limit: int | None, offset: int = 0
    ) -> tuple[list[Node], int]:
        """One page of the matching nodes, newest first, and how many match in all."""
        condition, args = _filter(space, where)
        with self.reading():
            total = int(
                self.run(f"SELECT count(*) FROM nodes WHERE {condition}", args).fetchone()[0]
            )
            rows = self.run(
                f"SELECT {NODE_COLUMNS} FROM nodes WHERE {condition} ORDER BY {_ORDER}"
                " LIMIT %s OFFSET %s",
                [*args, limit, offset],
            ).fetchall()
        return [row_to_node(row) for row in rows], total

    def session_page(
        self, space: str, limit: int, offset: int = 0
    ) -> tuple[list[dict[str, Any]], int]:
        """Sessions oldest first (session, first, last, turns), a page of them, and how
        many the space holds."""
        with self.reading():
            total = self.count_sessions(space)
            cur = self.run(_SESSIONS_PAGE, (space, limit, offset))
            return _dicts(cur), total

    def session_turns(self, space: str, session: str) -> list[Node]:
        """The turns of one session in their order (the name taken literally, not as a glob)."""
        rows = self.run(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE space = %s AND kind = 'episode'"
            " AND session = %s ORDER BY seq NULLS FIRST, id",
            (space, session),
        )
        return [row_to_node(row) for row in rows.fetchall()]

    def sessions_missing(self, space: str, patterns: Sequence[str]) -> list[str]:
        """Those of the session names (or globs) that match no node in the space."""
        missing = []
        for pattern in patterns:
            test, args = session_test([pattern])
            found = self.run(
                f"SELECT 1 FROM nodes WHERE space = %s AND {test} LIMIT 1", [space, *args]
            ).fetchone()
            if found is None:
                missing.append(pattern)
        return missing

    # -- counts ----------------------------------------------------------------------

    def all_nodes_for_embedding(self) -> list[tuple[int, str, str, str, str | None]]:
        """(id, space, kind, text, speaker) of every node in every space."""
        rows = self.run("SELECT id, space, kind, text, speaker FROM nodes ORDER BY id")
        return [(int(i), s, k, t, sp) for i, s, k, t, sp in rows]

    def spaces(self) -> list[str]:
        rows = self.run('SELECT DISTINCT space COLLATE "C" FROM nodes ORDER BY 1')
        return [str(r[0]) for r in rows]

    def _counted(self, statement: str, space: str) -> dict[str, int]:
        return {str(k): int(n) for k, n in self.run(statement, (space,))}

    def count_nodes(self, space: str) -> dict[str, int]:
        return self._counted(
            'SELECT kind COLLATE "C", count(*) FROM nodes WHERE space = %s GROUP BY 1 ORDER BY 1',
            space,
        )

    def count_edges(self, space: str) -> dict[str, int]:
        return self._counted(
            'SELECT type COLLATE "C", count(*) FROM edges WHERE space = %s GROUP BY 1 ORDER BY 1',
            space,
        )

    def count_sessions(self, space: str) -> int:
        row = self.run(
            "SELECT count(DISTINCT session) FROM nodes WHERE space = %s AND kind = 'episode'",
            (space,),
        ).fetchone()
        return int(row[0])

    def count_space_nodes(self, space: str) -> int:
        return int(self.run("SELECT count(*) FROM nodes WHERE space = %s", (space,)).fetchone()[0])
