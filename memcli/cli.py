"""The command line: parse, call the library, render, map errors to exit codes.

This is the only module that imports typer. Library modules are imported inside the
commands so that `memcli --help` stays fast.
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from memcli import render
from memcli.errors import MemcliError, UsageError
from memcli.output import Output

try:  # recent Typer releases ship their own copy of Click
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # pragma: no cover - older Typer on top of Click
    from click.exceptions import UsageError as ClickUsageError

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.ops import Memory

F = TypeVar("F", bound=Callable[..., Any])


def _usage_message(exc: ClickUsageError) -> str:
    """A parser error as `memcli: error: ...` text, with a pointer to the right --help."""
    path = exc.ctx.command_path if exc.ctx is not None else "memcli"
    message = exc.format_message()
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]  # "No such option" -> "no such option"
    return str(UsageError(message, fix=f"see `{path} --help`"))


def _need_command(ctx: typer.Context) -> None:
    """A group run without a command is a usage error (help goes to stdout only on --help)."""
    if ctx.invoked_subcommand is None:
        names = ", ".join(ctx.command.list_commands(ctx))  # type: ignore[attr-defined]
        raise ClickUsageError(f"{ctx.command_path} needs a command: {names}", ctx=ctx)


class MemcliGroup(TyperGroup):
    """The root command: parser errors leave like every other error, one line and exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except ClickUsageError as exc:
            sys.stderr.write(f"memcli: error: {_usage_message(exc)}\n")
            code = UsageError.exit_code
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
    "  memcli ask --context-only 'Where did Caroline move from?'\n\n"
    "  memcli --json inspect",
)
inspect_app = typer.Typer(no_args_is_help=False, rich_markup_mode="rich")
eval_app = typer.Typer(rich_markup_mode="rich")
app.add_typer(inspect_app, name="inspect")
app.add_typer(eval_app, name="eval")

DbOpt = Annotated[
    Path | None, typer.Option("--db", help="Database file (env MEMCLI_DB).", show_default=False)
]
SpaceOpt = Annotated[
    str | None,
    typer.Option("--space", help="Memory space to use (env MEMCLI_SPACE; default 'default')."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON Lines on stdout.")]


@dataclass
class State:
    """Global options, merged with the per-command --db/--space/--json."""

    db: Path | None = None
    config: Path | None = None
    space: str | None = None
    json: bool = False
    verbose: int = 0
    quiet: bool = False
    debug: bool = False
    _out: Output | None = field(default=None, repr=False)

    def merge(self, db: Path | None, space: str | None, json_mode: bool) -> State:
        self.db = db or self.db
        self.space = space or self.space
        self.json = self.json or json_mode
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
        return load_config(str(self.config) if self.config else None, overrides=overrides)


def _state(ctx: typer.Context) -> State:
    """The State of the running command (a fresh one when a sub-app is invoked alone)."""
    obj = ctx.find_object(State)
    if obj is None:
        obj = State()
        ctx.obj = obj
    return obj


def _fail(state: State, exc: BaseException) -> typer.Exit:
    """Report an exception on stderr and return the Exit to raise."""
    out = state.out
    if isinstance(exc, MemcliError):
        out.error(str(exc))
        code = exc.exit_code
    elif isinstance(exc, KeyboardInterrupt):
        out.error("interrupted")
        code = 130
    else:
        out.error(f"internal error: {type(exc).__name__}: {exc}")
        if not state.debug:
            out.info("run again with --debug to see the traceback, and please report it")
        code = 1
    if state.debug:
        out.err.print("".join(traceback.format_exception(exc)), markup=False)
    return typer.Exit(code)


def handled(fn: F) -> F:
    """Run a command body, mapping every error to its exit code (the one place that does)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except BaseException as exc:  # every failure leaves through _fail
            raise _fail(_state(kwargs["ctx"]), exc) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def memory(state: State, create: bool = False) -> Iterator[Memory]:
    """Open the configured store for the length of a command (only `create` makes a new one)."""
    from memcli.ops import Memory

    mem = Memory(state.config_obj(), create=create)
    done = False
    try:
        yield mem
        done = True
    finally:
        mem.close(failed=not done)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"memcli {version('memcli')}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main_options(
    ctx: typer.Context,
    db: DbOpt = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Config file (env MEMCLI_CONFIG; else ./memcli.yaml)."),
    ] = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More detail.")] = 0,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Only data and errors.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Global options come before the command."""
    ctx.obj = State(db, config, space, json_mode, verbose, quiet, debug)
    _need_command(ctx)


@app.command()
@handled
def ingest(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(help="Files to store; '-' reads stdin.")],
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="jsonl, chat, locomo or transcript (default: detected)."),
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Skip bad records instead of rejecting the file.")
    ] = False,
    db: DbOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Store conversation turns verbatim: no LLM needed, and ingesting again adds nothing.

    [b]Examples[/b]

      memcli ingest chat.jsonl

      cat transcript.txt | memcli ingest --format transcript -

      memcli --json ingest locomo10.json
    """
    state = _state(ctx).merge(db, space, json_mode)
    with memory(state, create=True) as mem:
        report = mem.ingest(
            files, fmt=fmt, skip_invalid=skip_invalid, progress=state.out.progress()
        )
    render.ingest(state.out, report)


@app.command()
@handled
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question; '-' reads one per stdin line.")],
    context_only: Annotated[
        bool, typer.Option("--context-only", help="Print the packed memory; no LLM is called.")
    ] = False,
    k: Annotated[int | None, typer.Option("-k", "--k", min=1, help="Hits to return.")] = None,
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", help="hybrid (default), dwpr, gam, lexical or semantic."),
    ] = None,
    db: DbOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Answer from memory with citations, or print the packed memory with --context-only.

    Answering needs an LLM (llm.provider, llm.model); the answer cites the node ids it used.

    With '-', every stdin line gives exactly one output line, in the same order.

    A blank stdin line gives an empty line (--json: an object with empty question and hits).

    [b]Examples[/b]

      memcli ask "Where did Caroline move from?"

      memcli ask --context-only "What did Caroline research?"

      memcli --json ask --strategy lexical -k 5 --context-only "adoption agencies"

      printf 'Q1\\nQ2\\n' | memcli --json ask --context-only -
    """
    state = _state(ctx).merge(db, space, json_mode)
    with memory(state) as mem:
        batch = question == "-"
        for q in _stdin_lines() if batch else [question]:
            if batch and not q:
                answer = _blank()
            else:
                answer = mem.ask(q, strategy=strategy, k=k, context_only=context_only)
            render.answer(state.out, answer, one_line=batch)


