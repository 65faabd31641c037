"""Plain-text transcripts: `Speaker: text` lines, sessions split by `--- <date>` lines.

A speaker is up to 40 characters without a colon at the start of a line, followed by ": ".
Other non-blank lines continue the previous turn (joined with a newline); blank lines are
ignored. Sessions are numbered in file order and prefixed with the default session (the
file stem), so two transcripts never share a `session_1`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memcli import dates
from memcli.models import BadRecord, Episode
from memcli.readers.jsonl import text_problem

NAME = "transcript"
SUFFIXES = (".txt", ".text", ".transcript")

# The first character may not be one that starts JSON, markdown lists/quotes or a dash
# rule, so those lines read as continuations rather than as odd speaker names.
_SPEAKER = re.compile(r"(?P<speaker>[^\s:{}\[\]\"'#>|*-][^:]{0,39}):(?:[ \t]+(?P<text>.*))?")
_SESSION_BREAK = re.compile(r"-{3,}(?P<date>.*)")

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

    def finish(self) -> Episode | BadRecord:
        """The finished Episode, or why the turn cannot be one."""
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
    session_number, session_used, date = 1, False, None
    turn: _Turn | None = None
    orphan_reported = False  # one message per run of speakerless lines, not one per line
    for number, raw in enumerate(text.split("\n"), start=1):
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
            turn.parts.append(speaker.group("text") or "")
            session_used, orphan_reported = True, False
        elif turn is not None:
            turn.parts.append(line)
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
