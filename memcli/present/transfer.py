"""`export` and `import`: what was written, and what was (or would be) added."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.ops.transfer import ImportReport
    from memcli.present.output import Output


def show_export(out: Output, counts: dict[str, int], path: str | None) -> None:
    """What an export wrote: a record (or line) on stdout with -o, else a line on stderr."""
    line = (
        f"exported {_n(counts['nodes'], 'memory', 'memories')}, {_n(counts['edges'], 'edge')} "
        f"and {_n(counts['sources'], 'source')}"
    )
    if counts.get("forgotten"):
        line += f" (and {_n(counts['forgotten'], 'forgotten turn')}, as tombstones)"
    line += f" to {path}" if path else ""
    if path is None:
        out.info(line)  # stdout carries the dump itself
    elif out.json:
        out.record({"file": path, **counts})
    elif not out.quiet:
        out.text(line)


def _n(count: int, word: str, plural: str | None = None) -> str:
    """`1 edge`, `2 edges`."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def show_import(out: Output, report: ImportReport) -> None:
    """One summary line (or one JSON object) for an import; nothing under -q but for a
    dry run, whose summary is what was asked for."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet and not report.dry_run:
        return
    verb = "would add" if report.dry_run else "added"
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(report.new.items()))
    line = f"{verb} {_n(report.total, 'memory', 'memories')}" + (f" ({kinds})" if kinds else "")
    line += f", {_n(report.edges, 'edge')}, {_n(report.sources, 'source')}"
    if report.existing:
        line += f"; {sum(report.existing.values()):,} already stored"
    if report.left_out:
        line += f"; {report.left_out:,} derived memories left out (--episodes-only)"
    if report.forgotten:
        line += f"; {report.forgotten:,} forgotten earlier, not stored again"
        if report.forgotten_derived:
            line += f" (with {_n(report.forgotten_derived, 'memory', 'memories')} made from them)"
    if report.restored:
        line += f"; {report.restored:,} forgotten earlier, stored again"
    if report.tombstones:
        line += f"; {_n(report.tombstones, 'forgotten turn')} recorded"
    if report.total and report.ids == "renumbered":
        line += "; new ids given (the file's were taken)"
    if report.embedded:
        line += f"; {report.embedded:,} embedded"
    out.text(line + f" ({report.seconds:.1f} s)")
