"""The one place with SQL: a memcli store is one SQLite file."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from memcli.store.db import connect, transaction
from memcli.store.edges import EdgesMixin
from memcli.store.fts import FtsMixin
from memcli.store.migrations import migrate
from memcli.store.nodes import NodesMixin
from memcli.store.prune import PruneMixin
from memcli.store.vectors import VectorsMixin
from memcli.store.work import WorkMixin

__all__ = ["Store", "open_store"]


class Store(NodesMixin, EdgesMixin, VectorsMixin, FtsMixin, WorkMixin, PruneMixin):
    """A migrated connection to one memcli database file."""

    def __init__(self, conn: Any, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._lock = threading.Lock()  # model threads share this connection for the cache

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction: everything inside commits together or not at all."""
        return transaction(self.conn)

    @contextmanager
    def reading(self) -> Iterator[Any]:
        """A read transaction: one consistent snapshot for several queries."""
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")

    # -- meta ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def all_nodes_for_embedding(self) -> list[tuple[int, str, str, str, str | None]]:
        """(id, space, kind, text, speaker) of every node in every space."""
        return list(
            self.conn.execute("SELECT id, space, kind, text, speaker FROM nodes ORDER BY id")
        )

    # -- statistics ------------------------------------------------------------

    def spaces(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT space FROM nodes ORDER BY 1")]

    def count_nodes(self, space: str) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT kind, COUNT(*) FROM nodes WHERE space = ? GROUP BY kind ORDER BY kind",
            (space,),
        )
        return {kind: n for kind, n in rows}

    def count_edges(self, space: str) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT type, COUNT(*) FROM edges WHERE space = ? GROUP BY type ORDER BY type",
            (space,),
        )
        return {typ: n for typ, n in rows}

    def count_sessions(self, space: str) -> int:
        row = self.conn.execute(
            "SELECT COUNT(DISTINCT session) FROM nodes WHERE space = ? AND kind = 'episode'",
            (space,),
        ).fetchone()
        return int(row[0])

    def file_bytes(self) -> int:
        """Size of the database file plus its WAL."""
        total = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def sources(self, space: str) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            "SELECT id, path, sha256, format, episodes, ingested_at FROM sources"
            " WHERE space = ? ORDER BY id",
            (space,),
        )
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur]


def open_store(path: str | os.PathLike[str]) -> Store:
    """Open or create the store at `path` and bring its schema up to date."""
    target = Path(path).expanduser()
    conn = connect(target)
    try:
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return Store(conn, target)
