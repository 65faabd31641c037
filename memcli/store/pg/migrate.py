"""Numbered, append-only migrations of the Postgres store. Never edit one that has shipped.

The count of applied migrations is `meta`'s `schema.version` (Postgres has no
user_version). Each pending migration runs in its own transaction, under an advisory lock taken
before it, after reading the count again: of several processes opening a new store at
once, one migrates and the others find the work done. A `migration.<name>` row records when
each ran, as in SQLite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from memcli.errors import DatabaseError
from memcli.store.pg import schema
from memcli.store.pg.connect import MIGRATION_LOCK, driver, here, lock_key
from memcli.store.target import shown

Step = Callable[[Any], None]  # applied to a connection inside its transaction
MIGRATIONS: list[tuple[str, Step]] = []
VERSION_KEY = "schema.version"


def migration(fn: Step) -> Step:
    """Register `fn` as the next migration; its name must start with the next number."""
    if int(fn.__name__[1:4]) != len(MIGRATIONS) + 1:
        raise RuntimeError(f"migration {fn.__name__} is out of order")
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def current_version(conn: Any, url: str) -> int:
    """How many migrations the store has had (0 for a schema without memcli's tables);
    DatabaseError when the schema holds another program's tables of the same names."""
    tables = conn.execute(f"SELECT {here('meta')}, {here('nodes')}").fetchone()
    if tables[0] is None:
        if tables[1] is not None:
            raise _foreign(url, "a `nodes` table")
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (VERSION_KEY,)).fetchone()
    if row is None:
        raise _foreign(url, "a `meta` table")
    return int(row[0])


def _foreign(url: str, what: str) -> DatabaseError:
    return DatabaseError(
        f"{shown(url)} holds {what} of another program in its schema, not a memcli store; "
        "memcli leaves it as it is",
        fix="give memcli a schema of its own: add ?options=-csearch_path%3Dmemcli to the URL "
        "(after CREATE SCHEMA memcli), or use another database",
    )


def pending(conn: Any, url: str, migrations: Sequence[tuple[str, Step]] = MIGRATIONS) -> int:
    """How many migrations the store has yet to have (0 for a newer store too)."""
    return max(0, len(migrations) - current_version(conn, url))


def migrate(
    conn: Any, url: str, schema_name: str, migrations: Sequence[tuple[str, Step]] = MIGRATIONS
) -> int:
    """Apply every pending migration, each in its own transaction; the new version."""
    version = current_version(conn, url)
    if version > len(migrations):
        raise DatabaseError(
            f"this database has memcli schema version {version}, newer than this memcli "
            f"understands ({len(migrations)})",
            fix="upgrade memcli (pip install -U 'memcli[postgres]')",
        )
    if version == len(migrations):
        return version
    # Taken before each migration's transaction begins, not inside it: a transaction that
    # waited for the lock would still see the catalog as it was when it began, without
    # the tables the other process made meanwhile.
    key = lock_key(schema_name, MIGRATION_LOCK)
    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    try:
        for number, (name, step) in enumerate(migrations[version:], start=version + 1):
            with conn.transaction():
                if current_version(conn, url) >= number:  # another process got there first
                    continue
                step(conn)
                _record(conn, number, name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    return len(migrations)


def _record(conn: Any, number: int, name: str) -> None:
    """The new schema version, and when this migration ran."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for key, value in ((VERSION_KEY, str(number)), (f"migration.{name}", stamp)):
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _ensure_vector_extension(conn: Any) -> None:
    """pgvector in this database: made here when the role may, else the fix."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    psycopg = driver()
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION vector")
    except psycopg.Error as exc:
        raise DatabaseError(
            f"the pgvector extension is not installed in this database and memcli may not "
            f"install it ({str(exc).strip().splitlines()[0]})",
            fix="have a superuser run CREATE EXTENSION vector; in this database once "
            "(pgvector must be installed on the server)",
        ) from None


def _run(conn: Any, statements: Sequence[str]) -> None:
    for statement in statements:
        conn.execute(statement)


@migration
def m001_initial(conn: Any) -> None:
    """Every table of the store as of memcli's SQLite schema version 7."""
    _ensure_vector_extension(conn)
    _run(conn, schema.M001_INITIAL)


@migration
def m002_unit_failures(conn: Any) -> None:
    """SQLite's m008: failed runs per stage and node, to give up a unit that always fails."""
    _run(conn, schema.M002_UNIT_FAILURES)


@migration
def m003_speaker_index(conn: Any) -> None:
    """An index of the full-text rows by speaker, for looking a question's names up."""
    _run(conn, schema.M003_SPEAKER_INDEX)


@migration
def m004_postings(conn: Any) -> None:
    """Postings of the full-text rows, for BM25 that reads only a question's stems."""
    _run(conn, schema.M004_POSTINGS)
