"""Browsing a space's nodes with filters in SQLite, newest first (memories before the topic
segments, concepts and entities that index them), a page at a time (`memcli list`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcli.models import Node
from memcli.store.listing import ORGANISER_KINDS, NodeFilter, is_glob
from memcli.store.nodes import row_to_node
from memcli.store.sqlite import sql
from memcli.store.sqlite.nodes import Nodes

# A memory's date for sorting and --since/--until: its own timestamp, else when it was
# stored. SQLite's datetime() reads both ISO forms (with or without an offset) as UTC.
_WHEN = "datetime(COALESCE(timestamp, created_at))"
_ORDER = f"kind IN {ORGANISER_KINDS!r} ASC, {_WHEN} DESC, id DESC"
_CONTAINS = "memcli_contains"  # a case-insensitive substring test registered per connection


def _contains(text: bytes | None, needle: bytes) -> bool:
    # Both come as blobs: the sqlite3 module hands a function's text arguments over as C
    # strings, which end at the first NUL, and stored text may hold one (JSON's \u0000).
    if text is None:
        return False
    return needle.decode("utf-8", "replace") in text.decode("utf-8", "replace").casefold()


def node_condition(space: str, f: NodeFilter) -> tuple[str, list[Any]]:
    """The SQL condition a NodeFilter sets, and its arguments."""
    parts, args = ["space = ?"], [space]
    if f.kinds:
        parts.append(sql.in_json("kind"))
        args.append(json.dumps(list(f.kinds)))
    if f.sessions:
        tests = ["session GLOB ?" if is_glob(s) else "session = ?" for s in f.sessions]
        parts.append(f"({' OR '.join(tests)})")
        args.extend(f.sessions)
    if f.source_ids is not None:
        parts.append(sql.EPISODES_OF_SOURCES)
        args.append(json.dumps(list(f.source_ids)))
    for value, test in ((f.since, ">="), (f.until, "<")):
        if value is not None:
            parts.append(f"{_WHEN} {test} datetime(?)")
            args.append(value)
    if f.grep:
        parts.append(f"{_CONTAINS}(CAST(text AS BLOB), CAST(? AS BLOB))")
        args.append(f.grep.casefold())
    return " AND ".join(parts), args


class Listing(Nodes):
    """Filtered, paged reads of the `nodes` table."""

    _contains_ready = False

    def _register_contains(self) -> None:
        if not self._contains_ready:
            self.conn.create_function(_CONTAINS, 2, _contains, deterministic=True)
            self._contains_ready = True

    def list_nodes(
        self, space: str, where: NodeFilter, limit: int | None, offset: int = 0
    ) -> tuple[list[Node], int]:
        """One page of the matching nodes, newest first, and how many match in all."""
        self._register_contains()
        condition, args = node_condition(space, where)
        page = f"{sql.nodes_where(condition, _ORDER)} LIMIT ? OFFSET ?"
        with self.reading():
            total = self.table("nodes").count_where(condition, args)
            rows = self.conn.execute(page, [*args, -1 if limit is None else limit, offset])
            found = [row_to_node(row) for row in rows]
        return found, total

    def session_page(
        self, space: str, limit: int, offset: int = 0
    ) -> tuple[list[dict[str, Any]], int]:
        """Sessions oldest first (session, first, last, turns), a page of them, and how
        many the space holds."""
        with self.reading():
            total = int(self.conn.execute(sql.COUNT_SESSIONS, (space,)).fetchone()[0])
            rows = self.conn.execute(sql.SESSIONS_PAGE, (space, limit, offset)).fetchall()
        keys = ("session", "first", "last", "turns")
        return [dict(zip(keys, row, strict=True)) for row in rows], total

    def session_turns(self, space: str, session: str) -> list[Node]:
        """The turns of one session in their order (the name taken literally, not as a glob)."""
        where = "space = ? AND kind = 'episode' AND session = ?"
        rows = self.conn.execute(sql.nodes_where(where, "seq, id"), (space, session))
        return [row_to_node(row) for row in rows]

    def sessions_missing(self, space: str, patterns: Sequence[str]) -> list[str]:
        """Those of the session names (or globs) that match no node in the space."""
        missing = []
        for pattern in patterns:
            op = "GLOB" if is_glob(pattern) else "="
            if not self.table("nodes").count_where(
                f"space = ? AND session {op} ?", [space, pattern]
            ):
                missing.append(pattern)
        return missing
