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
    session_number, session_used, date = 1, False, None
    turn: _Turn | None = None
    orphan_reported = False  # one message per run of speakerless lines, not one per line
    for number, raw in lines:
        if isinstance(raw, BadRecord):
            start = _SPEAKER_START.match(raw.head) if isinstance(raw, LongLine) else None
            if start is not None and isinstance(raw, LongLine):  # a turn too long to keep
                if turn is not None:
                    yield turn.finish()
                session = f"{default_session}:session_{session_number}"
                turn = _Turn(start.group("speaker").strip(), number, session, date)
                turn.problem = size_problem(raw.size - len(start.group(0).encode()))
                session_used, orphan_reported = True, False
            elif turn is None:
                yield BadRecord(raw.line, raw.reason)
            else:
                turn.problem = (
                    turn.problem or f"turn by {turn.speaker!r}, line {number}: {raw.reason}"
                )
            continue
        line = raw.rstrip()
        if not line.strip():
            continue
        if (brk := _SESSION_BREAK.fullmatch(line)) is not None:
            if turn is not None:
                yield turn.finish()
                turn = None
            if session_used:
                session_number, session_used = session_number + 1, False
            # Trimmed in Python: a regex for "--- date ---" backtracks badly on long lines.
            date, orphan_reported = brk.group("date").strip(" \t-") or None, False
        elif (speaker := _SPEAKER.fullmatch(line)) is not None:
            if turn is not None:
                yield turn.finish()
            session = f"{default_session}:session_{session_number}"
            turn = _Turn(speaker.group("speaker").strip(), number, session, date)
            turn.add(speaker.group("text") or "")
            session_used, orphan_reported = True, False
        elif turn is not None:
            turn.add(line)
        elif not orphan_reported:
            yield BadRecord(number, "text outside any turn: no 'Speaker: text' line before it")
            orphan_reported = True
    if turn is not None:
        yield turn.finish()


def sniff(text: str, data: Any) -> bool:
    """True when the text is not one JSON document and has a `Speaker: text` line."""
    if data is not None:
        return False
    lines = text.split("\n", _SNIFF_LINES)[:_SNIFF_LINES]
    return any(_SPEAKER.fullmatch(line.rstrip()) for line in lines)
