"""The root command: global options, and the exit for errors the parser finds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from memcli.cli.common import DbOpt, JsonOpt, SpaceOpt, State, need_command
from memcli.errors import MemcliError, UsageError


def _usage_message(exc: typer.TyperException) -> str:
    """A parser error as `memcli: error: ...` text, with a pointer to the right --help."""
    ctx = getattr(exc, "ctx", None)  # usage errors know the command they belong to
    path = ctx.command_path if ctx is not None else "memcli"
    message = exc.format_message()
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]  # "No such option" -> "no such option"
    return str(UsageError(message, fix=f"see `{path} --help`"))


class MemcliGroup(TyperGroup):
    """The root command: parser errors leave like every other error, one line and exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as exc:  # Typer's public base of its parser errors
            sys.stderr.write(f"memcli: error: {_usage_message(exc)}\n")
            code = exc.exit_code
        except MemcliError as exc:  # raised by a group callback, e.g. a missing command
            sys.stderr.write(f"memcli: error: {exc}\n")
            code = exc.exit_code
        except typer.Abort:
            sys.stderr.write("memcli: error: interrupted\n")
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="memcli",
    cls=MemcliGroup,
    add_completion=False,
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
VerboseOpt = Annotated[int, typer.Option("-v", "--verbose", count=True, help="More detail.")]
QuietOpt = Annotated[bool, typer.Option("-q", "--quiet", help="Only data and errors.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
VersionOpt = Annotated[
    bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
]


@app.callback(invoke_without_command=True)
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
    ctx.obj = State(db, config, space, json_mode, verbose, quiet, debug)
    need_command(ctx)


def main() -> None:
    """Console-script entry point."""
    try:
        app(prog_name="memcli")
    except KeyboardInterrupt:
        sys.stderr.write("memcli: error: interrupted\n")
        sys.exit(130)
