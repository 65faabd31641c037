"""`list`: one memory per line, and where the page sits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.text import one_line, truncate

if TYPE_CHECKING:
    from memcli.ops.listing import MemoryPage
    from memcli.present.output import Output

TEXT_CHARS = 100  # of each memory's text on its one line


def show_page(out: Output, page: MemoryPage) -> None:
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
    """Where the page sits, on stderr: a line, or under --json one object with the same
    facts (total, offset, limit, count, next_offset, note) that scripts can read."""
    notes = _notes(page)
    if not out.json:
        for note in notes:
            out.info(note)
        return
    out.note({
        "total": page.total, "offset": page.offset, "limit": page.limit,
        "count": len(page.items), "next_offset": page.next_offset,
        "unknown_sessions": page.unknown_sessions, "note": "; ".join(notes),
    })  # fmt: skip


def _notes(page: MemoryPage) -> list[str]:
    """The page note as people read it (one line, more for --session names matching none)."""
    if not page.total:
        known = ", ".join(page.known_sessions) or "none"
        return ["no memories match"] + [
            f"no session matches {name!r}; sessions include: {known}"
            for name in page.unknown_sessions
        ]
    if not page.items:
        return [f"nothing from {page.offset + 1} on: {page.total} memories match"]
    first, last = page.offset + 1, page.offset + len(page.items)
    note = f"{first}-{last} of {page.total}, newest first"
    if page.next_offset is not None:
        note += f"; next: --offset {page.next_offset}"
        if page.limit and page.offset % page.limit == 0:
            note += f" (or --page {page.offset // page.limit + 2})"
    return [note]
