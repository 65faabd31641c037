"""LoCoMo benchmark JSON: one conversation object, or a list of them (as in locomo10.json).

Only `conversation.session_N` turns become episodes. The sample's `qa`, `event_summary`,
`observation` and `session_summary` are benchmark annotations (answers, in effect) and are
never read here: ingesting them would let retrieval find the gold answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from memcli import dates
from memcli.models import BadRecord, Episode
from memcli.readers.jsonl import LineIndex, json_type, load_document, member_offsets, text_problem

NAME = "locomo"
SUFFIXES = (".json",)

#: Finds the line of a session list (turn None) or of one turn inside it.
LineOf = Callable[[str, int | None], int]

# Bounded digits: int() refuses strings of thousands of digits, and no real file has them.
_SESSION_KEY = re.compile(r"session_(\d{1,9})")


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield the episodes of every conversation in the file, in file and session order."""
    data = load_document(text)
    if isinstance(data, BadRecord):
        yield data
        return
    if not isinstance(data, (dict, list)):
        yield BadRecord(1, f"expected a LoCoMo object or a list of them, not {json_type(data)}")
        return
    index = LineIndex(text)
    samples = [data] if isinstance(data, dict) else data
    starts = {0: 0} if isinstance(data, dict) else member_offsets(text, 0)
    for number, sample in enumerate(samples):
        start = starts.get(number, 0)
        if not isinstance(sample, dict):
            reason = f"sample {number + 1} is {json_type(sample)}, not an object"
            yield BadRecord(index.line(start), reason)
            continue
        yield from sample_episodes(sample, f"conv{number}", _Locator(text, index, start))


def sniff(text: str, data: Any) -> bool:
    """True for an object, or a list whose first item is an object, with a `conversation`."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and isinstance(first.get("conversation"), dict)


def sample_episodes(
    sample: dict[str, Any], where: str, line_of: LineOf | None = None
) -> Iterator[Episode | BadRecord]:
    """Episodes of one LoCoMo conversation object, sessions in numeric order.

    `where` names the sample in messages and prefixes its sessions when the sample has no
    `sample_id`; `line_of` maps a session key (and turn index) to a line, default 1.
    """
    locate: LineOf = line_of or (lambda session, turn: 1)
    sample_id = sample.get("sample_id")
    if isinstance(sample_id, (str, int)) and not isinstance(sample_id, bool) and sample_id != "":
        where = str(sample_id)
    conversation = sample.get("conversation")
    if not isinstance(conversation, dict):
        yield BadRecord(locate("", None), f"{where}: no 'conversation' object")
        return
    for key in _session_keys(conversation):
        yield from _session(conversation, key, where, locate)


def _session_keys(conversation: dict[str, Any]) -> list[str]:
    """The `session_N` keys, by N (so session_2 comes before session_10)."""
    found = [(int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.fullmatch(key))]
    return [key for _, key in sorted(found)]


def _session(
    conversation: dict[str, Any], key: str, where: str, locate: LineOf
) -> Iterator[Episode | BadRecord]:
    """The turns of one session, all stamped with the session's date."""
    turns = conversation[key]
    if turns is None:
        return
    if not isinstance(turns, list):
        yield BadRecord(locate(key, None), f"{where} {key}: expected a list of turns")
        return
    raw_date = conversation.get(f"{key}_date_time")
    if turns and not (isinstance(raw_date, str) and raw_date.strip()):
        reason = f"{where} {key}: missing {key}_date_time, so its turns would have no date"
        yield BadRecord(locate(key, None), reason)
        return
    stamp = dates.normalize(raw_date)
    for number, turn in enumerate(turns):
        line = locate(key, number)
        item = _turn(turn, f"{where} {key} turn {number + 1}", line)
        if isinstance(item, Episode):
            item.session = f"{where}:{key}"
            item.timestamp, item.timestamp_raw = stamp, raw_date
        yield item


def _turn(turn: Any, label: str, line: int) -> Episode | BadRecord:
    """One turn: its words plus the caption of any photo it shares."""
    if not isinstance(turn, dict):
        return BadRecord(line, f"{label} is {json_type(turn)}, not an object")
    text, speaker = turn.get("text"), turn.get("speaker")
    if not isinstance(text, str):
        return BadRecord(line, f"{label}: 'text' must be a string, not {json_type(text)}")
    if not isinstance(speaker, str) or not speaker.strip():
        return BadRecord(line, f"{label}: missing 'speaker'")
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        # Image turns often say only "here's a pic"; the caption is what the photo shows.
        shared = f"[shares {caption.strip()}]"
        text = f"{text} {shared}" if text.strip() else shared
    if not text.strip():
        return BadRecord(line, f"{label}: 'text' is empty")
    problem = text_problem(text)
    if problem:
        return BadRecord(line, f"{label}: {problem}")
    ref = turn.get("dia_id")
    props = {"img_url": turn["img_url"]} if turn.get("img_url") is not None else {}
    return Episode(
        text=text,
        speaker=speaker,
        ref=str(ref) if isinstance(ref, (str, int)) and not isinstance(ref, bool) else None,
        props=props,
        line=line,
    )


class _Locator:
    """Lazily finds the lines of one sample's sessions and turns in the file text."""

    def __init__(self, text: str, index: LineIndex, sample_start: int) -> None:
        self._text, self._index, self._start = text, index, sample_start
        self._sessions: dict[str | int, int] | None = None
        self._turns: dict[str, dict[str | int, int]] = {}

    def __call__(self, session: str, turn: int | None) -> int:
        if self._sessions is None:
            conversation = member_offsets(self._text, self._start).get("conversation")
            found = {} if conversation is None else member_offsets(self._text, conversation)
            self._sessions = found
        start = self._sessions.get(session)
        if start is None:
            return self._index.line(self._start)
        if turn is None:
            return self._index.line(start)
        if session not in self._turns:
            self._turns[session] = member_offsets(self._text, start)
        return self._index.line(self._turns[session].get(turn, start))
