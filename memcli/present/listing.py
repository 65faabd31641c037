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
