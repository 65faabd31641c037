"""The root command: global options, and the exit for errors the parser finds."""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from memcli.cli.coercion import defer_conversion
from memcli.cli.common import (
    DbOpt,
    JsonOpt,
    QuietOpt,
    SpaceOpt,
    State,
    VerboseOpt,
    db_path,
    describe,
    need_command,
)
from memcli.cli.helptext import prose
from memcli.errors import MemcliError, Terminated, UsageError
from memcli.present.output import Output, silence_stdout, stdout_is_devnull


def _usage_message(exc: typer.TyperException) -> UsageError:
    """A parser error as a UsageError, with a pointer to the right --help."""
    ctx = getattr(exc, "ctx", None)  # usage errors know the command they belong to
    path = ctx.command_path if ctx is not None else "memcli"
    message = exc.format_message()
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]  # "No such option" -> "no such option"
    return UsageError(message, fix=f"see `{path} --help`")


def _wants_json(argv: Sequence[str], exc: BaseException) -> bool:
    """Whether --json was given, even when the parser stopped before reading it."""
    ctx = getattr(exc, "ctx", None)
    state = ctx.find_object(State) if ctx is not None else None
    if state is not None and state.json:
        return True
    options = list(argv)[: list(argv).index("--")] if "--" in argv else argv
    return "--json" in options


def _report(exc: BaseException, argv: Sequence[str]) -> int:
    """Report an error met outside a command's body (the parser's, a group's) like any
    other; return its exit code."""
    if isinstance(exc, typer.TyperException):
        error: BaseException = _usage_message(exc)
    else:
        error = KeyboardInterrupt() if isinstance(exc, typer.Abort) else exc
    message, fix, code = describe(error)
    Output(json_mode=_wants_json(argv, exc)).error(message, fix, code)
    return code


def _stdout_gone(code: int) -> int:
    """The exit code once stdout is flushed: 0 when its reader has already gone."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return 0
    return code


def _item_type(label: str) -> str:
    return re.sub(r"^<list\[(.*)\]>$", r"<\1>", label).replace("<Path>", "<path>")


def tidy_metavars(command: Any) -> None:
    """Help shows no value for a flag or a counter (typer writes `<bool>`, `<int>`), and the
    item type for a repeatable option (`<str>...`, not `<list[str]>`); recursively."""
    help_option = command.get_help_option(typer.Context(command))
    for param in [*getattr(command, "params", ()), help_option]:
        if param is None or param.metavar is not None or not hasattr(param, "display_type"):
            continue
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
        elif getattr(param, "multiple", False):
            param.metavar = _item_type(param.display_type(None)) + "..."
        elif param.nargs != 1:  # an argument taking several values: its name ends in "..."
            item = _item_type(param.display_type(None))
            param.display_type_rich = lambda ctx, item=item: item
    for sub in getattr(command, "commands", {}).values():
        tidy_metavars(sub)


class MemcliGroup(TyperGroup):
    """The root command: parser errors leave like every other error, one message and exit 2."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **kwargs: Any,
    ) -> Any:
        argv = list(args) if args is not None else sys.argv[1:]
        tidy_metavars(self)
        defer_conversion(self)
        try:
            code = super().main(
                argv, prog_name, complete_var, False, windows_expand_args, **kwargs
            )  # standalone_mode off: errors come back here, to leave as memcli's
        except (typer.TyperException, MemcliError, typer.Abort) as exc:
            code = _report(exc, argv)
        code = _stdout_gone(code if isinstance(code, int) else 0)
        if not standalone_mode:
            return code
        sys.exit(code)

    # Help and version text is written while the command line is parsed: a reader that
    # closed stdout early (`memcli --help | head -1`) ends it quietly there too.
    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _quiet_when_stdout_gone():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _quiet_when_stdout_gone():
            return super().invoke(ctx)


@contextmanager
def _quiet_when_stdout_gone() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        silence_stdout()
        raise typer.Exit(0) from None
    except SystemExit as exc:  # rich's help writer exits 1 after pointing stdout at devnull
        if exc.code == 1 and stdout_is_devnull():
            raise typer.Exit(0) from None
        raise


app = typer.Typer(
    name="memcli",
    cls=MemcliGroup,
    add_completion=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    help="Long-term memory for AI agents, in one SQLite file.\n\n"
    "Store conversations verbatim (ingest), distil them into a graph (consolidate), "
    "and get memories back with citations (ask).\n\n"
    "[b]Examples[/b]\n\n"
    "  memcli ingest chat.jsonl\n\n"
    "  memcli ask --context-only 'When is the dentist appointment?'\n\n"
    "  memcli --json inspect",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"memcli {version('memcli')}")
        raise typer.Exit()


ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Config file (env MEMCLI_CONFIG; else ./memcli.yaml)."),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
VersionOpt = Annotated[
    bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
]


@app.callback(invoke_without_command=True)
@prose
def main_options(
    ctx: typer.Context,
    db: DbOpt = None,
    config: ConfigOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
    verbose: VerboseOpt = 0,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
    version: VersionOpt = False,
) -> None:
    """Global options come before the command."""
    ctx.obj = State(db_path(db), config, space, json_mode, verbose, quiet, debug)
    need_command(ctx)


def _terminate(signum: int, frame: Any) -> NoReturn:
    """SIGTERM unwinds like Ctrl-C: transactions roll back, consolidation records its
    stage as interrupted and releases its lock, and the exit code says what happened."""
    raise Terminated()


def main() -> None:
    """Console-script entry point."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        app(prog_name="memcli")
    except KeyboardInterrupt as exc:  # between the parser and a command's own handling
        sys.exit(_report(exc, sys.argv[1:]))
