"""Reading one input with bounded memory: a file, stdin, gzip or a chat export's zip.

The content is pulled in chunks and hashed as it goes. A line is held up to a size limit
and never whole, so `/dev/zero` or a huge file without newlines costs one limit's worth
of memory; a whole JSON document is read only up to its own limit. A NUL byte ends the
read at once: a text conversation never holds one, and a binary file may never end.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memcli.errors import InvalidInput, NotFound
from memcli.readers.directory import directory_fix
from memcli.readers.jsonl import limit_text

CHUNK = 1 << 16
HEAD_BYTES = 256  # kept of a line too long to keep: enough to see who is speaking
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
EXPORT_MEMBER = "conversations.json"  # what ChatGPT's and Claude's export zips hold
STDIN_NAME = "<stdin>"
_NOT_SPACE = re.compile(rb"[^ \t\r\n]")

# Opens a named input for reading (the default opens it by name; the MCP server's opener
# takes only regular files inside its allowed directories); raises memcli errors.
Opener = Callable[[str], BinaryIO]


@dataclass(frozen=True)
class Limits:
    """How much of an input is held at once (`ingest.*` settings)."""

    message_bytes: int = 1 << 20
    document_bytes: int = 256 << 20


@dataclass(frozen=True)
class Oversize:
    """A line longer than the limit: only its length and first bytes were kept."""

    size: int
    head: bytes = b""


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read to look at them."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size], self._head = self._head[:size], self._head[size:]
            return size
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class Input:
    """One input's content (decompressed), read in chunks, hashed and checked as read."""

    def __init__(
        self, name: str, raw: BinaryIO, describe: str = "", *, text: bool = False,
        content_name: str = "", owned: BinaryIO | None = None,
    ) -> None:  # fmt: skip
        self.name = name
        self._owned = owned  # the file opened for this input, closed with it
        self.content_name = content_name or name  # what the content is called (its suffix)
        self.describe = describe  # how errors name the stream ("gzip data", "zip archive")
        self._raw = raw
        self._text = text  # refuse a NUL byte (binary data) as soon as it is read
        self._hash = hashlib.sha256()
        # Bytes read and not yet consumed; deleting from the front of a bytearray is cheap.
        self._buffer = bytearray()
        self._eof = False
        self._lines_read = 0  # newlines in every chunk read so far
        self._column = 0  # bytes since the last newline, at the end of what was read

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owned is not None:
            self._owned.close()

    def sha256(self) -> str:
        """Hash of the whole content (reads what is left)."""
        while self._pull():
            self._buffer.clear()
        return self._hash.hexdigest()

    def peek(self, size: int) -> bytes:
        """Up to `size` bytes from the current position, without consuming them."""
        while len(self._buffer) < size and self._pull():
            pass
        return bytes(self._buffer[:size])

    def skip(self, size: int) -> None:
        """Consume `size` bytes already peeked (a byte-order mark)."""
        del self._buffer[:size]

    def read_all(self, limit: int, what: str) -> bytearray:
        """The rest of the content; InvalidInput when it is over `limit` bytes."""
        while len(self._buffer) <= limit and self._pull():
            pass
        if len(self._buffer) > limit:
            raise InvalidInput(
                [f"{self.name}: {what} over the {limit_text(limit)} limit for one JSON document"],
                fix="raise ingest.max_document_bytes (env MEMCLI_INGEST_MAX_DOCUMENT_BYTES), "
                "or convert it to JSON Lines (one message per line), which is read line by line",
            )
        data, self._buffer = self._buffer, bytearray()
        return data

    def lines(self, limit: int, skip_blank: bool = False) -> Iterator[tuple[int, bytes | Oversize]]:
        """(line number, bytes without the newline) per line; a line over `limit` bytes is
        an Oversize with its length, its bytes dropped as they are read. With `skip_blank`,
        blank lines are not yielded, and whitespace before a line's first other byte is
        dropped with them, a buffer at a time (a gigabyte of newlines costs no loop per
        line)."""
        number = 1
        while True:
            if skip_blank:
                number += self._skip_space()
            end = self._buffer.find(b"\n")
            while end == -1 and len(self._buffer) <= limit:
                searched = len(self._buffer)
                if not self._pull():
                    break
                end = self._buffer.find(b"\n", searched)
            if end != -1 and end <= limit:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                yield number, line
            elif len(self._buffer) > limit:
                head = bytes(self._buffer[:HEAD_BYTES])
                yield number, Oversize(self._drop_line(), head)
            else:  # the end of the input, without a final newline
                if self._buffer:
                    yield number, bytes(self._buffer)
                    self._buffer.clear()
                return
            number += 1

    def _skip_space(self) -> int:
        """Consume whitespace up to the next other byte (or the end); the newlines in it."""
        newlines = 0
        while True:
            found = _NOT_SPACE.search(self._buffer)
            stop = found.start() if found else len(self._buffer)
            newlines += self._buffer.count(b"\n", 0, stop)
            del self._buffer[:stop]
            if found or not self._pull():
                return newlines

    def _drop_line(self) -> int:
        """Consume the rest of the current line, keeping only its length."""
        size = 0
        while True:
            end = self._buffer.find(b"\n")
            if end != -1:
                del self._buffer[: end + 1]
                return size + end
            size += len(self._buffer)
            self._buffer.clear()
            if not self._pull():
                return size

    def _pull(self) -> bool:
        """Read one chunk onto the buffer (hashed, checked for NUL); False at the end."""
        if self._eof:
            return False
        try:
            chunk = self._raw.read(CHUNK)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            raise self._damaged(exc) from None
        if not chunk:
            self._eof = True
            return False
        self._hash.update(chunk)
        nul = chunk.find(b"\x00") if self._text else -1
        if nul != -1:
            raise self._binary(chunk, nul, self._lines_read, self._column)
        last = chunk.rfind(b"\n")
        self._lines_read += chunk.count(b"\n")
        self._column = len(chunk) - last - 1 if last != -1 else self._column + len(chunk)
        self._buffer += chunk
        return True

    def start_text(self) -> None:
        """Refuse NUL bytes from now on, those already read included (an input is read
        with this off only until its start was checked for a UTF-16 byte-order mark)."""
        self._text = True
        nul = self._buffer.find(b"\x00")
        if nul != -1:
            raise self._binary(bytes(self._buffer), nul, 0, 0)

    def _binary(self, chunk: bytes, at: int, lines_before: int, column: int) -> InvalidInput:
        """The error for a NUL byte at `at` in `chunk`, read after `lines_before` newlines
        and `column` bytes of its line."""
        line = lines_before + chunk.count(b"\n", 0, at) + 1
        start = chunk.rfind(b"\n", 0, at)
        column = at - start if start != -1 else column + at + 1
        return InvalidInput(
            [f"{self.name}:{line}: looks like a binary file (NUL byte at column {column})"],
            fix="pass a text file: JSON Lines, chat JSON, LoCoMo JSON, a transcript, or a "
            "ChatGPT or Claude export (its .zip or the conversations.json inside)",
        )

    def _damaged(self, exc: BaseException) -> InvalidInput:
        what = self.describe or "data"
        return InvalidInput(
            [f"{self.name}:1: damaged {what} ({exc})"],
            fix="the file is truncated or damaged: make it again (or download the export "
            "again), or pass it uncompressed",
        )


