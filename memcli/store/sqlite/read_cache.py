"""Memoised graph reads for warm processes, dropped whenever the file may have changed.

Every recall reads the edges around its seeds, the degrees of the nodes it meets, their
kinds and their rows: a few thousand small reads, many of them the same from one question
to the next. A long-lived process (the MCP server, a batch of questions) turns the cache on
(`Store.use_read_cache`) and keeps what it read, per connection, for as long as the file
stays the same.

"The same" is decided before every read by two numbers, both kept by SQLite itself, so no
writer has to remember anything: `PRAGMA data_version`, which changes on this connection
whenever any other connection (of this process or another) commits, and the connection's
`total_changes`, which counts its own writes. When either moved, everything is dropped.
Inside a transaction the cache is bypassed (and not filled): those reads may see rows a
rollback would take back. Results are the same as the plain reads, in the same order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from memcli.store.edges import EdgeRow, edge_row
from memcli.store.sqlite import sql

#: Past this many cached node rows, edge rows, or kinds, degrees or segment lists,
#: everything is dropped, to bound memory (at the 100x benchmark store, 231 questions
#: left 32,000 rows and 233,000 edge rows cached, about 100 MB).
ROW_LIMIT = 50_000
EDGE_LIMIT = 500_000
KEY_LIMIT = 250_000


def file_stamp(conn: Any) -> tuple[int, int]:
    """Moves whenever any connection commits to the file or this one writes."""
    return int(conn.execute(sql.DATA_VERSION).fetchone()[0]), int(conn.total_changes)


class ReadCache:
    """What one connection read, keyed by node id: out- and in-edges, degrees, kinds,
    topic segments and node rows (tuples, so callers get fresh objects built from them).
    Threads sharing the connection take turns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self.out: dict[int, list[EdgeRow]] = {}  # edges from a node, by (dst, type)
        self.into: dict[int, list[EdgeRow]] = {}  # edges into a node, by (src, type)
        self.degree: dict[int, Any] = {}
        self.kind: dict[int, Any] = {}  # None: no such node
        self.rows: dict[int, Any] = {}  # None: no such node
        self.segments: dict[int, Any] = {}  # None: in no topic segment
        self._edges = 0

    def _clear(self) -> None:
        for memo in (self.out, self.into, self.degree, self.kind, self.rows, self.segments):
            memo.clear()
        self._edges = 0

    def _too_big(self) -> bool:
        keyed = max(len(self.kind), len(self.degree), len(self.segments))
        return len(self.rows) > ROW_LIMIT or self._edges > EDGE_LIMIT or keyed > KEY_LIMIT

    def usable(self, conn: Any) -> bool:
        """Whether reads may use the cache now; empties it when the file may have changed."""
        if conn.in_transaction:
            return False
        stamp = file_stamp(conn)
        with self._lock:
            if stamp != self._stamp or self._too_big():
                self._clear()
                self._stamp = stamp
        return True

    def edges_out(self, conn: Any, ids: Iterable[int]) -> dict[int, list[EdgeRow]]:
        """The edges from each of `ids`, sorted by (dst, type)."""
        return self._edges_of(conn, self.out, ids, sql.edges_from(0), 0)

    def edges_into(self, conn: Any, ids: Iterable[int]) -> dict[int, list[EdgeRow]]:
        """The edges into each of `ids`, sorted by (src, type)."""
        return self._edges_of(conn, self.into, ids, sql.EDGES_INTO, 1)

    def _edges_of(
        self, conn: Any, memo: dict[int, list[EdgeRow]], ids: Iterable[int], query: str, end: int
    ) -> dict[int, list[EdgeRow]]:
        ids = list(dict.fromkeys(ids))
        with self._lock:
            missing = [i for i in ids if i not in memo]
            if missing:
                found: dict[int, list[EdgeRow]] = {i: [] for i in missing}
                for row in conn.execute(query, (json.dumps(missing),)):
                    found[int(row[end])].append(edge_row(row))
                for rows in found.values():
                    rows.sort()
                    self._edges += len(rows)
                memo.update(found)
            return {i: memo[i] for i in ids}

    def fill(
        self, memo: dict[int, Any], ids: Iterable[int], read: Callable[[list[int]], Any]
    ) -> dict[int, Any]:
        """The value of each of `ids` in `memo` (one of the caches above); those it lacks
        come from `read(missing)`, which yields (id, value) pairs (an id it does not yield
        gets None)."""
        ids = list(dict.fromkeys(ids))
        with self._lock:
            missing = [i for i in ids if i not in memo]
            if missing:
                memo.update(dict.fromkeys(missing))
                memo.update((int(i), value) for i, value in read(missing))
            return {i: memo[i] for i in ids}
