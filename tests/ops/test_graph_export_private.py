"""`inspect graph -o` (and every other file memcli writes on request) is readable by its
owner only, like the store and exports: it holds the memory's text."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_graph_files_are_private(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    for name in ("g.graphml", "g.json", "g.dot"):
        cli.ok("inspect", "graph", "-o", tmp_path / name)
        assert mode(tmp_path / name) == 0o600, name
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    shared.chmod(0o644)  # an older file is made private when it is written again
    cli.ok("inspect", "graph", "-o", shared)
    assert mode(shared) == 0o600
    cli.ok("export", "-o", tmp_path / "dump.jsonl")
    assert mode(tmp_path / "dump.jsonl") == 0o600
