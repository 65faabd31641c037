"""The search tables made at run time, and only here: one FTS5 table per space and the one
sqlite-vec table.

Neither can be made by a migration. A space's full-text table (`fts_<id>`, listed in
`fts_spaces`) is needed when the space's first node is written, so BM25's document statistics
come from that space alone: another space's words neither reorder its results nor leak through
them, and a small space never reads a large one's postings. The vector table's width is the
embedder's dimension, known only when the first vectors arrive (and changed by `reindex`).
The layout of both is part of the schema: changing it takes a new migration.

A space's organisers (topic segments, concepts, entities: what consolidation makes to lead
to memories) have a full-text table of their own beside it (`fts_<id>_org`, the same
layout), so their words never enter the statistics the memories' BM25 is computed from: a
segment's extractive summary repeats its turns' sentences, and in one table every store
ranked its turns differently after `consolidate` than before it (docs/consolidation.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.store.search import split_kinds
from memcli.store.sqlite import sql

if TYPE_CHECKING:
    from sqlite_utils import Database

TEXT_SPACES = "fts_spaces"
VECTORS = "vec_nodes"
# Kinds whose full-text rows live in the organisers' table, and its name's suffix.
ORGANISERS = "_org"  # the suffix of a space's organisers' table


def text_table(
    db: Database, space: str, create: bool = False, ddl: Callable[[str], str] | None = None
) -> str | None:
    """The name of a space's full-text table; made on first use when `create` (by `ddl`,
    a migration's frozen statement, or else today's layout, with its organisers' table)."""
    found = find_text_table(db.conn, space)
    if found is not None or not create:
        return found
    spaces = db.table(TEXT_SPACES)
    spaces.insert({"space": space})
    name = f"fts_{spaces.last_rowid}"
    db.execute((ddl or sql.create_text_table)(name))
    if ddl is None:
        db.execute(sql.create_text_table(name + ORGANISERS))
    return name


def tables_for(conn: Any, space: str, kinds: Sequence[str] | None) -> list[tuple[str, list[str]]]:
    """The full-text tables a search of these kinds (None: any) reads, each with the kinds
    asked of it (an empty list: any)."""
    memories = find_text_table(conn, space)
    if memories is None:
        return []
    return [(memories + (ORGANISERS if org else ""), wanted) for org, wanted in split_kinds(kinds)]


def find_text_table(conn: Any, space: str) -> str | None:
    """The name of a space's full-text table, or None: a plain read on the connection, as
    every search makes it."""
    row = conn.execute(sql.TEXT_TABLE_ID, [space]).fetchone()
    return f"fts_{int(row[0])}" if row is not None else None


def text_tables(db: Database) -> list[tuple[str, str]]:
    """(space, table name) of every space's full-text table."""
    return [
        (row["space"], f"fts_{int(row['id'])}")
        for row in db.table(TEXT_SPACES).rows_where(order_by="id")
    ]


def drop_text_table(db: Database, space: str, name: str) -> None:
    db.table(name).drop()
    db.table(name + ORGANISERS).drop(ignore=True)
    db.table(TEXT_SPACES).delete_where("space = ?", [space])


def has_vector_table(db: Database) -> bool:
    return db.execute(sql.VECTOR_TABLE).fetchone() is not None  # on every vector search


def create_vector_table(db: Database, dim: int) -> None:
    db.execute(sql.create_vector_table(dim))


def drop_vector_table(db: Database) -> None:
    db.table(VECTORS).drop(ignore=True)
