"""How results read: counts in the singular, no `None` where a value is missing, and the
node ids `inspect node` takes where a node names the turns it came from."""

from __future__ import annotations

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


def test_one_is_singular(cli: Memcli, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(EXAMPLE.read_text().splitlines()[0] + "\n")
    assert cli.ok("ingest", one).stdout.startswith("1 new episode in 1 session (1 file, ")
    removed = cli.ok("prune", "--node", "ep1", "--yes").stdout
    assert removed.startswith("removed 1 node and 0 edges")


def test_reindex_without_embeddings_prints_no_none(cli: Memcli) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    line = cli.ok("reindex").stdout
    assert "None" not in line and line.startswith("reindexed: ")
    assert cli.json("reindex")[0]["dim"] is None  # JSON keeps its null


def test_inspect_node_names_source_episodes_by_node_id(cli: Memcli) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    cli.ok("-q", "consolidate", "--no-llm", "--flush")
    segment = next(
        n for n in cli.json("inspect", "node", "ep1")[0]["neighbours"] if n["type"] == "PART_OF"
    )
    view = cli.json("inspect", "node", segment["node_id"])[0]
    episodes, refs = view["provenance"]["episodes"], view["provenance"]["refs"]
    assert episodes[0] == "ep1" and refs[0] == "m1"  # ids `inspect node` takes; refs beside
    for node_id in episodes:
        cli.ok("inspect", "node", node_id)
    text = cli.ok("inspect", "node", segment["node_id"]).stdout
    assert "derived from episodes: ep1 (m1), ep2 (m2)" in text
