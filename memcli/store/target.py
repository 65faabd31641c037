"""Where a store lives: a file path (SQLite) or a `postgresql://` URL (Postgres).

`--db`, MEMCLI_DB and config `db:` all take either. Everything that treats the target as a
file (expanding ~, "does it exist", removing a half-made store, messages) asks here first.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memcli.text import hide_query_secrets

URL_SCHEMES = ("postgresql://", "postgres://")
_PASSWORD = re.compile(r"^([a-z]+://[^:/?#@]*:)[^@/?#]*@", re.IGNORECASE)


def is_url(target: str | os.PathLike[str]) -> bool:
    """Whether the target names a Postgres database rather than a file."""
    return isinstance(target, str) and target.lower().startswith(URL_SCHEMES)


def shown(target: str | os.PathLike[str]) -> str:
    """The target fit for a message: a URL without its password, a path as given."""
    if not is_url(target):
        return str(target)
    return hide_query_secrets(_PASSWORD.sub(r"\1***@", str(target)))


def file_path(target: str | os.PathLike[str]) -> Path:
    """The store file a non-URL target names, with ~ expanded."""
    return Path(target).expanduser()


def exists(target: str | os.PathLike[str]) -> bool:
    """Whether a store may already be there: the file exists, or (a URL) a server database,
    which memcli never creates or removes itself."""
    return is_url(target) or file_path(target).exists()


def remove_new(target: str | os.PathLike[str]) -> None:
    """Remove a store file this process was creating, with SQLite's files beside it (a
    database on a server is left alone: memcli never drops one)."""
    if is_url(target):
        return
    path = file_path(target)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
