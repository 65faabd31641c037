"""Counts too large to mean anything (-k, --limit, --offset, --page) are usage errors
(exit 2) with the range, not an OverflowError from SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli import Memory
from memcli.errors import UsageError
from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config

HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["ask", "--context-only", "-k", HUGE, "hotel"], "k must be from 1 to 10000"),
        (["ask", "--context-only", "-k", "10001", "hotel"], "k must be from 1 to 10000"),
        (["list", "--limit", HUGE], "--limit is too large"),
        (["list", "--offset", HUGE], "--offset is too large"),
        (["list", "--page", "99999999999", "--limit", "100"], "--page is too large"),
    ],
)
def test_huge_counts_are_usage_errors(tmp_path: Path, args: list[str], phrase: str) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    result = cli(*args)
    assert result.exit_code == 2, result.stderr
    assert phrase in result.stderr and "OverflowError" not in result.stderr


def test_the_python_api_says_the_same(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with Memory.open(tmp_path / "m.db", config=config) as mem:
        mem.ingest(str(EXAMPLE))
        with pytest.raises(UsageError, match="k must be from 1 to 10000"):
            mem.recall("hotel", k=10**20)
