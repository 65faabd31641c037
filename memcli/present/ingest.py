"""`ingest` and `add`: what was stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.present.common import noun

if TYPE_CHECKING:
    from memcli.models import AddReport, IngestReport
    from memcli.present.output import Output


def show_ingest(out: Output, report: IngestReport) -> None:
    """One summary line (or one JSON object) for an ingest run; nothing under -q."""
    if out.json:  # the warnings are in the record
        out.record(report.to_dict())
        return
    for warning in report.warnings:
        out.info(f"memcli: warning: {warning}")
    if out.quiet:
        return
    files = len(report.files)
    line = f"{report.new} new {noun(report.new, 'episode')}"
    if report.new:
        line += f" in {report.sessions} {noun(report.sessions, 'session')}"
    if report.skipped:
        line += f", {report.skipped} already stored"
    if report.forgotten:
        line += f", {report.forgotten} forgotten earlier, not stored again"
    if report.restored:
        line += f", {report.restored} forgotten earlier, stored again"
    if report.invalid:
        line += f", {report.invalid} invalid {noun(report.invalid, 'record')} skipped"
    if report.secrets_masked:
        line += f", {report.secrets_masked} {noun(report.secrets_masked, 'secret')} masked"
    line += f" ({files} {noun(files, 'file')}, {report.seconds:.1f} s)"
    out.text(line)
    if report.forgotten:
        out.info("pruned turns stay forgotten; --allow-forgotten stores them again")


def show_added(out: Output, report: AddReport) -> None:
    """The id of the episode holding the added text (or one JSON object); nothing under -q
    (as for ingest: --json gives the id to a script that wants quiet)."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet:
        return
    if report.forgotten:
        out.text(f"forgotten earlier, not stored again (session {report.session})")
        out.info("pass --allow-forgotten to store it again")
        return
    state = "stored as" if report.new else "already stored as"
    out.text(f"{state} {report.node_id} (session {report.session})")
