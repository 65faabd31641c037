"""`memcli ingest`: store conversation turns verbatim."""

from __future__ import annotations

from typing import Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app

Files = Annotated[
    list[str], typer.Argument(help="Files to store (gzip-compressed too); '-' reads stdin.")
]
Format = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="auto (the default: detected), jsonl, chat, locomo, chatgpt, claude or transcript.",
    ),
]
SkipInvalid = Annotated[
    bool, typer.Option("--skip-invalid", help="Skip bad records instead of rejecting the file.")
]
AllowForgotten = Annotated[
    bool,
    typer.Option(
        "--allow-forgotten", help="Store again turns that `prune` forgot (they are skipped)."
    ),
]


@app.command()
@with_state("db", "space", "json_mode")
def ingest(
    state: State,
    files: Files,
    fmt: Format = None,
    skip_invalid: SkipInvalid = False,
    allow_forgotten: AllowForgotten = False,
) -> None:
    """Store conversation turns verbatim: no LLM needed, and ingesting again adds nothing.

    [b]Examples[/b]

      memcli ingest chat.jsonl

      memcli ingest logs/*.jsonl.gz

      cat transcript.txt | memcli ingest --format transcript -

      memcli ingest conversations.json    # a ChatGPT or Claude export

      memcli --json ingest locomo10.json
    """
    from memcli.present.ingest import show_ingest

    with memory(state, create=True) as mem:
        progress = state.out.progress()
        report = mem.ingest(
            files, fmt=fmt, skip_invalid=skip_invalid, progress=progress,
            allow_forgotten=allow_forgotten,
        )  # fmt: skip
    show_ingest(state.out, report)
