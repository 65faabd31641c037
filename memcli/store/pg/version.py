"""How many of its migrations a Postgres store has had (`meta`'s `schema.version`), read
apart from the migrations themselves so that the store's classes need not import them."""

from __future__ import annotations

from typing import Any

from memcli.errors import DatabaseError
from memcli.store.pg.connect import here
from memcli.store.target import shown

VERSION_KEY = "schema.version"


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
