"""The one place with SQL: a memcli store is one SQLite file, or a Postgres database.

`Store` (interface.py) is what the rest of memcli calls; `open_store(target)` opens a SQLite
file for a path (memcli.store.sqlite) and a Postgres database for a `postgresql://` URL
(memcli.store.pg, whose driver comes with the `postgres` extra and is imported only then).

The two backends sit side by side and never import each other. What both use is here, in
the module named after its topic (each backend has a module of the same name for its own
half): base (time stamps, id batches, `with`), nodes and edges (rows as read), search (a
question's terms, CJK text, the turn context, the vector search's limit), words, listing
(NodeFilter), prune (what lives on what, the cascade, tombstones), work (run counters,
cached replies, the consolidation lock), transfer (what a dump carries), migrations (the
one runner of both backends' chains), and target (a path or a URL). A method whose body is
the same in both backends is written once, as a mixin here over the primitives each
backend provides.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from memcli.store.sqlite import SqliteStore, open_sqlite_store
from memcli.store.sqlite.probe import integrity_problems
from memcli.store.target import file_path, is_url
from memcli.store.work import CONSOLIDATION_LOCK

if TYPE_CHECKING:
    from memcli.store.interface import Store

__all__ = ["CONSOLIDATION_LOCK", "SqliteStore", "Store", "check_integrity", "open_store"]


def __getattr__(name: str) -> Any:
    # The protocol is for type checking and the contract tests; building a Protocol class
    # costs a cold command a few milliseconds, so it is imported only when asked for.
    if name == "Store":
        from memcli.store.interface import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Why a store opened with `read_only=True` refuses writes (ReadOnlyStore's message).
READ_ONLY_ASKED = "it was opened for reading only"


def open_store(
    target: str | os.PathLike[str], read_only: bool = False, create: bool = True
) -> Store:
    """Open the store at `target`, a file path or a `postgresql://` URL, and bring its schema
    up to date; with `create` (and not `read_only`), a missing or empty file becomes a new
    store, else it is NotFound. A store this process may not write, or any store when
    `read_only`, is opened read-only: the database refuses every write, and the store's own
    raise ReadOnlyStore."""
    asked = READ_ONLY_ASKED if read_only else None
    if is_url(target):
        from memcli.store.pg import open_pg_store

        return open_pg_store(str(target), asked)
    return open_sqlite_store(file_path(target), asked, create)


def check_integrity(target: str | os.PathLike[str]) -> list[str] | None:
    """What SQLite's integrity check finds wrong in the store file at `target` ([] for
    nothing), run by the SQLite memcli uses; None for a Postgres URL (the server keeps its
    own pages) or a path where there is no store yet."""
    if is_url(target):
        return None
    return integrity_problems(file_path(target))
