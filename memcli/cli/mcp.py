"""`memcli mcp`: serve the memory to MCP clients."""

from __future__ import annotations

from types import ModuleType
from typing import Annotated

import typer

from memcli.cli.common import State, with_state
from memcli.cli.root import app
from memcli.errors import ConfigError

Http = Annotated[
    bool,
    typer.Option("--http", help="Streamable HTTP on 127.0.0.1 instead of stdio."),
]
Port = Annotated[
    int, typer.Option("--port", min=1, max=65535, help="Port for --http (URL path /mcp).")
]
ForgetAll = Annotated[
    bool,
    typer.Option(
        "--allow-forget-all",
        help="Let the forget tool take every memory of a space (refused by default).",
    ),
]


@app.command("mcp")
@with_state("db", "space")
def mcp(
    state: State, http: Http = False, port: Port = 8765, allow_forget_all: ForgetAll = False
) -> None:
    """Serve the memory over the Model Context Protocol, with the model and vectors warm.

    Tools: remember, recall, answer, ingest, forget, stats, inspect. Resources:
    memcli://node/ID, memcli://node/ID/provenance, memcli://stats. Register it in an MCP
    client as the command `memcli` with the arguments `--db PATH mcp`.

    Over --http every request needs the header `Authorization: Bearer TOKEN`: a new token
    is printed at each start, or MEMCLI_MCP_TOKEN (mcp.token) fixes one. The ingest tool
    reads only under the directories in mcp.ingest_dirs (none by default over --http).
    See docs/mcp.md.

    [b]Examples[/b]

      memcli --db ~/memory.db mcp

      memcli --db ~/memory.db mcp --http --port 8765   (http://127.0.0.1:8765/mcp)
    """
    server = _server_module()
    cfg = state.config_obj()
    token = None
    if http:
        from memcli.mcp.access import TOKEN_ENV, server_token

        token, fresh = server_token(cfg)
        server.check_port(port)
        # Printed even under -q: without it no client can connect.
        shown = token if fresh else f"the one set in {TOKEN_ENV} or mcp.token"
        state.out.err.print(f"memcli mcp: bearer token: {shown}", markup=False)
    where = f"http://127.0.0.1:{port}/mcp" if http else "stdio"
    from memcli.store.target import shown as where_db

    state.out.info(f"memcli mcp: serving {where_db(cfg.db_path)} (space {cfg.space}) on {where}")
    server.serve(cfg, http=http, port=port, token=token, allow_forget_all=allow_forget_all)


def _server_module() -> ModuleType:
    """memcli.mcp.server, or a clear error when the `mcp` SDK is not installed."""
    try:
        from memcli.mcp import server as mcp_server
    except ImportError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        raise ConfigError(
            f"memcli mcp needs the MCP Python SDK, which is not installed ({exc})",
            fix="pip install 'mcp>=2' (or reinstall memcli, which depends on it)",
        ) from None
    return mcp_server
