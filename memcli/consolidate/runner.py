"""Running the stages in order under the store's consolidation lock, with `runs` rows.

One run takes the named lock `consolidate` (a second run exits at once with `locked`),
marks rows left `running` by a killed run as interrupted, then runs each selected stage:
its `runs` row opens as it starts and closes with its counters and status. A stage that
needs an LLM is skipped (with the reason, and a `skipped` row) when there is none. A model
server that stays unreachable fails the stage: its row is closed as `failed` and the
error propagates, after everything committed so far has been kept. Ctrl-C and SIGTERM
close the row as `interrupted` the same way; a SIGKILL leaves it `running` until the next
run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memcli.consolidate.buffer import pending_buffers
from memcli.consolidate.job import Job, RunContext
from memcli.consolidate.options import ConsolidateOptions
from memcli.consolidate.registry import PIPELINE, StageSpec
from memcli.consolidate.reports import UNIT_NAMES, ConsolidateReport, StageReport
from memcli.consolidate.stage import Stage, Stages
from memcli.errors import Terminated

NO_LLM_REASON = "needs an LLM (--no-llm, or llm.provider none)"


def _skip(report: StageReport, reason: str) -> StageReport:
    report.status, report.reason = "skipped", reason
    return report


def _reason(exc: BaseException) -> str:
    """The first line of an exception's message, or its type when there is none."""
    if isinstance(exc, KeyboardInterrupt):
        return str(exc) or ("terminated (SIGTERM)" if isinstance(exc, Terminated) else "Ctrl-C")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _run_stage(job: Job, spec: StageSpec, stage: Stage) -> None:
    """Run one stage with its `runs` row; failures close the row and propagate."""
    store = job.store
    run_id = store.run_start(job.space, stage.name)
    started = time.perf_counter()
    try:
        spec.run(stage)
    except BaseException as exc:
        stage.sync_usage()
        # Ctrl-C or SIGTERM: what was committed stays, the next run resumes from there.
        stopped = isinstance(exc, KeyboardInterrupt)
        stage.report.status = "interrupted" if stopped else "failed"
        stage.report.reason = _reason(exc)
        stage.report.seconds = time.perf_counter() - started
        report = stage.report
        store.run_finish(run_id, report.status, report.counters(), report.reason, report.extra)
        raise
    stage.sync_usage()
    stage.report.seconds = time.perf_counter() - started
    report = stage.report
    store.run_finish(run_id, report.status, report.counters(), report.reason, report.extra)


def _record_skip(job: Job, report: StageReport) -> None:
    run_id = job.store.run_start(job.space, report.name)
    job.store.run_finish(run_id, "skipped", report.counters(), report.reason)


def run_stages(job: Job, names: Sequence[str]) -> list[StageReport]:
    """Every stage in order: run, skipped for want of an LLM, or not selected."""
    reports: list[StageReport] = []
    job.selected = frozenset(names)
    stages = Stages(job)
    for spec in PIPELINE:
        stage = stages[spec.name]
        stage.report.unit = UNIT_NAMES.get(spec.consumes, "unit")
        if spec.name not in names:
            reports.append(_skip(stage.report, "not selected (--stage)"))
        elif spec.needs_llm and job.chat_model is None:
            reports.append(_skip(stage.report, NO_LLM_REASON))
            _record_skip(job, stage.report)
        else:
            _run_stage(job, spec, stage)
            reports.append(stage.report)
    return reports


def dry_run(job: Job, names: Sequence[str]) -> ConsolidateReport:
    """What a run would do: open buffers and pending units, with nothing written or called."""
    store, space = job.store, job.space
    pending_turns = set(store.unprocessed(space, "segment"))
    buffers = pending_buffers(job.episodes(), pending_turns, job.flush)
    reports = []
    for spec in PIPELINE:
        report = StageReport(spec.name, pending=spec.pending(store, space))
        report.unit = UNIT_NAMES.get(spec.consumes, "unit")
        if spec.name not in names:
            _skip(report, "not selected (--stage)")
        elif spec.needs_llm and job.chat_model is None:
            _skip(report, NO_LLM_REASON)
        else:
            _skip(report, "dry run")
        reports.append(report)
    return ConsolidateReport(stages=reports, dry_run=True, sessions=[b.to_dict() for b in buffers])


def consolidate(ctx: RunContext, options: ConsolidateOptions) -> ConsolidateReport:
    """Run (or, with `options.dry_run`, describe) the selected stages under the
    consolidation lock."""
    started = time.perf_counter()
    job = Job(ctx, flush=options.flush, limit=options.limit, selected=options.stages)
    names = options.stages
    if options.dry_run:
        report = dry_run(job, names)
    else:
        with ctx.store.consolidation_lock() as holder:
            if holder is not None:
                return ConsolidateReport(
                    locked=True, holder=holder, seconds=time.perf_counter() - started
                )
            ctx.store.runs_interrupted(ctx.space)
            report = ConsolidateReport(stages=run_stages(job, names))
    report.no_llm = ctx.chat is None
    report.seconds = time.perf_counter() - started
    return report
