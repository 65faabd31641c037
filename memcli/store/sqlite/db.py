"""Opening the SQLite file: the right sqlite3 module, sqlite-vec, pragmas, transactions."""

from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import DatabaseError, DiskFull
from memcli.store.sqlite import sql

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_S = 30.0


@cache
def sqlite_module() -> Any:
    """The sqlite3 module sqlite-utils picks: pysqlite3 where it is installed (on Linux, a
    SQLite that can load extensions), else the standard library's. Chosen here the same way,
    so that a read never pays for importing sqlite-utils (which imports numpy)."""
    try:
        return importlib.import_module("pysqlite3")
    except ImportError:
        import sqlite3

        return sqlite3


def wrap(conn: Any) -> Database:
    """sqlite-utils' view of an open connection (it changes no pragma and loads no plugin).

    Its writes join the caller's transaction as a savepoint, or run in their own.
    """
    from sqlite_utils import Database

    return Database(conn, recursive_triggers=False, execute_plugins=False)


NO_ROOM_BYTES = 1 << 20  # less free space than this: an I/O error is taken for a full disk


def disk_full(exc: BaseException, path: str | Path | None = None) -> bool:
    """Whether an error says the file system is out of space: SQLite's SQLITE_FULL, ENOSPC
    from the OS, or, on a disk (the one holding `path`) with next to no room left, an I/O
    error (SQLite reports a -shm file it cannot extend so) or sqlite-vec's report of a
    shadow-table write that failed (it replaces SQLITE_FULL with its own words)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name == "SQLITE_FULL" or (not name and "database or disk is full" in text):
        return True
    io_error = name.startswith("SQLITE_IOERR") or (not name and "disk I/O error" in text)
    vec_write = text.startswith(_VEC_WRITE_FAILED)
    return (io_error or vec_write) and path is not None and _no_room(Path(path))


# How sqlite-vec words a failed write to its shadow tables (the rowids, chunks and blobs).
_VEC_WRITE_FAILED = (
    "Internal sqlite-vec error: could not", "Internal sqlite-vec error: Could not insert",
    "could not write to", "could not open", "Could not insert",
)  # fmt: skip


def _no_room(path: Path) -> bool:
    try:
        fs = os.statvfs(path.absolute().parent)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < NO_ROOM_BYTES


def _main_file(conn: Any) -> str:
    """The path of the connection's database file, for messages."""
    try:
        return next((str(r[2]) for r in conn.execute(sql.DATABASE_LIST) if r[1] == "main"), "")
    except Exception:  # a message detail, never worth a second error
        return ""


