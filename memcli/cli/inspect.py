"""`memcli inspect`: counts, one node, and whole-graph exports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.root import app

inspect_app = typer.Typer(no_args_is_help=False, rich_markup_mode="rich")
app.add_typer(inspect_app, name="inspect")

NodeId = Annotated[str, typer.Argument(help="A node id such as ep12 or fa3.")]
EntityName = Annotated[str, typer.Argument(help="An entity's name, alias or id (en4).")]
GraphFormat = Annotated[
    str | None,
    typer.Option(
        "--format",
        help="graphml (Gephi; the default), json or dot (Graphviz); with -o and no "
        "--format, the file's suffix chooses.",
        show_default=False,
    ),
]
OutputPath = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
]


def _stats(state: State) -> None:
    from memcli.present.inspect import show_stats

    with memory(state) as mem:
        show_stats(state.out, mem.stats())


@inspect_app.callback(invoke_without_command=True)
@with_state("db", "space", "json_mode")
def inspect_main(ctx: typer.Context, state: State) -> None:
    """Look inside the store: counts, one node, exports.

    Without a subcommand: the counts of `memcli inspect stats`.

    [b]Examples[/b]

      memcli inspect

      memcli --json inspect

      memcli inspect node ep12
    """
    if ctx.invoked_subcommand is None:
        _stats(state)


@inspect_app.command("stats")
@with_state("db", "space", "json_mode")
def inspect_stats(state: State) -> None:
    """Counts of nodes by kind and edges by type, spaces, embedding model, file size.

    [b]Examples[/b]

      memcli inspect stats

      memcli --json inspect stats --space work
    """
    _stats(state)


@inspect_app.command("node")
@with_state("db", "space", "json_mode")
def inspect_node(state: State, node_id: NodeId) -> None:
    """One node: its text and properties, its neighbours, and where it came from.

    [b]Examples[/b]

      memcli inspect node ep12

      memcli --json inspect node fa3
    """
    from memcli.present.inspect import show_node

    with memory(state) as mem:
        show_node(state.out, mem.node_view(node_id))


@inspect_app.command("entity")
@with_state("db", "space", "json_mode")
def inspect_entity(state: State, name: EntityName) -> None:
    """A named thing: its description, aliases, relations, and what was said about it in
    time order (facts with their validity and turns, and the turns that mention it).

    [b]Examples[/b]

      memcli inspect entity "Ada Lovelace"

      memcli --json inspect entity en4
    """
    from memcli.present.entity import show_entity

    with memory(state) as mem:
        show_entity(state.out, mem.entity_view(name))


@inspect_app.command("graph")
@with_state("db", "space", "json_mode")
def inspect_graph(state: State, fmt: GraphFormat = None, output: OutputPath = None) -> None:
    """Export the space's graph: every node (id, kind, text...) and edge (type, weight).

    --json prints the JSON export as one line (one JSON Lines record).

    [b]Examples[/b]

      memcli inspect graph > memory.graphml

      memcli inspect graph --format dot | dot -Tsvg > memory.svg

      memcli inspect graph -o graph.json    # the format follows the suffix
    """
    from memcli.ops.graph_export import choose_format
    from memcli.present.inspect import show_document

    chosen = choose_format(fmt, state.json, output)
    with memory(state) as mem:
        show_document(state.out, mem.export_graph(chosen, compact=state.json), output)
