"""Connecting to Postgres with psycopg 3: the driver, errors, locks and transactions.

psycopg comes with the `postgres` extra (`pip install 'memcli[postgres]'`) and is imported
only when a `postgresql://` store is opened, so `import memcli` never needs it.

Writers take turns: each write transaction first takes a transaction-level advisory lock
(`WRITE_LOCK`), as SQLite's BEGIN IMMEDIATE takes the file's write lock. That keeps what a
write reads and then writes (a session's last turn, the turns around a changed one, the
full-text statistics) consistent without retries, and no two memcli writers can deadlock.
Readers never wait. Repeats stay harmless without the lock too: every table a write may
repeat into has a unique constraint, and the inserts say ON CONFLICT.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memcli.errors import DatabaseError, DiskFull, ReadOnlyStore
from memcli.store.target import shown

EXTRA_FIX = "install the Postgres driver: pip install 'memcli[postgres]'"
READ_ONLY_FIX = (
    "ask, inspect, list and export work on it as it is; to write, connect as a role that "
    "may write memcli's tables, to the primary server rather than a standby"
)
WRITE_LOCK = "write"
MIGRATION_LOCK = "migrate"


def driver() -> Any:
    """The psycopg module, or DatabaseError with the fix when it is not installed."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseError(
            "a postgresql:// store needs the psycopg driver, which is not installed",
            fix=EXTRA_FIX,
        ) from None
    return psycopg


def connect(url: str) -> Any:
    """An autocommit connection to the database at `url`, in UTC, or DatabaseError."""
    psycopg = driver()
    try:
        conn = psycopg.connect(url, autocommit=True, application_name="memcli")
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot connect to {shown(url)} ({_first_line(exc)})",
            fix="check the URL (postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE), that the "
            "server is running and reachable, and that the role may log in",
        ) from None
    conn.execute("SET TIME ZONE 'UTC'")
    return conn


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def lock_key(schema: str, name: str) -> int:
    """A signed 64-bit advisory lock key for a lock of one memcli store (one schema of one
    database), so stores in two schemas of a database never wait for each other."""
    digest = hashlib.sha256(f"memcli/{schema}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def here(table: str) -> str:
    """SQL for the oid of one of the store's tables or indexes in its own schema (the first
    of the search path), or NULL: never a table of that name further down the path."""
    return f"to_regclass(quote_ident(current_schema()) || '.{table}')"


def read_only_reason(conn: Any) -> str | None:
    """Why this connection may read but not write the store (None: it may write)."""
    if conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
        return "the server is a read-only standby"
    if conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on":
        return "the session is read-only (default_transaction_read_only)"
    row = conn.execute(
        "SELECT has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE') FROM pg_class c"
        f" WHERE c.oid = {here('nodes')}"
    ).fetchone()
    if row is not None and not row[0]:
        user = conn.execute("SELECT current_user").fetchone()[0]
        return f"the role {user} may not write its tables"
    return None


@contextmanager
def write_transaction(conn: Any, key: int, where: str) -> Iterator[Any]:
    """A transaction holding the store's write lock; rolled back on any error."""
    psycopg = driver()
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            yield conn
    except psycopg.errors.DiskFull:
        raise DiskFull(where) from None
    except psycopg.errors.ReadOnlySqlTransaction:
        raise ReadOnlyStore(where, "the server refused a write", READ_ONLY_FIX) from None
    except psycopg.OperationalError as exc:
        raise DatabaseError(
            f"the connection to {where} failed during a write ({_first_line(exc)}); "
            "nothing of it was stored",
            fix="check that the server is running, then run the command again",
        ) from None


@contextmanager
def read_snapshot(conn: Any) -> Iterator[Any]:
    """One consistent snapshot for several reads (inside a transaction: that one's)."""
    psycopg = driver()
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        yield conn
        return
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield conn


def in_transaction(conn: Any) -> bool:
    """Whether a transaction is open on the connection."""
    return conn.info.transaction_status != driver().pq.TransactionStatus.IDLE
