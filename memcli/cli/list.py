"""`memcli list`: browse memories with filters, newest first, a page at a time."""

from __future__ import annotations

from typing import Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.helptext import paragraphs
from memcli.cli.root import app

Kinds = Annotated[
    list[str] | None,
    typer.Option(
        "--kind", help="episode, segment, fact, reflection, concept or entity. Repeatable."
    ),
]
Sessions = Annotated[
    list[str] | None,
    typer.Option("--session", help="A session id, or a glob such as 'work-*'. Repeatable."),
]
Sources = Annotated[
    list[str] | None,
    typer.Option(
        "--source", help="Turns of a file as ingested: its path or a sha256 prefix. Repeatable."
    ),
]
Since = Annotated[
    str | None, typer.Option(help="Dated at or after this: 2024-03-01, 2024-03-01T12:00 or 7d.")
]
Until = Annotated[str | None, typer.Option(help="Dated before this (same forms as --since).")]
Grep = Annotated[str | None, typer.Option(help="Text contains this (ignoring case).")]
Limit = Annotated[int, typer.Option(help="Memories per page; 0 lists them all.")]
Offset = Annotated[int | None, typer.Option(help="Skip this many first.", show_default=False)]
Page = Annotated[int | None, typer.Option(help="Page number, from 1.", show_default=False)]

HELP = """Browse memories, newest first, with their ids (for `inspect node ID`, `prune --node ID`).

A memory's date is its own timestamp, or when it was stored if it has none; --since and
--until compare that date. Turns, facts and reflections come first, then the topic
segments, concepts and entities that consolidation made to index them (--kind picks
kinds). Filters combine with AND; a repeated filter with OR. The page's place in the whole
result goes to stderr.

[b]Examples[/b]

  memcli list

  memcli list --kind fact --grep lisbon

  memcli list --session 'work-*' --since 2023-05-01 --until 2023-06-01

  memcli list --source chat.jsonl --page 2

  memcli --json list --since 7d --limit 0
"""


@app.command("list", help=paragraphs(HELP))
@with_state("db", "space", "json_mode")
def list_memories(
    state: State, kind: Kinds = None, session: Sessions = None, source: Sources = None,
    since: Since = None, until: Until = None, grep: Grep = None,
    limit: Limit = 20, offset: Offset = None, page: Page = None,
) -> None:  # fmt: skip
    """`memcli list` (help in HELP)."""
    from memcli.ops.listing import ListQuery
    from memcli.present.listing import show_page

    query = ListQuery(
        tuple(kind or ()), tuple(session or ()), tuple(source or ()),
        since, until, grep, limit, offset, page,
    )  # fmt: skip
    query.check()
    with memory(state) as mem:
        result = mem.list_memories(query)
    show_page(state.out, result)
