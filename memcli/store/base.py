"""What both backends stand on: the time stamp their rows carry and batches of ids."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any


def now_iso() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def chunked(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """Slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
