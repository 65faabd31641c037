"""Plain-text transcripts: `Speaker: text` lines, sessions split by `--- <date>` lines.

A speaker is up to 40 characters without a colon at the start of a line, followed by ": ".
Other non-blank lines continue the previous turn (joined with a newline); blank lines are
ignored. Sessions are numbered in file order and prefixed with the default session (the
file stem), so two transcripts never share a `session_1`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memcli import dates
from memcli.models import BadRecord, Episode
from memcli.readers.jsonl import LongLine, size_problem, text_problem, utf8_size, within_limit

NAME = "transcript"
SUFFIXES = (".txt", ".text", ".transcript")

# The first character may not be one that starts JSON, markdown lists/quotes or a dash
# rule, so those lines read as continuations rather than as odd speaker names.
_SPEAKER = re.compile(r"(?P<speaker>[^\s:{}\[\]\"'#>|*-][^:]{0,39}):(?:[ \t]+(?P<text>.*))?")
_SESSION_BREAK = re.compile(r"-{3,}(?P<date>.*)")
_SPEAKER_START = re.compile(r"(?P<speaker>[^\s:{}\[\]\"'#>|*-][^:]{0,39}):[ \t]+")  # of a long line

# Sniffing looks at this many lines at most: enough to see a speaker, cheap on huge input.
_SNIFF_LINES = 1000


@dataclass
class _Turn:
    """A turn being collected: its speaker line and any continuation lines."""

    speaker: str
    line: int
    session: str
    date: str | None
    parts: list[str] = field(default_factory=list)
    size: int = 0  # bytes of the parts so far: a turn stops collecting past the limit
    problem: str | None = None  # a line of it could not be read

    def add(self, part: str) -> None:
        """Append one line of the turn (only its length once the turn is too long)."""
        self.size += utf8_size(part) + (1 if self.size else 0)
        if self.problem is None and within_limit(self.size):
            self.parts.append(part)
        else:
            self.parts = []

    def finish(self) -> Episode | BadRecord:
        """The finished Episode, or why the turn cannot be one."""
        if self.problem is not None:
            return BadRecord(self.line, self.problem)
        if not within_limit(self.size):
            return BadRecord(self.line, size_problem(self.size))
        text = "\n".join(self.parts).strip()
        if not text:
            return BadRecord(self.line, f"turn by {self.speaker!r} has no text")
        problem = text_problem(text)
        if problem:
            return BadRecord(self.line, problem)
        return Episode(
            text=text,
            speaker=self.speaker,
            session=self.session,
            timestamp=dates.normalize(self.date),
            timestamp_raw=self.date,
            line=self.line,
        )


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield one Episode per speaker turn, BadRecords for text that belongs to no turn."""
    return read_lines(enumerate(text.split("\n"), start=1), default_session)


def read_lines(
    lines: Iterable[tuple[int, str | BadRecord]], default_session: str
) -> Iterator[Episode | BadRecord]:
    """Yield one Episode per speaker turn of numbered lines, BadRecords for text that
    belongs to no turn and for lines that could not be read (which spoil their turn)."""
    state = _Reading(default_session)
    for number, raw in lines:
        if isinstance(raw, BadRecord):
            yield from state.unreadable(number, raw)
            continue
        line = raw.rstrip()
        if line.strip():
            yield from state.line(number, line)
    yield from state.close_turn()


class _Reading:
    """Where a transcript's reading stands: the session, its date, the open turn."""

    def __init__(self, default_session: str) -> None:
        self.default_session = default_session
        self.session_number, self.session_used = 1, False
        self.date: str | None = None
        self.turn: _Turn | None = None
        self.orphan_reported = False  # one message per run of speakerless lines

    def line(self, number: int, line: str) -> Iterator[Episode | BadRecord]:
        """Read one non-blank line: a session break, a new turn, or more of the open one."""
        if (brk := _SESSION_BREAK.fullmatch(line)) is not None:
            yield from self.close_turn()
            if self.session_used:
                self.session_number, self.session_used = self.session_number + 1, False
            # Trimmed in Python: a regex for "--- date ---" backtracks badly on long lines.
            self.date, self.orphan_reported = brk.group("date").strip(" \t-") or None, False
        elif (speaker := _SPEAKER.fullmatch(line)) is not None:
            yield from self.open_turn(speaker.group("speaker"), number)
            assert self.turn is not None
            self.turn.add(speaker.group("text") or "")
        elif self.turn is not None:
            self.turn.add(line)
        elif not self.orphan_reported:
            yield BadRecord(number, "text outside any turn: no 'Speaker: text' line before it")
            self.orphan_reported = True

    def unreadable(self, number: int, bad: BadRecord) -> Iterator[Episode | BadRecord]:
        """A line too long to keep, or not text: it spoils the turn it starts or belongs to."""
        start = _SPEAKER_START.match(bad.head) if isinstance(bad, LongLine) else None
        if start is not None and isinstance(bad, LongLine):  # a turn too long to keep
            yield from self.open_turn(start.group("speaker"), number)
            assert self.turn is not None
            self.turn.problem = size_problem(bad.size - len(start.group(0).encode()))
        elif self.turn is None:
            yield BadRecord(bad.line, bad.reason)
        elif self.turn.problem is None:
            self.turn.problem = f"turn by {self.turn.speaker!r}, line {number}: {bad.reason}"

    def open_turn(self, speaker: str, number: int) -> Iterator[Episode | BadRecord]:
        """Finish the open turn and start `speaker`'s at line `number`."""
        yield from self.close_turn()
        session = f"{self.default_session}:session_{self.session_number}"
        self.turn = _Turn(speaker.strip(), number, session, self.date)
        self.session_used, self.orphan_reported = True, False

    def close_turn(self) -> Iterator[Episode | BadRecord]:
        """The open turn, finished (nothing when none is open)."""
        if self.turn is not None:
            yield self.turn.finish()
            self.turn = None


def sniff(text: str, data: Any) -> bool:
    """True when the text is not one JSON document and has a `Speaker: text` line."""
    if data is not None:
        return False
    lines = text.split("\n", _SNIFF_LINES)[:_SNIFF_LINES]
    return any(_SPEAKER.fullmatch(line.rstrip()) for line in lines)
