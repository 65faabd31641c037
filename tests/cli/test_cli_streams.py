"""What memcli does with its streams when a script drives it: a reader that closes stdout
early, and errors as JSON under --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli, clean_env
from tests.reliability import write_config

EXAMPLE = REPO / "examples" / "chat.jsonl"


@pytest.fixture
def store(tmp_path: Path) -> Memcli:
    """memcli over a store holding the example chat (no embeddings)."""
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    return cli


# -- a reader that has gone (`memcli ... | head`) -------------------------------------------


def _into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run memcli with stdout a pipe whose reading end is already closed, as it is once
    `head` has read its lines and exited."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "memcli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
            cwd=REPO,
            timeout=120,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "graph"],  # plain text
        ["--json", "inspect"],  # a JSON record
        ["inspect"],  # text, then rich tables
        ["ask", "--context-only", "--strategy", "lexical", "hotel"],
        ["--help"],  # help is written while the command line is parsed
        ["inspect", "graph", "--help"],
    ],
)
def test_a_closed_stdout_ends_quietly_with_0(store: Memcli, command: list[str]) -> None:
    result = _into_closed_pipe(*store.argv(*command))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


# -- errors under --json ------------------------------------------------------------------


def _json_error(result, code: int) -> dict:
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    error = json.loads(lines[0])
    assert set(error) == {"error", "fix", "exit"} and error["exit"] == code
    assert "memcli: error" not in error["error"]
    return error


@pytest.mark.parametrize(
    ("args", "code", "phrase"),
    [
        (["--json", "ask"], 2, "missing argument"),  # the parser's error
        (["ask", "--json", "--no-such-flag", "q"], 2, "no such option"),  # --json after it
        (["--json", "inspect", "node", "zz9"], 4, "no node 'zz9'"),  # the library's error
        (["--json", "ask", "-k", "0", "q"], 2, "-k"),
        (["--json", "consolidate", "--stage", "nope"], 2, "unknown stage"),
        (["--json", "inspect", "graph", "--format", "xml"], 2, "xml"),
        (["--json"], 2, "needs a command"),  # a group without a command
    ],
)
def test_errors_under_json_are_one_json_object(
    store: Memcli, args: list[str], code: int, phrase: str
) -> None:
    error = _json_error(store(*args), code)
    assert phrase in error["error"]


def test_a_missing_store_under_json(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "none.db")
    error = _json_error(cli("--json", "ask", "q"), 4)
    assert error["error"].startswith("no memory store at") and "ingest" in error["fix"]
    assert not (tmp_path / "none.db").exists()


def test_errors_without_json_stay_text(store: Memcli) -> None:
    result = store("inspect", "node", "zz9")
    assert result.exit_code == 4
    assert result.stderr.startswith("memcli: error: no node 'zz9'")
    assert "\n  fix: " in result.stderr


def test_json_errors_from_the_installed_entry_point(tmp_path: Path) -> None:
    """The same object from a real process, for an error of the parser and of a command."""
    for args, code in (
        (["--json", "ask", "--bogus"], 2),
        (["--json", "--db", str(tmp_path / "no.db"), "ask", "q"], 4),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "memcli", *args],
            capture_output=True,
            text=True,
            env=clean_env(HOME=str(tmp_path)),
            cwd=tmp_path,
            timeout=120,
        )
        assert proc.returncode == code and proc.stdout == ""
        assert json.loads(proc.stderr)["exit"] == code
