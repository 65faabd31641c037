"""A tiny progress protocol so the library can report long work without knowing about rich."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives progress of one long task. The CLI draws it; the library only reports."""

    def start(self, description: str, total: int | None) -> None: ...

    def advance(self, amount: int = 1) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """The silent default."""

    def start(self, description: str, total: int | None) -> None:
        """Ignore the start of a task."""

    def advance(self, amount: int = 1) -> None:
        """Ignore progress."""

    def finish(self) -> None:
        """Ignore the end of a task."""
