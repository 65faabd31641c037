"""Input formats → Episode records: a registry by name and suffix, plus safe file reading.

Each format is one module with `NAME`, `SUFFIXES`, `read(text, name, default_session)`
yielding `Episode | BadRecord`, and `sniff(text, data) -> bool` (`data` is the whole text
parsed as JSON, or None when it is not one JSON document). Adding a format is one module
and one line in FORMATS.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from memcli.errors import InvalidInput, UsageError
from memcli.models import BadRecord, Episode
from memcli.readers import chat, chatgpt, claude, jsonl, locomo, transcript
from memcli.readers.jsonl import message_limit
from memcli.readers.stream import STDIN_NAME, Input, Limits, Opener, Oversize, open_input

__all__ = [
    "FORMATS",
    "STDIN_NAME",
    "Limits",
    "Opener",
    "Source",
    "detect_format",
    "read_lines",
    "read_source",
]  # fmt: skip


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

# The formats read line by line, one line held at a time, with the word their errors use
# for a line (the others are whole JSON documents).
Lines = Iterable[tuple[int, "str | BadRecord"]]
LineReader = Callable[[Lines, str], Iterator["Episode | BadRecord"]]
LINE_READERS: dict[str, LineReader] = {
    jsonl.NAME: jsonl.read_lines,
    transcript.NAME: transcript.read_lines,
}
_LINE_NOUN = {jsonl.NAME: "record", transcript.NAME: "line"}

AUTO = "auto"  # --format auto: detect, as when no format is given
_DESCRIBED = "JSON Lines, chat JSON, LoCoMo, a ChatGPT or Claude export, or a transcript"
_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_EMPTY = "empty"  # the format of an input with nothing in it
_DOCUMENT = "document"  # one of the whole-JSON formats, told apart by its parsed content
_SNIFF_BYTES = 1 << 16


# Bad records kept with their reasons, per input: beyond them a bad record is only counted,
# so a file of millions of bad lines costs no more memory than one of a thousand.
MAX_BAD_KEPT = 1000


@dataclass
class Source:
    """One input after reading: its name, content hash, format and records."""

    name: str
    sha256: str
    format: str
    records: list[Episode | BadRecord]
    warnings: list[str] = field(default_factory=list)  # `file:line: ...`, nothing refused
    bad_not_kept: int = 0  # bad records after the first MAX_BAD_KEPT: counted, not kept

    @property
    def invalid(self) -> int:
        """How many records could not be read, those kept and those only counted."""
        return self.bad_not_kept + sum(isinstance(r, BadRecord) for r in self.records)


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


def read_source(
    path: str,
    fmt: str | None = None,
    stdin: BinaryIO | None = None,
    *,
    skip_invalid: bool = False,
    limits: Limits | None = None,
    opener: Opener | None = None,
) -> Source:
    """Read one input (`-` = stdin; gzip-compressed, a chat export's zip, or plain) into
    records, holding at most one line or one document's worth of it; raises for
    unreadable or undecodable input (with `skip_invalid`, an undecodable line of a line
    format is a bad record instead). `opener` opens a named input (default: by name)."""
    fmt = None if fmt == AUTO else fmt
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(
            f"unknown format {fmt!r}",
            fix=f"pass --format one of: {', '.join([AUTO, *sorted(FORMATS)])}",
        )
    limits = limits or Limits()
    stem = "stdin" if path == "-" else Path(path.removesuffix(".gz")).stem or "input"
    reading = open_input(path, stdin, limits, opener)
    with message_limit(limits.message_bytes), reading as inp:
        _skip_bom(inp, path)
        kind = fmt or _by_suffix(inp.content_name) or _by_content(inp, limits)
        if kind == _EMPTY:
            return Source(inp.name, inp.sha256(), fmt or _EMPTY, [])
        if kind in LINE_READERS:
            lines = _decoded_lines(inp, limits.message_bytes, _LINE_NOUN[kind], skip_invalid, path)
            return _source(inp, kind, LINE_READERS[kind](lines, stem))
        text = _decode(inp.read_all(limits.document_bytes, "the file is"), inp.name, path)
        if not text.strip():  # nothing to store is not an error: 0 new episodes
            return Source(inp.name, inp.sha256(), fmt or _EMPTY, [])
        fmt = fmt or (kind if kind in FORMATS else detect_format(inp.content_name, text))
        return _source(inp, fmt, FORMATS[fmt].read(text, inp.name, stem))


def _source(inp: Input, fmt: str, items: Iterable[Episode | BadRecord]) -> Source:
    """The Source of a fully read input, with a warning per time that could not be read;
    of its bad records only the first MAX_BAD_KEPT are kept, the rest counted."""
    records: list[Episode | BadRecord] = []
    bad = 0
    for item in items:
        if isinstance(item, BadRecord):
            bad += 1
            if bad > MAX_BAD_KEPT:
                continue
        records.append(item)
    unread: dict[str, list[int]] = {}
    for item in records:
        if isinstance(item, Episode) and item.timestamp_raw and item.timestamp is None:
            unread.setdefault(item.timestamp_raw, []).append(item.line or 1)
    warnings = []
    for raw, lines in unread.items():
        others = len(lines) - 1
        more = (
            f" (and {others} more {'turn' if others == 1 else 'turns'} with it)" if others else ""
        )
        warnings.append(
            f"{inp.name}:{lines[0]}: cannot read the time {raw[:60]!r}; stored without a time{more}"
        )
    return Source(inp.name, inp.sha256(), fmt, records, warnings, max(0, bad - MAX_BAD_KEPT))


@contextmanager
def read_lines(
    path: str, stdin: BinaryIO | None = None, limit: int = sys.maxsize
) -> Iterator[tuple[str, Iterator[tuple[int, bytes | Oversize]]]]:
    """(name, numbered non-blank lines) of one input (`-` = stdin), gzip-compressed or not,
    UTF-8 with or without a BOM, read one line at a time: a line over `limit` bytes comes
    as its Oversize, and runs of blank lines are skipped as they are read, never held."""
    with open_input(path, stdin, Limits(document_bytes=limit)) as inp:
        _skip_bom(inp, path)
        yield inp.name, inp.lines(limit, skip_blank=True)


def _by_suffix(name: str) -> str | None:
    """The format a file name's suffix settles (`document` when it names only whole-JSON
    formats), or None."""
    if name in ("-", STDIN_NAME):
        return None
    suffix = Path(name.removesuffix(".gz")).suffix.lower()
    owners = [fmt for fmt, mod in FORMATS.items() if suffix and suffix in mod.SUFFIXES]
    if len(owners) == 1:
        return owners[0]
    return _DOCUMENT if owners and not set(owners) & set(LINE_READERS) else None


def _by_content(inp: Input, limits: Limits) -> str:
    """Whether the input is read line by line (and as which format) or as one document,
    from its first bytes."""
    head = inp.peek(_SNIFF_BYTES)
    start = head.lstrip()
    if not start:
        return _EMPTY if len(head) < _SNIFF_BYTES else _DOCUMENT
    if start[:1] in (b"{", b"["):
        return jsonl.NAME if _first_line_is_message(inp, limits) else _DOCUMENT
    if transcript.sniff(head.decode("utf-8", "replace"), None):
        return transcript.NAME
    raise InvalidInput(
        [f"{inp.name}:1: cannot tell the format (not {_DESCRIBED})"],
        fix=f"pass --format one of: {', '.join(sorted(FORMATS))}",
    )


def _first_line_is_message(inp: Input, limits: Limits) -> bool:
    """Whether the first line, read up to the message limit, is one JSON message object:
    then the input is JSON Lines, read line by line; otherwise it is one JSON document."""
    window = inp.peek(limits.message_bytes + 1).lstrip()
    end = window.find(b"\n")
    if end == -1 and len(window) > limits.message_bytes:
        return False  # too long for a message: a document (or garbage it will report)
    try:
        value = json.loads(window[: end if end != -1 else len(window)])
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and any(value.get(k) is not None for k in jsonl.TEXT_KEYS)


def _skip_bom(inp: Input, path: str) -> None:
    """Refuse UTF-16 text; drop a UTF-8 byte-order mark; from there on, refuse binary."""
    head = inp.peek(len(_BOM))
    if head.startswith(_UTF16_BOMS):
        raise InvalidInput(
            [f"{inp.name}:1: UTF-16 text; memcli reads UTF-8"],
            fix=f"convert it, e.g. iconv -f utf-16 -t utf-8 {_shell_path(path)} > converted.txt",
        )
    if head.startswith(_BOM):
        inp.skip(len(_BOM))
    inp.start_text()


def _decoded_lines(
    inp: Input, limit: int, noun: str, skip_invalid: bool, path: str
) -> Iterator[tuple[int, str | BadRecord]]:
    """Numbered lines as text; a line over the limit or not UTF-8 as its BadRecord (one
    not UTF-8 ends the read unless `skip_invalid`)."""
    for number, line in inp.lines(limit):
        if isinstance(line, Oversize):
            reason = f"{noun} is {line.size} bytes, over the {jsonl.limit_text()} limit"
            head = line.head.decode("utf-8", "ignore")
            yield number, jsonl.LongLine(number, reason, size=line.size, head=head)
            continue
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = f"not UTF-8 text (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"
            if not skip_invalid:
                problem = f"{inp.name}:{number}: {reason}"
                raise InvalidInput([problem], fix=_encoding_fix(path)) from None
            yield number, BadRecord(number, reason)


def _encoding_fix(path: str, lines: bool = True) -> str:
    """How to get past text that is not UTF-8."""
    convert = f"convert it, e.g. iconv -f latin1 -t utf-8 {_shell_path(path)} > converted.txt"
    return f"{convert}, or pass --skip-invalid to store the other lines" if lines else convert


def _decode(raw: bytes | bytearray, name: str, path: str) -> str:
    """UTF-8 text of a whole document (its BOM already dropped); a clear error otherwise."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(raw, exc.start)
        raise InvalidInput(
            [f"{name}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {column})"],
            fix=_encoding_fix(path, lines=False),
        ) from None


def _position(data: bytes | bytearray, offset: int) -> tuple[int, int]:
    """1-based line and byte column of `offset` in `data`."""
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _shell_path(path: str) -> str:
    """The path as typed in a suggested command (stdin has none to suggest)."""
    return "input.txt" if path == "-" else path
