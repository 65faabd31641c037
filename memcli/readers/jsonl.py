"""JSON Lines: one message object per line.

Also home to the JSON helpers the other JSON formats share (whole-document parsing with a
clean failure, the 1 MiB message limit, and finding the line where an element starts).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from memcli import dates
from memcli.models import BadRecord, Episode

NAME = "jsonl"
SUFFIXES = (".jsonl", ".ndjson")

#: Largest message text accepted by default, in UTF-8 bytes (ingest.max_message_bytes).
MAX_TEXT_BYTES = 1 << 20
# The limit in force while one input is read (`message_limit`); readers check against it.
_LIMIT: ContextVar[int] = ContextVar("message_limit", default=MAX_TEXT_BYTES)

# Field aliases, most specific first: the first key present wins and the others stay in
# props, so nothing the caller sent is lost. `speaker` and `name` beat `role` because they
# name a person where `role` only says "user" or "assistant".
TEXT_KEYS = ("content", "text")
SPEAKER_KEYS = ("speaker", "name", "role")
TIME_KEYS = ("timestamp", "ts", "time", "date")
SESSION_KEYS = ("session", "session_id", "conversation")
REF_KEYS = ("id",)

_JSON_SPACE = " \t\n\r"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_decoder = json.JSONDecoder()


@dataclass(frozen=True)
class LongLine(BadRecord):
    """A line over the message limit, known only by its size and first characters."""

    size: int = 0
    head: str = field(default="", compare=False)


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield one Episode (or BadRecord) per non-blank line of a JSON Lines document."""
    return read_lines(enumerate(text.split("\n"), start=1), default_session)


def read_lines(
    lines: Iterable[tuple[int, str | BadRecord]], default_session: str
) -> Iterator[Episode | BadRecord]:
    """Yield one Episode (or BadRecord) per non-blank numbered line (a line that could
    not be read arrives as its BadRecord)."""
    for number, line in lines:
        if isinstance(line, BadRecord):
            yield BadRecord(line.line, line.reason)
            continue
        if not line.strip():
            continue
        size = utf8_size(line)
        if size > _LIMIT.get():
            # Checked before parsing so a huge garbage line costs one length check.
            yield BadRecord(number, f"record is {size} bytes, over the {limit_text()} limit")
            continue
        record = _parse_line(line, number)
        if isinstance(record, BadRecord):
            yield record
        else:
            yield to_episode(record, number, default_session)


def sniff(text: str, data: Any) -> bool:
    """True when every non-blank line starts like a JSON object and the first one is one."""
    if data is not None and not (isinstance(data, dict) and _first_key(data, TEXT_KEYS)):
        return False  # one JSON document that is not itself a single message
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines or not all(line.startswith("{") for line in lines):
        return False
    return isinstance(load_document(lines[0]), dict)


def _parse_line(line: str, number: int) -> dict[str, Any] | BadRecord:
    """The JSON object on one line, or the reason it is not one."""
    value = load_document(line)
    if isinstance(value, BadRecord):
        return BadRecord(number, value.reason)
    if not isinstance(value, dict):
        return BadRecord(number, f"expected a JSON object, got {json_type(value)}")
    return value


def to_episode(record: dict[str, Any], line: int, default_session: str) -> Episode | BadRecord:
    """Map one message object onto an Episode using the field aliases above."""
    props = dict(record)
    text_key = _first_key(props, TEXT_KEYS)
    if text_key is None:
        return BadRecord(line, "missing 'content' (or 'text')")
    text = props.pop(text_key)
    if not isinstance(text, str):
        return BadRecord(line, f"'{text_key}' must be a string, not {json_type(text)}")
    if not text.strip():
        return BadRecord(line, f"'{text_key}' is empty")
    problem = text_problem(text)
    if problem:
        return BadRecord(line, problem)
    fields: dict[str, str | None] = {}
    for label, keys in (("speaker", SPEAKER_KEYS), ("session", SESSION_KEYS), ("ref", REF_KEYS)):
        key = _first_key(props, keys)
        value = props.pop(key) if key else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            return BadRecord(line, f"'{key}' must be a string, not {json_type(value)}")
        fields[label] = None if value is None else str(value)
    stamp = _timestamp(props, line)
    if isinstance(stamp, BadRecord):
        return stamp
    return Episode(
        text=text,
        speaker=fields["speaker"],
        session=fields["session"] or default_session,
        timestamp=stamp[0],
        timestamp_raw=stamp[1],
        ref=fields["ref"],
        props=props,
        line=line,
    )


