"""`memcli config`: the effective settings and where each came from; a starter file."""

from __future__ import annotations

from typing import Annotated

import typer

from memcli.cli.common import State, with_state
from memcli.cli.helptext import paragraphs
from memcli.cli.root import app

config_app = typer.Typer(no_args_is_help=False, rich_markup_mode="rich")
app.add_typer(config_app, name="config")

InitPath = Annotated[
    str | None,
    typer.Argument(
        help="Where to write it (default: the user config dir, where memcli looks for it).",
        show_default=False,
    ),
]
Force = Annotated[bool, typer.Option("--force", help="Replace a file that is already there.")]

CONFIG_HELP = """Show the effective settings and where each came from; write a starter config file.

Without a subcommand: the settings, as `memcli config show` prints them.

[b]Examples[/b]

  memcli config

  memcli config init

  memcli --space work config show
"""

SHOW_HELP = """Print the effective settings, each marked default, file, env or flag.

Secrets are masked. The file read is named on stderr. When several sources set a key, the
strongest wins: flag, then env (MEMCLI_*), then file, then default.

[b]Examples[/b]

  memcli config show

  MEMCLI_RETRIEVAL_K=12 memcli config show --space work

  memcli --json config show
"""

INIT_HELP = """Write a commented config file with every key at its default, ready to edit.

It goes to the user config dir, where memcli reads it without --config. An existing file is
left alone unless --force. API keys never go in it: the file names the environment variable
that holds each one (api_key_env).

[b]Examples[/b]

  memcli config init

  memcli config init ./memcli.yaml

  memcli config init --force
"""


def _show(state: State) -> None:
    from memcli.config import masked
    from memcli.config.files import flatten, value_sources
    from memcli.present.config import show_config

    cfg = state.config_obj()
    shown = masked(cfg)
    flags = {"db": str(state.db) if state.db else None, "space": state.space}
    config_path = str(state.config) if state.config else None
    sources = value_sources(config_path, flags, flatten(shown))
    show_config(state.out, shown, sources, cfg.source_file)


@config_app.callback(invoke_without_command=True, help=paragraphs(CONFIG_HELP))
@with_state("db", "space", "json_mode")
def config_main(ctx: typer.Context, state: State) -> None:
    """`memcli config` (help in CONFIG_HELP)."""
    if ctx.invoked_subcommand is None:
        _show(state)


@config_app.command("show", help=paragraphs(SHOW_HELP))
@with_state("db", "space", "json_mode")
def config_show(state: State) -> None:
    """`memcli config show` (help in SHOW_HELP)."""
    _show(state)


@config_app.command("init", help=paragraphs(INIT_HELP))
@with_state("json_mode")
def config_init(state: State, path: InitPath = None, force: Force = False) -> None:
    """`memcli config init` (help in INIT_HELP)."""
    from memcli.config.files import init_config
    from memcli.present.config import show_config_written

    written = init_config(path, force=force)
    show_config_written(state.out, str(written))
