"""Forgetting in SQLite: selecting what to remove, the provenance cascade (memcli.store.prune
gives its rules), and scrubbing the file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memcli.errors import DatabaseError, DiskFull
from memcli.models import Edge
from memcli.store.listing import is_glob
from memcli.store.prune import Cascade, SourceLinks, next_bridges, support_pairs
from memcli.store.sqlite import sql
from memcli.store.sqlite.db import disk_full, sqlite_module
from memcli.store.sqlite.nodes import Nodes


def _ids(values: Iterable[int]) -> str:
    """A JSON array of ids, bound once and expanded by `json_each` (no parameter limit)."""
    return json.dumps(sorted(set(values)))


class Pruning(Nodes, Cascade, SourceLinks):
    """Selecting what to forget, the cascade, and removing it."""

    # -- selecting ---------------------------------------------------------------------

    def episode_times(
        self,
        space: str,
        *,
        source_ids: Iterable[int] | None = None,
        sessions: Iterable[str] | None = None,
    ) -> dict[int, str | None]:
        """Episode id -> timestamp for the space's episodes, optionally of some sources or
        sessions (a session containing *, ? or [ is a glob pattern)."""
        where = "space = ? AND kind = 'episode'"
        args: list[Any] = [space]
        if source_ids is not None:
            where += f" AND {sql.EPISODES_OF_SOURCES}"
            args.append(_ids(source_ids))
        if sessions is not None:
            patterns = list(sessions)
            tests = ["session GLOB ?" if is_glob(p) else "session = ?" for p in patterns]
            where += f" AND ({' OR '.join(tests) or '0'})"
            args.extend(patterns)
        rows = self.table("nodes").rows_where(where, args, select="id, timestamp")
        return {int(row["id"]): row["timestamp"] for row in rows}

    def sessions_matching(self, space: str, pattern: str) -> int:
        """How many episodes a session name (or glob) matches in a space."""
        op = "GLOB" if is_glob(pattern) else "="
        where = f"space = ? AND kind = 'episode' AND session {op} ?"
        return self.table("nodes").count_where(where, [space, pattern])

    def session_names(self, space: str, limit: int = 10) -> list[str]:
        """A few session names of a space, for error messages."""
        return [r[0] for r in self.conn.execute(sql.SESSION_NAMES, (space, limit))]

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
        where: list[str] = ["space = ?"]
        args: list[Any] = [space]
        if ids is not None:
            where.append(sql.in_json("id"))
            args.append(_ids(ids))
        if kinds is not None:
            where.append(sql.in_json("kind"))
            args.append(json.dumps(sorted(set(kinds))))
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if belief_below is not None:
            where.append("belief IS NOT NULL AND belief < ?")
            args.append(belief_below)
        rows = self.table("nodes").rows_where(" AND ".join(where), args, select="id")
        return {int(row["id"]) for row in rows}

    def _source_pairs(self, column: str, ids: Iterable[int]) -> Iterator[tuple[int, int]]:
        """(episode, source) links whose `column` is among the ids."""
        rows = self.table("node_sources").rows_where(sql.in_json(column), [_ids(ids)])
        return ((int(row["node"]), int(row["source"])) for row in rows)

    # -- the cascade -------------------------------------------------------------------

    def _support(self, node_ids: Iterable[int]) -> list[tuple[int, int]]:
        """(derived, supporter) pairs over every edge touching the given nodes."""
        ids = _ids(node_ids)
        return list(support_pairs(self.conn.execute(sql.SUPPORT, (ids, ids))))

    def edge_ids_touching(self, node_ids: Iterable[int]) -> set[int]:
        """Ids of every edge with either end among the nodes."""
        ids = _ids(node_ids)
        return {int(r[0]) for r in self.conn.execute(sql.EDGE_IDS_TOUCHING, (ids, ids))}

    def next_bridges(self, removed: set[int]) -> list[Edge]:
        """NEXT edges that keep each session's chain whole across removed episodes."""
        ids = _ids(removed)
        where = f"type = 'NEXT' AND ({sql.in_json('src')} OR {sql.in_json('dst')})"
        rows = self.table("edges").rows_where(where, [ids, ids], select="src, dst")
        nxt = {int(row["src"]): int(row["dst"]) for row in rows}
        return [Edge(src, dst, "NEXT") for src, dst in next_bridges(nxt, removed)]

    # -- removing ----------------------------------------------------------------------

    def unlink_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Forget that these (episode, source) pairs belong together."""
        links = self.table("node_sources")
        for pair in pairs:
            links.delete_where("node = ? AND source = ?", pair)

    def delete_sources(self, source_ids: Iterable[int]) -> None:
        """Remove source rows (their provenance links go with them)."""
        self.table("sources").delete_where(sql.in_json("id"), [_ids(source_ids)])

    def delete_runs(self, space: str) -> int:
        """Remove the consolidation history of a space."""
        return self._delete_counted("runs", "space = ?", [space])

    def llm_cache_size(self) -> int:
        """How many model replies the cache holds (what clear_llm_cache would remove)."""
        return self.table("llm_cache").count

    def clear_llm_cache(self) -> int:
        """Empty the model reply cache; return how many replies it held."""
        return self._delete_counted("llm_cache", None, [])

    def _delete_counted(self, name: str, where: str | None, args: list[Any]) -> int:
        # Counted first: a savepoint makes FTS5 flush its pending rows, and those writes
        # would show in total_changes.
        table = self.table(name)
        count = table.count_where(where, args)
        table.delete_where(where, args)
        return count

    def compact(self) -> bool:
        """Scrub deleted content from the file: merge the full-text index, VACUUM, and
        truncate the WAL. False when readers kept the WAL from being truncated."""
        sqlite3 = sqlite_module()
        with self.transaction():
            # FTS5 keeps deleted terms in old index segments until they are merged.
            self.optimize_text()
        try:
            self.conn.execute(sql.VACUUM)
            busy, _, _ = self.conn.execute(sql.WAL_TRUNCATE).fetchone()
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                what = "the vacuum needs room for a copy of the store, and was not done"
                raise DiskFull(self.path, what) from None
            raise DatabaseError(
                f"could not vacuum the database: {exc}",
                fix="run `memcli prune --vacuum --yes` again once other memcli processes finish",
            ) from None
        return int(busy) == 0
