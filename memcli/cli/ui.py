"""`memcli ui`: the memory as a local web page."""

from __future__ import annotations

from typing import Annotated

import typer

from memcli.cli.common import State, with_state
from memcli.cli.root import app

Port = Annotated[
    int,
    typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free port)."),
]
NoBrowser = Annotated[
    bool, typer.Option("--no-browser", help="Print the address; do not open a browser.")
]


@app.command("ui")
@with_state("db", "space", "json_mode")
def ui(state: State, port: Port = 8766, no_browser: NoBrowser = False) -> None:
    """Browse, search and explain the memory in a local web page (read-only).

    The first line printed is the page's address with a new secret token
    (http://127.0.0.1:PORT/?token=...); the browser opens it unless --no-browser. The page
    answers only on 127.0.0.1 and only with that token (in the address, as
    `Authorization: Bearer`, or the cookie a browser's first visit sets), so curl and wget
    take the printed address as it is. It opens the store read-only and never changes it.
    Ctrl-C stops it.

    Pages: search with each hit's score by signal (/search?q=TEXT), the timeline of
    sessions, a node with its neighbourhood drawn and what forgetting it would remove,
    entities with their mentions and fact chain, consolidation runs. See docs/ui.md.

    [b]Examples[/b]

      memcli --db ~/memory.db ui

      memcli --db ~/memory.db ui --port 9000 --no-browser

      memcli --db ~/memory.db --space work ui --port 0   (any free port)
    """
    from memcli.store.target import shown
    from memcli.ui.server import prepare

    cfg = state.config_obj()
    server = prepare(cfg, port)
    db = shown(cfg.db_path)  # a postgresql:// URL without its password
    if state.out.json:
        state.out.record({"url": server.url, "port": server.port, "db": db})
    else:
        state.out.text(server.url)  # first on stdout: without it nobody can open the page
    state.out.info(f"memcli ui: serving {db} (space {cfg.space}) read-only; Ctrl-C stops")
    server.serve(open_browser=not no_browser)
