"""The small things that looked careless: counts in the singular, `dim None`, refs where
node ids belong, typer's `<bool>` metavars, a graph export whose format ignores the file's
suffix, and masking that garbled text that held no secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.text import hide_secret, hide_userinfo
from tests.cli_runner import Memcli
from tests.reliability import write_config

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat.jsonl"


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


@pytest.mark.parametrize("command", [[], ["ask"], ["prune"], ["ingest"], ["inspect", "graph"]])
def test_help_shows_no_bool_or_list_metavars(cli: Memcli, command: list[str]) -> None:
    page = cli.ok(*command, "--help").stdout
    for typer_label in ("<bool>", "<list[", "<int> "):
        assert typer_label not in page, (command, typer_label)


def test_help_still_shows_value_types(cli: Memcli) -> None:
    assert "<path>" in cli.ok("--help").stdout
    assert "<str>..." in cli.ok("prune", "--help").stdout  # a repeatable option


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


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://user:pw@host:1/v1", "http://***@host:1/v1"),
        ("https://key@host/a@b", "https://***@host/a@b"),
        ("http://host/v1?to=me@example.org", "http://host/v1?to=me@example.org"),
        ("http://host/#top@x", "http://host/#top@x"),
        ("see //joe@example.org", "see //joe@example.org"),
        ("mail bob@example.org", "mail bob@example.org"),
    ],
)
def test_userinfo_masking_touches_only_credentials(text: str, shown: str) -> None:
    assert hide_userinfo(text) == shown


def test_a_short_key_does_not_garble_words() -> None:
    assert hide_secret("the test passed; key test rejected", "test") == (
        "the *** passed; key *** rejected"
    )
    assert hide_secret("latest contest results", "test") == "latest contest results"
    assert hide_secret("bad key sk-abc123.", "sk-abc123") == "bad key ***."
    assert hide_secret("nothing to hide", "") == "nothing to hide"
