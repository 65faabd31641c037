"""Text and JSON views of `list`, `export`/`import` and `config show` results.

(Kept apart from memcli.render, which holds the views of the older commands.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.text import one_line, truncate

if TYPE_CHECKING:
    from memcli.ops.listing import MemoryPage
    from memcli.ops.transfer import ImportReport
    from memcli.output import Output

TEXT_CHARS = 100  # of each memory's text on its one line


def memory_page(out: Output, page: MemoryPage) -> None:
    """One memory per line (`--json`: one record each), and where the page sits on stderr."""
    if out.json:
        for node in page.items:
            out.record(page.item_dict(node))
    else:
        width = max((len(n.node_id) for n in page.items), default=0)
        for node in page.items:
            when = (node.timestamp or "-")[:16].replace("T", " ")
            said = f"{node.speaker}: {node.text}" if node.speaker else node.text
            fields = [node.node_id.ljust(width), when.ljust(16), node.session or "-"]
            out.text("  ".join([*fields, truncate(one_line(said), TEXT_CHARS)]))
    _page_note(out, page)


def _page_note(out: Output, page: MemoryPage) -> None:
    if not page.total:
        out.info("no memories match")
        for name in page.unknown_sessions:
            known = ", ".join(page.known_sessions) or "none"
            out.info(f"no session matches {name!r}; sessions include: {known}")
        return
    if not page.items:
        out.info(f"nothing from {page.offset + 1} on: {page.total} memories match")
        return
    first, last = page.offset + 1, page.offset + len(page.items)
    note = f"{first}-{last} of {page.total}, newest first"
    if page.next_offset is not None:
        note += f"; next: --offset {page.next_offset}"
        if page.limit and page.offset % page.limit == 0:
            note += f" (or --page {page.offset // page.limit + 2})"
    out.info(note)


def export_summary(out: Output, counts: dict[str, int], path: str | None) -> None:
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
    else:
        out.text(line)


def _n(count: int, word: str, plural: str | None = None) -> str:
    """`1 edge`, `2 edges`."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def import_report(out: Output, report: ImportReport) -> None:
    """One summary line (or one JSON object) for an import."""
    if out.json:
        out.record(report.to_dict())
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


def config_values(
    out: Output, values: dict[str, Any], sources: dict[str, str], file: str | None
) -> None:
    """The effective settings as YAML, each leaf followed by `# source`; or one JSON object
    with a `sources` map of dotted keys."""
    if out.json:
        out.record({"source_file": file, **values, "sources": sources})
        return
    out.info(f"# from {file}" if file else "# no config file found: defaults and environment")
    rows: list[tuple[str, str | None]] = []
    for key, value in values.items():
        if isinstance(value, dict) and all(f"{key}.{k}" in sources for k in value):
            rows.append((f"{key}:", None))
            rows += [(f"  {k}: {_yaml(v)}", sources[f"{key}.{k}"]) for k, v in value.items()]
        else:
            rows.append((f"{key}: {_yaml(value)}", sources.get(key, "default")))
    width = max(len(text) for text, source in rows if source)
    out.text("\n".join(f"{text:<{width}}  # {src}" if src else text for text, src in rows))


def _yaml(value: Any) -> str:
    """One value as inline YAML (`null`, `0.5`, `[a, b]`, `{x: 1}`)."""
    import yaml

    return yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()[1:-1]


def config_written(out: Output, path: str) -> None:
    if out.json:
        out.record({"written": path})
    else:
        out.text(f"wrote {path}")
        out.info("edit it, then check with: memcli config show")
