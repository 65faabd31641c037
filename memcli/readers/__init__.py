"""Input formats → Episode records: a registry by name and suffix, plus safe file reading.

Each format is one module with `NAME`, `SUFFIXES`, `read(text, name, default_session)`
yielding `Episode | BadRecord`, and `sniff(text, data) -> bool` (`data` is the whole text
parsed as JSON, or None when it is not one JSON document). Adding a format is one module
and one line in FORMATS.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from memcli.errors import InvalidInput, NotFound, UsageError
from memcli.models import BadRecord, Episode
from memcli.readers import chat, chatgpt, claude, jsonl, locomo, transcript


class Reader(Protocol):
    """What a format module provides (modules satisfy this structurally)."""

    @property
    def NAME(self) -> str:  # a module constant: read-only here, so any tuple of suffixes fits
        ...

    @property
    def SUFFIXES(self) -> tuple[str, ...]: ...

    def read(self, text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
        """Yield the records of a decoded document."""
        ...

    def sniff(self, text: str, data: Any) -> bool:
        """True when the content looks like this format."""
        ...


# Order matters only for sniffing: the first format that recognises the content wins.
FORMATS: dict[str, Reader] = {
    jsonl.NAME: jsonl,
    chat.NAME: chat,
    locomo.NAME: locomo,
    chatgpt.NAME: chatgpt,
    claude.NAME: claude,
    transcript.NAME: transcript,
}

STDIN_NAME = "<stdin>"
AUTO = "auto"  # --format auto: detect, as when no format is given
_DESCRIBED = "JSON Lines, chat JSON, LoCoMo, a ChatGPT or Claude export, or a transcript"
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass
class Source:
    """One input after reading: its name, content hash, format and records."""

    name: str
    sha256: str
    format: str
    records: list[Episode | BadRecord]


def detect_format(name: str, text: str) -> str:
    """The format of `text`: by the name's suffix, sniffing the content when that is unclear."""
    suffix = "" if name in ("-", STDIN_NAME) else Path(name).suffix.lower()
    by_suffix = [fmt for fmt, mod in FORMATS.items() if suffix and suffix in mod.SUFFIXES]
    if len(by_suffix) == 1:
        return by_suffix[0]
    data = jsonl.load_document(text)
    parsed = None if isinstance(data, BadRecord) else data
    for fmt in by_suffix or list(FORMATS):
        if FORMATS[fmt].sniff(text, parsed):
            return fmt
    if by_suffix and isinstance(data, BadRecord):
        # A broken .json file: let the first JSON reader report where the JSON breaks.
        return by_suffix[0]
    raise InvalidInput(
        [f"{name}:1: cannot tell the format (not {_DESCRIBED})"],
        fix=f"pass --format one of: {', '.join(sorted(FORMATS))}",
    )


def read_source(path: str, fmt: str | None = None, stdin: BinaryIO | None = None) -> Source:
    """Read one input (`-` = stdin; gzip-compressed or not) into records; raises for
    unreadable or undecodable input."""
    fmt = None if fmt == AUTO else fmt
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(
            f"unknown format {fmt!r}",
            fix=f"pass --format one of: {', '.join([AUTO, *sorted(FORMATS)])}",
        )
    if path == "-":
        name, stem = STDIN_NAME, "stdin"
        raw = (stdin or sys.stdin.buffer).read()
    else:
        name, stem = path, Path(path.removesuffix(".gz")).stem or "input"
        raw = _read_bytes(path)
    raw = _gunzipped(raw, name)
    text = _decode(raw, name, path)
    if not text.strip():  # nothing to store is not an error: 0 new episodes
        return Source(name, hashlib.sha256(raw).hexdigest(), fmt or "empty", [])
    fmt = fmt or detect_format(name.removesuffix(".gz"), text)
    records = list(FORMATS[fmt].read(text, name, stem))
    return Source(name, hashlib.sha256(raw).hexdigest(), fmt, records)


def read_text(path: str, stdin: BinaryIO | None = None) -> tuple[str, str]:
    """(name, text) of one input (`-` = stdin) read as `ingest` reads it: gzip-compressed
    or not, UTF-8 with or without a BOM; raises for unreadable or undecodable input."""
    name = STDIN_NAME if path == "-" else path
    raw = (stdin or sys.stdin.buffer).read() if path == "-" else _read_bytes(path)
    return name, _decode(_gunzipped(raw, name), name, path)


def _read_bytes(path: str) -> bytes:
    """The file's bytes, with OS failures turned into memcli errors that say what went wrong."""
    file = Path(path)
    try:
        return file.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file", fix="check the path; use - for stdin") from None
    except IsADirectoryError:
        raise InvalidInput(
            [f"{path}: is a directory, not a file"],
            fix=f"pass the files inside it, e.g. {path.rstrip('/')}/*.jsonl",
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise NotFound(f"{path}: cannot read the file ({reason})") from None


def _gunzipped(raw: bytes, name: str) -> bytes:
    """The content of gzip-compressed input (recognised by its magic bytes), else `raw`.

    The source's hash is then that of the content, so a log ingested before and after
    compression is the same source.
    """
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput(
            [f"{name}:1: damaged gzip data ({exc})"],
            fix="the file is truncated or not gzip: compress it again, or pass it uncompressed",
        ) from None


def _decode(raw: bytes, name: str, path: str) -> str:
    """UTF-8 text of the input (a leading BOM is dropped); clear errors for anything else."""
    if raw.startswith(_UTF16_BOMS):
        raise InvalidInput(
            [f"{name}:1: UTF-16 text; memcli reads UTF-8"],
            fix=f"convert it, e.g. iconv -f utf-16 -t utf-8 {_shell_path(path)} > converted.txt",
        )
    body = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(body, exc.start)
        raise InvalidInput(
            [f"{name}:{line}: not UTF-8 text (byte 0x{body[exc.start]:02x} at column {column})"],
            fix=f"convert it, e.g. iconv -f latin1 -t utf-8 {_shell_path(path)} > converted.txt",
        ) from None
    nul = body.find(b"\x00")
    if nul != -1:
        # Valid UTF-8 can still be binary; a NUL never occurs in a text conversation.
        line, column = _position(body, nul)
        raise InvalidInput(
            [f"{name}:{line}: looks like a binary file (NUL byte at column {column})"],
            fix="pass a text file: JSON Lines, chat JSON, LoCoMo JSON or a transcript",
        )
    return text


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and byte column of `offset` in `data`."""
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _shell_path(path: str) -> str:
    """The path as typed in a suggested command (stdin has none to suggest)."""
    return "input.txt" if path == "-" else path
