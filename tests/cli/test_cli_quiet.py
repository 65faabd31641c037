"""`-q` means data and errors only: a command that changes the store prints no summary of
what it did (cron mails only failures), while `--json` records, dry runs and errors stay."""

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
    "command",
    [
        ["ingest", str(EXAMPLE)],
        ["prune", "--older-than", "1min", "--yes"],
        ["reindex"],
    ],
    ids=["ingest", "prune", "reindex"],
)
def test_quiet_write_commands_print_nothing(cli: Memcli, command: list[str]) -> None:
    cli.ok("ingest", EXAMPLE)
    loud = cli(*command)
    assert loud.exit_code == 0 and loud.stdout.strip()  # a summary without -q
    quiet = cli("-q", *command)
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    as_json = cli("-q", "--json", *command)  # records are data: -q keeps them
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)


def test_quiet_keeps_what_was_asked_for(cli: Memcli) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    dry = cli("-q", "prune", "--older-than", "1min", "--dry-run")
    assert dry.exit_code == 0 and "would remove 16 nodes" in dry.stdout and dry.stderr == ""
    asked = cli("-q", "ask", "--context-only", "train tickets")
    assert asked.exit_code == 0 and "Lisbon" in asked.stdout and asked.stderr == ""
    failed = cli("-q", "ingest", "no-such-file.jsonl")
    assert failed.exit_code == 4 and failed.stderr.startswith("memcli: error: ")


# -q and -v work after the command as before it (like --json, --db and --space); -q
# silences the summaries of export, import and add; an empty --db is a usage error.


@pytest.fixture
def ingested_cli(tmp_path: Path) -> Memcli:
    runner = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    runner.ok("ingest", EXAMPLE)
    return runner


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_before_or_after_the_command(
    ingested_cli: Memcli, tmp_path: Path, where: str
) -> None:
    def run(*args: object) -> tuple[str, str]:
        command, rest = args[0], args[1:]
        argv = ["-q", command, *rest] if where == "before" else [command, *rest, "-q"]
        result = ingested_cli.ok(*argv)
        return result.stdout, result.stderr

    assert run("ingest", EXAMPLE) == ("", "")
    assert run("add", "The spare key is under the blue pot") == ("", "")
    assert run("export", "-o", tmp_path / "dump.jsonl") == ("", "")
    other = Memcli(config=ingested_cli.config, db=tmp_path / "other.db")
    result = other.ok(*(["-q", "import", tmp_path / "dump.jsonl"] if where == "before"
                        else ["import", tmp_path / "dump.jsonl", "-q"]))  # fmt: skip
    assert (result.stdout, result.stderr) == ("", "")
    stdout, _ = run("list")
    assert "ep1" in stdout  # data still flows


def test_quiet_leaves_json_records_and_dry_runs(ingested_cli: Memcli, tmp_path: Path) -> None:
    [added] = [
        json.loads(x) for x in ingested_cli.ok("--json", "add", "note", "-q").stdout.splitlines()
    ]
    assert added["node_id"].startswith("ep")
    ingested_cli.ok("export", "-o", tmp_path / "dump.jsonl")
    planned = ingested_cli.ok("import", "--dry-run", tmp_path / "dump.jsonl", "-q")
    assert planned.stdout.startswith("would add 0 memories")


def test_verbose_after_the_command(ingested_cli: Memcli) -> None:
    assert ingested_cli.ok("inspect", "-v").stdout == ingested_cli.ok("-v", "inspect").stdout
    assert ingested_cli("list", "-vv").exit_code == 0


@pytest.mark.parametrize(
    "argv", [["--db", "", "list"], ["list", "--db", ""], ["--db", " ", "inspect"]]
)
def test_an_empty_db_is_a_usage_error(tmp_path: Path, argv: list[str]) -> None:
    result = Memcli(config=write_config(tmp_path))(*argv)
    assert result.exit_code == 2 and result.stdout == ""
    assert "--db must not be empty" in result.stderr and "fix: " in result.stderr
