"""Relative date expressions resolved against the date a turn was said.

"yesterday", "last week", "two months ago", "last Saturday" mean nothing once the turn is
read years later. The fact extractor is asked to write absolute dates; these hints, worked
out by rule (memcli.timeexpr), are put next to each turn so that even a small model gets
them right.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from memcli.timeexpr import time_refs


def _hint(ref: dict[str, Any]) -> str:
    """A resolved reference as the prompt shows it: 2023-05-07, week of 2023-05-01,
    2023-03, 2022 (prefixed 'around' when the expression was vague)."""
    day, grain = ref["date"], ref["grain"]
    value = {"month": day[:7], "year": day[:4]}.get(grain, day)
    if grain in ("week", "weekend"):
        value = f"{grain} of {day}"
    return ("around " if ref["label"].startswith("around ") else "") + value


def resolve_relative(text: str, timestamp: str | None) -> list[tuple[str, str]]:
    """(expression, absolute date) for each relative date expression in a turn, by the
    same rules ingest uses (memcli.timeexpr)."""
    return [(ref["text"].lower(), _hint(ref)) for ref in time_refs(text, timestamp)]


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
