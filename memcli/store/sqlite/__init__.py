"""The SQLite backend: a memcli store in one file, with FTS5 and sqlite-vec.

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
    Reindexing  the vectors of an unfinished reindex                    (reindex_rows.py)
"""

from __future__ import annotations

from pathlib import Path

from memcli.errors import DatabaseError, NotFound
from memcli.store.sqlite.db import connect, connect_read_only, read_only_reason
from memcli.store.sqlite.edges import Edges
from memcli.store.sqlite.forgotten import Forgotten
from memcli.store.sqlite.listing import Listing
from memcli.store.sqlite.migrations import migrate, pending_migrations
from memcli.store.sqlite.probe import STORE, examine
from memcli.store.sqlite.prune import Pruning
from memcli.store.sqlite.reindex_rows import Reindexing
from memcli.store.sqlite.stats import Stats
from memcli.store.sqlite.transfer import Transfer
from memcli.store.sqlite.work import Work
from memcli.store.target import remove_new

__all__ = ["SqliteStore", "open_sqlite_store"]


class SqliteStore(Pruning, Forgotten, Listing, Transfer, Edges, Work, Stats, Reindexing):
    """A migrated connection to one memcli database file."""


def open_sqlite_store(
    target: Path, read_only: str | None = None, create: bool = True
) -> SqliteStore:
    """Open the SQLite store file at `target` and bring its schema up to date; with
    `create`, make a store there when the path is missing or the file empty. A file this
    process may not write, or `read_only` (why the caller opens it so; it never creates),
    gives a read-only store. Another program's database is refused, whatever is asked."""
    if examine(target) != STORE and (read_only is not None or not create):
        what = "the file is empty" if target.exists() else "the file does not exist"
        raise NotFound(
            f"no memory store at {target} ({what})",
            fix="ingest something first (memcli ingest FILE), or check --db / MEMCLI_DB",
        )
    read_only_why = read_only_reason(target)
    if read_only is not None and read_only_why is None:
        read_only_why = read_only
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
