"""The Postgres store's migrations, numbered and append-only (memcli.store.migrations runs
them). Never edit one that has shipped: add the next.

The count of applied migrations is `meta`'s `schema.version` (Postgres has no
user_version). The pending migrations run under an advisory lock taken before the first of
them: of several processes opening a new store at once, one migrates and the others find
the work done.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from memcli.errors import DatabaseError
from memcli.store import migrations as runner
from memcli.store.migrations import Chain, Step, run_statements
from memcli.store.pg import schema
from memcli.store.pg.connect import MIGRATION_LOCK, driver, lock_key
from memcli.store.pg.version import VERSION_KEY, current_version

MIGRATIONS: Chain = []


def migration(fn: Step) -> Step:
    """Register `fn` as the next migration; its name must start with the next number."""
    runner.append(MIGRATIONS, fn.__name__, fn)
    return fn


class _Ledger(runner.Ledger):
    """The count and the stamps in `meta`; turns taken with an advisory lock."""

    version_name = "memcli schema version"
    upgrade = "pip install -U 'memcli[postgres]'"

    def __init__(self, conn: Any, url: str, schema_name: str) -> None:
        super().__init__(conn)
        self.url, self.schema_name = url, schema_name

    def version(self) -> int:
        return current_version(self.conn, self.url)

    def transaction(self) -> AbstractContextManager[Any]:
        return self.conn.transaction()

    @contextmanager
    def turn(self) -> Iterator[None]:
        # Taken before each migration's transaction begins, not inside it: a transaction
        # that waited for the lock would still see the catalog as it was when it began,
        # without the tables the other process made meanwhile.
        key = lock_key(self.schema_name, MIGRATION_LOCK)
        self.conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def set_version(self, number: int) -> None:
        self.set_meta(VERSION_KEY, str(number))

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def pending(conn: Any, url: str, chain: Sequence[tuple[str, Step]] = MIGRATIONS) -> int:
    """How many migrations the store has yet to have (0 for a newer store too)."""
    return runner.pending(current_version(conn, url), chain)


def migrate(
    conn: Any, url: str, schema_name: str, chain: Sequence[tuple[str, Step]] = MIGRATIONS
) -> int:
    """Apply every pending migration, each in its own transaction; the new version."""
    return runner.migrate(_Ledger(conn, url, schema_name), chain)


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


@migration
def m001_initial(conn: Any) -> None:
    """Every table of the store as of memcli's SQLite schema version 7."""
    _ensure_vector_extension(conn)
    run_statements(conn, schema.M001_INITIAL)


@migration
def m002_unit_failures(conn: Any) -> None:
    """SQLite's m008: failed runs per stage and node, to give up a unit that always fails."""
    run_statements(conn, schema.M002_UNIT_FAILURES)


@migration
def m003_speaker_index(conn: Any) -> None:
    """An index of the full-text rows by speaker, for looking a question's names up."""
    run_statements(conn, schema.M003_SPEAKER_INDEX)


@migration
def m004_postings(conn: Any) -> None:
    """Postings of the full-text rows, for BM25 that reads only a question's stems."""
    run_statements(conn, schema.M004_POSTINGS)


@migration
def m005_organiser_stats(conn: Any) -> None:
    """SQLite's m009: the organisers' full text counted apart from the memories', for BM25."""
    run_statements(conn, schema.M005_ORGANISER_STATS)


@migration
def m006_search_form(conn: Any) -> None:
    """SQLite's m010: full-text rows of text holding letters unicode61 does not fold
    (ß, ø, ł ...), halfwidth or fullwidth forms, or the CJK characters now indexed one by
    one, indexed again in their search form (memcli.store.search.search_form)."""
    from memcli.store.pg.text import FullText
    from memcli.store.search import indexed_before_search_form

    text = FullText(conn, "")
    found = conn.execute(
        "SELECT id, space, kind, text, speaker FROM nodes"
        " WHERE octet_length(text) <> length(text) ORDER BY id"
    ).fetchall()
    by_space: dict[str, list[tuple[int, str, str, str | None]]] = {}
    for node, space, kind, body, speaker in found:
        if indexed_before_search_form(str(body)):
            by_space.setdefault(str(space), []).append((int(node), kind, str(body), speaker))
    for space, rows in by_space.items():
        text.index_texts(space, rows)
