"""Opening the files MCP clients name (the `ingest` tool, `forget` by source): regular files
only, inside the allowed directories as they are when opened, and read with a deadline.

The checked path (resolved, no symbolic link left in it) is opened one component at a time
from the root, each with O_NOFOLLOW: a directory swapped for a link between the check and
the open makes the open fail instead of leading outside. The file is opened non-blocking
and refused unless it is a regular file, so a FIFO without a writer, a device or a socket
cannot hold a call. Reads run on a helper thread: one that returns nothing for
READ_TIMEOUT seconds (a hung network mount, a /proc file that waits for data) fails the
call; the helper closes the file whenever that read returns.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import operator
import os
import queue
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcli.errors import InvalidInput, NotFound

READ_TIMEOUT = 30.0  # seconds a single read of a client-named file may take
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


class ReadStalled(InvalidInput):
    """A read of a client-named file returned nothing within its deadline."""


def open_regular(real: str, shown: str, *, within: bool, timeout: float = READ_TIMEOUT) -> Any:
    """The regular file at `real` (a resolved absolute path) for reading, as a file object
    whose reads time out; opened one component at a time without following links when
    `within` (the path was checked against allowed directories). `shown` names it in errors."""
    try:
        fd = _open_no_follow(real) if within else _open_nonblocking(real)
    except FileNotFoundError:
        raise NotFound(f"{shown}: no such file", fix="check the path") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and within:
            raise InvalidInput(
                [f"{shown}: the path changed while it was opened (a directory in it is now a "
                 "symbolic link); nothing was read"],
                fix="call the tool again once the directory stays put",
            ) from None  # fmt: skip
        raise NotFound(f"{shown}: cannot read the file ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise InvalidInput(
                [f"{shown}: {kind}, not a regular file; the MCP server reads only regular files"],
                fix="pass a conversation file; to read from a pipe, run `memcli ingest` in a shell",
            )
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return TimedFile(io.FileIO(fd, "rb"), shown, timeout)


def file_digest(real: str, *, within: bool, timeout: float = READ_TIMEOUT) -> str | None:
    """The sha256 of the regular file at `real` (as ingest records it), None when it cannot
    be read as one."""
    digest = hashlib.sha256()
    try:
        with open_regular(real, real, within=within, timeout=timeout) as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except (NotFound, InvalidInput, OSError):
        return None
    return digest.hexdigest()


# Non-blocking, so that opening a FIFO returns at once (it is then refused); the others
# where the platform has them.
_FILE_FLAGS = functools.reduce(
    operator.or_,
    (getattr(os, name, 0) for name in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY")),
    os.O_RDONLY,
)


def _open_nonblocking(real: str) -> int:
    return os.open(real, _FILE_FLAGS)


def _open_no_follow(real: str) -> int:
    """A descriptor of `real`, reached from / through directories that are no links now."""
    if os.open not in os.supports_dir_fd:  # no openat here: the path as resolved
        return _open_nonblocking(real)
    parts = Path(real).parts
    # O_PATH: a directory the user may search but not list (mode 0711) can be passed too.
    lookup = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
    here = os.open(parts[0], lookup)
    try:
        for name in parts[1:-1]:
            inner = os.open(name, lookup | os.O_NOFOLLOW, dir_fd=here)
            os.close(here)
            here = inner
        return os.open(parts[-1], _FILE_FLAGS | os.O_NOFOLLOW, dir_fd=here)
    finally:
        os.close(here)


class TimedFile(io.RawIOBase):
    """A file whose reads and seeks run on a helper thread, each waited for at most
    `timeout` seconds; after one times out, every later call fails at once."""

    def __init__(self, file: io.FileIO, name: str, timeout: float) -> None:
        super().__init__()
        self._file, self._name, self._timeout = file, name, timeout
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], _Reply] | None]
        self._requests = queue.SimpleQueue()
        self._stalled: ReadStalled | None = None
        threading.Thread(target=self._serve, name="memcli mcp read", daemon=True).start()

    def _serve(self) -> None:
        try:
            while (request := self._requests.get()) is not None:
                work, reply = request
                try:
                    reply.value = work()
                except BaseException as exc:  # handed to the caller
                    reply.value = exc
                reply.done.set()
        finally:
            self._file.close()

    def _call(self, work: Callable[[], Any]) -> Any:
        if self._stalled is not None:
            raise self._stalled
        reply = _Reply()
        self._requests.put((work, reply))
        if not reply.done.wait(self._timeout):
            self._stalled = ReadStalled(
                [f"{self._name}: a read returned nothing for {self._timeout:g} s; gave up"],
                fix="check that the file's storage answers (a network mount, a special file "
                "in /proc); to ingest it anyway, copy it somewhere local first",
            )
            raise self._stalled
        if isinstance(reply.value, BaseException):
            raise reply.value
        return reply.value

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data: bytes = self._call(lambda: self._file.read(len(buffer)))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return int(self._call(lambda: self._file.seek(offset, whence)))

    def tell(self) -> int:
        return int(self._call(self._file.tell))

    def close(self) -> None:
        if not self.closed:
            self._requests.put(None)  # the helper closes the file after any read in progress
        super().close()


class _Reply:
    """The result of one call made on the helper thread."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
