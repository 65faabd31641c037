"""Relative time expressions in a turn, resolved to calendar dates from when it was said.

"yesterday", "last Friday", "next month", "two weeks ago" mean nothing once a memory is read
months later. Without an LLM, a set of rules turns them into absolute dates from the
session timestamp; ingest stores the result on the episode (props `time_refs`), packing shows
it next to the turn, and the `gam` strategy's time cue uses it.

Each resolved reference is a dict: `text` (as written), `date` (ISO date of the day, or of
the first day of the week/weekend/month/year meant), `grain` (day|week|weekend|month|year)
and `label` ("7 May 2023", "the week of 1 May 2023", "April 2023", "2022").
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from memcli.dates import parse_day

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_COUNT = (
    r"(\d{1,3}|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five"
    r"|six|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(day|week|month|year)s?"
_DAY = "|".join(WEEKDAYS)


def _add_months(day: date, months: int) -> date:
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _shift(day: date, unit: str, n: int) -> tuple[date, str]:
    """`day` moved by n units, as (first day of the period meant, grain)."""
    if unit == "day":
        return day + timedelta(days=n), "day"
    if unit == "week":
        return _monday(day + timedelta(weeks=n)), "week"
    if unit == "weekend":
        return _monday(day) + timedelta(days=5 + 7 * n), "weekend"
    if unit == "month":
        return _add_months(day, n).replace(day=1), "month"
    return date(day.year + n, 1, 1), "year"


def _weekday(day: date, name: str, which: str) -> tuple[date, str]:
    target = WEEKDAYS.index(name)
    if which == "next":
        return day + timedelta(days=(target - day.weekday() - 1) % 7 + 1), "day"
    if which == "this":
        return _monday(day) + timedelta(days=target), "day"
    return day - timedelta(days=(day.weekday() - target - 1) % 7 + 1), "day"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNTS[word]


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[date, str]]]

_SAME_DAY = r"today|tonight|this (?:morning|afternoon|evening)|earlier today"
_RULES: list[Rule] = [
    (re.compile(r"the day before yesterday"), lambda m, d: _shift(d, "day", -2)),
    (re.compile(r"the day after tomorrow"), lambda m, d: _shift(d, "day", 2)),
    (re.compile(r"yesterday|last night"), lambda m, d: _shift(d, "day", -1)),
    (re.compile(r"tomorrow"), lambda m, d: _shift(d, "day", 1)),
    (re.compile(_SAME_DAY), lambda m, d: (d, "day")),
    (
        re.compile(rf"{_COUNT} {_UNIT} ago"),
        lambda m, d: _shift(d, m[2], -_count(m[1])),
    ),
    (
        re.compile(rf"in {_COUNT} {_UNIT}"),
        lambda m, d: _shift(d, m[2], _count(m[1])),
    ),
    (
        re.compile(rf"(last|this past|next|this) ({_DAY})"),
        lambda m, d: _weekday(d, m[2], "last" if m[1] == "this past" else m[1]),
    ),
    (
        re.compile(r"(last|this past|next|this) (week|weekend|month|year)"),
        lambda m, d: _shift(d, m[2], {"last": -1, "this past": -1, "next": 1}.get(m[1], 0)),
    ),
]


def _label(start: date, grain: str) -> str:
    day = f"{start.day} {start:%B %Y}"
    if grain == "week":
        return f"the week of {day}"
    if grain == "weekend":
        return f"the weekend of {day}"
    if grain == "month":
        return f"{start:%B %Y}"
    if grain == "year":
        return str(start.year)
    return day


def time_refs(text: str, timestamp: str | None) -> list[dict[str, Any]]:
    """Relative time expressions in `text`, resolved against the day of `timestamp`.

    Returns one dict per expression, in the order they appear (empty without a timestamp).
    """
    said = parse_day(timestamp)
    if said is None or not text:
        return []
    lowered = text.lower()
    taken: list[tuple[int, int, dict[str, Any]]] = []
    for pattern, resolve in _RULES:
        for m in re.finditer(rf"\b(?:{pattern.pattern})\b", lowered):
            if any(m.start() < end and start < m.end() for start, end, _ in taken):
                continue  # a longer rule earlier in the list already read these words
            inner = pattern.fullmatch(m[0])
            if inner is None:
                continue
            try:
                start, grain = resolve(inner, said)
            except (OverflowError, ValueError):
                continue  # "900 years ago" leaves the calendar
            vague = any(w in m[0] for w in ("few", "several"))
            ref = {
                "text": text[m.start() : m.end()],
                "date": start.isoformat(),
                "grain": grain,
                "label": ("around " if vague else "") + _label(start, grain),
            }
            taken.append((m.start(), m.end(), ref))
    return [ref for _, _, ref in sorted(taken, key=lambda t: t[0])]


def annotate(refs: list[dict[str, Any]]) -> str:
    """The bracketed note packing puts after a turn: '[yesterday = 7 May 2023]'."""
    return " ".join(f"[{r['text']} = {r['label']}]" for r in refs if r.get("label"))


def _hint(ref: dict[str, Any]) -> str:
    """A resolved reference as a prompt shows it: 2023-05-07, week of 2023-05-01,
    2023-03, 2022 (prefixed 'around' when the expression was vague)."""
    day, grain = ref["date"], ref["grain"]
    value = {"month": day[:7], "year": day[:4]}.get(grain, day)
    if grain in ("week", "weekend"):
        value = f"{grain} of {day}"
    return ("around " if ref["label"].startswith("around ") else "") + value


def resolve_relative(text: str, timestamp: str | None) -> list[tuple[str, str]]:
    """(expression, absolute date) for each relative date expression in a turn, for the
    hints put next to turns in consolidation prompts (so even a small model gets them)."""
    return [(ref["text"].lower(), _hint(ref)) for ref in time_refs(text, timestamp)]
