"""What every part of the Postgres store stands on: its connections, transactions, meta."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from memcli.errors import DatabaseError, ReadOnlyStore
from memcli.store.base import Closing
from memcli.store.pg.connect import (
    READ_ONLY_FIX,
    WRITE_LOCK,
    connect,
    driver,
    in_transaction,
    lock_key,
    read_snapshot,
    write_transaction,
)
from memcli.store.pg.version import current_version
from memcli.store.target import shown


class PgBase(Closing):
    """A migrated connection to one memcli store in a Postgres database (one schema)."""

    def __init__(self, conn: Any, url: str, read_only: str | None = None) -> None:
        self.conn = conn
        self.url = url
        self.read_only = read_only
        self.schema = str(conn.execute("SELECT current_schema()").fetchone()[0])
        self._write_key = lock_key(self.schema, WRITE_LOCK)
        self._lock = threading.Lock()  # guards the second connection, for model threads
        self._side: Any = None  # made on first use by `side_conn`
        # What a statement raises when the server is gone: psycopg's OperationalError.
        self._lost: type[BaseException] = driver().OperationalError

    @property
    def location(self) -> str:
        """Where the store lives, for messages: its URL without the password."""
        return shown(self.url)

    def side_conn(self) -> Any:
        """A second connection for writes that commit at once whatever the main one is
        doing (the model reply cache, written from model threads). Hold self._lock."""
        if self._side is None:
            self._side = connect(self.url)
        return self._side

    def close(self) -> None:
        for conn in (self._side, self.conn):
            if conn is not None and not conn.closed:
                conn.close()

    def run(self, statement: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Execute one statement on the main connection; its cursor."""
        try:
            return self.conn.execute(statement, args)
        except self._lost as exc:
            raise self._connection_lost(exc) from None

    def run_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> int:
        """Execute one statement per row (pipelined by psycopg); the rows it touched."""
        if not rows:
            return 0
        try:
            with self.conn.cursor() as cur:
                cur.executemany(statement, rows)
                return int(cur.rowcount)
        except self._lost as exc:
            raise self._connection_lost(exc) from None

    def _connection_lost(self, exc: BaseException) -> DatabaseError:
        """The error for a server that went away (restarted, unreachable, or the
        connection was ended)."""
        first = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        return DatabaseError(
            f"lost the connection to {self.location} ({first})",
            fix="check that the server is running and reachable, then run the command again "
            "(a write in progress was not stored)",
        )

    def in_transaction(self) -> bool:
        return in_transaction(self.conn)

    def require_writable(self) -> None:
        """ReadOnlyStore, with the fix, when this process may only read the store."""
        if self.read_only is not None:
            raise ReadOnlyStore(self.location, self.read_only, READ_ONLY_FIX)

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction holding the store's write lock: all or nothing."""
        self.require_writable()
        return self._writing()

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        with write_transaction(self.conn, self._write_key, self.location) as conn:
            yield conn
        self.after_commit()

    def after_commit(self) -> None:
        """Work a committed write leaves to do outside any transaction (vectors.py)."""

    def reading(self) -> AbstractContextManager[Iterator[Any]]:
        """A read transaction: one consistent snapshot for several queries."""
        return read_snapshot(self.conn)

    def schema_version(self) -> int:
        """How many of the Postgres store's migrations the database has had."""
        return current_version(self.conn, self.url)

    def use_read_cache(self) -> None:
        """Nothing to do: the server caches what it reads, for every process at once."""

    def use_vector_index(self) -> None:
        """Nothing to do: pgvector searches on the server (with an HNSW index on large
        stores, see memcli.store.pg.vectors)."""

    def file_bytes(self) -> int:
        """Disk taken by the store's tables and indexes on the server."""
        row = self.run(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
        return int(row[0])

    # -- meta ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.run("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.run(
            "INSERT INTO meta (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def delete_meta(self, key: str) -> None:
        self.run("DELETE FROM meta WHERE key = %s", (key,))
