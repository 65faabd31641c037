"""`inspect graph -o FILE`: the format follows the file's suffix, and a suffix it cannot honour
is a usage error that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """memcli over tmp_path/m.db with embeddings off."""
    write_config(tmp_path)
    return Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")


@pytest.mark.parametrize(
    ("name", "first"), [("g.json", "{"), ("g.dot", "/*"), ("g.graphml", "<?xml"), ("g", "<?xml")]
)
def test_graph_export_format_follows_the_suffix(
    cli: Memcli, tmp_path: Path, name: str, first: str
) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    cli.ok("inspect", "graph", "-o", tmp_path / name)
    written = (tmp_path / name).read_text()
    assert written.startswith(first), written[:40]
    if name == "g.json":
        assert len(json.loads(written)["nodes"]) == 16


def test_graph_export_refuses_a_suffix_it_cannot_honour(cli: Memcli, tmp_path: Path) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    for args in (["-o", tmp_path / "g.txt"], ["--format", "dot", "-o", tmp_path / "g.json"]):
        result = cli("inspect", "graph", *args)
        assert result.exit_code == 2 and result.stdout == "", result.stderr
        assert "suffix" in result.stderr and "\n  fix: " in result.stderr
    assert not (tmp_path / "g.txt").exists() and not (tmp_path / "g.json").exists()