def _timestamp(props: dict[str, Any], line: int) -> tuple[str | None, str | None] | BadRecord:
    """Pop the time field: (ISO form or None, the original as text)."""
    key = _first_key(props, TIME_KEYS)
    if key is None:
        return None, None
    raw = props.pop(key)
    if raw is None:
        return None, None
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return BadRecord(line, f"'{key}' must be a date string or a number, not {json_type(raw)}")
    return dates.normalize(raw), raw if isinstance(raw, str) else json.dumps(raw)


def _first_key(record: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of `keys` that the record has (a JSON null counts as absent)."""
    return next((k for k in keys if record.get(k) is not None), None)


# --- helpers shared by the JSON formats ------------------------------------------------


@contextmanager
def message_limit(size: int) -> Iterator[None]:
    """Readers refuse messages over `size` bytes while the block runs."""
    token = _LIMIT.set(size)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def limit_text(size: int | None = None) -> str:
    """The message limit as people write it: `1 MiB`, `1500 bytes`."""
    size = _LIMIT.get() if size is None else size
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size} bytes"


def utf8_size(text: str) -> int:
    """Byte length of `text` in UTF-8, without encoding it when it is clearly small."""
    return len(text) if len(text) * 4 <= _LIMIT.get() else len(text.encode("utf-8", "replace"))


def within_limit(size: int) -> bool:
    """Whether a message of `size` UTF-8 bytes is accepted."""
    return size <= _LIMIT.get()


def size_problem(size: int) -> str:
    """Why a message of `size` bytes is refused."""
    return f"message is {size} bytes, over the {limit_text()} limit"


def text_problem(text: str) -> str | None:
    """Why a message text is refused (currently: only its size), or None."""
    size = utf8_size(text)
    return None if within_limit(size) else size_problem(size)


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    names: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), "a value")


def load_document(text: str) -> Any:
    """Parse a whole JSON document; a BadRecord (with the error's line) when it is not JSON."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" already ("Unterminated string starting at").
        where = "column" if exc.msg.endswith(" at") else "at column"
        return BadRecord(exc.lineno, f"invalid JSON: {exc.msg} {where} {exc.colno}")
    except RecursionError:
        # The C parser recurses once per nesting level; hostile input can exhaust the stack.
        return BadRecord(1, "invalid JSON: nested too deeply")
    escape = _SURROGATE_ESCAPE.search(text)
    if escape and _has_lone_surrogate(value):
        # json accepts "\ud800" on its own, but such a string cannot be stored as UTF-8.
        line = text.count("\n", 0, escape.start()) + 1
        return BadRecord(line, "invalid JSON: a \\u escape encodes half a surrogate pair")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    """True when any string (key or value) inside `value` holds an unpaired surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class LineIndex:
    """Maps character offsets of a text to 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self._newlines: list[int] = []
        at = text.find("\n")
        while at != -1:
            self._newlines.append(at)
            at = text.find("\n", at + 1)

    def line(self, offset: int) -> int:
        """The line holding the character at `offset`."""
        return bisect_right(self._newlines, offset - 1) + 1


def member_offsets(text: str, start: int) -> dict[str | int, int]:
    """Offsets where each member value of the array/object opening at `start` begins.

    `text` must be valid JSON (already parsed once). Members are skipped with the C
    decoder, so this costs about one more parse of the container. Empty dict when the
    value at `start` is not a container or anything looks off: line numbers are a nicety.
    """
    try:
        return _scan_members(text, _skip_space(text, start))
    except (ValueError, IndexError, RecursionError):
        return {}


def _scan_members(text: str, at: int) -> dict[str | int, int]:
    """Walk one container member by member (see member_offsets)."""
    opener = text[at]
    if opener not in "[{":
        return {}
    closer = "]" if opener == "[" else "}"
    found: dict[str | int, int] = {}
    at = _skip_space(text, at + 1)
    index = 0
    while text[at] != closer:
        key: str | int = index
        if opener == "{":
            key, at = _decoder.raw_decode(text, at)
            at = _skip_space(text, _skip_space(text, at) + 1)  # past the ':'
        found[key] = at
        _, at = _decoder.raw_decode(text, at)
        at = _skip_space(text, at)
        if text[at] == ",":
            at = _skip_space(text, at + 1)
        index += 1
    return found


def _skip_space(text: str, at: int) -> int:
    """The first offset at or after `at` that is not JSON whitespace."""
    while at < len(text) and text[at] in _JSON_SPACE:
        at += 1
    return at
