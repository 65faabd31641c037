"""Writing a file the user named with `-o`: a regular file is replaced whole, anything else
is written into.

A regular file (or a new one) gets a new private file in its directory, renamed over it
once complete, so a failed write leaves the old file and no half-written one; a symbolic
link stays a link, and its target is what is replaced. A device, a FIFO, or a file the
caller handed over as one of its open descriptors (`/dev/stdout`, `/dev/fd/3`,
`/proc/self/fd/1`: a shell redirection) is written into and left as it was: replacing it
would send nothing to the reader, and as root would turn `/dev/stdout` into a file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

# Names under these stand for descriptors or devices the caller chose, never for a file
# memcli may replace.
_DESCRIPTOR_DIRS = ("/dev/", "/proc/")


@contextmanager
def replacing_output(path: str) -> Iterator[BinaryIO]:
    """A binary stream onto `path`, written as the module says; OSError when it cannot be."""
    into = _write_into(path)
    if into is not None:
        with into:
            yield into
        return
    target = Path(os.path.realpath(path))  # through any symbolic links, to what they name
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as raw:
            yield raw
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _write_into(path: str) -> BinaryIO | None:
    """The stream onto `path` when it is written into rather than replaced, else None."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None  # a new file (or a link to one): created by the rename
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", path)
    regular = stat.S_ISREG(info.st_mode)
    if regular and not _names_a_descriptor(path):
        return None
    own = standard_stream(path, info)
    if own is not None:  # share its offset (and its O_APPEND) with the rest of our output
        return os.fdopen(os.dup(own), "wb")
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | (os.O_APPEND if regular else 0)
    return os.fdopen(os.open(path, flags), "wb")


def _names_a_descriptor(path: str) -> bool:
    """Whether `path`, or a symbolic link it leads through, lies under /dev or /proc."""
    current = os.path.abspath(path)
    for _ in range(40):  # as many links as the kernel follows
        if current.startswith(_DESCRIPTOR_DIRS):
            return True
        try:
            link = os.readlink(current)
        except OSError:  # not a link (any more)
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return False


def standard_stream(path: str, info: os.stat_result | None = None) -> int | None:
    """1 or 2 when `path` (`/dev/stdout`, `/proc/self/fd/2`, a terminal) is the file this
    process's stdout or stderr writes to, else None."""
    if info is None:
        try:
            info = os.stat(path)
        except OSError:
            return None
    for fd in (1, 2):
        try:
            mine = os.fstat(fd)
        except OSError:
            continue
        if (mine.st_dev, mine.st_ino) == (info.st_dev, info.st_ino):
            return fd
    return None
