"""A file that is another program's SQLite database is never changed: every command
refuses it with the fix, before a table, the WAL switch or user_version touches it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.reliability import write_config


def foreign(path: Path, user_version: int = 0) -> str:
    """An app's SQLite file (rollback journal, its own table); its sha256."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT, title TEXT)")
        conn.execute("INSERT INTO bookmarks VALUES ('https://example.org', 'Example')")
        conn.execute(f"PRAGMA user_version = {user_version}")
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "command",
    [
        ["inspect"],
        ["ask", "--context-only", "example"],
        ["list"],
        ["ingest", "CHAT"],
        ["add", "a note"],
        ["prune", "--session", "x", "--yes"],
    ],
)
@pytest.mark.parametrize("user_version", [0, 3])
def test_another_programs_database_is_refused_and_left_alone(
    tmp_path: Path, command: list[str], user_version: int
) -> None:
    db = tmp_path / "places.sqlite"
    before = foreign(db, user_version)
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"text": "hello"}\n')
    cli = Memcli(config=write_config(tmp_path), db=db)
    result = cli(*[str(chat) if part == "CHAT" else part for part in command])
    assert result.exit_code == 7, result.stderr
    assert f"{db} is an SQLite database of another program (it holds bookmarks)" in (result.stderr)
    assert "fix: pass --db the path of a memcli store" in result.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("places")) == [
        "places.sqlite"
    ]


def test_an_empty_file_still_becomes_a_store(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    db.touch()
    cli = Memcli(config=write_config(tmp_path), db=db)
    cli.ok("add", "first note")
    assert cli.ok("inspect").exit_code == 0
