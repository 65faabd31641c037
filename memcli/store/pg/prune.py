"""Forgetting in Postgres: selection, the provenance cascade (memcli.store.prune explains
the rules, shared here), tombstones of forgotten turns, and scrubbing the tables."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcli.models import Edge
from memcli.store.pg.nodes import Nodes
from memcli.store.prune import Cascade, SourceLinks, Tombstones, next_bridges, support_pairs

_SUPPORT = (
    "SELECT e.src, e.dst, e.type, a.kind, b.kind FROM edges e"
    " JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
    " WHERE e.src = ANY(%(ids)s::bigint[]) OR e.dst = ANY(%(ids)s::bigint[])"
)


def _ids(values: Iterable[int]) -> list[int]:
    return sorted({int(v) for v in values})


def session_test(patterns: Sequence[str]) -> tuple[str, list[str]]:
    """A condition on `session` matching any of the names or globs (*, ? and [...], as
    SQLite's GLOB reads them), and its arguments."""
    tests, args = [], []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            tests.append("session ~ %s")
            args.append(glob_regex(pattern))
        else:
            tests.append("session = %s")
            args.append(pattern)
    return f"({' OR '.join(tests) or 'false'})", args


def glob_regex(pattern: str) -> str:
    """A case-sensitive GLOB pattern as an anchored POSIX regular expression."""
    out, i = ["^"], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end
        else:
            out.append("\\" + ch if not ch.isalnum() else ch)
        i += 1
    return "".join(out) + "$"


class Pruning(Nodes, Cascade, SourceLinks, Tombstones):
    """Selecting what to forget, the cascade, removing it, and tombstones."""

    def episode_times(
        self,
        space: str,
        *,
        source_ids: Iterable[int] | None = None,
        sessions: Iterable[str] | None = None,
    ) -> dict[int, str | None]:
        """Episode id -> timestamp for the space's episodes, optionally of some sources or
        sessions (a session containing *, ? or [ is a glob pattern)."""
        where, args = "space = %s AND kind = 'episode'", list[Any]([space])
        if source_ids is not None:
            where += " AND id IN (SELECT node FROM node_sources WHERE source = ANY(%s::bigint[]))"
            args.append(_ids(source_ids))
        if sessions is not None:
            test, more = session_test(list(sessions))
            where += f" AND {test}"
            args += more
        rows = self.run(f"SELECT id, timestamp FROM nodes WHERE {where}", args)
        return {int(i): ts for i, ts in rows}

    def sessions_matching(self, space: str, pattern: str) -> int:
        """How many episodes a session name (or glob) matches in a space."""
        test, args = session_test([pattern])
        row = self.run(
            f"SELECT count(*) FROM nodes WHERE space = %s AND kind = 'episode' AND {test}",
            [space, *args],
        ).fetchone()
        return int(row[0])

    def session_names(self, space: str, limit: int = 10) -> list[str]:
        """A few session names of a space, for error messages."""
        rows = self.run(
            'SELECT DISTINCT session COLLATE "C" FROM nodes WHERE space = %s'
            " AND kind = 'episode' ORDER BY 1 LIMIT %s",
            (space, limit),
        )
        return [r[0] for r in rows]

    def select_nodes(
        self,
        space: str,
        *,
        ids: Iterable[int] | None = None,
        kinds: Iterable[str] | None = None,
        status: str | None = None,
        belief_below: float | None = None,
    ) -> set[int]:
        """Ids of the space's nodes meeting every given condition."""
        where, args = ["space = %s"], list[Any]([space])
        for test, value in (
            ("id = ANY(%s::bigint[])", None if ids is None else _ids(ids)),
            ("kind = ANY(%s::text[])", None if kinds is None else sorted(set(kinds))),
            ("status = %s", status),
            ("belief IS NOT NULL AND belief < %s", belief_below),
        ):
            if value is not None:
                where.append(test)
                args.append(value)
        rows = self.run(f"SELECT id FROM nodes WHERE {' AND '.join(where)}", args)
        return {int(r[0]) for r in rows}

    def _source_pairs(self, column: str, ids: Iterable[int]) -> Iterator[tuple[int, int]]:
        rows = self.run(
            f"SELECT node, source FROM node_sources WHERE {column} = ANY(%s::bigint[])",
            (_ids(ids),),
        )
        return ((int(n), int(s)) for n, s in rows.fetchall())

    # -- the cascade -------------------------------------------------------------------

    def _support(self, node_ids: Iterable[int]) -> list[tuple[int, int]]:
        return list(support_pairs(self.run(_SUPPORT, {"ids": _ids(node_ids)}).fetchall()))

    def edge_ids_touching(self, node_ids: Iterable[int]) -> set[int]:
        """Ids of every edge with either end among the nodes."""
        rows = self.run(
            "SELECT id FROM edges WHERE src = ANY(%(ids)s::bigint[])"
            " OR dst = ANY(%(ids)s::bigint[])",
            {"ids": _ids(node_ids)},
        )
        return {int(r[0]) for r in rows}

    def next_bridges(self, removed: set[int]) -> list[Edge]:
        """NEXT edges that keep each session's chain whole across removed episodes."""
        rows = self.run(
            "SELECT src, dst FROM edges WHERE type = 'NEXT' AND (src = ANY(%(ids)s::bigint[])"
            " OR dst = ANY(%(ids)s::bigint[]))",
            {"ids": _ids(removed)},
        )
        nxt = {int(s): int(d) for s, d in rows}
        return [Edge(src, dst, "NEXT") for src, dst in next_bridges(nxt, removed)]

    # -- removing ----------------------------------------------------------------------

    def unlink_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Forget that these (episode, source) pairs belong together."""
        self.run_many(
            "DELETE FROM node_sources WHERE node = %s AND source = %s",
            [(int(n), int(s)) for n, s in pairs],
        )

    def delete_sources(self, source_ids: Iterable[int]) -> None:
        """Remove source rows (their provenance links go with them)."""
        self.run("DELETE FROM sources WHERE id = ANY(%s::bigint[])", (_ids(source_ids),))

    def compact(self) -> bool:
        """Rewrite the store's tables without the rows removed (VACUUM FULL), so their
        content is gone from the table files; the server's write-ahead log and backups
        keep what they kept (docs/postgres.md)."""
        tables = [r[0] for r in self.run(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchall()]  # fmt: skip
        for name in tables:
            self.run(f'VACUUM FULL "{name}"')
        return True

    # -- tombstones (memcli.store.prune) ---------------------------------------------------

    def turn_keys(self, space: str, node_ids: Iterable[int]) -> list[str]:
        """The content keys of the turns among these nodes (what their tombstones hold)."""
        rows = self.run(
            "SELECT key FROM nodes WHERE space = %s AND kind = 'episode' AND key IS NOT NULL"
            " AND id = ANY(%s::bigint[]) ORDER BY id",
            (space, _ids(node_ids)),
        )
        return [str(r[0]) for r in rows]

    def put_forgotten(self, space: str, rows: Sequence[tuple[str, str]]) -> int:
        """Add (key, forgotten_at) tombstones, keeping any already there; how many were new."""
        if not rows:
            return 0
        return int(
            self.run(
                "INSERT INTO forgotten (space, key, forgotten_at) SELECT %s, k, t"
                " FROM unnest(%s::text[], %s::text[]) AS r(k, t) ON CONFLICT DO NOTHING",
                (space, [k for k, _ in rows], [t for _, t in rows]),
            ).rowcount
        )

    def forgotten_keys(self, space: str, keys: Sequence[str]) -> set[str]:
        """Which of these turn keys were forgotten in the space."""
        rows = self.run(
            "SELECT key FROM forgotten WHERE space = %s AND key = ANY(%s::text[])",
            (space, list(dict.fromkeys(keys))),
        )
        return {str(r[0]) for r in rows}

    def allow_again(self, space: str, keys: Sequence[str]) -> int:
        """Lift the tombstones of these keys; how many there were. Call inside a transaction."""
        return int(
            self.run(
                "DELETE FROM forgotten WHERE space = %s AND key = ANY(%s::text[])",
                (space, list(dict.fromkeys(keys))),
            ).rowcount
        )

    def forgotten_rows(self, space: str) -> list[tuple[str, str]]:
        """(key, forgotten_at) of every tombstone of a space, oldest first (for export)."""
        rows = self.run(
            "SELECT key, forgotten_at FROM forgotten WHERE space = %s"
            ' ORDER BY forgotten_at COLLATE "C", key COLLATE "C"',
            (space,),
        )
        return [(str(k), str(t)) for k, t in rows]

    def count_forgotten(self, space: str) -> int:
        """How many turns of the space are recorded as forgotten."""
        row = self.run("SELECT count(*) FROM forgotten WHERE space = %s", (space,)).fetchone()
        return int(row[0])
