"""`consolidate`: a table of stages, their notes and the token totals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from memcli.present.common import SafeTable, new_table, noun

if TYPE_CHECKING:
    from memcli.consolidate.reports import ConsolidateReport, StageReport
    from memcli.present.output import Output

_STAGE_COLUMNS = ("stage", "status", "units", "nodes", "edges", "calls", "cached", "failed")


def show_consolidation(out: Output, report: ConsolidateReport) -> None:
    """A ConsolidateReport: a table of stages, then each stage's note (why it was skipped,
    what waits), then token totals. When another run holds the lock: a message on stderr.
    With -q a real run prints nothing, so that a cron job mails only errors."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet and not report.dry_run:
        return
    if report.locked:
        holder = report.holder or {}
        out.info(
            f"another consolidation is running (pid {holder.get('pid')} on {holder.get('host')},"
            f" since {holder.get('since')}); nothing done"
        )
        return
    out.table(_stages_table(report))
    notes = [note for note in map(_stage_note, report.stages) if note]
    if notes:
        out.text("\n".join(notes))
    waiting = report.waiting()
    if waiting and not report.dry_run:
        out.text(_waiting_text(waiting))
    if report.dry_run and report.sessions:
        out.table(_buffers_table(report.sessions))
    t = report.totals()
    per = report.per_turn()
    cost = (
        f"; per turn consolidated: {per['tokens']:,.0f} tokens, {per['seconds']:.2f} s"
        if per
        else ""
    )
    out.info(
        f"{t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} completion tokens, "
        f"{t['llm_calls']} model {noun(t['llm_calls'], 'call')}, {t['cache_hits']} answered "
        f"from the cache, {t['failures']} {noun(t['failures'], 'failure')} "
        f"({report.seconds:.1f} s{cost})"
    )


def _stages_table(report: ConsolidateReport) -> Table:
    """One row of counts per stage."""
    title = "consolidation (dry run: nothing written)" if report.dry_run else "consolidation"
    table = SafeTable(title=title, title_justify="left", box=box.SIMPLE, pad_edge=False)
    for col in (*_STAGE_COLUMNS, "pending"):
        left = col in ("stage", "status")
        table.add_column(
            col, justify="left" if left else "right", min_width=max(len(col), 9 * left)
        )
    for s in report.stages:
        counts = (s.items, s.nodes, s.edges, s.llm_calls, s.cache_hits, s.failures, s.pending)
        table.add_row(s.name, s.status, *map(str, counts))
    return table


def _stage_note(s: StageReport) -> str:
    """`stage: why it was skipped; its extra counts`, or '' when there is nothing to say."""
    extra = [f"{k.replace('_', ' ')}: {v}" for k, v in s.extra.items() if v]
    if s.dropped:
        extra.append(f"invented ids dropped: {s.dropped}")
    if not (s.reason or extra):
        return ""
    return f"{s.name}: " + "; ".join([*([s.reason] if s.reason else []), *extra])


def _waiting_text(waiting: dict[str, dict[str, Any]]) -> str:
    """`waiting for the next run:` and one line per stage: how many units, and why."""
    lines = ["waiting for the next run:"]
    for name, w in waiting.items():
        lines.append(f"  {name}: {w['units']} {noun(w['units'], w['unit'])} ({w['why']})")
    return "\n".join(lines)


def _buffers_table(sessions: list[dict[str, Any]]) -> Table:
    table = new_table("open session buffers", ("session", "pending turns", "tokens", "closes now"))
    for b in sessions:
        closes = "yes" if b["closes"] else "no"
        table.add_row(b["session"], str(b["pending"]), str(b["tokens"]), closes)
    return table
