"""`memcli config`: the effective settings and where they came from."""

from __future__ import annotations

from memcli import render
from memcli.cli.common import State, with_state
from memcli.cli.root import app


@app.command("config")
@with_state("db", "space", "json_mode")
def show_config(state: State) -> None:
    """Print the effective configuration (secrets masked) and the file it came from.

    [b]Examples[/b]

      memcli config

      memcli --config ~/memcli.yaml config --db work.db

      memcli --json config
    """
    from memcli.config import masked

    cfg = state.config_obj()
    render.config(state.out, masked(cfg), cfg.source_file)
