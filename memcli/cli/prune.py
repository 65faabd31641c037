"""`memcli prune`: forget memories and what was derived only from them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app
from memcli.errors import UsageError

if TYPE_CHECKING:
    from memcli.memory import Memory
    from memcli.models import PruneReport
    from memcli.ops.prune import Selection

Sources = Annotated[
    list[str] | None,
    typer.Option(help="A file as ingested: its path, or a sha256 prefix (8+ hex). Repeatable."),
]
Sessions = Annotated[
    list[str] | None, typer.Option(help="A session id, or a glob such as 'work-*'. Repeatable.")
]
OlderThan = Annotated[
    str | None, typer.Option(help="Episodes older than this: 90min, 12h, 30d, 2w, 6mo, 1y.")
]
Before = Annotated[
    str | None, typer.Option(help="Episodes dated before this ISO date, e.g. 2024-03-01.")
]
Nodes = Annotated[list[str] | None, typer.Option(help="A node id such as ep12 or fa3. Repeatable.")]
Superseded = Annotated[bool, typer.Option("--superseded", help="Superseded facts.")]
MinBelief = Annotated[
    float | None, typer.Option(help="Facts and reflections with belief below this.")
]
Orphans = Annotated[
    bool, typer.Option("--orphans", help="Derived nodes with nothing left they came from.")
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would go; change nothing.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed without a TTY).")]
Vacuum = Annotated[
    bool, typer.Option("--vacuum", help="Then scrub freed bytes from the file (slower).")
]
PruneSpace = Annotated[
    str | None,
    typer.Option("--space", help="Work in this space; given alone, selects the WHOLE space."),
]


# The help is long enough to keep the command's code out of view, so it stands apart.
HELP = """Forget memories, and everything derived only from them (facts, segments, concepts…).

Selectors combine with AND; a repeated selector with OR.

Episodes without a date never match --older-than or --before.

--source keeps an episode that another, unselected file also holds.

Without a terminal, pass --yes (or --dry-run).

[b]Examples[/b]

  memcli prune --source chat.jsonl --dry-run

  memcli prune --session 'work-*' --yes --vacuum

  memcli prune --older-than 6mo --yes

  memcli prune --superseded --min-belief 0.3 --yes

  memcli --json prune --node ep12 --yes
"""


@app.command(help=HELP)
@with_state("db", "space", "json_mode")
def prune(
    state: State,
    source: Sources = None, session: Sessions = None, older_than: OlderThan = None,
    before: Before = None, node: Nodes = None, superseded: Superseded = False,
    min_belief: MinBelief = None, orphans: Orphans = False,
    dry_run: DryRun = False, yes: Yes = False, vacuum: Vacuum = False, space: PruneSpace = None,
) -> None:  # fmt: skip
    """`memcli prune` (help in HELP): select, check, confirm, prune, render."""
    from memcli.ops.prune import Selection
    from memcli.present.prune import show_prune

    sel = Selection(
        tuple(source or ()), tuple(session or ()), space is not None, older_than, before,
        tuple(node or ()), superseded, min_belief, orphans,
    )  # fmt: skip
    sel.check(vacuum=vacuum)
    with memory(state, write=not dry_run) as mem:
        report = _prune_confirmed(state, mem, sel, dry_run=dry_run, yes=yes, vacuum=vacuum)
    if report is not None:
        show_prune(state.out, report)


def _prune_confirmed(
    state: State, mem: Memory, sel: Selection, *, dry_run: bool, yes: bool, vacuum: bool
) -> PruneReport | None:
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
