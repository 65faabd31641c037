"""The Postgres backend: the same store in one schema of a Postgres database, with pgvector.

`PgStore` is built like the SQLite store, one class per group of tables:

    PgBase      connections, transactions under the write lock, meta     (base.py)
    Words, FullText, Vectors   words of turns; tsvector + BM25; pgvector (words, text, vectors)
    Nodes       nodes, sources, provenance walks                          (nodes.py)
    Pruning     selection, cascade, removal, tombstones                   (prune.py)
    Edges, Work edges; model cache, runs, marks, advisory locks          (edges.py, work.py)
    Transfer    export/import rows, `memcli list` pages, counts          (transfer.py)
    Reindexing  the vectors of an unfinished reindex                      (reindex_rows.py)

docs/postgres.md says when to choose it and how to point memcli at a server.
"""

from __future__ import annotations

from memcli.errors import DatabaseError, NotFound
from memcli.store.pg.connect import connect, read_only_reason
from memcli.store.pg.migrations import migrate, pending
from memcli.store.pg.reindex_rows import Reindexing
from memcli.store.pg.transfer import Transfer
from memcli.store.pg.vectors import register_vector
from memcli.store.pg.version import current_version
from memcli.store.pg.work import Work
from memcli.store.target import shown

__all__ = ["PgStore", "open_pg_store"]


class PgStore(Transfer, Work, Reindexing):
    """A migrated connection to one memcli store in a Postgres database."""


def open_pg_store(url: str, read_only: str | None = None) -> PgStore:
    """Connect to the database at `url` and bring memcli's tables there up to date. A
    role or server that may not write, or `read_only` (why the caller opens it so; the
    store must exist then), gives a read-only store: the server refuses every write, and
    the store's own raise ReadOnlyStore."""
    conn = connect(url)
    try:
        reason = read_only_reason(conn) or read_only
        if read_only is not None:
            if current_version(conn, url) == 0:
                raise NotFound(f"no memory store at {shown(url)}", fix="check --db / MEMCLI_DB")
            conn.execute("SET default_transaction_read_only = on")
        if reason is not None and pending(conn, url):
            raise DatabaseError(
                f"{shown(url)} needs memcli's tables made or upgraded, and {reason}",
                fix="run memcli on it once as a role that may create tables in its schema",
            )
        if reason is None:
            schema = conn.execute("SELECT current_schema()").fetchone()[0]
            if schema is None:
                raise DatabaseError(
                    f"{shown(url)}: no schema of the search path exists",
                    fix="create the schema, or name an existing one in options=-csearch_path",
                )
            migrate(conn, url, str(schema))
        register_vector(conn)
    except BaseException:
        conn.close()
        raise
    return PgStore(conn, url, reason)
