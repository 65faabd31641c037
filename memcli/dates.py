"""Dates in one place: the many ways inputs write a date into ISO 8601, and ISO text back
into dates. (Relative expressions such as "last Friday" are memcli.timeexpr's job.)"""

from __future__ import annotations

import math
import re
import warnings
from datetime import date, datetime, timezone
from functools import lru_cache

# Unix epoch numbers above this are taken as milliseconds: 1e11 seconds is the year 5138,
# while 1e11 milliseconds is only March 1973.
EPOCH_MS_THRESHOLD = 1e11

# Real date strings are short; refusing long ones keeps dateutil off hostile input.
MAX_DATE_CHARS = 100

_EPOCH_STRING = re.compile(r"-?\d{9,}(?:\.\d+)?")
_PARTIAL_DATES = (r"\d{4}-\d{2}-\d{2}", r"\d{4}-\d{2}", r"\d{4}")

# Two far-apart defaults: a field dateutil had to fill in differs between the two parses,
# which is how a date missing its day, month or year is told apart from a complete one.
_DEFAULT_A = datetime(2000, 1, 1)
_DEFAULT_B = datetime(2001, 2, 2)


def normalize(raw: object) -> str | None:
    """ISO 8601 (`YYYY-MM-DDTHH:MM:SS[+HH:MM]`) for a date string or epoch number, else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return _from_epoch(float(raw))
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    if not value or len(value) > MAX_DATE_CHARS:
        return None
    if _EPOCH_STRING.fullmatch(value):
        return _from_epoch(float(value))
    return _from_text(value)


def _from_epoch(seconds: float) -> str | None:
    """UTC wall time of a Unix epoch in seconds (or milliseconds when implausibly large)."""
    if not math.isfinite(seconds):
        return None
    if abs(seconds) > EPOCH_MS_THRESHOLD:
        seconds /= 1000
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return _iso(moment.replace(tzinfo=None))


@lru_cache(maxsize=4096)
def _from_text(value: str) -> str | None:
    """Parse a date string; cached because a session's date repeats on every turn."""
    moment = parse_iso(value)
    if moment is not None:
        return _iso(moment)
    from dateutil import parser as date_parser  # here: reading ISO dates never needs it

    try:  # not strict ISO; let dateutil try the human formats
        with warnings.catch_warnings():
            # An unknown zone name ("PST") only loses the offset; it is not worth a warning.
            warnings.simplefilter("ignore")
            first = date_parser.parse(value, default=_DEFAULT_A)
            second = date_parser.parse(value, default=_DEFAULT_B)
    except Exception:
        # dateutil fails in many ways (ValueError, OverflowError, TypeError, ...) on odd
        # input; the contract here is "None when unparseable", never an exception.
        return None
    if first.date() != second.date():
        return None  # the day, month or year was invented from the default
    return _iso(first)


def _iso(moment: datetime) -> str:
    """Second-precision ISO text, keeping the offset only when the input carried one."""
    return moment.replace(microsecond=0).isoformat()


def parse_iso(text: str | None) -> datetime | None:
    """An ISO 8601 date or date-time, or None when there is none or it is not ISO."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def as_utc(moment: datetime) -> datetime:
    """An aware datetime: one without a zone is taken as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def parse_day(timestamp: str | None) -> date | None:
    """The calendar day of an ISO timestamp, or None when there is none."""
    if not timestamp:
        return None
    moment = parse_iso(timestamp)
    if moment is not None:
        return moment.date()
    try:
        return date.fromisoformat(timestamp[:10])
    except ValueError:
        return None


def partial_date(value: str | None) -> str | None:
    """A date given as YYYY-MM-DD, YYYY-MM or YYYY, or None when it is not one."""
    if not value:
        return None
    text = value.strip()
    for pattern in _PARTIAL_DATES:
        if re.fullmatch(pattern, text):
            try:
                date.fromisoformat(first_day(text))
            except ValueError:
                return None
            return text
    return None


def first_day(value: str) -> str:
    """A YYYY[-MM[-DD]] date as a full ISO day (missing parts become the first)."""
    return value + "-01-01"[len(value) - 4 :] if len(value) < 10 else value
