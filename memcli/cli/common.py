"""What every command shares: the global options' State, the one error wrapper, the store.

Commands import the library inside their bodies so that `memcli --help` stays fast.
"""

from __future__ import annotations

import functools
import inspect
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from memcli.cli.helptext import paragraphs
from memcli.errors import MemcliError, Terminated, UsageError, damaged_store, did_you_mean
from memcli.present.output import Output, silence_stdout

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory import Memory

F = TypeVar("F", bound=Callable[..., Any])

# Text, not Path: a Path turns --db "" into ".", and an empty --db is a mistake to report.
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database file, or a postgresql:// URL (env MEMCLI_DB).",
        show_default=False,
    ),
]
SpaceOpt = Annotated[
    str | None,
    typer.Option("--space", help="Memory space to use (env MEMCLI_SPACE; default 'default')."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON Lines on stdout.")]
# Accepted by commands that never open the store (benchmarks), as by every other command.
_NOT_USED = "Not used: each conversation gets its own temporary store."
UnusedDbOpt = Annotated[str | None, typer.Option("--db", help=_NOT_USED, show_default=False)]
UnusedSpaceOpt = Annotated[str | None, typer.Option("--space", help=_NOT_USED)]
VerboseOpt = Annotated[
    int, typer.Option("-v", "--verbose", count=True, help="More detail.", show_default=False)
]
QuietOpt = Annotated[bool, typer.Option("-q", "--quiet", help="Only data and errors.")]


def db_path(value: str | Path | None) -> str | None:
    """The --db value (a path, or a postgresql:// URL, which a Path would mangle); a
    UsageError for an empty one."""
    if value is None:
        return None
    if not str(value).strip():
        raise UsageError(
            "--db must not be empty",
            fix="pass the store's file (e.g. --db ~/memory.db), or leave --db out for the "
            "default (memcli config show prints it)",
        )
    return str(value)


@dataclass
class State:
    """Global options, merged with the per-command --db/--space/--json."""

    db: str | None = None
    config: Path | None = None
    space: str | None = None
    json: bool = False
    verbose: int = 0
    quiet: bool = False
    debug: bool = False
    _out: Output | None = field(default=None, repr=False)

    def merge(
        self, db: str | None, space: str | None, json_mode: bool, quiet: bool = False,
        verbose: int = 0,
    ) -> State:  # fmt: skip
        self.db = db_path(db) or self.db
        self.space = space or self.space
        self.json = self.json or json_mode
        self.quiet = self.quiet or quiet
        self.verbose += verbose
        self._out = None
        return self

    @property
    def out(self) -> Output:
        if self._out is None:
            self._out = Output(self.json, self.quiet, self.verbose)
        return self._out

    def config_obj(self) -> Config:
        from memcli.config import load_config

        if self.space is not None and not self.space.strip():
            raise UsageError("--space must not be empty")
        overrides = {"db": str(self.db) if self.db else None, "space": self.space}
        cfg = load_config(str(self.config) if self.config else None, overrides=overrides)
        for notice in cfg.notices:  # settings that are read no more: said, not fatal
            if self.json:
                self.out.note({"warning": notice})
            else:
                self.out.info(f"memcli: warning: {notice}")
        return cfg


def get_state(ctx: typer.Context) -> State:
    """The State of the running command (a fresh one when a sub-app is invoked alone)."""
    obj = ctx.find_object(State)
    if obj is None:
        obj = State()
        ctx.obj = obj
    return obj


def need_command(ctx: typer.Context) -> None:
    """A group run without a command is a usage error (help goes to stdout only on --help)."""
    if ctx.invoked_subcommand is None:
        names = ", ".join(ctx.command.list_commands(ctx))  # type: ignore[attr-defined]
        path = ctx.command_path
        raise UsageError(f"{path} needs a command: {names}", fix=f"see `{path} --help`")


INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, as shells report a process ended by it


def describe(exc: BaseException) -> tuple[str, str | None, int]:
    """The message, fix and exit code that report an exception."""
    exc = damaged_store(exc) or exc
    if isinstance(exc, MemcliError):
        return exc.message, exc.fix, exc.exit_code
    if isinstance(exc, Terminated):  # `fix`: what an operation says to do next, if anything
        return "terminated (SIGTERM)", getattr(exc, "fix", None), TERMINATED
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", getattr(exc, "fix", None), INTERRUPTED
    fix = "run again with --debug to see the traceback, and please report it"
    return f"internal error: {type(exc).__name__}: {exc}", fix, 1


def _fail(state: State, exc: BaseException) -> typer.Exit:
    """Report an exception on stderr and return the Exit to raise. A reader that closed
    stdout early (`memcli ... | head`) is no failure: the command ends quietly with 0."""
    if isinstance(exc, BrokenPipeError):
        silence_stdout()
        return typer.Exit(0)
    exc = damaged_store(exc) or exc
    message, fix, code = describe(exc)
    out = state.out
    if isinstance(exc, (MemcliError, KeyboardInterrupt)) or out.json:
        out.error(message, fix, code)
    else:  # a bug: the advice to report it is a note, which -q hides
        out.error(message)
        if not state.debug:
            out.info(fix or "")
    if state.debug:
        out.err.print("".join(traceback.format_exception(exc)), markup=False)
    return typer.Exit(code)


# The per-command options a command can take, with their defaults.
_SHARED = {"db": (DbOpt, None), "space": (SpaceOpt, None), "json_mode": (JsonOpt, False)}
# Taken by every command, before or after its name, as by the root command.
_ALWAYS = {"quiet": (QuietOpt, False), "verbose": (VerboseOpt, 0)}
_UNUSED = {"db": (UnusedDbOpt, None), "space": (UnusedSpaceOpt, None)}
_KIND = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _signature(
    fn: Callable[..., Any], shared: tuple[str, ...], unused: bool = False
) -> inspect.Signature:
    """What Typer sees: ctx, the body's own options, then the shared ones (the body's own
    declaration of a shared option wins, e.g. a --space with other help; with `unused`,
    --db and --space are accepted and said to be unused)."""
    sig = inspect.signature(fn, eval_str=True)
    own = sig.parameters
    params = [p for name, p in own.items() if name not in ("ctx", "state", *shared)]
    for name in shared:
        annotation, default = (_UNUSED if unused and name in _UNUSED else _SHARED)[name]
        params.append(
            own.get(name) or inspect.Parameter(name, _KIND, annotation=annotation, default=default)
        )
    for name, (kind, value) in _ALWAYS.items():
        params.append(inspect.Parameter(name, _KIND, annotation=kind, default=value))
    ctx = inspect.Parameter("ctx", _KIND, annotation=typer.Context)
    return sig.replace(parameters=[ctx, *params])


def with_state(*shared: str, unused: bool = False) -> Callable[[F], F]:
    """Give a command body its State: the global options merged with the per-command ones
    named in `shared` (db, space, json_mode), which are added to the command unless the body
    declares them itself. Every error the body raises leaves here with its exit code (the one
    place that maps them). The body may also take `ctx`."""

    def decorate(fn: F) -> F:
        own = inspect.signature(fn).parameters

        @functools.wraps(fn)
        def wrapper(ctx: typer.Context, **kwargs: Any) -> Any:
            values = {name: kwargs[name] if name in own else kwargs.pop(name) for name in shared}
            state = get_state(ctx).merge(
                values.get("db"), values.get("space"), values.get("json_mode", False),
                quiet=kwargs.pop("quiet", False), verbose=kwargs.pop("verbose", 0),
            )  # fmt: skip
            given = {"ctx": ctx, "state": state}
            kwargs.update({name: value for name, value in given.items() if name in own})
            try:
                return fn(**kwargs)
            except (typer.Exit, typer.Abort, SystemExit):
                raise
            except BaseException as exc:  # every failure leaves through _fail
                raise _fail(state, exc) from None

        wrapper.__doc__ = paragraphs(fn.__doc__ or "")  # source lines read as prose
        wrapper.__signature__ = _signature(fn, shared, unused)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


@contextmanager
def memory(
    state: State, create: bool = False, any_space: bool = False, write: bool = False
) -> Iterator[Memory]:
    """Open the configured store for the length of a command (only `create` makes a new one).

    Unless the command creates (`create`) or works on the whole file (`any_space`), a
    space the store does not hold is a mistyped name: NotFound, naming the spaces there are.
    A command that writes (`write`, or `create`) fails at once on a store it may only read.
    """
    from memcli.memory import Memory

    mem = Memory(state.config_obj(), create=create)
    done = False
    try:
        if write or create:
            mem.store.require_writable()
        if not (create or any_space):
            mem.require_space()
        yield mem
        done = True
    finally:
        mem.close(failed=not done)


def check_strategy(names: Iterable[str]) -> None:
    """A usage error for a --strategy value that names no retrieval strategy (one in the
    config file is a config error, raised where it is used)."""
    from memcli.retrieval import strategy_names

    known = strategy_names()
    for name in names:
        if name not in known:
            raise UsageError(
                f"unknown --strategy {name!r}{did_you_mean(name, known)}",
                fix=f"choose one of: {', '.join(known)}",
            )
