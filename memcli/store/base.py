"""What both backends stand on: the time stamp their rows carry, batches of ids, and the
`with` of an open store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

S = TypeVar("S", bound="Closing")


def now_iso() -> str:
    """The current UTC time, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def chunked(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """Slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Closing:
    """An open store as a context manager: the end of the block closes it (each backend
    says how, in `close`)."""

    if TYPE_CHECKING:

        def close(self) -> None: ...

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
