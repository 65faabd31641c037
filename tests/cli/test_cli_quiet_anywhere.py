"""-q and -v work after the command as before it (like --json, --db and --space); -q
silences the summaries of export, import and add; an empty --db is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    runner = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    runner.ok("ingest", EXAMPLE)
    return runner


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_before_or_after_the_command(cli: Memcli, tmp_path: Path, where: str) -> None:
    def run(*args: object) -> tuple[str, str]:
        command, rest = args[0], args[1:]
        argv = ["-q", command, *rest] if where == "before" else [command, *rest, "-q"]
        result = cli.ok(*argv)
        return result.stdout, result.stderr

    assert run("ingest", EXAMPLE) == ("", "")
    assert run("add", "The spare key is under the blue pot") == ("", "")
    assert run("export", "-o", tmp_path / "dump.jsonl") == ("", "")
    other = Memcli(config=cli.config, db=tmp_path / "other.db")
    result = other.ok(*(["-q", "import", tmp_path / "dump.jsonl"] if where == "before"
                        else ["import", tmp_path / "dump.jsonl", "-q"]))  # fmt: skip
    assert (result.stdout, result.stderr) == ("", "")
    stdout, _ = run("list")
    assert "ep1" in stdout  # data still flows


def test_quiet_leaves_json_records_and_dry_runs(cli: Memcli, tmp_path: Path) -> None:
    [added] = [json.loads(x) for x in cli.ok("--json", "add", "note", "-q").stdout.splitlines()]
    assert added["node_id"].startswith("ep")
    cli.ok("export", "-o", tmp_path / "dump.jsonl")
    planned = cli.ok("import", "--dry-run", tmp_path / "dump.jsonl", "-q")
    assert planned.stdout.startswith("would add 0 memories")


def test_verbose_after_the_command(cli: Memcli) -> None:
    assert cli.ok("inspect", "-v").stdout == cli.ok("-v", "inspect").stdout
    assert cli("list", "-vv").exit_code == 0


@pytest.mark.parametrize(
    "argv", [["--db", "", "list"], ["list", "--db", ""], ["--db", " ", "inspect"]]
)
def test_an_empty_db_is_a_usage_error(tmp_path: Path, argv: list[str]) -> None:
    result = Memcli(config=write_config(tmp_path))(*argv)
    assert result.exit_code == 2 and result.stdout == ""
    assert "--db must not be empty" in result.stderr and "fix: " in result.stderr
