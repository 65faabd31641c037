"""`prune`: what was removed, or would be."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.present.common import noun

if TYPE_CHECKING:
    from memcli.models import PruneReport
    from memcli.present.output import Output


def show_prune(out: Output, report: PruneReport) -> None:
    """What a prune removed (or would remove): counts by kind, sources, a few examples.
    Under -q only a dry run, whose report is what was asked for, prints."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet and not report.dry_run:
        return
    verb = "would remove" if report.dry_run else "removed"
    total, edges = report.total, report.edges
    lines = [f"{verb} {total:,} {noun(total, 'node')} and {edges:,} {noun(edges, 'edge')}"]
    lines += [f"  {kind:<11} {n:>7,}" for kind, n in report.removed.items()]
    if report.sources:
        lines.append("source files: " + ", ".join(report.sources))
    if report.kept_shared:
        n = report.kept_shared
        lines.append(f"kept {n:,} {noun(n, 'episode')} that another source also holds")
    if report.cache_entries:
        lines.append(f"{report.cache_entries:,} cached model replies dropped")
    if report.forgotten:
        n, will = report.forgotten, "would stay" if report.dry_run else "stay"
        lines.append(
            f"{n:,} {noun(n, 'turn')} {will} forgotten: ingesting them again skips them "
            "(ingest --allow-forgotten stores them again)"
        )
    if report.embedded_again:
        n = report.embedded_again
        lines.append(f"{n:,} {noun(n, 'turn')} after a forgotten one embedded again without it")
    if report.stale_vectors:
        n = report.stale_vectors
        lines.append(
            f"{n:,} {noun(n, 'turn')} after a forgotten one {'keeps' if n == 1 else 'keep'} "
            "a vector made beside it: "
            "the embedder could not be used (run `memcli reindex` once it can)"
        )
    if report.examples:
        lines.append("examples:")
        lines += [f"  {e['node_id']:<8} {e['kind']:<10} {e['text']}" for e in report.examples]
    if report.vacuumed:
        lines.append(f"vacuumed: {report.bytes_before:,} → {report.bytes_after:,} bytes")
    out.text("\n".join(lines))
    if report.dry_run:
        out.info("dry run: nothing was changed")