def open_input(
    path: str, stdin: BinaryIO | None, limits: Limits, opener: Opener | None = None
) -> Input:
    """The content of `path` (`-` = stdin; any other opened by `opener`, by default by
    name): gunzipped when gzip, the conversations.json of a zip archive; OS failures as
    memcli errors."""
    owned = None if path == "-" else (opener or _open_file)(path)
    name, raw = (STDIN_NAME, stdin or sys.stdin.buffer) if owned is None else (path, owned)
    try:
        head = raw.read(4)
        stream: BinaryIO = io.BufferedReader(_Prefixed(head, raw), CHUNK)
        if head.startswith(GZIP_MAGIC):
            unpacked: BinaryIO = gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[assignment]
            content = name.removesuffix(".gz")
            return Input(name, unpacked, "gzip data", content_name=content, owned=owned)
        if head.startswith(ZIP_MAGICS):
            seekable = owned is not None and owned.seekable()  # not a FIFO, say
            archive = owned if owned is not None and seekable else stream
            member = _zip_member(name, archive, seekable, limits)
            return Input(name, member, "zip archive", content_name=EXPORT_MEMBER, owned=owned)
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    return Input(name, stream, owned=owned)


def _open_file(path: str) -> BinaryIO:
    """The file opened for reading, with OS failures turned into memcli errors."""
    try:
        if Path(path).is_dir():
            raise IsADirectoryError(21, "Is a directory")
        return open(path, "rb")
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file", fix="check the path; use - for stdin") from None
    except IsADirectoryError:
        raise InvalidInput(
            [f"{path}: is a directory, not a file"], fix=directory_fix(path)
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise NotFound(f"{path}: cannot read the file ({reason})") from None


def _zip_member(name: str, stream: BinaryIO, seekable: bool, limits: Limits) -> BinaryIO:
    """The conversations.json inside a ChatGPT or Claude export zip, opened for reading."""
    if seekable:
        stream.seek(0)
    else:  # a zip's index is at its end: stdin is read first, up to the limit
        whole = Input(name, stream, text=False).read_all(limits.document_bytes, "the zip is")
        stream = io.BytesIO(whole)
    try:
        archive = zipfile.ZipFile(stream)
        members = [m for m in archive.infolist() if Path(m.filename).name == EXPORT_MEMBER]
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InvalidInput(
            [f"{name}:1: a damaged zip archive ({exc})"],
            fix="download the export again, or unzip it and pass the files inside",
        ) from None
    if not members:
        raise InvalidInput(
            [f"{name}: this is a zip archive without a {EXPORT_MEMBER} in it"],
            fix="memcli reads a ChatGPT or Claude export's .zip directly; for any other "
            f"archive unzip it and pass the conversation files inside (unzip -d chats {name})",
        )
    member = min(members, key=lambda m: m.filename.count("/"))  # the top-level one first
    try:
        return archive.open(member)  # type: ignore[return-value]
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise InvalidInput(
            [f"{name}: cannot read {member.filename} in the zip archive ({exc})"],
            fix=f"unzip it and pass {EXPORT_MEMBER} itself",
        ) from None