def _stdin_lines() -> Iterator[str]:
    """Every stdin line, stripped; blank ones too, so output lines match input lines."""
    for line in sys.stdin:
        yield line.strip()


def _blank() -> Any:
    """The result of a blank batch question: nothing asked, nothing found."""
    from memcli.models import Answer

    return Answer(question="", context="", hits=[])


@app.command()
@handled
def consolidate(
    ctx: typer.Context,
    flush: Annotated[
        bool, typer.Option("--flush", help="Also close open session buffers (the latest turns).")
    ] = False,
    stage: Annotated[
        list[str] | None,
        typer.Option(
            "--stage",
            help="Run only these stages: segment, summarize, link, facts, concepts, reflect "
            "(repeat, or separate with commas).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="At most N units of work per stage in this run."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what is pending; write nothing, call no model.")
    ] = False,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Run only the stages that need no LLM.")
    ] = False,
    db: DbOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Distil stored turns into segments, facts, concepts, reflections and topic links.

    Incremental and safe to run from cron: each unit of work commits on its own, a killed
    run resumes where it stopped, and a run that finds another one in progress exits 0 at
    once. Without an LLM (or with --no-llm) link, facts and reflect are skipped.

    [b]Examples[/b]

      memcli consolidate

      memcli consolidate --no-llm --flush

      memcli consolidate --stage segment,concepts --limit 20

      memcli --json consolidate --dry-run

      */15 * * * * memcli --db ~/memory.db -q consolidate   (crontab)
    """
    state = _state(ctx).merge(db, space, json_mode)
    with memory(state) as mem:
        report = mem.consolidate(
            flush=flush, stages=stage, limit=limit, dry_run=dry_run, no_llm=no_llm,
            progress=state.out.progress(),
        )  # fmt: skip
    render.consolidate(state.out, report)


@inspect_app.callback(invoke_without_command=True)
@handled
def inspect_main(
    ctx: typer.Context, db: DbOpt = None, space: SpaceOpt = None, json_mode: JsonOpt = False
) -> None:
    """Look inside the store: counts, one node, exports.

    Without a subcommand: the counts of `memcli inspect stats`.

    [b]Examples[/b]

      memcli inspect

      memcli --json inspect

      memcli inspect node ep12
    """
    state = _state(ctx).merge(db, space, json_mode)
    if ctx.invoked_subcommand is None:
        with memory(state) as mem:
            render.stats(state.out, mem.stats())


@inspect_app.command("stats")
@handled
def inspect_stats(
    ctx: typer.Context, db: DbOpt = None, space: SpaceOpt = None, json_mode: JsonOpt = False
) -> None:
    """Counts of nodes by kind and edges by type, spaces, embedding model, file size.

    [b]Examples[/b]

      memcli inspect stats

      memcli --json inspect stats --space work
    """
    state = _state(ctx).merge(db, space, json_mode)
    with memory(state) as mem:
        render.stats(state.out, mem.stats())


@inspect_app.command("node")
@handled
def inspect_node(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(help="A node id such as ep12 or fa3.")],
    db: DbOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """One node: its text and properties, its neighbours, and where it came from.

    [b]Examples[/b]

      memcli inspect node ep12

      memcli --json inspect node fa3
    """
    state = _state(ctx).merge(db, space, json_mode)
    with memory(state) as mem:
        render.node(state.out, mem.node_view(node_id))


@inspect_app.command("graph")
@handled
def inspect_graph(
    ctx: typer.Context,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="graphml (Gephi; the default), json or dot (Graphviz).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
    db: DbOpt = None,
    space: SpaceOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Export the space's graph: every node (id, kind, text...) and edge (type, weight).

    --json prints the JSON export as one line (one JSON Lines record).

    [b]Examples[/b]

      memcli inspect graph > memory.graphml

      memcli inspect graph --format dot | dot -Tsvg > memory.svg

      memcli inspect graph --format json -o graph.json
    """
    from memcli.ops.graph_export import choose_format

    state = _state(ctx).merge(db, space, json_mode)
    chosen = choose_format(fmt, state.json)
    with memory(state) as mem:
        render.export(state.out, mem.export_graph(chosen, compact=state.json), output)


