"""`memcli consolidate`: distil stored turns into the graph, incrementally."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app
from memcli.errors import WorkLeftPending

if TYPE_CHECKING:
    from memcli.consolidate.reports import ConsolidateReport

Flush = Annotated[
    bool, typer.Option("--flush", help="Also close open session buffers (the latest turns).")
]
Stage = Annotated[
    list[str] | None,
    typer.Option(
        "--stage",
        help="Run only these stages: segment, summarize, link, gate, facts, concepts, "
        "entities, supersede, reflect, words (repeat, or separate with commas).",
    ),
]
Limit = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="At most N units of work per stage in this run."),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Show what is pending; write nothing, call no model.")
]
NoLLM = Annotated[bool, typer.Option("--no-llm", help="Run only the stages that need no LLM.")]
Unlock = Annotated[
    bool,
    typer.Option(
        "--unlock",
        help="Only release a consolidation lock left by a run on another host or container "
        "(refused while its process runs here).",
    ),
]


@app.command()
@with_state("db", "space", "json_mode")
def consolidate(
    state: State,
    flush: Flush = False,
    stage: Stage = None,
    limit: Limit = None,
    dry_run: DryRun = False,
    no_llm: NoLLM = False,
    unlock: Unlock = False,
) -> None:
    """Distil stored turns into segments, facts, concepts, reflections and topic links, and
    embed the new words of turns (ask searches a question's related words with them).

    Incremental and safe to run from cron: each unit of work commits on its own, a killed
    run resumes where it stopped, and a run that finds another one in progress exits 0 at
    once. Without an LLM (or with --no-llm) link, gate, facts, supersede and reflect are
    skipped.

    What waits for a later run is listed with the reason. When model calls failed, a run
    that still did some work exits 0 with a warning (hidden by -q); one that could do
    nothing exits 8 with one error line (the only output under -q). The next run retries
    that work; a unit whose replies stay invalid in three runs is given up (counted
    given_up_invalid): its turns stay searchable, and entities keep what the rules find.

    A lock left by a run that died on this host is taken over. One held on another host or
    container cannot be checked: the run exits 7 naming it, and `memcli consolidate
    --unlock` releases it once you know no run is going on there.

    [b]Examples[/b]

      memcli consolidate

      memcli consolidate --no-llm --flush

      memcli consolidate --stage segment,concepts --limit 20

      memcli --json consolidate --dry-run

      */15 * * * * memcli --db ~/memory.db -q consolidate   (crontab)
    """
    if unlock:
        _unlock(state)
        return
    from memcli.present.consolidate import show_consolidation

    with memory(state, write=not dry_run) as mem:
        report = mem.consolidate(
            flush=flush, stages=stage, limit=limit, dry_run=dry_run, no_llm=no_llm,
            progress=state.out.progress(),
        )  # fmt: skip
    show_consolidation(state.out, report)
    _check_failures(state, report)


def _unlock(state: State) -> None:
    """Release the consolidation lock and say whose it was."""
    from memcli.ops.consolidate import release_lock

    with memory(state, write=True, any_space=True) as mem:
        holder = release_lock(mem)
    if state.out.json:
        state.out.record({"released": holder is not None, "holder": holder})
    elif holder is None:
        state.out.info("no consolidation lock was held")
    else:
        state.out.info(
            f"released the consolidation lock of pid {holder['pid']} on {holder['host']} "
            f"(since {holder['since']})"
        )


def _check_failures(state: State, report: ConsolidateReport) -> None:
    """When failed model calls left work undone: a warning when the run still did some
    work (exit 0), exit 8 with one line when it could do nothing, so that cron notices."""
    failed = {s.name: s.failures for s in report.stages if s.failures}
    if not failed:
        return
    total = sum(failed.values())
    where = ", ".join(f"{name} {n}" for name, n in failed.items())
    said = f"{total} model call{'s' if total != 1 else ''} failed ({where})"
    if not report.progressed():
        raise WorkLeftPending(
            f"{said} and nothing else could be done: that work is left pending for the next "
            "run; `memcli inspect` shows the reasons"
        )
    warning = f"{said}: that work waits for the next run; the rest is done"
    if state.out.json:
        state.out.note({"warning": warning})
    else:
        state.out.info(f"memcli: warning: {warning}")
