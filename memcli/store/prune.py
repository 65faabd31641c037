"""Forgetting: selecting what to remove, the provenance cascade, and scrubbing the file.

A derived node lives as long as something it was derived from lives ("support"):

| kind | supported by |
|---|---|
| segment | an episode with a PART_OF edge into it |
| fact | a node its DERIVED_FROM edges point at (episodes) |
| reflection | a node its DERIVED_FROM_FACT edges point at (facts) |
| concept, entity | any node of another kind it shares an edge with |

Episodes are never removed by the cascade, only by being selected. Concepts and entities
count only edges to other kinds, so two entities joined by nothing but a RELATION edge go
together once the episodes that mention them are gone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memcli.errors import DatabaseError
from memcli.models import Edge
from memcli.store.db import sqlite_module

# Edge types whose source end is the derived node and whose target is what it came from.
DERIVED_TO_ORIGIN = ("DERIVED_FROM", "DERIVED_FROM_FACT")
# Edge types whose target end is the derived node.
ORIGIN_TO_DERIVED = ("PART_OF",)
# Kinds kept alive by any edge to a node of another kind.
HUB_KINDS = ("concept", "entity")


def _ids(values: Iterable[int]) -> str:
    """A JSON array of ids, bound once and expanded by `json_each` (no parameter limit)."""
    return json.dumps(sorted(set(values)))


def support_pairs(rows: Iterable[tuple[int, int, str, str, str]]) -> Iterator[tuple[int, int]]:
    """(derived, supporter) pairs from (src, dst, type, src kind, dst kind) edge rows."""
    for src, dst, typ, src_kind, dst_kind in rows:
        if typ in DERIVED_TO_ORIGIN and src_kind != "episode":
            yield src, dst
        elif typ in ORIGIN_TO_DERIVED and dst_kind != "episode":
            yield dst, src
        else:
            if dst_kind in HUB_KINDS and src_kind != dst_kind:
                yield dst, src
            if src_kind in HUB_KINDS and src_kind != dst_kind:
                yield src, dst


class PruneMixin:
    conn: Any

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
        sql = "SELECT n.id, n.timestamp FROM nodes n WHERE n.space = ? AND n.kind = 'episode'"
        args: list[Any] = [space]
        if source_ids is not None:
            sql += (
                " AND n.id IN (SELECT node FROM node_sources"
                " WHERE source IN (SELECT value FROM json_each(?)))"
            )
            args.append(_ids(source_ids))
        if sessions is not None:
            patterns = list(sessions)
            tests = ["n.session GLOB ?" if _is_glob(p) else "n.session = ?" for p in patterns]
            sql += f" AND ({' OR '.join(tests) or '0'})"
            args.extend(patterns)
        return {int(i): ts for i, ts in self.conn.execute(sql, args)}

    def sessions_matching(self, space: str, pattern: str) -> int:
        """How many episodes a session name (or glob) matches in a space."""
        op = "GLOB" if _is_glob(pattern) else "="
        row = self.conn.execute(
            f"SELECT COUNT(*) FROM nodes WHERE space = ? AND kind = 'episode' AND session {op} ?",
            (space, pattern),
        ).fetchone()
        return int(row[0])

    def session_names(self, space: str, limit: int = 10) -> list[str]:
        """A few session names of a space, for error messages."""
        rows = self.conn.execute(
            "SELECT DISTINCT session FROM nodes WHERE space = ? AND kind = 'episode'"
            " ORDER BY session LIMIT ?",
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
        sql = "SELECT id FROM nodes WHERE space = ?"
        args: list[Any] = [space]
        if ids is not None:
            sql += " AND id IN (SELECT value FROM json_each(?))"
            args.append(_ids(ids))
        if kinds is not None:
            sql += " AND kind IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(set(kinds))))
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        if belief_below is not None:
            sql += " AND belief IS NOT NULL AND belief < ?"
            args.append(belief_below)
        return {int(r[0]) for r in self.conn.execute(sql, args)}

    def source_links(self, episode_ids: Iterable[int]) -> dict[int, set[int]]:
        """Episode id -> ids of the source files it was ingested from."""
        out: dict[int, set[int]] = {}
        for node, source in self.conn.execute(
            "SELECT node, source FROM node_sources WHERE node IN (SELECT value FROM json_each(?))",
            (_ids(episode_ids),),
        ):
            out.setdefault(int(node), set()).add(int(source))
        return out

    def linked_episodes(self, source_ids: Iterable[int]) -> dict[int, set[int]]:
        """Source id -> ids of every episode linked to it."""
        out: dict[int, set[int]] = {int(s): set() for s in source_ids}
        for node, source in self.conn.execute(
            "SELECT node, source FROM node_sources"
            " WHERE source IN (SELECT value FROM json_each(?))",
            (_ids(out),),
        ):
            out[int(source)].add(int(node))
        return out

    # -- the cascade -------------------------------------------------------------------

    def _support(self, node_ids: Iterable[int]) -> list[tuple[int, int]]:
        """(derived, supporter) pairs over every edge touching the given nodes."""
        ids = _ids(node_ids)
        sql = (
            "SELECT e.src, e.dst, e.type, a.kind, b.kind FROM edges e"
            " JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
            " WHERE e.src IN (SELECT value FROM json_each(?))"
            " UNION SELECT e.src, e.dst, e.type, a.kind, b.kind FROM edges e"
            " JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
            " WHERE e.dst IN (SELECT value FROM json_each(?))"
        )
        return list(support_pairs(self.conn.execute(sql, (ids, ids))))

    def derived_from(self, origin_ids: Iterable[int]) -> set[int]:
        """Every node derived, directly or through other derived nodes, from the origins."""
        found: set[int] = set()
        frontier = set(origin_ids)
        while frontier:
            children = {d for d, s in self._support(frontier) if s in frontier} - found
            found |= children
            frontier = children
        return found

    def _unsupported(self, candidates: set[int], gone: set[int]) -> set[int]:
        """The candidates (derived nodes) left with no supporter outside `gone`."""
        kinds = self.kinds_of(sorted(candidates))  # type: ignore[attr-defined]
        derived = {n for n, kind in kinds.items() if kind != "episode"}
        alive = {d for d, s in self._support(derived) if d in derived and s not in gone}
        return derived - alive

    def cascade(self, removed: Iterable[int]) -> set[int]:
        """`removed` plus every derived node that would be left without support."""
        gone = set(removed)
        frontier = set(gone)
        while frontier:
            touched = {d for d, s in self._support(frontier) if s in frontier} - gone
            lost = self._unsupported(touched, gone)
            gone |= lost
            frontier = lost
        return gone

    def orphans(self, space: str) -> set[int]:
        """Derived nodes of a space without any support now (after a crash or an old bug),
        and whatever depends only on them."""
        derived = self.select_nodes(
            space, kinds=("segment", "fact", "reflection", "concept", "entity")
        )
        return self.cascade(self._unsupported(derived, set()))

    def edge_ids_touching(self, node_ids: Iterable[int]) -> set[int]:
        """Ids of every edge with either end among the nodes."""
        ids = _ids(node_ids)
        rows = self.conn.execute(
            "SELECT id FROM edges WHERE src IN (SELECT value FROM json_each(?))"
            " UNION SELECT id FROM edges WHERE dst IN (SELECT value FROM json_each(?))",
            (ids, ids),
        )
        return {int(r[0]) for r in rows}

    def next_bridges(self, removed: set[int]) -> list[Edge]:
        """NEXT edges that keep each session's chain whole across removed episodes."""
        ids = _ids(removed)
        nxt: dict[int, int] = {}
        for src, dst in self.conn.execute(
            "SELECT src, dst FROM edges WHERE type = 'NEXT' AND"
            " (src IN (SELECT value FROM json_each(?)) OR dst IN (SELECT value FROM json_each(?)))",
            (ids, ids),
        ):
            nxt[int(src)] = int(dst)
        bridges = []
        for src, dst in nxt.items():
            if src in removed or dst not in removed:
                continue
            while dst in removed and dst in nxt:
                dst = nxt[dst]
            if dst not in removed:
                bridges.append(Edge(src, dst, "NEXT"))
        return bridges

    # -- removing ----------------------------------------------------------------------

    def unlink_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Forget that these (episode, source) pairs belong together."""
        self.conn.executemany("DELETE FROM node_sources WHERE node = ? AND source = ?", list(pairs))

    def delete_sources(self, source_ids: Iterable[int]) -> None:
        """Remove source rows (their provenance links go with them)."""
        self.conn.execute(
            "DELETE FROM sources WHERE id IN (SELECT value FROM json_each(?))",
            (_ids(source_ids),),
        )

    def delete_runs(self, space: str) -> int:
        """Remove the consolidation history of a space."""
        return int(self.conn.execute("DELETE FROM runs WHERE space = ?", (space,)).rowcount)

    def llm_cache_size(self) -> int:
        """How many model replies the cache holds (what clear_llm_cache would remove)."""
        return int(self.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def clear_llm_cache(self) -> int:
        """Empty the model reply cache; return how many replies it held."""
        return int(self.conn.execute("DELETE FROM llm_cache").rowcount)

    def compact(self) -> bool:
        """Scrub deleted content from the file: merge the full-text index, VACUUM, and
        truncate the WAL. False when readers kept the WAL from being truncated."""
        sqlite3 = sqlite_module()
        with self.transaction():  # type: ignore[attr-defined]
            # FTS5 keeps deleted terms in old index segments until they are merged.
            self.optimize_text()  # type: ignore[attr-defined]
        try:
            self.conn.execute("VACUUM")
            busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError as exc:
            raise DatabaseError(
                f"could not vacuum the database: {exc}",
                fix="run `memcli prune --vacuum --yes` again once other memcli processes finish",
            ) from None
        return int(busy) == 0


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")