def _create_private(path: Path) -> None:
    """Create the database file readable and writable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
    except FileExistsError:
        pass


MMAP_BYTES = 1 << 30  # an upper bound; only the file's actual size is mapped


def connect(path: str | Path, busy_timeout: float = BUSY_TIMEOUT_S) -> Any:
    """Open (creating if needed) the store file with WAL, foreign keys and sqlite-vec loaded."""
    sqlite3 = sqlite_module()
    target = Path(path).expanduser()
    if target.is_dir():
        raise DatabaseError(f"{target} is a directory, not a database file", fix="pass --db FILE")
    try:
        _create_private(target)
        conn = sqlite3.connect(
            str(target), timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except OSError as exc:
        if disk_full(exc):
            raise DiskFull(target, "there is no room to create the store") from None
        reason = f"{exc.strerror}: {exc.filename}" if exc.strerror else str(exc)
        raise _cannot_open(target, reason) from None
    except sqlite3.Error as exc:
        raise _cannot_open(target, str(exc)) from None
    _load_vec(conn)
    try:
        conn.execute(sql.BUSY_TIMEOUT.format(int(busy_timeout * 1000)))
        mode = conn.execute(sql.WAL_MODE).fetchone()[0]
        for pragma in sql.connection_pragmas(MMAP_BYTES):
            conn.execute(pragma)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if disk_full(exc, target):
            raise DiskFull(target, "there is no room to open the store") from None
        if not _not_a_database(exc):
            raise _cannot_open(target, str(exc)) from None
        raise _not_memcli(target, exc) from None
    if mode.lower() != "wal":
        conn.close()
        raise DatabaseError(f"cannot switch {target} to WAL mode (got {mode})")
    return conn


def read_only_reason(target: Path) -> str | None:
    """Why this process may read but not write an existing store file (None: it may write,
    or the file is missing or unreadable, which `connect` reports)."""
    if not target.is_file() or not os.access(target, os.R_OK):
        return None
    if os.statvfs(target).f_flag & os.ST_RDONLY:
        return "on a read-only file system"
    if not os.access(target, os.W_OK):
        return "the file is not writable"
    if not os.access(target.absolute().parent, os.W_OK):
        return "its directory is not writable"
    return None


def connect_read_only(target: Path, busy_timeout: float = BUSY_TIMEOUT_S) -> Any:
    """Open an existing store for reading only; nothing is written, not even a journal.

    A WAL-mode file needs its -shm index beside it; where that cannot be made (a read-only
    directory or mount) the file is opened immutable, which no writer can be changing there.
    """
    conn = open_unchanged(target, ("mode=ro", "mode=ro&immutable=1"), busy_timeout)
    _load_vec(conn)
    conn.execute(sql.BUSY_TIMEOUT.format(int(busy_timeout * 1000)))
    for pragma in sql.connection_pragmas(MMAP_BYTES):
        conn.execute(pragma)
    return conn


def open_unchanged(
    target: Path, modes: tuple[str, ...], busy_timeout: float = BUSY_TIMEOUT_S
) -> Any:
    """A plain read-only connection to `target` whose schema could be read, trying each of
    the URI `modes` in turn; DatabaseError when none could, or the file is not SQLite's."""
    sqlite3 = sqlite_module()
    uri = target.absolute().as_uri()
    error: Exception | None = None
    for mode in modes:
        try:
            conn = sqlite3.connect(
                f"{uri}?{mode}", uri=True, timeout=busy_timeout, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
        except sqlite3.Error as exc:
            raise _cannot_open(target, str(exc)) from None
        try:
            conn.execute(sql.SCHEMA_PROBE).fetchone()
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _not_a_database(exc):
                raise _not_memcli(target, exc) from None
            error = exc
    raise _cannot_open(target, str(error)) from None


def _not_memcli(target: Path, exc: Exception) -> DatabaseError:
    """The file is not an SQLite database at all (or its schema cannot be read)."""
    return DatabaseError(
        f"{target} is not a memcli database ({exc})",
        fix="pass --db the path of a memcli store, or a new path for `memcli ingest` to create one",
    )


def _not_a_database(exc: Exception) -> bool:
    """Whether SQLite failed on the file's content (rather than on opening or writing it)."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    return name in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or (
        not name and ("not a database" in text or "malformed" in text)
    )


def _cannot_open(target: Path, reason: str) -> DatabaseError:
    """The file (or the -wal and -shm files SQLite keeps beside it) cannot be opened."""
    where = target.absolute().parent
    return DatabaseError(
        f"cannot open database {target} ({reason})",
        fix=f"memcli writes {target.name} and its -wal and -shm files in {where}: "
        "check that the directory exists, is writable and not on read-only media, "
        "or pass --db a path on a writable disk",
    )


def _vec_extension() -> str:
    """The path of sqlite-vec's loadable extension, found without importing its Python
    package (which imports numpy): the file `vec0` beside the package's __init__."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise ImportError("the sqlite-vec package is not installed")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _load_vec(conn: Any) -> None:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension())
        conn.enable_load_extension(False)
    except Exception as exc:  # which error depends on how sqlite3 was built
        raise DatabaseError(
            f"cannot load the sqlite-vec extension ({exc})",
            fix="on Linux install pysqlite3-binary (pip install pysqlite3-binary); "
            "elsewhere use a Python whose sqlite3 can load extensions",
        ) from None


def _read_only_sidecar(conn: Any, exc: Exception) -> DatabaseError:
    """Why a write cannot start on a store opened for writing: most often a -shm (or -wal)
    file that an earlier reader (another user, a read-only mount) left unwritable."""
    target = Path(conn.execute(sql.DATABASE_FILE).fetchone()[2])
    stuck = [
        Path(f"{target}{suffix}")
        for suffix in ("-shm", "-wal")
        if Path(f"{target}{suffix}").exists() and not os.access(f"{target}{suffix}", os.W_OK)
    ]
    if not stuck:
        return DatabaseError(
            f"cannot start a write: {exc}",
            fix=f"check that {target}, its -wal and -shm files and their directory are "
            "writable by you",
        )
    shm = Path(f"{target}-shm")
    return DatabaseError(
        f"cannot write {target}: {', '.join(p.name for p in stuck)} beside it is read-only "
        "for you (left by an earlier reader: another user, or a read-only mount)",
        fix=f"make it writable (chown or chmod u+w {stuck[0]}); or, when no process has the "
        f"store open, delete {shm.name} ({shm}): SQLite makes it again from the -wal. "
        "Never delete the -wal, which may hold the latest writes",
    )


@contextmanager
def transaction(conn: Any, retries: int = 3) -> Iterator[Any]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; waits out a busy writer."""
    sqlite3 = sqlite_module()
    for attempt in range(retries + 1):
        try:
            conn.execute(sql.BEGIN_WRITE)
            break
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc):
                raise _read_only_sidecar(conn, exc) from None
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise DatabaseError(f"cannot start a write: {exc}") from None
            if attempt == retries:
                raise DatabaseError(
                    "the database stayed locked by another writer",
                    fix="wait for the other memcli process (ingest/consolidate) to finish",
                ) from None
            time.sleep(0.2 * (attempt + 1))
    try:
        yield conn
    except BaseException as exc:
        _roll_back(conn)
        path = _main_file(conn)
        if disk_full(exc, path or None):
            raise DiskFull(path) from None
        raise
    else:
        try:
            conn.execute(sql.COMMIT)
        except sqlite3.OperationalError as exc:
            _roll_back(conn)
            path = _main_file(conn)
            if disk_full(exc, path or None):
                raise DiskFull(path) from None
            raise DatabaseError(f"commit failed: {exc}") from None


def _roll_back(conn: Any) -> None:
    """Roll back the open transaction, if SQLite has not done so itself (it does after a
    failed write such as a full disk: ROLLBACK would then fail with "no transaction")."""
    if conn.in_transaction:
        conn.execute(sql.ROLLBACK)