@app.command("config")
@handled
def show_config(
    ctx: typer.Context, db: DbOpt = None, space: SpaceOpt = None, json_mode: JsonOpt = False
) -> None:
    """Print the effective configuration (secrets masked) and the file it came from.

    [b]Examples[/b]

      memcli config

      memcli --config ~/memcli.yaml config --db work.db

      memcli --json config
    """
    from memcli.config import masked

    state = _state(ctx).merge(db, space, json_mode)
    cfg = state.config_obj()
    render.config(state.out, masked(cfg), cfg.source_file)


@app.command()
@handled
def reindex(ctx: typer.Context, db: DbOpt = None, json_mode: JsonOpt = False) -> None:
    """Re-embed every node with the configured embedding model (after changing models).

    [b]Examples[/b]

      memcli --config new-embedding-model.yaml reindex

      memcli --json reindex --db work.db
    """
    state = _state(ctx).merge(db, None, json_mode)
    with memory(state) as mem:
        render.record_or_line(state.out, mem.reindex(progress=state.out.progress()), "reindexed")


@app.command()
@handled
def prune(
    ctx: typer.Context,
    source: Annotated[
        list[str] | None,
        typer.Option(help="A file as ingested: its path, or a sha256 prefix (8+ hex). Repeatable."),
    ] = None,
    session: Annotated[
        list[str] | None,
        typer.Option(help="A session id, or a glob such as 'conv-26:*'. Repeatable."),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(help="Episodes older than this: 90min, 12h, 30d, 2w, 6mo, 1y."),
    ] = None,
    before: Annotated[
        str | None, typer.Option(help="Episodes dated before this ISO date, e.g. 2024-03-01.")
    ] = None,
    node: Annotated[
        list[str] | None, typer.Option(help="A node id such as ep12 or fa3. Repeatable.")
    ] = None,
    superseded: Annotated[bool, typer.Option("--superseded", help="Superseded facts.")] = False,
    min_belief: Annotated[
        float | None, typer.Option(help="Facts and reflections with belief below this.")
    ] = None,
    orphans: Annotated[
        bool, typer.Option("--orphans", help="Derived nodes with nothing left they came from.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would go; change nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a TTY).")
    ] = False,
    vacuum: Annotated[
        bool, typer.Option("--vacuum", help="Then scrub freed bytes from the file (slower).")
    ] = False,
    db: DbOpt = None,
    space: Annotated[
        str | None,
        typer.Option("--space", help="Work in this space; given alone, selects the WHOLE space."),
    ] = None,
    json_mode: JsonOpt = False,
) -> None:
    """Forget memories, and everything derived only from them (facts, segments, concepts…).

    Selectors combine with AND; a repeated selector with OR.

    Episodes without a date never match --older-than or --before.

    --source keeps an episode that another, unselected file also holds.

    Without a terminal, pass --yes (or --dry-run).

    [b]Examples[/b]

      memcli prune --source chat.jsonl --dry-run

      memcli prune --session 'conv-26:*' --yes --vacuum

      memcli prune --older-than 6mo --yes

      memcli prune --superseded --min-belief 0.3 --yes

      memcli --json prune --node ep12 --yes
    """
    from memcli.ops.prune import Selection

    state = _state(ctx).merge(db, space, json_mode)
    sel = Selection(
        tuple(source or ()), tuple(session or ()), space is not None, older_than, before,
        tuple(node or ()), superseded, min_belief, orphans,
    )  # fmt: skip
    sel.check(vacuum=vacuum)
    with memory(state) as mem:
        report = _prune_confirmed(state, mem, sel, dry_run=dry_run, yes=yes, vacuum=vacuum)
    if report is not None:
        render.prune(state.out, report)


