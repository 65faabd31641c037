"""What every part of the SQLite store stands on: the connection, its sqlite-utils view,
transactions and the `meta` key-value table."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import ReadOnlyStore
from memcli.store.base import Closing
from memcli.store.sqlite import sql
from memcli.store.sqlite.db import transaction, wrap
from memcli.store.sqlite.read_cache import ReadCache

if TYPE_CHECKING:
    from sqlite_utils import Database
    from sqlite_utils.db import Table


class StoreBase(Closing):
    """A migrated connection to one memcli database file."""

    def __init__(self, conn: Any, path: Path, read_only: str | None = None) -> None:
        self.conn = conn
        self.path = path
        self.read_only = read_only  # why this process may not write the file, or None
        self._lock = threading.Lock()  # model threads share this connection for the cache

    _memo: ReadCache | None = None  # set by use_read_cache

    @property
    def location(self) -> str:
        """Where the store lives, for messages: its file's path."""
        return str(self.path)

    def schema_version(self) -> int:
        """How many migrations the file has had."""
        return int(self.conn.execute(sql.USER_VERSION).fetchone()[0])

    @cached_property
    def db(self) -> Database:
        """sqlite-utils' view of the connection, made on first use: writes use it, and a
        read-only command never imports sqlite-utils."""
        return wrap(self.conn)

    def use_read_cache(self) -> None:
        """Keep graph reads (edges, degrees, kinds, node rows) in memory from now on, for
        as long as the file is unchanged: for long-lived processes (see read_cache)."""
        self._memo = ReadCache()

    def _read_memo(self) -> ReadCache | None:
        """The read cache when it is on and may be used now (emptied if the file moved)."""
        if self._memo is None or not self._memo.usable(self.conn):
            return None
        return self._memo

    def table(self, name: str) -> Table:
        """One of the store's tables, for sqlite-utils' data operations."""
        return self.db.table(name)

    def close(self) -> None:
        self.conn.close()

    def require_writable(self) -> None:
        """ReadOnlyStore, with the fix, when this process may only read the file."""
        if self.read_only is not None:
            raise ReadOnlyStore(self.path, self.read_only)

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction: everything inside commits together or not at all."""
        self.require_writable()
        return transaction(self.conn)

    @contextmanager
    def reading(self) -> Iterator[Any]:
        """A read transaction: one consistent snapshot for several queries."""
        self.conn.execute(sql.BEGIN_READ)
        try:
            yield self.conn
        finally:
            self.conn.execute(sql.COMMIT)

    # -- meta ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute(sql.META_GET, (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.table("meta").upsert({"key": key, "value": value}, pk="key")

    def delete_meta(self, key: str) -> None:
        self.table("meta").delete_where("key = ?", [key])
