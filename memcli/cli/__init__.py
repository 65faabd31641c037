"""The command line: parse, call the library, render, map errors to exit codes.

This package is the only place that imports typer. `root` holds the app and its global
options, `common` what every command shares (State, the error wrapper, the store); each
other module is one command or command group. Library modules are imported inside the
commands so that `memcli --help` stays fast.
"""

from __future__ import annotations

from memcli.cli.root import app, main

# Importing a command module registers its commands; this order is their order in --help.
# isort: off
from memcli.cli import ingest, add, ask, consolidate, config, reindex, prune, inspect, eval  # noqa: F401
from memcli.cli import list, transfer, mcp, ui, doctor  # noqa: F401
# isort: on

__all__ = ["app", "main"]
