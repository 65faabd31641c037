"""Rendering results: plain text or rich tables for people, JSON Lines for programs.

Data goes to stdout; progress, summaries and errors go to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from memcli.progress import NoProgress, Progress


class RichProgress:
    """A transient rich progress bar on stderr."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: Any = None

    def start(self, description: str, total: int | None) -> None:
        """Show a new bar (replacing any earlier one)."""
        self.finish()
        self._bar.start()
        self._task = self._bar.add_task(description, total=total)

    def advance(self, amount: int = 1) -> None:
        """Move the bar on."""
        if self._task is not None:
            self._bar.advance(self._task, amount)

    def finish(self) -> None:
        """Remove the bar."""
        if self._task is not None:
            self._bar.stop()
            self._task = None


class Output:
    """Where a command writes: JSON Lines or text on stdout, messages on stderr."""

    def __init__(
        self,
        json_mode: bool = False,
        quiet: bool = False,
        verbose: int = 0,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.json = json_mode
        self.quiet = quiet
        self.verbose = verbose
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.err = Console(file=self.stderr, highlight=False, soft_wrap=True)
        self.out = Console(file=self.stdout, highlight=False, soft_wrap=True, no_color=json_mode)

    def record(self, obj: dict[str, Any]) -> None:
        """One JSON object on one line of stdout."""
        self.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stdout.flush()

    def text(self, text: str) -> None:
        """Plain text on stdout, exactly as given."""
        self.stdout.write(text if text.endswith("\n") else text + "\n")
        self.stdout.flush()

    def table(self, table: Table) -> None:
        self.out.print(table)

    def info(self, message: str) -> None:
        """A message for people on stderr (hidden by -q)."""
        if not self.quiet:
            self.err.print(message, markup=False)

    def error(self, message: str) -> None:
        """`memcli: error: ...` on stderr."""
        self.err.print(f"memcli: error: {message}", markup=False, style="red")

    def progress(self) -> Progress:
        """A progress bar when stderr is a terminal, otherwise silence."""
        if self.quiet or self.json or not self.stderr.isatty():
            return NoProgress()
        return RichProgress(self.err)
