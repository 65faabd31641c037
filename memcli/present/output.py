"""Rendering results: plain text or rich tables for people, JSON Lines for programs.

Data goes to stdout; progress, summaries and errors go to stderr.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memcli.errors import NotFound
from memcli.progress import NoProgress, Progress
from memcli.text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

_WRITE_FIX = "pass a file path in an existing directory you can write to"


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
        # rich is imported only when something is printed through it (a table, a message):
        # data written as plain text or JSON never pays for it.
        self._err: Console | None = None
        self._out: Console | None = None

    @property
    def err(self) -> Console:
        """The rich console on stderr, for messages and progress."""
        if self._err is None:
            self._err = _console_class()(file=self.stderr, highlight=False, soft_wrap=True)
        return self._err

    @property
    def out(self) -> Console:
        """The rich console on stdout, for tables."""
        if self._out is None:
            self._out = _console_class()(
                file=self.stdout, highlight=False, soft_wrap=True, no_color=self.json
            )
        return self._out

    def record(self, obj: Mapping[str, Any]) -> None:
        """One JSON object on one line of stdout."""
        self.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stdout.flush()

    def text(self, text: str) -> None:
        """Plain text on stdout, as given but for control characters, which are shown
        escaped: stored text must not drive the terminal (clear it, retitle it...)."""
        text = terminal_safe(text)
        self.stdout.write(text if text.endswith("\n") else text + "\n")
        self.stdout.flush()

    def table(self, table: Table) -> None:
        """A rich table; its cells should come from `safe_table` rows (see present.common),
        its title and caption are made safe here."""
        from rich.text import Text

        for part in ("title", "caption"):
            value = getattr(table, part)
            if isinstance(value, str):
                setattr(table, part, Text(terminal_safe(value)))
        self.out.print(table)

    def info(self, message: str) -> None:
        """A message for people on stderr (hidden by -q)."""
        if not self.quiet:
            self.err.print(terminal_safe(message), markup=False)

    def note(self, obj: dict[str, Any]) -> None:
        """Under --json, what `info` says to people, as one JSON object on stderr (hidden
        by -q): stdout keeps only the records."""
        if not self.quiet:
            self.stderr.write(json.dumps(obj, ensure_ascii=False) + "\n")
            self.stderr.flush()

    def error(self, message: str, fix: str | None = None, code: int = 1) -> None:
        """The one report of a failure on stderr: `memcli: error: ...` with its `fix:` line,
        or under --json one object {"error", "fix", "exit"} that scripts can parse."""
        if self.json:
            report = {"error": message, "fix": fix, "exit": code}
            self.stderr.write(json.dumps(report, ensure_ascii=False) + "\n")
            self.stderr.flush()
            return
        text = message if not fix else f"{message}\n  fix: {fix}"
        self.err.print(f"memcli: error: {terminal_safe(text)}", markup=False, style="red")

    def progress(self) -> Progress:
        """A progress bar when stderr is a terminal, otherwise silence."""
        if self.quiet or self.json or not self.stderr.isatty():
            return NoProgress()
        return RichProgress(self.err)


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone (`memcli ... | head`), so that
    nothing more, not even the interpreter's last flush, fails on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass


def stdout_is_devnull() -> bool:
    """Whether stdout is /dev/null (as after `silence_stdout`)."""
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False


@cache
def _console_class() -> type[Console]:
    """A rich console class that leaves a closed pipe to memcli's one error handler instead
    of exiting 1 on its own."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    return _Console


def _cannot_write(path: str | os.PathLike[str], exc: OSError) -> NotFound:
    reason = "it is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror or exc
    return NotFound(f"cannot write {path}: {reason}", fix=_WRITE_FIX)


def check_writable(path: str | os.PathLike[str] | None) -> None:
    """Raise NotFound unless `path` (when given) can be written; leaves no new file behind."""
    if path is None:
        return
    target = Path(path)
    existed = target.exists()
    try:
        if target.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    if not existed:
        target.unlink(missing_ok=True)


def write_file(path: str | os.PathLike[str], text: str) -> None:
    """Write text to a file the user named, readable by its owner only (it holds memory
    text, like the store and exports); OS failures become NotFound with a fix."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not a terminal or pipe such as /dev/stdout
            os.fchmod(fd, 0o600)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
