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
