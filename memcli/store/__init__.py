"""The one place with SQL: a memcli store is one SQLite file, or a Postgres database.

`Store` (store/interface.py) is what the rest of memcli calls; `open_store(target)` opens a
SQLite file for a path and a Postgres database for a `postgresql://` URL (memcli.store.pg,
whose driver comes with the `postgres` extra and is imported only then).

`SqliteStore` is the sum of one class per group of tables, each standing on the one below it:

    StoreBase   connection, sqlite-utils view, transactions, meta      (base.py)
    FullText, Vectors   the search tables made at run time             (fts.py, vectors.py)
    Words       the words of turns, counted and embedded                (words.py)
    Nodes       nodes, sources and their links; keeps both search tables in step
    Pruning     forgetting: selection, cascade, removal                 (prune.py)
    Forgotten   tombstones of forgotten turns, so they stay forgotten   (forgotten.py)
    Listing     filtered, paged browsing for `memcli list`              (listing.py)
    Transfer    whole-space reads and id-keeping writes: export/import  (transfer.py)
    Edges, Work, Stats   edges; cache, runs, marks, locks; counts
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import DatabaseError, NotFound
from memcli.store.db import connect, connect_read_only, read_only_reason, refuse_foreign
from memcli.store.edges import Edges
from memcli.store.forgotten import Forgotten
from memcli.store.listing import Listing
from memcli.store.migrations import migrate, pending_migrations
from memcli.store.prune import Pruning
from memcli.store.stats import Stats
from memcli.store.target import file_path, is_url, remove_new
from memcli.store.transfer import Transfer
from memcli.store.work import CONSOLIDATION_LOCK, Work

if TYPE_CHECKING:
    from memcli.store.interface import Store

__all__ = ["CONSOLIDATION_LOCK", "SqliteStore", "Store", "open_store"]


def __getattr__(name: str) -> Any:
    # The protocol is for type checking and the contract tests; building a Protocol class
    # costs a cold command a few milliseconds, so it is imported only when asked for.
    if name == "Store":
        from memcli.store.interface import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SqliteStore(Pruning, Forgotten, Listing, Transfer, Edges, Work, Stats):
    """A migrated connection to one memcli database file."""


#: Why a store opened with `read_only=True` refuses writes (ReadOnlyStore's message).
READ_ONLY_ASKED = "it was opened for reading only"


def open_store(target: str | os.PathLike[str], read_only: bool = False) -> Store:
    """Open or create the store at `target`, a file path or a `postgresql://` URL, and bring
    its schema up to date. A store this process may not write, or any store when
    `read_only` (which must exist then), is opened read-only: the database refuses every
    write, and the store's own raise ReadOnlyStore."""
    if is_url(target):
        from memcli.store.pg import open_pg_store

        return open_pg_store(str(target), READ_ONLY_ASKED if read_only else None)
    return _open_sqlite(file_path(target), read_only)


def _open_sqlite(target: Path, read_only: bool) -> SqliteStore:
    """Open or create the SQLite store file at `target`."""
    refuse_foreign(target)
    read_only_why = read_only_reason(target)
    if read_only and read_only_why is None:
        if not target.is_file():
            raise NotFound(f"no memory store at {target}", fix="check --db / MEMCLI_DB")
        read_only_why = READ_ONLY_ASKED
    return _opened(target, read_only_why)


def _opened(target: Path, read_only: str | None) -> SqliteStore:
    """The store at `target`, opened for writing unless `read_only` says why not."""
    new = not target.exists()
    try:
        conn = connect(target) if read_only is None else connect_read_only(target)
    except BaseException:
        if new:  # e.g. a full disk: no empty file left where a store was to be
            remove_new(target)
        raise
    try:
        if read_only is not None and pending_migrations(conn):
            raise DatabaseError(
                f"{target} needs a schema upgrade that writes it, and {read_only}",
                fix="run memcli on it once with write access (e.g. `memcli inspect` as its "
                "owner), or copy it somewhere writable and pass --db the copy",
            )
        migrate(conn)
    except BaseException:
        conn.close()
        if new:
            remove_new(target)
        raise
    return SqliteStore(conn, target, read_only)
