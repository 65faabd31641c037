"""The Postgres backend: the same store in one schema of a Postgres database, with pgvector.

`PgStore` is built like the SQLite store, one class per group of tables:

    PgBase      connections, transactions under the write lock, meta     (base.py)
    Words, FullText, Vectors   words of turns; tsvector + BM25; pgvector (words, text, vectors)
    Nodes       nodes, sources, provenance walks                          (nodes.py)
    Pruning     selection, cascade, removal, tombstones                   (prune.py)
    Edges, Work edges; model cache, runs, marks, advisory locks          (edges.py, work.py)
    Transfer    export/import rows, `memcli list` pages, counts          (transfer.py)

docs/postgres.md says when to choose it and how to point memcli at a server.
"""

from __future__ import annotations

from memcli.errors import DatabaseError
from memcli.store.pg.connect import connect, read_only_reason
from memcli.store.pg.migrate import migrate, pending
from memcli.store.pg.transfer import Transfer
from memcli.store.pg.vectors import register_vector
from memcli.store.pg.work import Work
from memcli.store.target import shown

__all__ = ["PgStore", "open_pg_store"]


class PgStore(Transfer, Work):
    """A migrated connection to one memcli store in a Postgres database."""


def open_pg_store(url: str) -> PgStore:
    """Connect to the database at `url` and bring memcli's tables there up to date. A
    role or server that may not write gets a read-only store: reads work, writes raise
    ReadOnlyStore."""
    conn = connect(url)
    try:
        read_only = read_only_reason(conn)
        if read_only is not None and pending(conn, url):
            raise DatabaseError(
                f"{shown(url)} needs memcli's tables made or upgraded, and {read_only}",
                fix="run memcli on it once as a role that may create tables in its schema",
            )
        if read_only is None:
            schema = str(conn.execute("SELECT current_schema()").fetchone()[0])
            migrate(conn, url, schema)
        register_vector(conn)
    except BaseException:
        conn.close()
        raise
    return PgStore(conn, url, read_only)
