"""What the views share: plurals, tables of names and counts, a small result as a line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from memcli.text import terminal_safe

if TYPE_CHECKING:
    from memcli.present.output import Output


class SafeTable(Table):
    """A rich table whose text cells are shown as written: no markup read from stored text
    (`[red]`), control characters escaped (memcli.text.terminal_safe)."""

    def add_row(self, *renderables: Any, **options: Any) -> None:
        cells = [Text(terminal_safe(c)) if isinstance(c, str) else c for c in renderables]
        super().add_row(*cells, **options)


def new_table(title: str, columns: tuple[str, ...], left: int = 1, **options: Any) -> Table:
    """A table whose first `left` columns are text (left-aligned) and the rest numbers."""
    table = SafeTable(title=title, title_justify="left", **options)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i < left else "right")
    return table


def noun(n: int, word: str) -> str:
    """`word` for one, `word`s for any other count."""
    return word if n == 1 else f"{word}s"


def counts_table(title: str, counts: dict[str, int], key: str) -> Table:
    """A two-column table of names and counts."""
    table = SafeTable(title=title, title_justify="left")
    table.add_column(key)
    table.add_column("count", justify="right")
    for name, n in counts.items():
        table.add_row(name, str(n))
    if not counts:
        table.add_row("(none)", "0")
    return table


def show_record(out: Output, result: Mapping[str, Any], verb: str) -> None:
    """A small result dict as JSON, or as `verb: key=value ...` (a report of what was
    done: nothing under -q)."""
    if out.json:
        out.record(result)
    elif not out.quiet:
        shown = ", ".join(f"{k} {v}" for k, v in result.items() if v is not None)
        out.text(f"{verb}: {shown}")
