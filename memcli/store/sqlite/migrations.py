"""The SQLite store's migrations, numbered and append-only (memcli.store.migrations runs
them). Never edit one that has shipped: add the next.

`PRAGMA user_version` counts the migrations a file has had; its write transactions are
BEGIN IMMEDIATE, which take the file's write lock, so no further turn-taking is needed.

A migration is a function of a sqlite-utils `Database`, so a new one creates or transforms
tables with `db[name].create(...)`, `.add_column(...)`, `.transform(...)`. The first three
predate that and run their shipped DDL verbatim (sqlite-utils cannot write AUTOINCREMENT,
WITHOUT ROWID or partial indexes, and their effect must never change).

sqlite-utils' own `Migrations` is not used: it records applied names in a
`_sqlite_migrations` table rather than `user_version` (so files written so far would look
unmigrated), opens a deferred transaction without re-checking what another process applied
first, and cannot tell a file migrated by a newer memcli.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memcli.store import migrations as runner
from memcli.store.migrations import Chain, Step, run_statements
from memcli.store.sqlite import ddl, search_tables, sql
from memcli.store.sqlite.db import transaction, wrap

if TYPE_CHECKING:
    from sqlite_utils import Database

MIGRATIONS: Chain = []


def migration(fn: Callable[[Database], None]) -> Callable[[Database], None]:
    """Register `fn` as the next migration; its name must start with the next number."""
    runner.append(MIGRATIONS, fn.__name__, as_step(fn))
    return fn


def as_step(fn: Callable[[Database], None]) -> Step:
    """A migration function made to run on a connection."""
    return lambda conn: fn(wrap(conn))


def current_version(conn: Any) -> int:
    """How many migrations this file has had applied."""
    return int(conn.execute(sql.USER_VERSION).fetchone()[0])


class _Ledger(runner.Ledger):
    """The count in `PRAGMA user_version`, the stamps in `meta`."""

    def version(self) -> int:
        return current_version(self.conn)

    def transaction(self) -> AbstractContextManager[Any]:
        return transaction(self.conn)

    def set_version(self, number: int) -> None:
        self.conn.execute(sql.SET_USER_VERSION.format(number))

    def set_meta(self, key: str, value: str) -> None:
        wrap(self.conn).table("meta").insert({"key": key, "value": value}, replace=True)


def pending_migrations(conn: Any, chain: Sequence[tuple[str, Step]] = MIGRATIONS) -> int:
    """How many migrations the file has yet to have (0 for a newer file too)."""
    return runner.pending(current_version(conn), chain)


def migrate(conn: Any, chain: Sequence[tuple[str, Step]] = MIGRATIONS) -> int:
    """Apply every pending migration, each in its own transaction; return the new version."""
    return runner.migrate(_Ledger(conn), chain)


@migration
def m001_initial(db: Database) -> None:
    run_statements(db, ddl.M001_INITIAL)


@migration
def m002_consolidation(db: Database) -> None:
    run_statements(db, ddl.M002_CONSOLIDATION)


@migration
def m003_fts_per_space(db: Database) -> None:
    """One full-text table per space, so BM25 statistics never mix spaces."""
    db.execute(ddl.M003_FTS_SPACES)
    for (space,) in db.execute(ddl.M003_OLD_SPACES).fetchall():
        table = search_tables.text_table(db, space, create=True, ddl=ddl.m003_text_table)
        db.execute(ddl.m003_copy_space(str(table)), [space])
    db.table("nodes_fts").drop()


@migration
def m004_run_extra_counts(db: Database) -> None:
    """Stage-specific counts of a run (the memory gate's decisions and the tokens it saved,
    entities merged, facts superseded ...) as a JSON object beside the shared counters."""
    db.table("runs").add_column("extra", str, not_null_default="{}")


@migration
def m005_turn_context(db: Database) -> None:
    """Full-text rows of turns gain a `context` column: the opening words of the turns
    before them in their session (memcli.store.sqlite.fts)."""
    from memcli.store.sqlite.fts import write_context

    for space, table in search_tables.text_tables(db):
        rows = db.execute(ddl.m005_old_rows(table)).fetchall()
        db.table(table).drop()
        db.execute(ddl.m005_text_table(table))
        db.conn.executemany(ddl.m005_put_rows(table), rows)
        turns = [int(r[0]) for r in db.execute(ddl.M005_TURNS, [space]).fetchall()]
        write_context(db, turns)


@migration
def m006_words(db: Database) -> None:
    """The words of each space's turns, counted, for finding related words (memcli.store.
    words); their vectors come with the next consolidation."""
    from memcli.store.sqlite.words import count_words

    db.execute(ddl.M006_WORDS)
    for space, table in search_tables.text_tables(db):
        texts = (str(r[0]) for r in db.execute(ddl.m006_turn_texts(table)).fetchall())
        count_words(db.conn, space, texts, 1)


@migration
def m007_forgotten(db: Database) -> None:
    """Tombstones of forgotten turns: the content key of each turn `prune` removed, and no
    text, so that ingesting its file again does not store it again (memcli.store.prune)."""
    db.table("forgotten").create(
        {"space": str, "key": str, "forgotten_at": str},
        pk=("space", "key"),
        not_null={"space", "key", "forgotten_at"},
    )


@migration
def m008_unit_failures(db: Database) -> None:
    """How many consolidation runs each node's unit of work failed in, per stage (replies
    that never validated), so that one that always fails is given up after a few runs."""
    run_statements(db, ddl.M008_UNIT_FAILURES)


@migration
def m009_organiser_text(db: Database) -> None:
    """Topic segments, concepts and entities move to a full-text table of their own per
    space, so their words leave the statistics the memories' BM25 is computed from."""
    for _space, table in search_tables.text_tables(db):
        organisers = f"{table}_org"
        db.execute(ddl.m005_text_table(organisers))
        run_statements(db, ddl.m009_move_rows(table, organisers))


@migration
def m010_search_form(db: Database) -> None:
    """Full-text rows of text holding letters unicode61 does not fold (ß, ø, ł ...),
    halfwidth or fullwidth forms, or the CJK characters now indexed one by one, indexed
    again in their search form (memcli.store.search.search_form), with the context of the
    turns after them."""
    from pathlib import Path

    from memcli.store.search import indexed_before_search_form
    from memcli.store.sqlite.fts import FullText

    text = FullText(db.conn, Path(db.conn.execute("PRAGMA database_list").fetchone()[2]))
    for space, _table in search_tables.text_tables(db):
        rows = [
            (int(node), str(kind), str(body), speaker)
            for node, kind, body, speaker in db.execute(ddl.M010_NOT_ASCII, [space])
            if indexed_before_search_form(str(body))
        ]
        if rows:
            text.index_texts(space, rows)
