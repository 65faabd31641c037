"""Relative date expressions resolved against the date a turn was said.

"yesterday", "last week", "two months ago", "last Saturday" mean nothing once the turn is
read years later. The fact extractor is asked to write absolute dates; these hints, worked
out here by rule, are put next to each turn so that even a small model gets them right.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_UNIT_DAYS = {"day": 1, "week": 7}

_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)\s+"
    r"(day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_SIMPLE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|(?:last|next|this) (?:week|weekend|month|year)|"
    r"(?:last|this past|next) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.IGNORECASE,
)


def parse_day(timestamp: str | None) -> date | None:
    """The calendar day of an ISO timestamp, or None."""
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp).date()
    except ValueError:
        try:
            return date.fromisoformat(timestamp[:10])
        except ValueError:
            return None


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _ago(count: int, unit: str, day: date) -> str:
    if unit in _UNIT_DAYS:
        return (day - timedelta(days=count * _UNIT_DAYS[unit])).isoformat()
    if unit == "month":
        return _shift_months(day, -count).isoformat()[:7]
    return str(day.year - count)


def _weekday(phrase: str, day: date) -> str:
    direction, name = phrase.rsplit(" ", 1)
    target = _WEEKDAYS.index(name)
    if direction == "next":
        return (day + timedelta(days=(target - day.weekday() - 1) % 7 + 1)).isoformat()
    return (day - timedelta(days=(day.weekday() - target - 1) % 7 + 1)).isoformat()


def _simple(phrase: str, day: date) -> str:
    fixed = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}
    if phrase in fixed:
        return (day + timedelta(days=fixed[phrase])).isoformat()
    direction, unit = phrase.split(" ", 1)
    if unit in _WEEKDAYS or unit.split()[-1] in _WEEKDAYS:
        return _weekday(phrase.replace("this past", "last"), day)
    step = {"last": -1, "this": 0, "next": 1}[direction]
    if unit in ("week", "weekend"):
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        start = monday + timedelta(days=5) if unit == "weekend" else monday
        return f"{unit} of {start.isoformat()}"
    if unit == "month":
        return _shift_months(day, step).isoformat()[:7]
    return str(day.year + step)


def resolve_relative(text: str, timestamp: str | None) -> list[tuple[str, str]]:
    """(expression, absolute date) for each relative date expression in a turn."""
    day = parse_day(timestamp)
    if day is None:
        return []
    found: dict[str, str] = {}
    for match in _AGO.finditer(text):
        amount = match.group(1).lower().replace("a couple of", "couple of").replace("a few", "few")
        count = int(amount) if amount.isdigit() else _NUMBERS[amount]
        found.setdefault(match.group(0).lower(), _ago(count, match.group(2).lower(), day))
    for match in _SIMPLE.finditer(text):
        phrase = " ".join(match.group(1).lower().split())
        found.setdefault(phrase, _simple(phrase, day))
    return list(found.items())


def normalize_fact_date(value: str | None) -> str | None:
    """A model-given date as YYYY-MM-DD, YYYY-MM or YYYY, or None when it is not one."""
    if not value:
        return None
    text = value.strip()
    for pattern in (r"\d{4}-\d{2}-\d{2}", r"\d{4}-\d{2}", r"\d{4}"):
        if re.fullmatch(pattern, text):
            try:
                date.fromisoformat(date_timestamp(text))
            except ValueError:
                return None
            return text
    return None


def date_timestamp(value: str) -> str:
    """A YYYY[-MM[-DD]] date as a full ISO day (missing parts become the first)."""
    return value + "-01-01"[len(value) - 4 :] if len(value) < 10 else value