def _prune_confirmed(
    state: State, mem: Memory, sel: Any, *, dry_run: bool, yes: bool, vacuum: bool
) -> Any:
    """Prune, asking first on a terminal; without one, only with --yes or --dry-run."""
    if dry_run or yes:
        return mem.prune(sel, dry_run=dry_run, vacuum=vacuum)
    if not (sys.stdin.isatty() and state.out.stderr.isatty()):
        raise UsageError(
            "prune removes memories and there is no terminal to confirm it on",
            fix="add --yes to go ahead, or --dry-run to see what would be removed",
        )
    preview = mem.prune(sel, dry_run=True)
    if preview.total or preview.sources:
        counts = ", ".join(f"{n:,} {kind}" for kind, n in preview.removed.items()) or "no nodes"
        if not _confirm(state, f"remove {counts} ({preview.edges:,} edges), for good?"):
            state.out.info("nothing removed")
            return None
    return mem.prune(sel, vacuum=vacuum)


def _confirm(state: State, question: str) -> bool:
    """Ask on stderr and read the answer from stdin; only y or yes agrees.

    (typer.confirm echoes a space to stdout, which must carry data only.)
    """
    state.out.err.print(f"{question} [y/N] ", end="", markup=False)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _int_list(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise UsageError(f"--k expects numbers like 5,10,20, got {text!r}") from None
    if not values or values[0] < 1:
        raise UsageError("--k needs at least one positive number")
    return values


@eval_app.callback(invoke_without_command=True)
def eval_main(ctx: typer.Context) -> None:
    """Built-in benchmarks: LoCoMo retrieval recall and, with an LLM, answer quality.

    [b]Examples[/b]

      memcli eval locomo locomo-dev.json

      memcli --json eval locomo locomo-dev.json --strategy hybrid,gam
    """
    _need_command(ctx)


@eval_app.command("locomo")
@handled
def eval_locomo(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A LoCoMo JSON file (locomo10.json format).")],
    strategy: Annotated[
        str, typer.Option("--strategy", help="Strategy, or several separated by commas.")
    ] = "hybrid",
    k: Annotated[str, typer.Option("--k", help="Cut-offs for recall@k.")] = "5,10,20",
    json_out: Annotated[
        Path | None, typer.Option("--json-out", help="Write every question's result here.")
    ] = None,
    consolidate: Annotated[
        bool,
        typer.Option(
            "--consolidate/--no-consolidate",
            help="Consolidate each store before asking (no-LLM stages when no LLM is set).",
        ),
    ] = False,
    json_mode: JsonOpt = False,
) -> None:
    """Evidence recall of retrieval on LoCoMo, each conversation in its own temporary store.

    With an LLM, answers are scored too: LLM judge, token F1, BLEU-1, tokens per query.

    [b]Examples[/b]

      memcli eval locomo locomo-dev.json

      memcli eval locomo locomo-dev.json --strategy lexical,semantic,hybrid --json-out r.json
    """
    from memcli.eval.locomo import run_locomo
    from memcli.output import check_writable

    state = _state(ctx).merge(None, None, json_mode)
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    cfg = state.config_obj()
    check_writable(json_out)  # before the run, not after an hour of it
    report = run_locomo(
        str(file), cfg, names, _int_list(k), state.out.progress(), consolidate=consolidate
    )
    render.eval_report(state.out, report, json_out)


def main() -> None:
    """Console-script entry point."""
    try:
        app(prog_name="memcli")
    except KeyboardInterrupt:
        sys.stderr.write("memcli: error: interrupted\n")
        sys.exit(130)
