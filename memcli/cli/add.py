"""`memcli add`: remember one piece of text."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app

Text = Annotated[str, typer.Argument(help="The text to remember; '-' reads it from stdin.")]
Role = Annotated[
    str | None, typer.Option("--role", help="Who said it: user, assistant, or a name.")
]
Session = Annotated[
    str | None,
    typer.Option("--session", help="The conversation it belongs to (default: SOURCE:DATE)."),
]
Time = Annotated[
    str | None,
    typer.Option("--time", help="When it was said: a date, date-time or Unix time (default: now)."),
]
Source = Annotated[
    str | None,
    typer.Option("--source", help="A name to group and forget it by (default: memcli-add)."),
]

AllowForgotten = Annotated[
    bool,
    typer.Option("--allow-forgotten", help="Store it even if `prune` forgot it before."),
]


@app.command()
@with_state("db", "space", "json_mode")
def add(
    state: State,
    text: Text,
    role: Role = None,
    session: Session = None,
    time: Time = None,
    source: Source = None,
    allow_forgotten: AllowForgotten = False,
) -> None:
    """Remember one piece of text: stored, indexed and embedded like an ingested turn.

    Adding the same text with the same role, session and time again stores nothing new,
    and nothing if it was forgotten. Forget it with `memcli prune --node ID` or
    `memcli prune --source NAME`.

    [b]Examples[/b]

      memcli add "The demo moved to Thursday 10:00"

      memcli add --role user --session standup "I will pick up the badges"

      git log -1 --format=%B | memcli add --source git -

      memcli --json add --time 2024-05-03T09:30 "Flight lands at 9:30"
    """
    from memcli.ops.add import read_text
    from memcli.present.ingest import show_added

    with memory(state, create=True) as mem:
        limit = mem.cfg.ingest.max_message_bytes
        body = read_text(sys.stdin.buffer, limit=limit) if text == "-" else text
        report = mem.add(
            body, role=role, session=session, time=time, source=source,
            allow_forgotten=allow_forgotten,
        )  # fmt: skip
    show_added(state.out, report)
