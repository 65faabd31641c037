"""`memcli export` / `memcli import`: a space as a portable JSON Lines dump, and back."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memcli.cli.common import State, memory, with_state
from memcli.cli.helptext import paragraphs
from memcli.cli.root import app

if TYPE_CHECKING:
    from memcli.memory import Memory

Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to this file (.gz: compressed), not stdout."),
]
Vectors = Annotated[
    bool, typer.Option("--vectors", help="Include the vectors (exact copy; a larger file).")
]
DumpFile = Annotated[str, typer.Argument(help="A file written by `memcli export` ('-': stdin).")]
EpisodesOnly = Annotated[
    bool,
    typer.Option(
        "--episodes-only", help="Import the turns alone; `memcli consolidate` redoes the rest."
    ),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Check the file and count; write nothing.")]
AllowForgotten = Annotated[
    bool,
    typer.Option("--allow-forgotten", help="Import turns this space forgot (they are skipped)."),
]

EXPORT_HELP = """Write the space as a portable JSON Lines dump (backup, move, upgrade).

Turns with their refs, times, sessions and sources; segments, facts, concepts and
reflections with the edges that say where they came from.

For backups, moving to another machine, or to a newer memcli: `memcli import` rebuilds the
space from it. Vectors are left out unless --vectors: import embeds again. The file holds
every memory of the space in clear text; with -o it is created readable by its owner only.

[b]Examples[/b]

  memcli export -o memory.jsonl.gz

  memcli --space work export > work.jsonl

  memcli export --vectors -o exact-copy.jsonl
"""

IMPORT_HELP = """Add the memories of a `memcli export` file to the space, checked first.

The whole file is checked before anything is written; nothing is written when any record
is bad (a wrong file, a newer format, a file cut short).

Turns already stored (same content) are skipped, so importing twice adds nothing; so are
turns this space forgot (`prune`), unless --allow-forgotten. Derived
memories (segments, facts ...) already there are reused; when the space has consolidated
the same turns itself, the file's graph is refused (use --episodes-only, then consolidate).

[b]Examples[/b]

  memcli --db new.db import memory.jsonl.gz

  memcli import --dry-run backup.jsonl

  memcli --space laptop import --episodes-only laptop.jsonl

  memcli --space laptop consolidate
"""


@app.command("export", help=paragraphs(EXPORT_HELP))
@with_state("db", "space", "json_mode")
def export(state: State, output: Output = None, vectors: Vectors = False) -> None:
    """`memcli export` (help in EXPORT_HELP)."""
    from memcli.ops.outfile import standard_stream
    from memcli.present.transfer import show_export

    # -o /dev/stdout is stdout: the summary then goes to stderr, not into the dump
    to_stdout = output is None or (
        not str(output).endswith(".gz") and standard_stream(str(output)) == 1
    )
    with memory(state) as mem:
        if to_stdout:
            counts = mem.export_space(sys.stdout, vectors=vectors)
        else:
            from memcli.ops.transfer import export_file

            counts = export_file(mem, str(output), vectors=vectors)
    show_export(state.out, counts, None if to_stdout else str(output))


@app.command("import", help=paragraphs(IMPORT_HELP))
@with_state("db", "space", "json_mode")
def import_(
    state: State,
    file: DumpFile,
    episodes_only: EpisodesOnly = False,
    dry_run: DryRun = False,
    allow_forgotten: AllowForgotten = False,
) -> None:
    """`memcli import` (help in IMPORT_HELP)."""
    from memcli.present.transfer import show_import

    with _target(state, dry_run) as mem:
        report = mem.import_dump(
            file, episodes_only=episodes_only, dry_run=dry_run, progress=state.out.progress(),
            allow_forgotten=allow_forgotten,
        )  # fmt: skip
    show_import(state.out, report)


@contextmanager
def _target(state: State, dry_run: bool) -> Iterator[Memory]:
    """The store to import into; a dry run against a store that does not exist yet plans
    against an empty scratch store, so it creates no file where --db points, and one
    against an existing store only reads it (a read-only store will do)."""
    cfg = state.config_obj()
    from memcli.store.target import exists

    if not dry_run or exists(cfg.db_path):
        # A dry run may name a space the store does not hold yet: the import would make it.
        with memory(state, create=not dry_run, any_space=dry_run) as mem:
            yield mem
        return
    from memcli.memory import Memory
    from memcli.store import open_store

    with tempfile.TemporaryDirectory(prefix="memcli-import-") as scratch:
        mem = Memory(cfg, open_store(Path(scratch) / "preview.db"))
        try:
            yield mem
        finally:
            mem.close()
