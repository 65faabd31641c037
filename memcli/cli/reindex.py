"""`memcli reindex`: re-embed every node after a change of embedding model."""

from __future__ import annotations

from typing import Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app

AnySpace = Annotated[
    str | None,
    typer.Option("--space", help="Accepted as by every command; reindex re-embeds every space."),
]


@app.command()
@with_state("db", "space", "json_mode")
def reindex(state: State, space: AnySpace = None) -> None:
    """Re-embed every node with the configured embedding model (after changing models).

    Needed after a change of embedding.provider or embedding.model: until then, ask (but
    with --strategy lexical), add, ingest, consolidate and import refuse the store, naming
    both models. It shows progress and can be stopped (Ctrl-C, a kill): the new vectors are
    stored a batch at a time beside the old ones, which the store keeps using until all are
    made; running it again resumes (`resumed` counts the vectors kept). It also re-splits
    Chinese, Japanese and Korean text that an older memcli indexed.

    [b]Examples[/b]

      memcli --config new-embedding-model.yaml reindex

      memcli --json reindex --db work.db
    """
    from memcli.present.common import show_record

    with memory(state, any_space=True, write=True) as mem:
        show_record(state.out, mem.reindex(progress=state.out.progress()), "reindexed")
