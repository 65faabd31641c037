"""What the file --db names is, looked at before memcli opens it for writing: nothing yet
(a store may be made there), a memcli store, or another program's database (refused).

Looking changes nothing. Where no -wal file is beside it, the main file holds the whole
database, so it is opened immutable: SQLite then makes no -wal or -shm file, which it
otherwise would beside a WAL-mode file even to read it. A -wal file beside it may hold the
latest writes (a store whose last writer was killed), so it is then read through them.
"""

from __future__ import annotations

from pathlib import Path

from memcli.errors import DatabaseError
from memcli.store.sqlite import sql
from memcli.store.sqlite.db import connect_read_only, open_unchanged

BLANK = "blank"  # missing, 0 bytes, or an SQLite file holding nothing: a store may be made
STORE = "store"  # a memcli store (a `meta` table and a migration count)

_FIX = "pass --db the path of a memcli store, or a new path for `memcli ingest` to create one"


def examine(target: Path) -> str:
    """BLANK or STORE; DatabaseError for another program's SQLite database, including one
    that holds no table yet but carries that program's user_version or application_id."""
    wal = Path(f"{target}-wal")
    if not target.is_file() or (target.stat().st_size == 0 and not wal.exists()):
        return BLANK
    modes = ("mode=ro", "mode=ro&immutable=1") if wal.exists() else ("mode=ro&immutable=1",)
    conn = open_unchanged(target, modes)
    try:
        version = int(conn.execute(sql.USER_VERSION).fetchone()[0])
        application = int(conn.execute(sql.APPLICATION_ID).fetchone()[0])
        names = [row[0] for row in conn.execute(sql.SCHEMA_NAMES)]
    finally:
        conn.close()
    if version > 0 and sql.META_TABLE in names:
        return STORE
    if not names and version == 0 and application == 0:
        return BLANK
    raise DatabaseError(
        f"{target} is an SQLite database of another program ({_holding(names, version)}), "
        "not a memcli store; memcli leaves it as it is",
        fix=_FIX,
    )


def _holding(names: list[str], version: int) -> str:
    """What the file holds, for the message: its first tables, or its marks."""
    if not names:
        mark = f"user_version {version}" if version else "an application_id"
        return f"it has {mark} and no table"
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"it holds {shown}"


INTEGRITY_CHECK = "PRAGMA integrity_check"
INTEGRITY_SHOWN = 20  # SQLite stops at 100 problems; the first few say enough


def integrity_problems(target: Path) -> list[str] | None:
    """What SQLite's integrity check finds wrong in the store file at `target`, run by the
    SQLite memcli uses, with sqlite-vec loaded ([] for none); None when there is no store
    there yet. Nothing is written; another program's file is refused as `examine` does."""
    if examine(target) != STORE:
        return None
    conn = connect_read_only(target)
    try:
        rows = conn.execute(INTEGRITY_CHECK).fetchall()
    finally:
        conn.close()
    problems = [str(row[0]) for row in rows]
    return [] if problems == ["ok"] else problems[:INTEGRITY_SHOWN]
